"""The WebRTC transport: signalling, the paced outbound track, its jitter buffer, a fast audio-level twin."""
