"""Hostile input at the edge, against a real server on 127.0.0.1 (embedded eSpeak engine): a lone surrogate, NUL and
other control characters, JSON nested deeply. Each is refused with a clear error or cleaned, on every surface
(WebSocket, data channel, HTTP), and none of them ends another client's utterance or the engine connection."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from gateway.guard.client_input import MAX_JSON_DEPTH, BadInput, load_json, speech_text

SURROGATE = '{"type": "speak", "text": "hi \\ud800 there"}'  # the JSON escape: a client can send it as ASCII
DEEP = "[" * 5000 + "]" * 5000  # past the JSON parser's own recursion limit
JUST_TOO_DEEP = '{"type": "speak", "text": "hi", "x": ' + "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH + "}"


@pytest.fixture(scope="module")
def url(plain_server: str) -> str:
    return plain_server  # tests/conftest.py: one server for the files that only speak through it


async def next_event(ws: ClientConnection, timeout: float = 20) -> dict:
    while isinstance(frame := await asyncio.wait_for(ws.recv(), timeout), bytes):
        pass
    return json.loads(frame)


async def spoken(ws: ClientConnection) -> tuple[list[str], dict]:
    """The chunk texts of the utterance being spoken, and its last event (``done`` or ``error``)."""
    texts = []
    while (event := await next_event(ws))["type"] == "chunk":
        texts.append(event["text"])
    return texts, event


def test_load_json_bounds_depth_and_refuses_lone_surrogates() -> None:
    assert load_json('{"a": [[1]], "t": "\\ud83d\\ude00"}') == {"a": [[1]], "t": "\U0001F600"}  # a valid pair
    nested_ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert load_json(nested_ok)
    for raw in ("[" + nested_ok + "]", DEEP, '{"k": {"\\udc00": 1}}', '["ok", "\\ud800"]', "{", b"\xff"):
        with pytest.raises(BadInput):
            load_json(raw)
    assert speech_text("a\x00b\x07c\x1b[0m\x7f\x85\td\ne\r") == "abc[0m\td\ne\r"


async def test_websocket_refuses_or_cleans_and_another_client_speaks_on(url: str) -> None:
    stream = url.replace("http://", "ws://") + "/v1/stream"
    async with connect(stream) as bystander, connect(stream) as attacker:
        await next_event(bystander), await next_event(attacker)
        await bystander.send(json.dumps({"type": "speak", "text": "I keep talking while the other client misbehaves, "
                                                                  "sentence after sentence, until the very end."}))
        for frame, says in ((SURROGATE, "lone surrogate U+D800"), (DEEP, "nested deeper"),
                            (JUST_TOO_DEEP, "nested deeper"), ('{"type": "speak", "text": "\\u0000\\u0007"}',
                                                               "non-empty")):
            await attacker.send(frame)
            error = await next_event(attacker)
            assert error["type"] == "error" and error["code"] == "bad_message" and says in error["message"], error
        await attacker.send('{"type": "speak", "text": "hi \\u00000\\u0000 there"}')  # once an IndexError
        texts, last = await spoken(attacker)
        # (the control characters are gone, and the "0" between them is read as a number)
        assert last["type"] == "done" and "".join(texts) == "Hi zero there."
        await attacker.send('{"type": "speak", "text": "hello \\u00000\\u0000 there [laugh]"}')  # once a forged tag
        texts, last = await spoken(attacker)
        assert last["type"] == "done" and " ".join(texts).count("[laugh]") == 1 and "\x00" not in "".join(texts)
        texts, last = await spoken(bystander)
        assert last["type"] == "done" and texts
    health = httpx.get(url + "/health").json()
    assert health["status"] == "ok" and health["engines"][0]["available"] and health["engines"][0]["lost"] == 0


@pytest.mark.parametrize("route, field", [("/v1/tts", "text"), ("/v1/audio/speech", "input")])
async def test_http_refuses_with_400_and_cleans_control_characters(url: str, route: str, field: str) -> None:
    base = {"model": "tts-1", "response_format": "pcm"} if route.endswith("speech") else {"format": "pcm"}
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        for body, says in ((f'{{"{field}": "hi \\ud800"}}', "lone surrogate"),
                           (json.dumps({**base, field: "hi", "voice": "\ud800"}, ensure_ascii=True), "lone surrogate"),
                           (DEEP, "nested deeper"), (json.dumps({**base, field: "\x00\x01 \x02"}), "empty")):
            reply = await http.post(route, content=body, headers={"content-type": "application/json"})
            assert reply.status_code == 400 and reply.json()["error"]["code"] == "bad_request", reply.text
            assert says in reply.json()["error"]["message"]
        reply = await http.post(route, json={**base, field: "hi \x000\x00 there\x00, all\x1b fine"})
        assert reply.status_code == 200 and len(reply.content) > 24000  # spoken whole: a NUL once cut eSpeak off
    health = httpx.get(url + "/health").json()
    assert health["status"] == "ok" and health["engines"][0]["available"] and health["engines"][0]["lost"] == 0


async def test_data_channel_refuses_with_an_error_event(url: str) -> None:
    from tests.test_signalling import connect as rtc_connect, event

    listener, _ = await rtc_connect(url)
    try:
        for frame, says in ((SURROGATE, "lone surrogate"), (DEEP[:60000], "nested deeper")):
            listener.events.clear()
            listener.channel.send(frame)
            await listener.wait_for(lambda: event(listener, "error") is not None, timeout=10)
            assert event(listener, "error")["code"] == "bad_message" and says in event(listener, "error")["message"]
        listener.events.clear()
        listener.channel.send('{"type": "speak", "text": "hello \\u00000\\u0000 there [laugh]"}')
        await listener.wait_for(lambda: event(listener, "done") is not None, timeout=30)
        chunks = [e["text"] for e in listener.events if e["type"] == "chunk"]
        assert " ".join(chunks).count("[laugh]") == 1 and event(listener, "error") is None
    finally:
        await listener.close()
