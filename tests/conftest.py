"""Fixtures shared by several test files. Append new ones; keep each small."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def espeak_engine():
    """The embedded eSpeak NG engine (real speech, milliseconds per sentence)."""
    from engine.engines.espeak import EspeakEngine

    return EspeakEngine()


@pytest.fixture(scope="session")
def watermarker():
    """The real PerTh watermarker (a few seconds to load, once per session)."""
    from engine.watermark import Watermarker

    return Watermarker()
