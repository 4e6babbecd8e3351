"""Two echo cancellers on the same recordings through the same line models (``bench barge-in --cancellers``):
WebRTC's AEC3 (gateway/listen/apm.py's ``WebRtcApm``, through livekit) and speexdsp's MDF canceller with its
residual-echo suppressor (Debian's libspeexdsp, through ctypes: ``apt-get install libspeexdsp1``), each behind the
same ``EchoCanceller`` (the same alignment), offline, as fast as they run.

The gateway's voice is the deploy gate's ``low.ogg`` (synthetic speech, twice over: 12.9 s), the caller's ``high.ogg``
(another voice); the far end is played from 0, the near end arrives 20 ms at a time as it is spoken. Figures per
line model: the echo taken out (ERLE, dB, over the echo alone once the canceller had 3 s), and a double-talking
caller kept (the caller's level over what the output differs from the caller by, dB: higher is better; the input's
own figure beside it), and each canceller's CPU per 10 ms.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from typing import Any, Callable

import numpy as np

from cbf_tools.bench import caller_voices as voices
from cbf_tools.bench import line
from gateway.listen.aec import EchoCanceller
from gateway.listen.apm import WebRtcApm
from gateway.listen.silero import SileroVad

FRAME = 160  # 20 ms at 8 kHz: what a caller sends
LEAD = 8000  # the far end is sent up to 1 s ahead of its playout (gateway/telephony/outbox.py)
SETTLED_S = 3.0
SPEEX_TAIL_S = 0.4  # the MDF filter's length: the line's delay (to 250 ms) and its tail
SPEEX_ECHO_SET_SAMPLING_RATE = 24
SPEEX_PREPROCESS_SET_DENOISE = 0
SPEEX_PREPROCESS_SET_ECHO_STATE = 24


class SpeexMdf:
    """speexdsp's MDF echo canceller and its preprocessor's residual-echo suppression (no denoise), 10 ms blocks."""

    _lib: Any = None

    def __init__(self, rate: int) -> None:
        if SpeexMdf._lib is None:
            name = ctypes.util.find_library("speexdsp")
            if name is None:
                raise OSError("libspeexdsp is not installed (apt-get install libspeexdsp1)")
            lib = ctypes.CDLL(name)
            lib.speex_echo_state_init.restype = ctypes.c_void_p
            lib.speex_preprocess_state_init.restype = ctypes.c_void_p
            lib.speex_echo_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
            lib.speex_preprocess_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
            lib.speex_echo_cancellation.argtypes = [ctypes.c_void_p] + [ctypes.c_void_p] * 3
            lib.speex_preprocess_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            lib.speex_echo_state_destroy.argtypes = [ctypes.c_void_p]
            lib.speex_preprocess_state_destroy.argtypes = [ctypes.c_void_p]
            SpeexMdf._lib = lib
        lib, block = SpeexMdf._lib, rate // 100
        self._echo = lib.speex_echo_state_init(block, round(SPEEX_TAIL_S * rate))
        rate_c = ctypes.c_int(rate)
        lib.speex_echo_ctl(self._echo, SPEEX_ECHO_SET_SAMPLING_RATE, ctypes.byref(rate_c))
        self._pre = lib.speex_preprocess_state_init(block, rate)
        off = ctypes.c_int(0)
        lib.speex_preprocess_ctl(self._pre, SPEEX_PREPROCESS_SET_DENOISE, ctypes.byref(off))
        lib.speex_preprocess_ctl(self._pre, SPEEX_PREPROCESS_SET_ECHO_STATE, ctypes.c_void_p(self._echo))

    def process(self, far: np.ndarray, near: np.ndarray, delay_ms: int) -> np.ndarray:
        """(MDF finds the delay in its own filter, ``SPEEX_TAIL_S`` long: the hint is not used.)"""
        near, far = np.ascontiguousarray(near, np.int16), np.ascontiguousarray(far, np.int16)
        out = np.empty_like(near)
        self._lib.speex_echo_cancellation(self._echo, near.ctypes.data, far.ctypes.data, out.ctypes.data)
        self._lib.speex_preprocess_run(self._pre, out.ctypes.data)
        return out

    def __del__(self) -> None:
        if self._lib is not None:
            self._lib.speex_echo_state_destroy(self._echo)
            self._lib.speex_preprocess_state_destroy(self._pre)


CANCELLERS = {"webrtc-aec3": WebRtcApm, "speexdsp-mdf": SpeexMdf}


def recordings() -> tuple[np.ndarray, np.ndarray]:
    """(the gateway's voice, the caller's), s16 at 8 kHz."""
    gateway = voices.clip_pcm(line.RATE, voices.CLIP.with_name("low.ogg"))
    return np.concatenate([gateway, gateway]), voices.clip_pcm(line.RATE)


def run_line(module: Any, model: line.LineModel, gateway: np.ndarray, caller: np.ndarray,
             caller_from_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(near end, clean caller as heard on the line, output, seconds in the module) for one line."""
    echo = line.echo_of(gateway, model)
    voice = np.zeros(gateway.size)
    if model.caller_db is not None:
        said = line.caller_at(caller, model, line.active_dbfs(gateway))
        start = round(caller_from_s * line.RATE)
        voice[start:start + said.size] = said[:gateway.size - start]
    near = line.to_s16(echo + voice)
    cleaned, spent = stream(EchoCanceller(line.RATE, module), gateway, near)  # each a first call
    return near[:cleaned.size], line.to_s16(voice)[:cleaned.size], cleaned, spent


