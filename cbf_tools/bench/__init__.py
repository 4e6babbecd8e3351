"""The benchmarks (``chatterbox-fast bench ...``): each prints figures, none asserts a time; and what they feed in."""
