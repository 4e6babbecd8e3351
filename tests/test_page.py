"""The audition page (web/) in headless Chromium against a real gateway with the embedded eSpeak engine.

Everything is measured inside the page (window.cbf): the onset of audio by an AnalyserNode, WebRTC figures from
getStats(), the WebSocket path's underruns from the AudioWorklet. Needs Debian's Chromium at /usr/bin/chromium
(`scripts/install-chromium`); Playwright never downloads a browser here.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import warnings
import wave
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import numpy as np
import pytest

from cbf_tools.peers.local_server import ROOT
from tests.server import running_server

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("CBF_CHROMIUM", "/usr/bin/chromium")  # Debian's package; another path for another OS
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--autoplay-policy=no-user-gesture-required",
    "--disable-features=WebRtcHideLocalIpsWithMdns",
]
ARTIFACTS = ROOT / "test-artifacts"
SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs far away into the quiet green hills."
LONG_TEXT = " ".join([SENTENCE] * 4)
SHORT = "The quick brown fox jumps over the lazy dog."  # 2.6 s of eSpeak to SENTENCE's 5.6, where length is not the point
STOP_SILENCE_MS = 200
STOP_AFTER_BUFFER_MS = 150  # WebRTC: beyond the browser's jitter buffer at Stop
# Chrome's jitter buffer (NetEq) on the loopback path adapts down to a 20 ms target (30 to 40 ms buffered). On a
# shared 2-core host a scheduling stall of the gateway or of Chromium (70 to 120 ms, measured at load 4 to 5 in about
# one utterance in four) outlasts that, and Chrome conceals: a fact about the host, not about the server's pacing.
# The concealment check asks for a larger target (RTCRtpReceiver.jitterBufferTarget) on every peer connection the
# page makes, so that it tests the pacing and the page's count rather than the scheduler. Heavier load still stalls
# the host for longer (up to seconds, measured at load 6 to 7), hence that check's one retry, reported.
JITTER_TARGET_MS = 150
JITTER_TARGET_SCRIPT = """(() => {
  const Native = RTCPeerConnection;
  window.RTCPeerConnection = function (...args) {
    const pc = new Native(...args);
    pc.addEventListener("track", (e) => { e.receiver.jitterBufferTarget = %d; });
    return pc;
  };
  window.RTCPeerConnection.prototype = Native.prototype;
})();""" % JITTER_TARGET_MS



class RetriedCheck(UserWarning):
    """A check that failed once and was tried again: listed in pytest's warnings summary even when the retry passes."""


def report_retry(what: str) -> None:
    load = os.getloadavg()[0]
    warnings.warn(f"{what} (host load average {load:.1f} on {os.cpu_count()} CPUs); trying once more", RetriedCheck)


def js_round(value: float) -> str:
    """What JavaScript's Math.round shows (x.5 rounds up; Python's round() goes to even)."""
    return str(math.floor(value + 0.5))

def _sync_playwright():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium is missing at {CHROMIUM}: install Debian's package with `scripts/install-chromium` "
                    "(or `make chromium`); do not run `playwright install`.", pytrace=False)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: `make venv` (the [test] extra).", pytrace=False)
    return sync_playwright


@contextlib.contextmanager
def chromium(*extra_args: str) -> Iterator:
    """Debian's Chromium under playwright, with the suite's flags and ``extra_args``."""
    with _sync_playwright()() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=False, args=CHROMIUM_ARGS + list(extra_args))
        yield b
        b.close()