def stream(canceller: EchoCanceller, gateway: np.ndarray, near: np.ndarray,
           frame_done: Callable[[int], None] = lambda i: None) -> tuple[np.ndarray, float]:
    """(``canceller``'s output, seconds in it) for ``gateway`` played from 0 and ``near`` arriving ``FRAME`` at a
    time as it is spoken; ``frame_done(i)`` after the frame from sample ``i``."""
    out, spent, sent = [], 0.0, 0
    for i in range(0, near.size - FRAME + 1, FRAME):
        began = time.process_time()
        while sent < min(gateway.size, i + LEAD):  # as the outbox sends it: 100 ms frames, up to 1 s ahead
            canceller.played(100.0 + sent / line.RATE, gateway[sent:sent + LEAD // 10])
            sent += LEAD // 10
        out.append(canceller.process(near[i:i + FRAME], i / line.RATE, 100.0 + (i + FRAME) / line.RATE)[1])
        spent += time.process_time() - began
        frame_done(i)
    return np.concatenate(out), spent


def _db(numerator: np.ndarray, denominator: np.ndarray) -> float:
    num, den = float(np.sum(numerator.astype(np.float64) ** 2)), float(np.sum(denominator.astype(np.float64) ** 2))
    return round(10 * np.log10(max(num, 1.0) / max(den, 1.0)), 1)


def voiced_share(pcm: np.ndarray) -> float:
    """The share of Silero's 32 ms windows over s16 ``pcm`` it takes for speech (probability >= 0.5)."""
    vad = SileroVad(line.RATE)
    size = vad.window_samples
    windows = [pcm[i:i + size].astype(np.float32) / 32768 for i in range(0, pcm.size - size + 1, size)]
    return round(sum(vad.probability(w) >= 0.5 for w in windows) / max(1, len(windows)), 3)


def compare() -> dict[str, Any]:
    gateway, caller = recordings()
    settled = round(SETTLED_S * line.RATE)
    out: dict[str, Any] = {}
    for name, module in CANCELLERS.items():
        rows, spent, blocks = {}, 0.0, 0
        for model in line.MODELS:
            if model.caller_db is None:
                near, _, cleaned, seconds = run_line(module, model, gateway, caller, 0)
                rows[model.name] = {"erle_db": _db(near[settled:], cleaned[settled:]),
                                    "erle_first_s_db": _db(near[:line.RATE], cleaned[:line.RATE]),
                                    "voiced_in": voiced_share(near), "voiced_out": voiced_share(cleaned)}
            else:
                from_s = 0.2 if model.double_talk else SETTLED_S
                near, voice, cleaned, seconds = run_line(module, model, gateway, caller, from_s)
                talk = slice(round(from_s * line.RATE), round(from_s * line.RATE) + caller.size)
                rows[model.name] = {"caller_kept_db": _db(voice[talk], cleaned[talk] - voice[talk]),
                                    "caller_in_input_db": _db(voice[talk], near[talk] - voice[talk]),
                                    "voiced_clean": voiced_share(voice[talk]), "voiced_in": voiced_share(near[talk]),
                                    "voiced_out": voiced_share(cleaned[talk])}
            spent += seconds
            blocks += near.size // (line.RATE // 100)
        out[name] = {"lines": rows, "ms_per_10ms": round(1000 * spent / blocks, 3),
                     "core_pct": round(100 * spent / (blocks * 0.01), 2)}
    return out


def render(figures: dict[str, Any]) -> str:
    names = list(figures)
    lines = ["echo cancellers on the same recordings (offline): ERLE = echo taken out once settled (first second);"
             " caller kept = the caller over what the output adds or takes (the input's own figure in brackets)",
             f"{'line model':48s}" + "".join(f"{n:>48s}" for n in names)]
    for model in line.MODELS:
        cells = []
        for n in names:
            row = figures[n]["lines"][model.name]
            cells.append(f"ERLE {row['erle_db']:5.1f} ({row['erle_first_s_db']:5.1f}) dB, voiced "
                         f"{row['voiced_out']:.0%} ({row['voiced_in']:.0%})" if "erle_db" in row else
                         f"kept {row['caller_kept_db']:5.1f} ({row['caller_in_input_db']:5.1f}) dB, voiced "
                         f"{row['voiced_out']:.0%} ({row['voiced_in']:.0%}, clean {row['voiced_clean']:.0%})")
        lines.append(f"{model.name:48s}" + "".join(f"{c:>48s}" for c in cells))
    lines.append(f"{'CPU per 10 ms (share of a core)':48s}" + "".join(
        f"{figures[n]['ms_per_10ms']:>36.3f} ms ({figures[n]['core_pct']:.1f} %)" for n in names))
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(compare()))
