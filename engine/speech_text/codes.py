"""codes"""

from __future__ import annotations

from engine.speech_text.numbers import Rule

RULES: list[Rule] = []