def checked_page(browser, **context_options) -> Iterator:
    """A page in a context of its own; the test fails on any JavaScript error the page raised."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, **context_options)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert not errors, f"JavaScript errors in the page: {errors}"


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(voices_dir=tmp_path_factory.mktemp("voices")) as url:
        yield url


PAGE_KEY = "page-secret-0123"


@pytest.fixture(scope="module")
def keyed(tmp_path_factory) -> Iterator[SimpleNamespace]:
    """One gateway with an API key (PAGE_KEY) for the key and token tests, its --cors-origins naming the origin of a
    stand-in app (CROSS_ORIGIN_PAGE and a /mint backend that holds the key); the same app on another origin, not
    listed. Nothing these tests do (tokens minted, sessions that end) changes what the next one meets. Yields the
    gateway's ``url``, ``app_origin`` and ``other_origin``."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route

    from tests.server import serving

    gateway_url: list[str] = []

    async def mint(request):
        async with httpx.AsyncClient() as http:
            answer = await http.post(gateway_url[0] + "/v1/tokens", json={"ttl_s": 120, "sessions": 1},
                                     headers={"Authorization": f"Bearer {PAGE_KEY}"})
        return JSONResponse(answer.json())

    app = Starlette(routes=[Route("/", lambda r: HTMLResponse(CROSS_ORIGIN_PAGE)),
                            Route("/mint", mint, methods=["POST"])])
    with serving(app) as app_url, serving(app) as other_url:
        app_origin, other_origin = (u.replace("127.0.0.1", "localhost") for u in (app_url, other_url))
        with running_server("--api-key", PAGE_KEY, "--cors-origins", app_origin,
                            voices_dir=tmp_path_factory.mktemp("keyed-voices")) as url:
            gateway_url.append(url)
            yield SimpleNamespace(url=url, app_origin=app_origin, other_origin=other_origin)


@pytest.fixture
def page(browser):
    yield from checked_page(browser)


def open_page(page, url: str, query: str = "") -> None:
    page.goto(f"{url}/{query}")
    page.wait_for_function("window.cbf && window.cbf.state.connected", timeout=20_000)


def speak_and_wait(page, text: str) -> dict:
    """Type, press Enter, wait for the first audible sample and for the utterance to finish playing."""
    page.fill("#text", text)
    page.focus("#text")
    page.keyboard.press("Enter")  # Enter speaks
    page.wait_for_function("cbf.utterances.length && cbf.utterances.at(-1).firstAudible != null", timeout=20_000)
    page.wait_for_function("cbf.utterances.at(-1).finished", timeout=30_000)
    return page.evaluate("""() => {
        const u = cbf.utterances.at(-1);
        return {ttfa: u.ttfaMs, peak: u.peak, chunks: u.chunks.length, timeline: u.timeline, done: u.serverDone,
                conceal: u.concealmentEvents, transport: u.transport, failed: !!u.failed};
    }""")


def wav_bytes(seconds: float, rate: int = 24000) -> bytes:
    """A voiced, speech-like buzz (gliding pitch, harmonics, syllable-rate envelope)."""
    t = np.arange(int(seconds * rate)) / rate
    phase = 2 * np.pi * np.cumsum(140 + 20 * np.sin(2 * np.pi * 0.7 * t)) / rate
    x = sum(np.sin(k * phase) / k for k in range(1, 8)) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t) ** 2)
    pcm = (x / np.abs(x).max() * 0.5 * 32767).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


def test_webrtc_speech_measured_in_page(page, server):
    open_page(page, server)
    assert page.evaluate("cbf.state.transport") == "webrtc", page.evaluate("cbf.state")
    u = speak_and_wait(page, SENTENCE)
    assert not u["failed"] and u["transport"] == "webrtc"
    assert u["peak"] > page.evaluate("cbf.THRESH"), "no audio energy reached the page's analyser"
    # the time-to-first-audio figure, measured in the page, is shown
    assert 0 < u["ttfa"] < 10_000
    assert page.inner_text("#ttfa").strip() == js_round(u["ttfa"])
    assert u["done"]["ttfa"] > 0 and page.inner_text("#ttfa-server").strip().isdigit()
    # getStats(): inbound audio, the codec, and no concealment after the first audio
    page.evaluate("cbf.rtcStats()")
    inbound = page.evaluate("cbf.metrics.inbound")
    assert inbound["packetsReceived"] > 0 and inbound["totalAudioEnergy"] > 0, inbound
    assert inbound["mimeType"].lower() in ("audio/opus", "audio/pcmu", "audio/pcma"), inbound
    assert page.inner_text("#codec").strip() not in ("", "–")
    assert page.inner_text("#underruns").strip().isdigit()  # concealment events: test_webrtc_plays_without_concealment
    assert page.evaluate("cbf.metrics.bufferMs") is not None
    # the chunk timeline has entries
    assert u["chunks"] >= 1 and len(u["timeline"]) == u["chunks"]
    assert page.locator("#tl-list li").count() == u["chunks"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "page.png"), full_page=True)
    print(f"\nWebRTC: first audio heard in the page after {u['ttfa']:.0f} ms (server ttfa "
          f"{u['done']['ttfa'] * 1000:.0f} ms), {u['chunks']} chunks, codec {inbound['mimeType']}")


