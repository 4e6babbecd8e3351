"""The edge's guards: API keys, client input made safe, sockets not yet authenticated, and operator warnings."""
