"""Client message parsing: whatever arrives, the result is a typed message or a ProtocolError. (The engine protocol's
messages: tests/test_protocol.py.)"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.protocol import ProtocolError
from gateway import messages

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
client_like = st.fixed_dictionaries(
    {"type": st.sampled_from(["config", "text", "speak", "flush", "end", "cancel", "shout", ""])},
    optional={"text": json_values, "voice": json_values, "format": json_values, "sample_rate": json_values},
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=64), st.text(max_size=64), json_values.map(json.dumps), client_like.map(json.dumps)))
def test_client_frames_parse_or_fail_cleanly(frame: str | bytes) -> None:
    try:
        message = messages.parse_message(frame)
    except ProtocolError as exc:
        assert exc.code in {"bad_message", "unknown_type", "bad_config"} and str(exc)
    else:
        assert isinstance(message, (messages.Config, messages.Text, messages.Speak, messages.Flush, messages.End,
                                    messages.Cancel))


def test_examples() -> None:
    assert messages.parse_message('{"type": "speak", "text": "Hi", "voice": "v"}') == messages.Speak("Hi", "v")
    assert messages.parse_message('{"type": "config", "format": "mulaw"}') == messages.Config(None, "mulaw", 8000)
    with pytest.raises(ProtocolError) as info:
        messages.parse_message('{"type": "config", "sample_rate": true}')
    assert info.value.code == "bad_config"
    with pytest.raises(ProtocolError):
        messages.parse_message("x" * (messages.MAX_MESSAGE_BYTES + 1))