def test_webrtc_plays_without_concealment(page, server):
    """From its first audio to its end, an utterance plays with no concealment (a stream with gaps, paced too slowly
    or with wrong timestamps conceals), with the jitter-buffer target of JITTER_TARGET_MS."""
    page.add_init_script(JITTER_TARGET_SCRIPT)
    open_page(page, server)
    assert page.evaluate("cbf.state.transport") == "webrtc"
    # Chrome conceals once or twice while its jitter buffer starts (measured: within the stream's first 65 packets,
    # 1.3 s, before any speech; the test used to speak 0.1 s after connecting): speak once the stream has run 2 s.
    page.wait_for_function("cbf.metrics.inbound && cbf.metrics.inbound.packetsReceived >= 100", timeout=10_000)
    u = speak_and_wait(page, SENTENCE)
    assert not u["failed"] and u["transport"] == "webrtc" and u["peak"] > page.evaluate("cbf.THRESH")
    inbound = page.evaluate("cbf.rtcStats()")
    target = page.evaluate("cbf.metrics.jitterTargetMs")
    assert target is not None and target >= 0.9 * JITTER_TARGET_MS, f"the jitter-buffer target was not applied: {target}"
    conceal = [u["conceal"]]
    if conceal[0] != 0:
        # One retry, reported: a stall of the host longer than the jitter buffer (see JITTER_TARGET_MS) hits one
        # utterance; a problem of the pacing or of the page's count conceals again.
        report_retry(f"WebRTC: {conceal[0]} concealment events after the first audio; inbound-rtp: {inbound}")
        conceal.append(speak_and_wait(page, SENTENCE)["conceal"])
        inbound = page.evaluate("cbf.rtcStats()")
    assert conceal[-1] == 0, f"concealment events after the first audio, per try: {conceal}; inbound-rtp: {inbound}"
    assert page.inner_text("#underruns").strip() == "0"


def test_websocket_forced_by_toggle(page, server):
    open_page(page, server)
    page.select_option("#transport", "ws")
    page.wait_for_function("cbf.state.connected && cbf.state.transport === 'ws'", timeout=20_000)
    u = speak_and_wait(page, SENTENCE)
    assert not u["failed"] and u["transport"] == "ws"
    assert u["peak"] > page.evaluate("cbf.THRESH")
    assert 0 < u["ttfa"] < 10_000 and page.inner_text("#ttfa").strip() == js_round(u["ttfa"])
    underruns = [page.evaluate("cbf.metrics.underruns")]
    if underruns[0] != 0:  # one retry, reported, as for WebRTC's concealment
        report_retry(f"WebSocket: {underruns[0]} underruns in the worklet")
        speak_and_wait(page, SENTENCE)
        underruns.append(page.evaluate("cbf.metrics.underruns"))
    assert underruns[-1] == 0, f"worklet underruns per try: {underruns}; {page.evaluate('cbf.metrics.worklet')}"
    assert page.inner_text("#codec").startswith("PCM s16le")
    assert u["chunks"] >= 1 and page.locator("#tl-list li").count() == u["chunks"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "page-ws.png"), full_page=True)
    print(f"\nWebSocket: first audio heard in the page after {u['ttfa']:.0f} ms, {u['chunks']} chunks")


CONTEXT_RATE_SCRIPT = """(() => {
  const Native = AudioContext;
  window.AudioContext = class extends Native {
    constructor(options) { super({ ...(options || {}), sampleRate: %d }); }
  };
})();"""


