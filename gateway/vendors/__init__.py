"""The hosted-TTS vendors' dialects (Cartesia, Deepgram, Vapi): each a pure translator module onto the gateway's sessions and a
thin endpoint."""
