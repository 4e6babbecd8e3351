"""Deepgram Aura's speak API (WebSocket and REST) at base ``/deepgram``: ``translate`` decides, ``endpoint`` carries it
out."""
