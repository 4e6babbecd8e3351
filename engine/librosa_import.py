"""librosa's audio module imported without its costly report of two optional packages that are not installed.

``librosa.core.audio`` asks ``lazy_loader.load`` for ``samplerate`` and ``resampy`` (resamplers this project never
selects); where one is missing, ``load`` keeps the caller's file and line for a later error and reads them with
``inspect.stack()``, which finds the source lines of every frame on the stack and, for each, scans every loaded module
(``inspect.getmodule``): 0.7 s of CPU in an engine worker (PerTh imports librosa), 1.9 s in a test process's
collection, where the stack is deep and thousands of modules are loaded. Imported here first with frames read
without their source lines, the same two placeholders come out (an attribute asked of one still raises
ModuleNotFoundError naming the package and librosa's line), at a few milliseconds.
"""

from __future__ import annotations

import inspect
import sys
import threading

_lock = threading.Lock()


def import_librosa_audio() -> None:
    """Import ``librosa.core.audio`` (once; nothing where it already is)."""
    if "librosa.core.audio" in sys.modules:
        return
    with _lock:
        if "librosa.core.audio" in sys.modules:
            return
        stack = inspect.stack

        def frames_without_source(context: int = 1) -> list[inspect.FrameInfo]:
            return stack(0)[1:]  # from the caller's frame on, as inspect.stack() gives them

        inspect.stack = frames_without_source
        try:
            import librosa.core.audio  # noqa: F401
        finally:
            inspect.stack = stack
