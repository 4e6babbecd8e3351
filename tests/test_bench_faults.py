"""``chatterbox-fast bench faults``, short: generated hostile inputs on every surface of a real server (eSpeak engine:
WebSocket, data channel, a WebRTC session's controller, Cartesia's socket and routes, Deepgram's speak socket and REST route, Vapi's webhook, the phone stacks' sockets (AudioSocket's TCP port too), JSON routes and OpenAI's SSE, SDP
offers (JSON and WHEP), voice uploads, Wyoming events, the caller's audio and a phone call's controller's listen and
barge_in, tokens and origins) cause no server error, let no hostile token or origin through, drop no engine
connection, restart no worker, leak no session, lose no stored voice and leave a sound call beside them unharmed."""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest

from cbf_tools.bench import hostile_inputs
from cbf_tools.bench.faults import combined, failed, render_combined
from cbf_tools.peers.local_server import free_port
from gateway.cli import build_parser
from tests.server import running_server


def test_hostile_inputs_are_reproducible_and_hostile() -> None:
    import random

    first, again = (hostile_inputs.websocket_messages(random.Random(7), 300) for _ in range(2))
    assert first == again
    assert any("\\ud800" in m for m in first) and any("\\u0000" in m for m in first)
    assert any(m.startswith("[" * 40) for m in first)
    offers = hostile_inputs.offer_bodies(random.Random(7), 300)
    assert any("m=audio" in o for o in offers) and any(len(o) > 32 * 1024 for o in offers)
    whep = hostile_inputs.whep_offers(random.Random(7), 300)
    assert any(c == "application/sdp" for c, _ in whep) and any(c != "application/sdp" for c, _ in whep)
    asterisk = hostile_inputs.asterisk_frames(random.Random(7), 300)
    assert any(isinstance(f, bytes) for f in asterisk) and any('"MEDIA_START"' in f for f in asterisk if isinstance(f, str))
    vonage = hostile_inputs.vonage_frames(random.Random(7), 300)
    assert any(isinstance(f, bytes) for f in vonage) and any('"websocket:notify"' in f for f in vonage
                                                            if isinstance(f, str))
    uploads = hostile_inputs.voice_uploads(random.Random(7), 300)
    assert any(b"WAVEfmt " in body for _, body in uploads) and any(c == "application/json" for c, _ in uploads)
    media = hostile_inputs.caller_media(random.Random(7), 300)
    assert {outcome for outcome, _ in media} == {"rejected", "heard", "closes"}
    assert all(isinstance(f, bytes) == (outcome == "closes") for outcome, f in media)
    keys = hostile_inputs.keys_files(random.Random(7), 300, '[keys.a]\nkey = "long-enough-key-0000"\n')
    assert keys == hostile_inputs.keys_files(random.Random(7), 300, '[keys.a]\nkey = "long-enough-key-0000"\n')
    assert any(b"max_session =" in k for k in keys) and any(b"\n[keys.twin" in k for k in keys)
    cartesia = hostile_inputs.cartesia_messages(random.Random(7), 300)
    assert cartesia == hostile_inputs.cartesia_messages(random.Random(7), 300) and len(cartesia) == 300
    assert any('"cancel": true' in m for m in cartesia) and sum('"flood-' in m for m in cartesia) > 20
    control = hostile_inputs.websocket_messages(random.Random(7), 300, hostile_inputs.CALLER_CONTROL_FIELDS)
    assert any('"listen"' in m for m in control) and any('"barge_in"' in m for m in control)
    deepgram = hostile_inputs.websocket_messages(random.Random(7), 300, hostile_inputs.DEEPGRAM_FIELDS)
    assert any('"Flush"' in m for m in deepgram) and any('"Clear"' in m for m in deepgram)
    assert not any('"Close"' in m for m in deepgram)  # (it ends the socket: the farewell's part)
    vapi = hostile_inputs.http_bodies(random.Random(7), 300, hostile_inputs.VAPI_FIELDS)
    assert vapi == hostile_inputs.http_bodies(random.Random(7), 300, hostile_inputs.VAPI_FIELDS)
    assert any('"voice-request"' in b for b in vapi) and any('"sampleRate": 11025' in b for b in vapi)


SETUP_TIMEOUT_S = 5  # the server's --webrtc-setup-timeout: the bench waits out the hostile offers' sessions twice
REQUEST_TIMEOUT_S = 5  # the server's --request-timeout: its slow clients wait it out beside the other surfaces
KEY, SECRET, ORIGIN = "bench-faults-test-key-0123", "bench-faults-test-secret-0123", "https://app.example"


def test_hostile_tokens_and_origins_are_reproducible_and_never_the_sound_ones() -> None:
    from gateway.guard.origins import allowed
    from gateway.guard.tokens import TokenRequest, TokenSigner

    signer = TokenSigner(SECRET)
    valid, _ = signer.mint(TokenRequest(routes=("tts",)), None, "mark", time.time())
    made = [hostile_inputs.hostile_tokens(random.Random(3), 400, valid, signer.seal, 1e9) for _ in range(2)]
    assert made[0] == made[1] and valid not in {token for _, token in made[0]}
    assert {"forged", "tampered", "truncated", "garbage", "expired", "nested claims", "huge claims"} <= {
        kind for kind, _ in made[0]}
    origins = hostile_inputs.hostile_origins(random.Random(3), 400, ORIGIN)
    assert {kind for kind, _ in origins} == {"near miss", "other site", "null", "not an origin"}
    assert not any(allowed((ORIGIN,), value.decode("latin-1")) for _, value in origins)


