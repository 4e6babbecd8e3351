"""ElevenLabs-compatible input streaming (their stream-input WebSockets) on top of our sessions."""