@pytest.mark.parametrize(("context_rate", "asked"), [(44100, 44100), (16000, 16000), (96000, 48000)])
def test_websocket_asks_for_the_audio_contexts_own_rate_where_the_server_offers_it(page, server, context_rate, asked):
    """Issue 52 item 6: a browser at 44.1 kHz asks for 44100 (the server resamples with swresample, the worklet not at
    all); a rate the server does not offer (96 kHz) gets the nearest offered, which the worklet resamples."""
    page.add_init_script(CONTEXT_RATE_SCRIPT % context_rate)
    sent: list[dict] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(json.loads(payload))
                                          if isinstance(payload, str) else None))
    open_page(page, server, "?transport=ws")
    assert page.evaluate("cbf.state.transport") == "ws"
    assert page.evaluate("cbf.state.sampleRate") == context_rate
    ready = next(e for e in page.evaluate("cbf.events") if e["type"] == "ready")
    assert (asked == context_rate) == (context_rate in ready["formats"]["pcm_s16le"])
    configs = [m for m in sent if m.get("type") == "config" and "sample_rate" in m]
    assert configs == [{"type": "config", "format": "pcm_s16le", "sample_rate": asked}]
    assert page.evaluate("cbf.state.wsRate") == asked
    resampled = "" if asked == context_rate else f" (resampled to {context_rate / 1000:g} kHz here)"
    assert page.inner_text("#codec").strip() == f"PCM s16le {asked / 1000:g} kHz{resampled}"
    u = speak_and_wait(page, SHORT)
    assert not u["failed"] and u["transport"] == "ws" and u["peak"] > page.evaluate("cbf.THRESH")
    # The worklet took the utterance's length in its context's samples: the rate it was told is the one that came.
    # (What it took, not what it played: under load the page's own timer can finish the utterance before its audio
    # thread has played it all.)
    page.wait_for_function("cbf.metrics.worklet.ended", timeout=10_000)
    received = page.evaluate("cbf.metrics.worklet.received")
    assert received == pytest.approx(u["done"]["audio_seconds"], rel=0.02), (received, u["done"]["audio_seconds"])


def test_latency_control_beside_the_first_audio_figure(page, server):
    """Issue 24: the control sets each Speak's latency; the figure shows which applied (from the server's done)."""
    open_page(page, server)
    page.select_option("#latency", "prosody")
    u = speak_and_wait(page, SHORT)
    assert u["done"]["latency"] == "prosody" and u["done"]["first_audio_s"] == 0.5  # (the planner: test_latency)
    assert page.inner_text("#latency-applied").strip() == "prosody (0.5 s)"
    page.select_option("#latency", "fastest")
    u = speak_and_wait(page, SHORT)
    assert u["done"]["latency"] == "fastest" and u["done"]["first_audio_s"] == 0.0
    assert page.inner_text("#latency-applied").strip() == "fastest (0 s)"


def test_webrtc_pcmu_chosen_in_page(page, server):
    open_page(page, server)
    page.select_option("#codec-pref", "pcmu")
    page.wait_for_function("cbf.state.connected && cbf.state.transport === 'webrtc'", timeout=20_000)
    u = speak_and_wait(page, "A telephone codec.")
    assert not u["failed"] and u["peak"] > page.evaluate("cbf.THRESH")
    page.evaluate("cbf.rtcStats()")
    assert page.evaluate("cbf.metrics.inbound.mimeType").lower() == "audio/pcmu"
    assert page.inner_text("#codec").startswith("PCMU 8 kHz")


def test_auto_falls_back_to_websocket_when_webrtc_hangs(page, server):
    # A peer connection whose answer never applies: auto mode must give up on WebRTC and use the WebSocket.
    page.add_init_script("RTCPeerConnection.prototype.setRemoteDescription = () => new Promise(() => {});")
    open_page(page, server)
    assert page.evaluate("cbf.state.transport") == "ws"
    assert "WebRTC connection" in page.evaluate("cbf.state.fallbackReason")
    assert "fell back" in page.inner_text("#conn-text")


