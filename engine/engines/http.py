"""Any buffered HTTP TTS server as an engine: each chunk the planner cuts is one request, its whole reply one chunk.

Such a server (devnen's Chatterbox server, Fish Speech, anything speaking OpenAI's speech API) answers nothing until
it has synthesized all it was sent. Driven chunk by chunk from the worker's buffer ratchet, it streams: the first
audio comes after one short chunk's synthesis, not the whole text's. What to send and how to read the reply is the
dialect's (engine/engines/http_dialects/); this module only sends, times out and keeps the backend's state.

At most ``concurrency`` requests are in flight (most such servers serve one at a time). A cancelled chunk's request
is abandoned: the worker goes on at once and its audio is dropped, but it keeps its slot until the server answers
(or the timeout), because the server is still working on it.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from engine.engines.base import Cancelled, EngineError, EngineInfo, RemoteEngine
from engine.engines.http_dialects import BAD_REPLY, Dialect, Voice, base_url, decode_reply
from engine.protocol import SAMPLE_RATE
from engine.settings import EngineSettings
from engine.voices import voice_key

log = logging.getLogger("chatterbox_fast.engine")
UNAVAILABLE = "engine_unavailable"
_CANCEL_POLL_S = 0.02


class HttpEngine(RemoteEngine):
    sample_rate = SAMPLE_RATE
    conditionals_suffix = ".http.json"

    def __init__(self, url: str, dialect: Dialect, *, key: str | None = None, concurrency: int = 1,
                 timeout_s: float = 60.0, voices: tuple[str, ...] = ()) -> None:
        if concurrency < 1 or not timeout_s > 0:
            raise ValueError(f"need concurrency >= 1 and timeout > 0, got {concurrency} and {timeout_s}")
        self.url = base_url(url, dialect)  # http://host:8880/v1 (as OpenAI clients write it) is http://host:8880
        if self.url != url.strip().rstrip("/"):
            log.info("TTS backend %s: sending %s requests to %s", url, dialect.name, self.url)
        self.dialect = dialect
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self._configured = voices
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout_s,
                                    limits=httpx.Limits(max_connections=concurrency + 1))
        self._requests = ThreadPoolExecutor(concurrency, thread_name_prefix="backend")
        self._lock = threading.Lock()
        self._state: dict[str, Any] = {"url": self.url, "dialect": dialect.name, "state": "unknown", "error": None,
                                       "since": time.time()}
        self._contact = time.monotonic()
        self._listed: list[str] = []
        self.info = EngineInfo("http", "remote", "n/a", self.url,
                               notes=f"{dialect.name} backend at {self.url}, {concurrency} request(s) at a time")

    @classmethod
    def from_settings(cls, settings: EngineSettings, timeout_s: float | None = None) -> "HttpEngine":
        """The engine ``--engine http`` and its flags describe (a shorter ``timeout_s`` for a quick check)."""
        from engine.engines.http_dialects import dialect

        return cls(settings.http_url or "", dialect(settings.http_dialect), key=settings.http_key,
                   concurrency=settings.http_concurrency, timeout_s=timeout_s or settings.http_timeout_s,
                   voices=settings.http_voices)

    # State --------------------------------------------------------------------------------------------------------
    def backend(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._state)

    @property
    def idle_s(self) -> float:
        return time.monotonic() - self._contact

    def _mark(self, error: str | None) -> None:
        with self._lock:
            self._contact = time.monotonic()
            state = "down" if error else "up"
            if state != self._state["state"]:
                log.log(logging.WARNING if error else logging.INFO, "TTS backend %s is %s%s", self.url, state,
                        f": {error}" if error else "")
                self._state.update(state=state, since=time.time())
            self._state["error"] = error

    def probe(self) -> None:
        try:
            self._get(self.dialect.voices_path or "/")
        except EngineError:
            pass  # marked down by _get

    # Requests -----------------------------------------------------------------------------------------------------
    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request; a server that cannot be reached, times out or fails (5xx) is ``engine_unavailable``."""
        try:
            reply = self._client.request(method, path, **kwargs)
        except httpx.TimeoutException:
            problem = f"the TTS backend at {self.url} did not answer within {self.timeout_s:g} s"
        except httpx.HTTPError as exc:
            problem = f"the TTS backend at {self.url} is unreachable ({type(exc).__name__}: {exc})"
        else:
            if reply.status_code < 500:
                self._mark(None)
                return reply
            problem = f"the TTS backend at {self.url} failed: HTTP {reply.status_code} {reply.text[:200]!r}"
        self._mark(problem)
        raise EngineError(problem, UNAVAILABLE)

    def _get(self, path: str) -> httpx.Response:
        return self._call("GET", path)

    def _speak(self, text: str, voice: Voice) -> np.ndarray:
        request = self.dialect.speech(text, voice)
        reply = self._call("POST", request.path, json=request.json)
        if reply.status_code >= 400:
            hint = (f" (is that the server's speech endpoint? check --engine-http-url, and that the server speaks "
                    f"--engine-http-dialect {self.dialect.name})" if reply.status_code in (404, 405) else "")
            raise EngineError(f"the TTS backend refused the chunk: POST {reply.request.url} answered HTTP "
                              f"{reply.status_code} {reply.text[:200]!r}{hint}", BAD_REPLY)
        wav = decode_reply(reply.content, reply.headers.get("content-type", ""), self.dialect.pcm_rate, SAMPLE_RATE)
        if wav.size == 0:
            raise EngineError("the TTS backend answered no audio", BAD_REPLY)
        return wav

    def synthesize(self, text: str, voice: Any, cancel: threading.Event) -> np.ndarray:
        if cancel.is_set():
            raise Cancelled()
        future: Future[np.ndarray] = self._requests.submit(self._speak, text, voice)
        while not wait([future], timeout=_CANCEL_POLL_S).done:
            if cancel.is_set():
                raise Cancelled()  # abandoned: the server finishes it, nobody hears it
        if cancel.is_set():
            raise Cancelled()
        return future.result()

    # Voices -------------------------------------------------------------------------------------------------------
    def warmup(self) -> None:
        """Learn the backend's voices (it may be down: the worker starts anyway, and says so)."""
        self.named_voices()

    def named_voices(self) -> dict[str, Any]:
        """The configured names, and the backend's own where it lists them (the last listing if it cannot now)."""
        if self.dialect.voices_path:
            try:
                self._listed = self._list_voices(self.dialect.voices_path)
            except EngineError as exc:
                log.warning("the TTS backend's voices are not listed: %s", exc)
        names = [*self._configured, *self._listed]
        return {voice_key(name): Voice(name) for name in names if voice_key(name) != "default"}

    def _list_voices(self, path: str) -> list[str]:
        reply = self._get(path)
        if reply.status_code >= 400:  # no listing there (a server that speaks the dialect only in part)
            return self._listed
        try:
            return self.dialect.voice_names(reply.json())
        except ValueError:  # not JSON
            raise EngineError(f"the voice listing is not JSON: {reply.text[:80]!r}", BAD_REPLY) from None

    def default_voice(self) -> Voice:
        """The first configured voice, else the backend's first listed one, else its own default."""
        first = next(iter(self._configured), None) or next(iter(self._listed), None)
        return Voice(first or "default")

    def prepare_voice(self, wav: np.ndarray, sample_rate: int) -> Voice:
        """Upload the clip to a backend that takes references (under a name from its content); else refuse."""
        if self.dialect.upload_path is None:
            raise EngineError(f"voice cloning is not supported by this engine (an HTTP backend speaking "
                              f"{self.dialect.name}): use the backend's own voices", "not_supported")
        import soundfile as sf

        buffer = io.BytesIO()
        sf.write(buffer, wav, sample_rate, format="WAV", subtype="PCM_16")
        data = buffer.getvalue()
        name = f"cbf-{hashlib.sha256(data).hexdigest()[:16]}.wav"
        reply = self._call("POST", self.dialect.upload_path, files={"files": (name, data, "audio/wav")})
        if reply.status_code >= 400:
            raise EngineError(f"the TTS backend refused the reference clip: POST {reply.request.url} answered "
                              f"HTTP {reply.status_code} {reply.text[:200]!r}", BAD_REPLY)
        return Voice(name, "clone")

    def save_conditionals(self, conds: Voice, path: Path) -> None:
        path.write_text(json.dumps({"id": conds.id, "mode": conds.mode}))

    def load_conditionals(self, path: Path) -> Voice:
        raw = json.loads(path.read_text())
        return Voice(str(raw["id"]), str(raw.get("mode", "predefined")))