def _upgrade_with_a_head_too_large(url: str) -> bytes:
    """The answer to a WebSocket upgrade with a 9 KB header line (websockets reads 8 KiB at most)."""
    async def ask() -> bytes:
        host, port = url.split("//")[1].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"GET /v1/stream HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                     b"X-Pad: " + b"a" * 9000 + b"\r\n\r\n")
        try:
            return await asyncio.wait_for(reader.read(), 5)  # to the end: the server closes it
        finally:
            writer.close()

    return asyncio.run(ask())


def test_a_short_run_leaves_every_figure_at_zero(capsys: pytest.CaptureFixture[str]) -> None:
    port, audiosocket_port = free_port(), free_port()
    with running_server("--wyoming-port", str(port), "--webrtc-setup-timeout", str(SETUP_TIMEOUT_S),
                        "--request-timeout", str(REQUEST_TIMEOUT_S), "--api-key", KEY, "--cors-origins", ORIGIN,
                        "--audiosocket-port", str(audiosocket_port), "--audiosocket-key", SECRET,
                        env={"CBF_TOKEN_SECRET": SECRET}) as url:
        args = build_parser().parse_args(["bench", "faults", "--count", "150", "--url", url,
                                          "--wyoming-port", str(port), "--request-timeout", str(REQUEST_TIMEOUT_S),
                                          "--api-key", KEY, "--token-secret", SECRET, "--allowed-origin", ORIGIN,
                                          "--audiosocket-port", str(audiosocket_port), "--audiosocket-key", SECRET])
        status = args.run(args)
        # (an upgrade websockets cannot read was once left unanswered and open for as long as its client liked)
        assert _upgrade_with_a_head_too_large(url).startswith(b"HTTP/1.1 431 ")
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert status == 0, summary
    assert set(summary["surfaces"]) == {"websocket", "playout", "elevenlabs", "cartesia", "/cartesia/tts/bytes",
                                        "/cartesia/tts/sse", "datachannel", "controller", "/v1/tts",
                                        "/v1/audio/speech", "/v1/webrtc/offer", "/v1/whep", "/v1/voices", "/v1/lexicons", "wyoming",
                                        "/v1/twilio", "/v1/telnyx", "/v1/asterisk", "/v1/plivo", "/v1/vonage",
                                        "/v1/exotel", "/v1/freeswitch", "audiosocket", "/v1/jambonz/tts",
                                        "caller audio", "call controller", "keys file", "slow requests", "tokens",
                                        "origins", "deepgram", "/deepgram/v1/speak", "/v1/vapi"}
    assert summary["server_errors"] == summary["dropped_engine_connections"] == summary["leaked_sessions"] == 0
    assert summary["let_through"] == 0 and summary["left_out"] == []
    tokens = summary["surfaces"]["tokens"]["kinds"]  # signed with the server's secret too, and replayed
    assert {"forged", "tampered", "truncated", "expired", "replayed single-use", "out of scope",
            "minted by a token"} <= set(tokens)
    assert summary["leaked_connections"] == 0  # read from /health: reported, and every client's connection gone
    assert summary["worker_restarts"] == 0 and summary["lost_voices"] == [] and summary["health"] == "ok"
    assert all(s["refused"] > 0 for s in summary["surfaces"].values())  # the inputs were hostile
    assert set(summary["surfaces"]["audiosocket"]["scenarios"]) >= {"mangled", "reused", "half-open", "flood"}
    caller = summary["surfaces"]["caller audio"]
    assert caller["rejected"] > 0 and caller["flooded"] > 0  # dropped, and counted
    assert summary["bystander"]["turns"] > 0 and summary["bystander"]["failures"] == 0


def test_seeds_add_up_to_one_summary_line() -> None:
    def run(seed: int, errors: int, leaked: int, lost: list[str], connections: int | None = 0) -> dict:
        return {"inputs_per_surface": 1000, "seed": seed, "surfaces": {"websocket": {}, "/v1/tts": {}},
                "server_errors": errors, "dropped_engine_connections": 1, "worker_restarts": 0,
                "leaked_sessions": leaked, "leaked_connections": connections, "lost_voices": lost,
                "bystander": {"turns": 3, "failures": 0}, "health": "ok", "seconds": 60.04}

    clean = combined([run(1, 0, 0, []), run(2, 0, 0, [])])
    assert clean["seeds"] == [1, 2] and clean["seconds"] == 120.1 and clean["bystander"] == {"turns": 6, "failures": 0}
    assert clean["dropped_engine_connections"] == 2 and failed(clean)  # a lost engine connection fails it
    summary = combined([run(1, 2, 1, ["x"]), run(2, 3, 0, ["x", "y"], 2), run(3, 0, 0, [], None)])
    assert (summary["server_errors"], summary["leaked_sessions"], summary["lost_voices"]) == (5, 1, ["x", "y"])
    assert summary["leaked_connections"] == 2  # a server that does not say counts none
    assert len(summary["runs"]) == 3 and failed(summary)
    assert render_combined(summary).startswith("bench faults: 3 seeds x 1000 hostile inputs on 2 surfaces, 180.1 s: "
                                               "server errors 5, let through 0, dropped engine connections 3, "
                                               "worker restarts 0, "
                                               "leaked sessions 1, leaked connections 2, lost voices 2;")
    leaky = run(1, 0, 0, [], 1) | {"dropped_engine_connections": 0}
    assert failed(leaky) and not failed(leaky | {"leaked_connections": 0})
    assert not failed(leaky | {"leaked_connections": None})  # a server that does not say
    assert failed(leaky | {"leaked_connections": 0, "let_through": 1})  # a hostile token or origin taken
    assert build_parser().parse_args(["bench", "faults", "--seeds", "10"]).seeds == 10
