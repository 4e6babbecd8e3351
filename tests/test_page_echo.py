"""A WebRTC peer in headless Chromium, its own echo cancelling off, next to a loudspeaker: it barges in on the gateway
over the gateway's own echo, with the echo canceller on (``--echo-canceller true``).

Headless Chromium has no loudspeaker in front of its microphone, so the page makes one with WebAudio: what Chromium
received and decoded (after its jitter buffer, NetEq) is taken 12 dB down, band-passed 300-3400 Hz, softly clipped
and 150 ms late, and mixed into the microphone it sends (``getUserMedia`` with ``echoCancellation``,
``noiseSuppression`` and ``autoGainControl`` off; the fake capture device plays a WAV made here: ``LEAD_S`` of
silence, then a recorded caller about 17 dB below the gateway's speech). The page is the test's own, on the
gateway's origin (its /health), not the audition page. Conventions as in tests/test_page.py.

The gateway starts speaking ``SETTLE_S`` after the connection is up. Speaking at once, it stopped on its own echo in
3 of 3 runs, 2.5-3 s into its speech, before the canceller followed the echo's delay: Chromium's jitter buffer (NetEq)
settles in its first seconds, and here it shortened the echo's path by 29 ms at once (371 -> 342 ms, measured in the
far and near ends the canceller read); since, 2 of 2 runs speaking at once passed.

The caller speaks ``LEAD_S`` after the page opens, the gateway's speech ~9 s old by then: in every run Chromium's
jitter buffer shortened the echo's path by 60-90 ms within a second some 6 s into it (388 -> 300 ms, 488 -> 420 ms),
and before the canceller followed it (gateway/listen/aec.py's ``guard_leaks``) the gateway stopped on its own echo
then (2026-12-07: 2 of 2 runs with the caller at 14 s; the test then had the caller at 10 s, before the step, and was
left out of ``make test``). With the canceller following it: 10 of 10 runs alone; but in the first full-suite CI run
after (0718121, 4 test processes on 2 cores) the gateway's speech as played lasted ~1 s (5.3-6.3 s after the page
opened) and nothing more came before the caller: stopped early, on its own echo or for want of audio, not seen which
(the precondition's message now shows the events). Still ``known_gap``: left out of ``make test``, ``make test-long``
runs it.

Under load it is a false barge-in, not a starved stream (2026-12-07, this 2-core machine): with tests/test_page.py
running beside it, 6 of 6 runs failed, 5 on the precondition with events ``speech_started``, ``cancelled``,
``interrupted`` within 15 ms of each other 1.1-1.9 s into the gateway's speech as played (loud from 5.0-6.2 s;
``speech_started`` at 6.1-7.8 s), one later but still before the caller; with only three busy loops beside it, 2 of 2
passed. Logged in the canceller (temporary, removed): it happens in the call's first seconds of echo, while the line's
delay is not yet sure or only just (``_follow`` had not measured yet; AEC3 runs untold, hint 0): under load
Chromium's jitter buffer moves the echo's delay there already (its measures 331 -> 331 -> 350 ms, 369 -> 322 ->
343 ms, 403 -> 413 -> 405 ms; without tests/test_page.py beside it they agreed, 477 ms x3, 509 ms x3), AEC3 lets
60-130 ms of echo through (its output 100-1450 RMS, up to its input), and ``_leak`` misses most of it: the output
correlated with the far end only 0.23-0.47 (under ``LEAK_R``, 0.5) at a best lag that wandered by 100-500 ms from
one 20 ms frame to the next (the echo time-warped, no clean shifted copy), long enough for the VAD to confirm
speech (its onset 128 ms before its confirmation). ``LEAK_R`` 0.35 was tried: of 2 runs under load (the second only
partly), 1 still stopped on its echo (the module passed it unchanged, output = input ~1400 RMS, correlation
0.29-0.34, the delay never sure: 369, 322, 343 ms). So was a lower bar (0.25) where the module took less than 3 dB
out: 2 of 3 runs under load passed, and tests/test_echo_canceller.py's shortening test failed.

Later the same day, 21 more runs under load (the same set-up, logged again, with the verdict hold below in one form or
another): it is not only the first seconds. The echo's path is lost for seconds at a time (GCC-PHAT peaks over their
mean 5-11, against 35-113 on a steady line, and 32-113 still while the caller talked over the echo): delay measures 473
-> 473 -> (2 s lost) -> 313 ms; sure at 38 ms after 3.5 s of nothing, then lost again for 3.5 s; and once sure the echo
moved later as well as sooner, by 9-160 ms between two follow-up measures 0.25 s apart (389 -> 349 -> 431 ms; 364 -> 485
ms; 354 -> 514 ms; 308 -> 299 ms), its leak confirmed as speech before the next measure. In 11 of the 21 runs nothing of
this happened (the delay sure at once, steady) and they passed. Tried, offline and in Chromium, and left:
- warp-robust leak measures, the module's output against the far end at the echo's lags (10 ms envelopes over
  200 ms; log spectra 10 ms at a time, 300-3400 Hz): a caller's voice alone scored as high as the leak (envelope r
  0.8-0.86 against 0.56-0.77; spectra 0.53 against 0.57-0.66): no bar parts them;
- holding the VAD's verdict (no speech starts) while the canceller is unsure: its delay not yet sure (measures within
  25 ms agreeing), until a follow-up measure finds the echo where the read point holds it, and while the latest does
  not (peak under 16, or 6 ms off until followed), at most 4 s then 8 s in a row (commit 7e27675, reverted in the
  next): under load 4 of 6, 1 of 3, 1 of 2, 4 of 5 and, in its final form, 1 of 5 passed; every run that passed held
  at most one window (4 runs that failed held 48-109, on a lost path that outlasted the cap; the 6 others failed on a
  move that leaked between two measures or just after the delay was sure), and it can hide a real caller for as long
  as the path is lost (the issue allows 300-400 ms);
- measuring the delay every 0.25 s instead of 0.5 s (sure sooner): tests/test_echo_canceller.py's shortening test then
  kept 0.53 of the caller's voiced share (it needs 0.78; AEC3's state after the step is that sensitive to when its
  module starts).
The code without the hold, the same set-up just after: 4 of 5 passed (the fifth stopped on its echo 4 s before the
caller); alone, 4 of 4. How hard the load bites swings within the hour on this shared machine (1 of 5 to 4 of 5, with the hold or
without): a fix's figures need baselines run beside them, turn about.
Not fixed: a fix must catch a leak whose path is lost or moved within the VAD's 128 ms, which the delay measures
(0.25-0.5 s) cannot; or the page's own playout must be steadier under load.
"""

