"""Home Assistant's Wyoming protocol: a TTS server (wire.py, translate.py: pure; server.py: asyncio)."""
