"""The audition page's "talk to interrupt" in headless Chromium with a fake microphone, against a real gateway.

Chromium's fake capture device plays a WAV made here (--use-file-for-fake-audio-capture): a short silence, then
speech (cbf_tools/gate/references/high.ogg), looped by Chromium. The page sends it on its WebRTC connection; the
gateway's VAD hears it and, as it speaks, stops (docs/protocol.md, "The caller's side"). Conventions as in
tests/test_page.py (Debian's Chromium, everything read in the page through window.cbf).
"""

from __future__ import annotations

import wave

import av
import numpy as np
import pytest

from cbf_tools.peers.local_server import ROOT
from tests.test_page import ARTIFACTS, LONG_TEXT, checked_page, chromium, open_page, server  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow

SPEECH = ROOT / "cbf_tools" / "gate" / "references" / "high.ogg"
AFTER_BUFFER_MS = 250  # interrupted -> silence in the page, beyond the jitter buffer's delay
LEAD_S = 2.0  # silence before the speech in the fake microphone's file (Chromium loops it: a fresh onset each loop)


def fake_microphone_wav(path, rate: int = 48000) -> float:
    """LEAD_S of silence, then the speech clip, as 48 kHz mono s16 WAV; returns the loop's length in seconds."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
    parts = [np.zeros(int(LEAD_S * rate), dtype="<i2")]
    with av.open(str(SPEECH)) as container:
        for frame in container.decode(audio=0):
            parts += [out.to_ndarray().reshape(-1).astype("<i2") for out in resampler.resample(frame)]
    parts += [out.to_ndarray().reshape(-1).astype("<i2") for out in resampler.resample(None)]
    pcm = np.concatenate(parts)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return pcm.size / rate


@pytest.fixture(scope="module")
def mic_loop_s(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fake-mic")
    return folder, fake_microphone_wav(folder / "mic.wav")


@pytest.fixture(scope="module")
def browser(mic_loop_s):
    folder, _ = mic_loop_s
    with chromium(f"--use-file-for-fake-audio-capture={folder / 'mic.wav'}") as b:
        yield b


@pytest.fixture
def page(browser):
    yield from checked_page(browser, permissions=["microphone"])


def audio_direction(sdp: str) -> str:
    """The direction attribute of the offer's audio section."""
    section = sdp.split("m=audio", 1)[1].split("\nm=", 1)[0]
    return next(d for d in ("sendrecv", "recvonly", "sendonly", "inactive") if f"a={d}" in section)