from __future__ import annotations

import wave

import numpy as np
import pytest

from cbf_tools.bench import caller_voices as voices
from cbf_tools.bench import line
from tests.test_page import LONG_TEXT, chromium, checked_page

pytestmark = [pytest.mark.slow, pytest.mark.known_gap]

LEAD_S = 14.0  # the fake microphone's silence before the caller speaks (from when the page opens it)
SETTLE_S = 4.0  # the gateway speaks this long after the connection is up (see the module's docstring)
GATEWAY_DBFS = -23.0  # eSpeak's speech level as Chromium plays it (this test's meter: -23.1 to -23.2 dBFS)
CALLER_BELOW_DB = 17.0

PEER = """async ({echoDb, delayS}) => {
  const ctx = new AudioContext({sampleRate: 48000});
  const mic = await navigator.mediaDevices.getUserMedia({audio: {echoCancellation: false, noiseSuppression: false,
                                                                 autoGainControl: false}});
  const t = {micOpened: performance.now(), events: [], levels: []};
  window.t = t;
  const out = ctx.createMediaStreamDestination();
  ctx.createMediaStreamSource(mic).connect(out);
  const pc = new RTCPeerConnection();
  const dc = pc.createDataChannel("control");
  dc.onmessage = (m) => t.events.push({...JSON.parse(m.data), at: performance.now()});
  t.dc = dc;
  pc.addTrack(out.stream.getAudioTracks()[0], out.stream);
  pc.ontrack = (e) => {
    const stream = e.streams[0] || new MediaStream([e.track]);
    const player = new Audio();  // (Chromium feeds WebAudio a remote stream only while an element plays it)
    player.srcObject = stream; player.muted = true; player.play(); t.player = player;
    const heard = ctx.createMediaStreamSource(stream);
    const gain = ctx.createGain(); gain.gain.value = 10 ** (echoDb / 20);
    const band = ctx.createBiquadFilter(); band.type = "bandpass";
    band.frequency.value = Math.sqrt(300 * 3400); band.Q.value = Math.sqrt(300 * 3400) / (3400 - 300);
    const clip = ctx.createWaveShaper(); const curve = new Float32Array(1025);
    for (let i = 0; i < curve.length; i++) {
      const x = 2 * i / (curve.length - 1) - 1;
      curve[i] = 0.5 * Math.tanh(x / 0.5);
    }
    clip.curve = curve;
    const delay = ctx.createDelay(1.0); delay.delayTime.value = delayS;
    heard.connect(gain).connect(band).connect(clip).connect(delay).connect(out);
    const meter = ctx.createAnalyser(); meter.fftSize = 2048; heard.connect(meter);
    const buf = new Float32Array(meter.fftSize);
    setInterval(() => {
      meter.getFloatTimeDomainData(buf);
      let sum = 0; for (const v of buf) sum += v * v;
      t.levels.push([performance.now(), 10 * Math.log10(sum / buf.length + 1e-12)]);
    }, 40);
  };
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((done) => {
    if (pc.iceGatheringState === "complete") return done();
    pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && done();
  });
  const reply = await fetch("/v1/webrtc/offer", {method: "POST", headers: {"content-type": "application/json"},
                                                 body: JSON.stringify({sdp: pc.localDescription.sdp, type: "offer"})});
  const answer = await reply.json();
  await pc.setRemoteDescription({type: "answer", sdp: answer.sdp});
  t.pc = pc;
  await ctx.resume();
  return answer.session;
}"""


