"""The gateway's end of the engine protocol: one client per worker, a pool of them, the embedded worker process."""
