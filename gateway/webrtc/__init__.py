"""The WebRTC transport: signalling, the paced outbound track, its jitter buffer, its frames prepared per chunk."""
