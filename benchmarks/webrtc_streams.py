"""Server-side CPU per outbound WebRTC stream, and push->decoded latency on loopback.

The server side (PacedAudioTrack + RTCPeerConnection, what the gateway runs per listener) lives in this process;
the listening aiortc peers run in a child process so their decoding is not counted. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/webrtc_streams.py --streams 10 --seconds 10 --codec opus
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from aiortc import RTCConfiguration, RTCPeerConnection  # noqa: E402

from gateway.track import PacedAudioTrack  # noqa: E402
from gateway.webrtc import negotiate  # noqa: E402
from rtc_client import SPEECH_RMS, Listener, tone  # noqa: E402


def client_main(conn, streams: int, codec: str, seconds: float) -> None:
    async def run() -> None:
        listeners = [Listener.create(codecs=[codec], datachannel=False) for _ in range(streams)]
        conn.send([await lst.offer() for lst in listeners])
        for lst, answer in zip(listeners, conn.recv()):
            await lst.accept(answer)
        await asyncio.sleep(seconds + 2.0)
        conn.send([[(f.at, f.rms) for f in lst.frames] for lst in listeners])
        for lst in listeners:
            await lst.close()

    asyncio.run(run())


async def server(streams: int, codec: str, seconds: float) -> None:
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=client_main, args=(child, streams, codec, seconds))
    proc.start()
    offers = await asyncio.to_thread(parent.recv)
    pcs, tracks = [], []
    for offer in offers:
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        track = PacedAudioTrack()
        await negotiate(pc, track, offer, None)
        pcs.append(pc)
        tracks.append(track)
    parent.send([pc.localDescription.sdp for pc in pcs])
    await asyncio.sleep(1.0)  # connect, then idle silence for a moment
    beep = tone(0.1, 1000)
    pushes: list[list[float]] = [[] for _ in tracks]
    late0 = sum(t.late_ticks for t in tracks)
    for t in tracks:
        t.max_late = 0.0  # count only the measured window
    cpu0, wall0 = os.times(), time.monotonic()
    while time.monotonic() - wall0 < seconds:  # 100 ms beeps every 500 ms, at a random tick phase
        for i, track in enumerate(tracks):
            pushes[i].append(time.time())
            track.feed(beep)
            track.end_of_utterance()
        await asyncio.sleep(0.5 + (len(pushes[0]) % 7) * 0.003)
    cpu1, wall = os.times(), time.monotonic() - wall0
    frames = await asyncio.to_thread(parent.recv)
    proc.join()
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    latencies = []
    for push_times, received in zip(pushes, frames):
        loud = [at for at, rms in received if rms > SPEECH_RMS]
        for pushed in push_times:
            onset = next((at for at in loud if at >= pushed), None)
            if onset is not None and onset - pushed < 0.4:
                latencies.append(1000 * (onset - pushed))
    print(f"{streams} {codec} streams, {wall:.1f} s: server CPU {100 * cpu / wall:.1f} % of a core, "
          f"{1000 * cpu / wall / streams:.1f} CPU-ms per stream-second; "
          f"late ticks {sum(t.late_ticks for t in tracks) - late0} (during connect {late0}), max late {1000 * max(t.max_late for t in tracks):.1f} ms, "
          f"underruns {sum(t.jitter.underruns for t in tracks)}")
    if latencies:
        q = statistics.quantiles(latencies, n=10)
        print(f"push->decoded (client jitter prefetch 0), {len(latencies)} beeps: min {min(latencies):.1f} / "
              f"median {statistics.median(latencies):.1f} / p90 {q[-1]:.1f} / max {max(latencies):.1f} ms")
    for pc in pcs:
        await pc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--codec", choices=("opus", "pcmu", "pcma"), default="opus")
    args = parser.parse_args()
    asyncio.run(server(args.streams, args.codec, args.seconds))


if __name__ == "__main__":
    main()