@pytest.mark.parametrize("transport", ["webrtc", "ws"])
def test_stop_silences_at_once(page, server, transport):
    """Stop mid-sentence: the analyser on the stream (not the muted speaker) must see silence within 200 ms.

    Three stops, judged by their median: one stop on a loaded 2-core machine can land on a jitter-buffer spike."""
    open_page(page, server, f"?transport={transport}")
    assert page.evaluate("cbf.state.transport") == transport
    page.fill("#text", LONG_TEXT)
    figures = []
    for _ in range(3):
        page.click("#speak")
        page.wait_for_function("cbf.utterances.at(-1).firstAudible != null", timeout=20_000)
        page.wait_for_timeout(600)  # mid-sentence
        page.wait_for_function("cbf.audibleWithin(15)", timeout=5_000, polling=5)
        buffered = page.evaluate("cbf.metrics.bufferMs")
        page.click("#stop")
        page.wait_for_function("cbf.metrics.stopToSilenceMs != null", timeout=5_000)
        ms, was_audible = page.evaluate("[cbf.metrics.stopToSilenceMs, cbf.metrics.stopWasAudible]")
        assert was_audible, "audio was not playing when Stop was pressed"
        figures.append((ms, buffered))
        page.wait_for_function("cbf.events.filter(e => e.type === 'cancelled').length >= %d" % len(figures),
                               timeout=5_000)
        page.wait_for_timeout(300)
    print(f"\n{transport}: silent after Stop (ms, buffer ahead at Stop ms): {figures}")
    if transport == "webrtc":
        # Chromium's jitter buffer (NetEq) plays out what it holds, and holds more on a loaded machine (seen: 273 and
        # 282 ms in a CI run, against ~110 idle); no page can flush it. What the gateway controls is that nothing
        # comes after it: silence within what was buffered at Stop, plus a tick, a stats poll and the detector.
        after = sorted(ms - (buffered or 0) for ms, buffered in figures)[1]
        assert after <= STOP_AFTER_BUFFER_MS, f"audio went on after Stop: {figures} (ms, buffer ahead ms)"
    else:  # the page's own playout buffer, which Stop drops
        median = sorted(ms for ms, _ in figures)[1]
        assert median <= STOP_SILENCE_MS, f"audio went on after Stop: {figures} (ms, buffer ahead ms)"
    # the session goes on: the next utterance plays (nothing of the cancelled ones is left to block it)
    u = speak_and_wait(page, "Still here.")
    assert not u["failed"] and u["peak"] > page.evaluate("cbf.THRESH")


def test_voice_upload_errors_clone_and_delete(page, server):
    open_page(page, server)
    cases = [
        ("notes.wav", b"this is a text file, not audio\n" * 40),  # a text file renamed .wav
        ("short.wav", wav_bytes(1.0)),  # a real clip, too short
    ]
    for filename, data in cases:
        expected = httpx.post(f"{server}/v1/voices", data={"name": "probe"},
                              files={"file": (filename, data, "audio/wav")}).json()["error"]["message"]
        page.fill("#clone-name", "bad_clip")
        page.set_input_files("#clone-file", files=[{"name": filename, "mimeType": "audio/wav", "buffer": data}])
        page.click("#clone")
        page.wait_for_function("document.getElementById('clone-status').classList.contains('error')",
                               timeout=10_000)
        assert page.inner_text("#clone-status").strip() == expected
        page.evaluate("document.getElementById('clone-status').className = 'status'")
    # a good clip becomes a voice in the picker; delete needs two presses
    page.fill("#clone-name", "page_voice")
    page.set_input_files("#clone-file", files=[{"name": "good.wav", "mimeType": "audio/wav", "buffer": wav_bytes(6)}])
    page.click("#clone")
    page.wait_for_function("cbf.state.voice === 'page_voice'", timeout=20_000)
    assert "page_voice" in page.inner_text("#voice")
    u = speak_and_wait(page, "A cloned voice speaking.")
    assert not u["failed"] and u["peak"] > page.evaluate("cbf.THRESH")
    page.wait_for_function("!cbf.state.speaking", timeout=10_000)
    page.click("#delete-voice")
    assert "again" in page.inner_text("#delete-voice")
    page.click("#delete-voice")
    page.wait_for_function("!cbf.voices.some(v => v.name === 'page_voice')", timeout=10_000)
    assert [v["name"] for v in httpx.get(f"{server}/v1/voices").json()["voices"]] == ["default"]


