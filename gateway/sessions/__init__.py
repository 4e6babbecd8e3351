"""Interactive sessions: the pure core, its asyncio adapter, the sessions a controller drives, and their registry."""
