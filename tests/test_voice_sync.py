"""Voices and lexicons reach a worker that joins later (gateway/engine_link/pool.py ``EnginePool._join``): real eSpeak
worker processes, each with its own voices directory, behind one real EnginePool. A worker that was not there for an
upload is given it when it connects, before it takes an utterance; one that was away for a deletion loses it."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import wave
from pathlib import Path
from typing import Any, Callable

import pytest

from cbf_tools.peers.local_server import Workers
from cbf_tools.peers.polling import until
from engine.protocol import SAMPLE_RATE, Chunk, Done, Reading
from gateway.engine_link.client import EngineClient, EngineRequestError
from gateway.engine_link.pool import EnginePool

SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs away into the forest."
LEXICON = json.dumps({"rules": [{"type": "alias", "string_to_replace": "Ngozi", "alias": "En go zee"}]}).encode()


async def speak(engine: EnginePool | EngineClient, voice: str, text: str,
                lexicons: list[str] | None = None) -> tuple[list[Chunk], Done]:
    utterance = await engine.start(voice, Reading(lexicons=lexicons))
    await utterance.text(text)
    await utterance.end()
    events = [event async for event in utterance.events()]
    assert isinstance(events[-1], Done)
    return events[:-1], events[-1]


async def clip(pool: EnginePool) -> bytes:
    """Real speech over five seconds, as a WAV file: a voice to upload."""
    chunks, _ = await speak(pool, "default", " ".join([SENTENCE] * 2))
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(b"".join(chunk.pcm for chunk in chunks))
    return out.getvalue()


def names(items: list[dict[str, Any]]) -> set[str]:
    return {item["name"] for item in items}


class Fleet:
    """Workers ``a`` and ``b`` on Unix sockets in ``base``, each with its own voices directory ``base/voices-NAME``."""

    def __init__(self, base: Path) -> None:
        self.base, self.workers = base, Workers()

    def url(self, name: str) -> str:
        return f"unix:{self.base / name}.sock"

    def start(self, name: str) -> None:
        self.workers.start(self.url(name), "--voices-dir", str(self.base / f"voices-{name}"))

    def run(self, test: Callable[[EnginePool], Any], *started: str) -> None:
        """``test`` against a pool of both, once the workers ``started`` listen; every worker stopped after it."""
        async def in_pool() -> None:
            pool = EnginePool([self.url("a"), self.url("b")])
            pool.start_background()
            try:
                await test(pool)
            finally:
                await pool.close()

        try:
            for name in started:
                self.start(name)
            for name in started:
                self.workers.wait_listening(self.url(name))
            asyncio.run(in_pool())
        finally:
            self.workers.stop()


def test_a_worker_that_joins_late_is_given_what_was_added_and_one_that_returns_loses_what_was_deleted(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """One fleet for both (a worker start costs seconds of CPU): b first joins after an upload, then leaves and comes
    back with its voices directory kept, after a deletion and another upload."""
    caplog.set_level(logging.INFO, logger="chatterbox_fast.gateway")
    fleet = Fleet(tmp_path)

    async def test(pool: EnginePool) -> None:
        a, b = pool.clients
        await until(lambda: a.available, 120, "worker a did not connect")
        await pool.add_voice("amy", await clip(pool))
        await pool.add_lexicon("names", LEXICON)
        assert not (tmp_path / "voices-b").exists()  # b has never run

        fleet.start("b")
        await until(lambda: b.available, 120, "worker b did not join")
        # at once, no waiting: a worker takes no utterance before it holds what the others hold
        assert "amy" in names(await b.list_voices()) and "names" in names(await b.list_lexicons())
        assert f"engine {b.url}: copied 1 voices, 1 lexicons from {a.url}" in caplog.messages

        for fetch, code in ((b.get_voice("default"), "unknown_voice"), (b.get_voice("nobody"), "unknown_voice"),
                            (b.get_lexicon("nothing"), "unknown_lexicon")):  # only stored files travel
            with pytest.raises(EngineRequestError) as refused:
                await fetch
            assert refused.value.code == code
        assert await b.get_lexicon("names") == LEXICON

        chunks, done = await speak(b, "amy", "Ngozi is here.", ["names"])
        assert done.chunks == len(chunks) > 0 and done.audio > 0.3
        assert "En go zee" in " ".join(chunk.header.text for chunk in chunks)

        # b goes away; meanwhile amy is deleted and bea added; it comes back with amy still in its directory
        assert "amy" in names(await a.list_voices())
        await asyncio.to_thread(fleet.workers.kill, fleet.url("b"))
        await until(lambda: not b.reachable, 120, "worker b's death was not noticed")
        await pool.delete_voice("Amy")  # as the client spelt it
        await pool.add_voice("bea", await clip(pool))
        assert (tmp_path / "voices-b" / "amy.wav").exists()

        fleet.start("b")
        await until(lambda: b.available, 120, "worker b did not join again")
        assert names(await b.list_voices()) == {"default", "bea"}
        assert "amy" not in names(await pool.list_voices())
        assert not (tmp_path / "voices-b" / "amy.wav").exists()
        assert f"engine {b.url}: copied 1 voices, 0 lexicons from {a.url}" in caplog.messages  # names: b kept it
        assert any("deleted 1 voices" in message for message in caplog.messages)
        _, done = await speak(b, "bea", SENTENCE)
        assert done.chunks > 0

    fleet.run(test, "a")
