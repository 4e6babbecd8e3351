"""The local test peers: a gateway run in-process, an aiortc listener, phone-stack callers and the edge peer."""
