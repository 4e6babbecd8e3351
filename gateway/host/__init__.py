"""One host's processes: the listening port bound early, ``serve --processes N`` and the siblings' shared health."""