def test_clone_from_microphone(browser, server):
    # Chromium's fake capture device plays a beep: enough to check the record -> WAV -> upload path.
    context = browser.new_context(permissions=["microphone"])
    page = context.new_page()
    try:
        open_page(page, server)
        page.click("#record")
        page.wait_for_selector("#record[aria-pressed='true']", timeout=10_000)  # the microphone is open
        page.wait_for_timeout(6_000)
        page.click("#record")
        page.wait_for_function("/^(recorded|could)/.test(document.getElementById('record-status').textContent)",
                               timeout=10_000)
        assert page.inner_text("#record-status").startswith("recorded"), page.inner_text("#record-status")
        page.fill("#clone-name", "mic_voice")
        page.click("#clone")
        page.wait_for_function("cbf.state.voice === 'mic_voice'", timeout=20_000)
        assert "cloned" in page.inner_text("#clone-status")
    finally:
        context.close()
        httpx.delete(f"{server}/v1/voices/mic_voice")


def test_api_key_asked_once_kept_in_memory_and_exchanged_for_a_token(browser, keyed):
    url = keyed.url
    context = browser.new_context()
    page = context.new_page()
    urls: list[str] = []
    credentials: dict[str, str] = {}  # each /v1/ path: the credential its request carried
    page.on("request", lambda request: urls.append(request.url))
    page.on("request", lambda request: credentials.__setitem__(
        request.url.split("/v1/", 1)[-1], request.headers.get("authorization", "")) if "/v1/" in request.url else None)
    page.on("websocket", lambda ws: urls.append(ws.url))
    try:
        page.goto(url + "/")
        page.wait_for_selector("#key-form:not([hidden])", timeout=20_000)
        page.fill("#key-input", "wrong")
        page.press("#key-input", "Enter")
        page.wait_for_function("document.getElementById('key-error').textContent.includes('refused')",
                               timeout=10_000)
        page.fill("#key-input", PAGE_KEY)
        page.press("#key-input", "Enter")
        page.wait_for_function("window.cbf && cbf.state.connected", timeout=20_000)
        stored = page.evaluate("JSON.stringify([Object.values(sessionStorage), Object.values(localStorage), "
                               "document.cookie])")
        assert "page-secret" not in stored  # in the page's memory only
        assert page.is_hidden("#key-form")
        u = speak_and_wait(page, "Authorised.")
        assert not u["failed"] and u["peak"] > page.evaluate("cbf.THRESH")
        assert any("/v1/" in u for u in urls) and not [u for u in urls if "secret" in u]  # never in a URL
        assert credentials["tokens"] == f"Bearer {PAGE_KEY}"  # the key goes to /v1/tokens only
        spoken_with = [c for path, c in credentials.items() if path != "tokens"]
        assert spoken_with and all(c.startswith("Bearer cbft.") for c in spoken_with), credentials
    finally:
        context.close()


def test_a_link_with_a_token_speaks_without_a_key(browser, keyed):
    url = keyed.url
    context = browser.new_context()
    page = context.new_page()
    try:
        token = httpx.post(url + "/v1/tokens", json={"routes": ["stream", "webrtc", "voices"]},
                           headers={"Authorization": f"Bearer {PAGE_KEY}"}).json()["token"]
        page.goto(f"{url}/#token={token}")
        page.wait_for_function("window.cbf && cbf.state.connected", timeout=20_000)
        assert page.is_hidden("#key-form") and token not in page.url  # dropped from the address bar
        u = speak_and_wait(page, "A token from the link.")
        assert not u["failed"] and u["peak"] > page.evaluate("cbf.THRESH")
    finally:
        context.close()


