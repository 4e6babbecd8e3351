"""Put this folder first on PYTHONPATH to make the packages named in CBF_BLOCK_MODULES (comma-separated) unimportable
in that Python, as on a host where they are not installed (the GPU measurement host has neither PyAV nor
espeakng-loader). A test helper, loaded by ``site`` at start-up: the path finder is wrapped so that blocked names are
simply not found (``importlib.util.find_spec`` says None, ``import`` raises ModuleNotFoundError), as when absent."""

import importlib.machinery
import os
import sys

BLOCKED = {name for name in os.environ.get("CBF_BLOCK_MODULES", "").split(",") if name}


class _HidingPathFinder(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):  # noqa: ANN001, ANN206 (the finder protocol)
        if fullname.partition(".")[0] in BLOCKED:
            return None
        return super().find_spec(fullname, path, target)


sys.meta_path[:] = [_HidingPathFinder if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
