"""The HTTP endpoints: streaming speech, voices, health and metrics, and the error and body helpers they share."""
