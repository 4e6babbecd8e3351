"""Voice-prompt keys and values on the device, for the most recently used voices only.

A voice's conditioning prefix (~376 positions) costs ~37 MB in bf16 at full size; kept for every voice ever spoken,
distinct voices would grow GPU memory without bound. This keeps the ``limit`` most recently used (a setting:
``--prompt-cache-voices``); a voice forgotten is prefilled again on its next chunk. Entries are keyed by the voice
object (a weak reference: a voice dropped by the voice store drops its K/V too). Used from the decode loop's thread;
the figures may be read from any.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .t3_static import VoicePrefix


class PrefixCache:
    def __init__(self, limit: int, compute: Callable[[Any], VoicePrefix]) -> None:
        if limit < 1:
            raise ValueError("the prompt cache keeps at least one voice")
        self.limit = limit
        self._compute = compute
        self._entries: OrderedDict[int, tuple[weakref.ref, VoicePrefix]] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0  # prefixes computed (a figure: more than the voices used means evictions cost prefills)

    def get(self, voice: Any) -> VoicePrefix:
        """``voice``'s prefix, computed on first use or after it was evicted; it becomes the most recently used."""
        key = id(voice)
        with self._lock:
            entry = self._entries.pop(key, None)
        if entry is not None and entry[0]() is voice:
            prefix = entry[1]
        else:
            prefix = self._compute(voice)
            self.computed += 1
        with self._lock:
            self._entries[key] = (weakref.ref(voice, lambda _, key=key: self._forget(key)), prefix)
            while len(self._entries) > self.limit:
                self._entries.popitem(last=False)
        return prefix

    def _forget(self, key: int) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def figures(self) -> dict[str, int]:
        """Voices held and their bytes on the device."""
        with self._lock:
            prefixes = [prefix for _, prefix in self._entries.values()]
        size = sum(p.k.numel() * p.k.element_size() + p.v.numel() * p.v.element_size() for p in prefixes)
        return {"voices": len(prefixes), "bytes": size, "limit": self.limit, "computed": self.computed}