def test_phone_sized_screen_and_keyboard(page, server):
    page.set_viewport_size({"width": 390, "height": 844})
    open_page(page, server)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone ({width} px)"
    # every control has a label, and Tab reaches the text box, Speak and Stop in order
    unlabelled = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea')]
        .filter(el => !el.labels || !el.labels.length).map(el => el.id)""")
    assert unlabelled == []
    order = []
    page.focus("#voice")
    for _ in range(6):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id"))
    assert order.index("text") < order.index("speak") < order.index("stop"), order
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "page-phone.png"), full_page=True)


CROSS_ORIGIN_PAGE = """<!doctype html><script>
window.run = async (gateway) => {
  const minted = await (await fetch("/mint", {method: "POST"})).json();  // the app's own backend holds the key
  const spoken = await fetch(gateway + "/v1/tts", {method: "POST", body: JSON.stringify({text: "Across origins."}),
    headers: {"Authorization": "Bearer " + minted.token, "content-type": "application/json"}});
  const bytes = (await spoken.arrayBuffer()).byteLength;
  const ws = new WebSocket(gateway.replace("http", "ws") + "/v1/stream", ["cbf.v1", "cbf.key." + minted.token]);
  ws.binaryType = "arraybuffer";
  let audio = 0;
  const done = await new Promise((resolve) => {
    ws.onmessage = (e) => {
      if (typeof e.data !== "string") { audio += e.data.byteLength; return; }
      const msg = JSON.parse(e.data);
      if (msg.type === "ready") ws.send(JSON.stringify({type: "speak", text: "Hello from another origin."}));
      if (msg.type === "done" || msg.type === "error") resolve(msg.type);
    };
    ws.onclose = (e) => resolve("closed " + e.code);
  });
  ws.close();
  return {status: spoken.status, bytes, done, audio};
};
// ?token= on the URLs (a client that cannot set a header or a subprotocol): a WebSocket, then a WebRTC offer
const speakOn = (send, text) => (e) => {
  const msg = JSON.parse(e.data);
  if (msg.type === "ready") send(JSON.stringify({type: "speak", text}));
  return msg.type === "done" || msg.type === "error" ? msg.type : null;
};
window.byQuery = async (gateway) => {
  const mint = async () => encodeURIComponent((await (await fetch("/mint", {method: "POST"})).json()).token);
  const ws = new WebSocket(gateway.replace("http", "ws") + "/v1/stream?token=" + await mint());
  ws.binaryType = "arraybuffer";
  const wsDone = await new Promise((resolve) => {
    const events = speakOn((m) => ws.send(m), "A token in the address.");
    ws.onmessage = (e) => { if (typeof e.data === "string") { const end = events(e); if (end) resolve(end); } };
    ws.onclose = (e) => resolve("closed " + e.code);
  });
  ws.close();
  const pc = new RTCPeerConnection();
  pc.addTransceiver("audio", {direction: "recvonly"});
  const dc = pc.createDataChannel("control", {ordered: true});
  const rtcDone = new Promise((resolve) => {
    const events = speakOn((m) => dc.send(m), "And over WebRTC.");
    dc.onmessage = (e) => { const end = events(e); if (end) resolve(end); };
  });
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((resolve) => {  // no trickle: the candidates gathered so far, 2 s at most
    if (pc.iceGatheringState === "complete") return resolve();
    setTimeout(resolve, 2000);
    pc.addEventListener("icegatheringstatechange", () => { if (pc.iceGatheringState === "complete") resolve(); });
  });
  const offered = await fetch(gateway + "/v1/webrtc/offer?token=" + await mint(), {method: "POST",
    headers: {"content-type": "application/json"}, body: JSON.stringify({sdp: pc.localDescription.sdp, type: "offer"})});
  if (!offered.ok) return {wsDone, rtc: offered.status};
  await pc.setRemoteDescription({type: "answer", sdp: (await offered.json()).sdp});
  const rtc = await rtcDone;
  pc.close();
  return {wsDone, rtc};
};
</script>"""


def test_a_page_on_another_origin_mints_through_its_backend_and_speaks_with_the_token(browser, keyed):
    """--cors-origins names the app's origin: its page gets a token from its own backend (a stub holding the key),
    then speaks over HTTP (a CORS preflight for Authorization) and a WebSocket (the token as a subprotocol), then
    with tokens in the URLs (``?token=``) over a WebSocket and WebRTC (the offer's POST: CORS). A page on an origin
    not listed cannot open the socket."""
    url = keyed.url
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(keyed.app_origin + "/")
        result = page.evaluate("(g) => run(g)", url)
        assert result["status"] == 200 and result["bytes"] > 1000, result
        assert result["done"] == "done" and result["audio"] > 1000, result
        assert page.evaluate("(g) => byQuery(g)", url) == {"wsDone": "done", "rtc": "done"}
        page.goto(keyed.other_origin + "/")  # not listed
        with pytest.raises(Exception, match="Failed to fetch"):
            page.evaluate("(g) => run(g)", url)
    finally:
        context.close()