def caller_wav(path) -> None:
    """``LEAD_S`` of silence, then the recorded caller ``CALLER_BELOW_DB`` under ``GATEWAY_DBFS`` (band-passed as a
    line does), as 48 kHz mono s16."""
    import av

    speech = voices.clip_pcm()
    gain = 10 ** ((GATEWAY_DBFS - CALLER_BELOW_DB - line.active_dbfs(speech)) / 20)
    said = line.to_s16(line.through_line(speech.astype(np.float64) / 32768 * gain))
    resampler = av.AudioResampler(format="s16", layout="mono", rate=48000)
    frame = av.AudioFrame.from_ndarray(said.reshape(1, -1), format="s16", layout="mono")
    frame.sample_rate = line.RATE
    upsampled = [out.to_ndarray().reshape(-1) for out in resampler.resample(frame)]
    upsampled += [out.to_ndarray().reshape(-1) for out in resampler.resample(None)]
    pcm = np.concatenate([np.zeros(int(LEAD_S * 48000), np.int16), *upsampled, np.zeros(2 * 48000, np.int16)])
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(48000)
        w.writeframes(pcm.astype("<i2").tobytes())


@pytest.fixture(scope="module")
def aec_server(tmp_path_factory):
    from tests.server import running_server

    with running_server("--echo-canceller", "true", voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    wav = tmp_path_factory.mktemp("fake-mic") / "caller.wav"
    caller_wav(wav)
    with chromium(f"--use-file-for-fake-audio-capture={wav}") as b:
        yield b


@pytest.fixture
def page(browser):
    yield from checked_page(browser, permissions=["microphone"])


def test_chromium_barges_in_on_a_caller_over_its_own_loudspeaker_echo(page, aec_server):
    page.goto(f"{aec_server}/health")
    page.evaluate(PEER, {"echoDb": -12, "delayS": 0.15})
    page.wait_for_function("t.dc.readyState === 'open' && t.events.some(e => e.type === 'ready')", timeout=20_000)
    page.wait_for_timeout(SETTLE_S * 1000)
    page.evaluate("(text) => t.dc.send(JSON.stringify({type: 'speak', text}))", LONG_TEXT)
    onset_ms = page.evaluate("t.micOpened") + LEAD_S * 1000  # the fake device plays the WAV from when it was opened
    page.wait_for_function("t.events.some(e => e.type === 'interrupted')", timeout=(LEAD_S + 15) * 1000)
    events = page.evaluate("t.events")
    levels = page.evaluate("t.levels")
    kinds = [e["type"] for e in events]
    interrupted = next(e for e in events if e["type"] == "interrupted")
    # The gateway spoke to the loudspeaker for seconds before the caller did, its echo coming back all along: nothing
    # of it was taken for the caller.
    loud_before = [at for at, db in levels if db > -35 and at < onset_ms]
    assert len(loud_before) * 0.04 >= 1.5, (len(loud_before), [(e["type"], round(e["at"])) for e in events
                                                                if e["type"] != "chunk"], loud_before[:5])
    first_start = next(e for e in events if e["type"] == "speech_started")
    assert first_start["at"] > onset_ms - 200, (onset_ms, events)
    assert kinds.index("speech_started") < kinds.index("cancelled") < kinds.index("interrupted"), kinds
    assert interrupted["at"] - onset_ms < 10_000, (onset_ms, interrupted)
    speech_db = float(np.median([db for _, db in levels if db > -35]))
    print(f"chromium: gateway {speech_db:.1f} dBFS as played; onset -> interrupted "
          f"{interrupted['at'] - onset_ms:.0f} ms (the fake device's start is approximate); reaction "
          f"{interrupted['reaction_ms']} ms")
