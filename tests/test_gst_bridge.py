"""A phone bridge built on a WebRTC stack other than aiortc and Chromium: GStreamer's webrtcbin (tests/gst_bridge.py,
under the system python3; its DTLS certificate is RSA) offers PCMU only, telephone-event and no data channel over WHEP,
while an agent's WebSocket, attached by session id, speaks into the call. The bridge must hear the speech, with the
PerTh watermark on what it heard.

Debian's packages come from ``make test`` (scripts/install-gstreamer). Without them the test skips, except under
CI=true, where it fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from websockets.asyncio.client import connect

BRIDGE = Path(__file__).with_name("gst_bridge.py")
SYSTEM_PYTHON = "/usr/bin/python3"
SPEECH_RMS = 300.0
TEXT = ("Hello, you have reached the front desk. Your table for four is booked for eight tonight, "
        "and we look forward to seeing you.")


def gstreamer_missing() -> str | None:
    """Why the bridge cannot run here, or None."""
    check = ('import gi; gi.require_version("Gst", "1.0"); gi.require_version("GstWebRTC", "1.0"); '
             'from gi.repository import Gst; Gst.init(None); '
             'assert Gst.ElementFactory.find("webrtcbin") and Gst.ElementFactory.find("nicesrc")')
    try:
        result = subprocess.run([SYSTEM_PYTHON, "-c", check], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return f"no {SYSTEM_PYTHON}"
    if result.returncode:
        return ("GStreamer's webrtcbin, libnice or python3-gi is missing (scripts/install-gstreamer installs them): "
                + result.stderr.strip().splitlines()[-1])
    return None


@pytest.fixture(scope="module")
def url(plain_server: str) -> str:
    if reason := gstreamer_missing():
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return plain_server  # tests/conftest.py: one server for the files that only speak through it


async def line_starting(stream: asyncio.StreamReader, *prefixes: str, timeout: float = 30) -> str:
    """The bridge's next output line that starts with one of ``prefixes`` (its protocol: see gst_bridge.py)."""
    async with asyncio.timeout(timeout):
        while line := (await stream.readline()).decode():
            if line.startswith(prefixes):
                return line.strip()
    raise AssertionError(f"the bridge exited before saying {prefixes}")


async def test_a_gstreamer_bridge_hears_an_agent_over_whep(url, tmp_path, watermarker):
    heard = tmp_path / "heard.pcm"
    bridge = await asyncio.create_subprocess_exec(
        SYSTEM_PYTHON, str(BRIDGE), "--whep", url + "/v1/whep", "--out", str(heard), "--seconds", "90",
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        location = await line_starting(bridge.stdout, "location", "error")
        assert location.startswith("location /v1/whep/sessions/"), location
        assert await line_starting(bridge.stdout, "state connected", "state failed") == "state connected"
        session = location.rsplit("/", 1)[1]
        async with connect(url.replace("http://", "ws://") + f"/v1/stream?session={session}") as ws:
            ready = json.loads(await ws.recv())
            assert ready["type"] == "ready" and ready["codec"] == "pcmu"
            await ws.send(json.dumps({"type": "speak", "text": TEXT}))
            while (event := json.loads(await asyncio.wait_for(ws.recv(), 60)))["type"] != "done":
                assert event["type"] == "chunk", event
            bridge.stdin.close()  # the caller hangs up: the bridge sends DELETE
            assert await line_starting(bridge.stdout, "deleted") == "deleted 200"
            ended = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert ended["type"] == "ended" and "DELETE" in ended["reason"]
        assert await asyncio.wait_for(bridge.wait(), 30) == 0
    finally:
        if bridge.returncode is None:
            bridge.kill()
            await bridge.wait()
    pcm = np.frombuffer(heard.read_bytes(), dtype="<i2").astype(np.float64)
    frames = pcm[: pcm.size // 160 * 160].reshape(-1, 160)  # 20 ms at 8 kHz
    loud = np.flatnonzero(np.sqrt((frames ** 2).mean(axis=1)) > SPEECH_RMS)
    assert len(loud) * 0.02 > 0.5 * event["audio_seconds"], "the bridge did not hear the speech"
    speech = frames[loud[0]:loud[-1] + 1].reshape(-1) / 32768.0
    confidence = watermarker.detect(speech.astype(np.float32), 8000)
    print(f"bridge heard {len(loud) * 0.02:.2f} s of speech of {event['audio_seconds']:.2f} s sent; "
          f"PerTh confidence {confidence:.2f}")
    assert confidence >= 0.5
