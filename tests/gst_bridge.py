"""A phone bridge's WebRTC leg, played by GStreamer's webrtcbin (not aiortc, not Chromium): it offers PCMU only (and
telephone-event, 20 ms ptime), no data channel, over WHEP; decodes what it hears to 8 kHz s16le mono in a file.

Runs under the system Python with Debian's GStreamer (python3-gi), not the project's venv:

    /usr/bin/python3 tests/gst_bridge.py --whep http://127.0.0.1:8197/v1/whep --out heard.pcm [--key KEY]

Prints ``location <path>`` once answered, ``state <state>`` as the peer connection changes, and ``error ...`` on a
failure; hangs up (DELETE on the location, then stops) when its stdin closes or after ``--seconds``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import urllib.error
import urllib.request
from urllib.parse import urljoin

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("GstWebRTC", "1.0")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC  # noqa: E402

CAPS = ("application/x-rtp,media=audio,encoding-name=PCMU,payload=0,clock-rate=8000,a-ptime=(string)20;"
        "application/x-rtp,media=audio,encoding-name=TELEPHONE-EVENT,payload=101,clock-rate=8000")
DECODE = "rtppcmudepay ! mulawdec ! audioconvert ! audioresample ! audio/x-raw,format=S16LE,rate=8000,channels=1 ! "


def say(*words: object) -> None:
    print(*words, flush=True)


class Bridge:
    def __init__(self, whep: str, out: str, key: str | None) -> None:
        self.whep, self.out, self.key = whep, out, key
        self.location: str | None = None
        self.loop = GLib.MainLoop()
        self.pipe = Gst.Pipeline.new("bridge")
        self.webrtc = Gst.ElementFactory.make("webrtcbin", "webrtc")
        self.webrtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
        self.pipe.add(self.webrtc)
        self.webrtc.emit("add-transceiver", GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY,
                         Gst.Caps.from_string(CAPS))
        self.webrtc.connect("pad-added", self._on_pad)
        self.webrtc.connect("notify::ice-gathering-state", self._on_gathering)
        self.webrtc.connect("notify::connection-state", self._on_state)
        self._offered = False

    def run(self, seconds: float) -> None:
        self.pipe.set_state(Gst.State.PLAYING)
        promise = Gst.Promise.new()
        self.webrtc.emit("create-offer", None, promise)
        promise.wait()
        reply = promise.get_reply()
        offer = reply.get_value("offer")
        self.webrtc.emit("set-local-description", offer, None)  # gathering starts; the POST waits for its end
        GLib.timeout_add(int(seconds * 1000), self.loop.quit)
        threading.Thread(target=self._until_stdin_closes, daemon=True).start()
        self.loop.run()
        self.hang_up()

    def _until_stdin_closes(self) -> None:
        sys.stdin.read()
        GLib.idle_add(self.loop.quit)

    def _on_gathering(self, *_args: object) -> None:
        if self.webrtc.get_property("ice-gathering-state") == GstWebRTC.WebRTCICEGatheringState.COMPLETE \
                and not self._offered:
            self._offered = True
            sdp = self.webrtc.get_property("local-description").sdp.as_text()
            threading.Thread(target=self._post, args=(sdp,), daemon=True).start()

    def _request(self, method: str, url: str, body: bytes | None = None) -> tuple[int, dict, bytes]:
        request = urllib.request.Request(url, data=body, method=method)
        if body is not None:
            request.add_header("Content-Type", "application/sdp")
        if self.key:
            request.add_header("Authorization", f"Bearer {self.key}")
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return reply.status, dict(reply.headers), reply.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def _post(self, offer: str) -> None:
        say("offer", offer.replace("\r\n", "\\n"))
        status, headers, body = self._request("POST", self.whep, offer.encode())
        if status != 201:
            say("error", status, body.decode(errors="replace"))
            GLib.idle_add(self.loop.quit)
            return
        self.location = headers.get("Location") or headers.get("location")
        say("location", self.location)
        _, message = GstSdp.SDPMessage.new_from_text(body.decode())
        answer = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, message)
        GLib.idle_add(lambda: self.webrtc.emit("set-remote-description", answer, None) and False)

    def _on_state(self, *_args: object) -> None:
        state = self.webrtc.get_property("connection-state")
        say("state", state.value_nick)
        if state == GstWebRTC.WebRTCPeerConnectionState.FAILED:
            GLib.idle_add(self.loop.quit)

    def _on_pad(self, _element: Gst.Element, pad: Gst.Pad) -> None:
        if pad.direction != Gst.PadDirection.SRC:
            return
        decode = Gst.parse_bin_from_description(DECODE + f"filesink location={self.out} sync=false", True)
        self.pipe.add(decode)
        decode.sync_state_with_parent()
        pad.link(decode.get_static_pad("sink"))

    def hang_up(self) -> None:
        if self.location:
            status, _, _ = self._request("DELETE", urljoin(self.whep, self.location))
            say("deleted", status)
        self.pipe.set_state(Gst.State.NULL)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--whep", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--key")
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    Gst.init(None)
    Bridge(args.whep, args.out, args.key).run(args.seconds)


if __name__ == "__main__":
    main()
