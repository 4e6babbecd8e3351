"""Speaking speed without a pitch change: WSOLA time stretching of one generated chunk at a time.

WSOLA (waveform-similarity overlap-add, Verhelst & Roelands 1993) cuts the speech into overlapping 40 ms windows and
lays them down at the new rate, sliding each one by up to half a window so that its waveform lines up with what the
previous window would have continued with. The output is made of the original periods, so the pitch and timbre stay
those of the voice, without the phasiness a phase vocoder gives speech. Each chunk is stretched on its own: nothing
is kept between calls.
"""

from __future__ import annotations

import math

import numpy as np

_FRAME_S = 0.040  # window length: at least two periods of a 60 Hz voice
_FADE_S = 0.005


def stretch(wav: np.ndarray, speed: float, sample_rate: int) -> np.ndarray:
    """``wav`` spoken ``speed`` times as fast, pitch unchanged; speed 1.0 returns ``wav`` itself (no copy, no
    change); float32 in, float32 out, length round(len(wav) / speed) (exactly), no click at either end."""
    if speed == 1.0:
        return wav
    from scipy.signal import correlate  # half a second to import: only for a speed other than 1
    out_len = round(len(wav) / speed)
    if out_len == 0 or len(wav) == 0:
        return np.zeros(out_len, dtype=np.float32)
    n = 2 * round(_FRAME_S * sample_rate / 2)
    hop = tol = n // 2
    window = np.hanning(n + 1)[:n]  # periodic Hann: windows half a window apart add up to exactly 1
    frames = out_len // hop + 2  # frame k is centred on output sample k * hop
    # Frame k is read around input sample k * hop * speed; the zeros in front let frame 0 be centred on sample 0 and
    # the search reach tol before it, those behind cover the last frames' search and natural continuation.
    front = n // 2 + tol
    back = math.ceil((frames - 1) * hop * speed) + n + hop + tol + 1 - len(wav)
    x = np.pad(wav.astype(np.float64), (front, back))
    out = np.zeros(frames * hop + n)
    start = front - n // 2
    follow = x[:0]  # what would seamlessly continue the frame laid down last (none before the first)
    for k in range(frames):
        if k:
            nominal = front - n // 2 + round(k * hop * speed)
            similarity = correlate(x[nominal - tol:nominal + tol + n], follow, mode="valid")
            # the offset whose waveform best continues the previous frame; where nothing lines up (silence), on time
            start = nominal - tol + (int(np.argmax(similarity)) if similarity.max() > 0 else tol)
        out[k * hop:k * hop + n] += x[start:start + n] * window
        follow = x[start + hop:start + hop + n]  # what would seamlessly continue the frame just laid down
    out = out[n // 2:n // 2 + out_len]
    # The last frames may come from up to tol before the input's end, so the output need not end where the input did:
    # short fades make both ends start and stop at zero whatever the chunk held there.
    fade = min(round(_FADE_S * sample_rate), out_len // 2)
    ramp = np.sin(np.linspace(0.0, np.pi / 2, fade)) ** 2
    out[:fade] *= ramp
    out[out_len - fade:] *= ramp[::-1]
    return out.astype(np.float32)


def stretched_time(seconds: float, speed: float) -> float:
    """Where a moment ``seconds`` into a chunk lands after ``stretch``: seconds / speed (give or take the 20 ms of
    input a window may slide, so 20 ms / speed of output)."""
    return seconds / speed
