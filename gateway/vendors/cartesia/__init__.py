"""Cartesia's TTS API at /cartesia: translate.py (pure), endpoint.py (the socket and the HTTP routes)."""
