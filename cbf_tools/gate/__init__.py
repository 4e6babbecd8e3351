"""The deploy gate (``chatterbox-fast gate``): a candidate server against a reference, and the checks it runs."""
