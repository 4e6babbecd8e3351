"""Chatterbox-Turbo's paralinguistic tags: the only bracketed text the front end keeps as it is. Pure."""

from __future__ import annotations

import re

# The tags Turbo voices as sounds (lower case; matched case-insensitively, any run of spaces inside a two-word tag).
TURBO_TAGS = (
    "laugh",
    "chuckle",
    "sigh",
    "gasp",
    "cough",
    "clear throat",
    "sniff",
    "groan",
    "shush",
)

TURBO_TAG = re.compile(
    r"\[(?:%s)\]" % "|".join(r"\s+".join(map(re.escape, tag.split())) for tag in TURBO_TAGS), re.IGNORECASE
)
