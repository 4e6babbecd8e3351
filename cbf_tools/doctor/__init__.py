"""``chatterbox-fast doctor``: the command, its host checks and the table of results."""
