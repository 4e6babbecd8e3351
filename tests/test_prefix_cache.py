"""The voice-prompt K/V cache: the most recently used voices only, a voice dropped drops its K/V (plain tensors on
this CPU; on a GPU they are the same objects on the device)."""

from __future__ import annotations

import gc

import pytest

pytest.importorskip("chatterbox.tts_turbo")

import torch  # noqa: E402

from engine.engines.prefix_cache import PrefixCache  # noqa: E402
from engine.engines.t3_static import VoicePrefix  # noqa: E402


class Voice:
    def __init__(self, name: str) -> None:
        self.name = name


def test_the_least_recently_used_voice_is_forgotten_and_prefilled_again() -> None:
    computed: list[str] = []

    def compute(voice: Voice) -> VoicePrefix:
        computed.append(voice.name)
        return VoicePrefix(torch.zeros(2, 4, 10, 8), torch.zeros(2, 4, 10, 8))  # 640 floats each

    cache = PrefixCache(2, compute)
    a, b, c = Voice("a"), Voice("b"), Voice("c")
    first = cache.get(a)
    cache.get(b)
    assert cache.get(a) is first  # kept: no second prefill
    cache.get(c)  # evicts b, the least recently used
    cache.get(a)
    cache.get(b)
    assert computed == ["a", "b", "c", "b"]
    assert cache.figures() == {"voices": 2, "bytes": 2 * 2 * 640 * 4, "limit": 2, "computed": 4}
    del b
    gc.collect()
    assert cache.figures()["voices"] == 1  # a voice the store dropped takes its K/V with it


def test_a_cache_for_no_voice_is_refused() -> None:
    with pytest.raises(ValueError):
        PrefixCache(0, lambda voice: None)
