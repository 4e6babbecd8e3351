"""Phone calls over media-stream WebSockets: a pure translator per dialect, the call on the session core, endpoints."""
