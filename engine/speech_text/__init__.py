"""The text front end: the caller's text (markdown, numbers, SSML...) as it is spoken, each spoken character mapped
back to the caller's. Pure: no torch, no sockets; the gateway may import it."""