def test_talking_interrupts_the_gateway(page, server, mic_loop_s):
    _, loop_s = mic_loop_s
    offers: list[str] = []
    page.on("request", lambda r: offers.append(r.post_data_json["sdp"]) if r.url.endswith("/v1/webrtc/offer") else None)
    open_page(page, server)
    assert page.evaluate("cbf.state.transport") == "webrtc"
    assert not page.is_checked("#barge") and page.is_enabled("#barge")  # off by default
    assert audio_direction(offers[-1]) == "recvonly"  # no microphone: today's offer

    page.check("#barge")
    page.wait_for_function("cbf.state.connected && cbf.state.micLive && cbf.state.bargeMode === 'vad'",
                           timeout=20_000)
    assert len(offers) == 2 and audio_direction(offers[-1]) == "sendrecv"  # the microphone goes on the connection

    # The fake microphone speaks while the gateway is silent: heard, and nothing to interrupt.
    page.wait_for_function("cbf.events.some(e => e.type === 'speech_started')", timeout=(loop_s + 5) * 1000)
    assert "speech heard" in page.inner_text("#barge-status")
    # The gateway speaks a long text from within that speech (no new onset: the VAD holds it as one), so the next
    # onset, after the file's silent lead as it loops (LEAD_S), comes while the gateway speaks, and cuts in.
    page.fill("#text", LONG_TEXT)
    page.click("#speak")
    page.wait_for_function("cbf.utterances.at(-1).firstAudible != null || cbf.events.some(e => e.type === "
                           "'interrupted')", timeout=20_000)
    heard_at = page.evaluate("cbf.utterances.at(-1).firstAudible")
    assert heard_at is not None, f"interrupted before its first audio was heard: {page.evaluate('cbf.events')}"
    page.wait_for_function("cbf.events.some(e => e.type === 'interrupted')", timeout=(loop_s + 5) * 1000)
    buffered = page.evaluate("cbf.metrics.bufferMs")  # Chromium's jitter buffer as the cut came (stats every 100 ms)
    events = page.evaluate("cbf.events")
    u = page.evaluate("(({serverId, finished, stoppedAt, interrupted}) => ({serverId, finished, stoppedAt, "
                      "interrupted}))(cbf.utterances.at(-1))")
    kinds = [e["type"] for e in events]
    interrupted = next(e for e in events if e["type"] == "interrupted")
    assert interrupted["at"] > heard_at  # the page heard the gateway speak before it was cut
    # the server's truth, from the data channel: speech heard again, the utterance cancelled, then interrupted
    last_start = max(i for i, k in enumerate(kinds) if k == "speech_started")
    cancelled = [i for i, e in enumerate(events) if e["type"] == "cancelled" and e.get("utterance") == u["serverId"]]
    assert last_start < cancelled[0] < kinds.index("interrupted"), kinds
    assert [c["utterance"] for c in interrupted["utterances"]] == [u["serverId"]], interrupted
    assert "done" not in [e["type"] for e in events if e.get("utterance") == u["serverId"]], kinds
    reaction = interrupted["reaction_ms"]
    assert isinstance(reaction, int) and 0 <= reaction < 1000, interrupted
    # the page: the utterance is over, and the figures shown are the gateway's reaction and the page's own
    assert u["finished"] and u["stoppedAt"] is not None and u["interrupted"]["reaction_ms"] == reaction
    page.wait_for_function("document.getElementById('cut-in').textContent !== '–'", timeout=2_000)
    assert page.inner_text("#cut-in").strip() == str(reaction)
    status = page.inner_text("#barge-status")
    assert "interrupted" in status and f"cut in: {reaction} ms" in status, status
    page.wait_for_function("cbf.metrics.interruptToSilenceMs != null", timeout=5_000)
    after = page.evaluate("cbf.metrics.interruptToSilenceMs")
    assert page.inner_text("#cut-silence").strip() == str(after)
    # the gateway stays silent: nothing audible reached the page in the last 300 ms of the 1.5 s watch
    assert not page.evaluate("cbf.audibleWithin(300)"), "the gateway's audio went on after it was interrupted"
    # What the page heard after the event is what Chromium's jitter buffer held (no page can flush it, as for Stop
    # in tests/test_page.py); the gateway went silent from its next frame, so nothing comes beyond it. One sample,
    # hence more room than test_stop_silences_at_once's median of three.
    assert after <= (buffered or 0) + AFTER_BUFFER_MS, \
        f"audio went on {after} ms after interrupted ({buffered} ms buffered)"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "page-barge-in.png"), full_page=True)
    print(f"\nbarge-in: cut in {reaction} ms at the gateway; the page heard its last audio {after} ms after "
          f"interrupted, with {buffered} ms in the jitter buffer; events {kinds}")

    # off again: a new connection without the microphone
    page.uncheck("#barge")
    page.wait_for_function("cbf.state.connected && !cbf.state.micLive", timeout=20_000)
    assert audio_direction(offers[-1]) == "recvonly"
    assert page.inner_text("#barge-status").strip() == ""


def test_switch_needs_webrtc(page, server):
    open_page(page, server, "?transport=ws")
    assert page.evaluate("cbf.state.transport") == "ws"
    assert page.is_disabled("#barge") and not page.is_checked("#barge")
    assert "needs WebRTC" in page.get_attribute("#barge-label", "title")
    page.select_option("#transport", "webrtc")
    page.wait_for_function("cbf.state.connected && cbf.state.transport === 'webrtc'", timeout=20_000)
    assert page.is_enabled("#barge")
