"""Operator tools run from ``chatterbox-fast``: say, benchmarks, the deploy gate, a local server, an aiortc listener.

None of them is part of the server runtime; the CLI imports each only when its command runs.
"""
