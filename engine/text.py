"""Tag-aware text rules: paralinguistic tags, chunk boundaries, punctuation normalisation. Pure.

Chatterbox-Turbo reads inline tags such as ``[laugh]`` or ``[clear throat]``; nothing here may cut or rewrite one.
Boundaries are ranked by how little a cut there costs the prosody: sentence, clause (after ``, ; :``), phrase (before a
word that opens one: a conjunction, preposition or relative pronoun), any other word, and last a cut inside a phrase
(after a determiner, preposition, conjunction or title, or among the first words of a noun phrase a determiner opened:
"the quick brown | fox"; a determiner before a verb is a pronoun and opens none: "this is | a test"). Word lists, not a tagger: a cheap, predictable heuristic for English.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

from engine.protocol import TAG, TAG_MAX_LEN

# Holds the words of one rewritten phrase together ("three million dollars" for "$3 million"): not whitespace, so no
# boundary is found at it and no chunk splits the phrase; spoken as a space (the planner puts the spaces back).
WORD_JOINER = "\u2060"
_SPACE_RUN = re.compile(r"\s+")
_NON_SPACE = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?]['\"”’)]*$")
_CLAUSE_END = re.compile(r"(?:[,;:…—–]|\s-)['\"”’)]*$")
# Words whose full stop is not the end of a sentence ("Dr. Smith", "e.g. this"), and single initials ("J. Smith").
_ABBREVIATION = re.compile(r"(?:^|\s)(?:mr|mrs|ms|dr|st|prof|jr|sr|vs|etc|e\.g|i\.e|[a-hj-z])\.$", re.IGNORECASE)
_WORD = re.compile(r"\w")
_BARE = re.compile(r"^[^\w']+|[^\w']+$")  # punctuation around a word ("(the" -> "the")

_DETERMINERS = frozenset(
    "the a an this these those my your his her its our their some any every each no another either neither both "
    "all several many much few such".split()
)
_PREPOSITIONS = frozenset(
    "about above across after against along among around at before behind below beneath beside besides between "
    "beyond by despite down during except for from in inside into like near of off on onto outside over past "
    "through throughout till to toward towards under underneath until upon with within without".split()
)
_CONJUNCTIONS = frozenset(
    "and but or nor so yet because although though while whereas unless if when whenever where wherever as than "
    "whether once".split()
)
_RELATIVES = frozenset("who whom whose which that what why how".split())
# A determiner right before one of these is a pronoun ("this is", "that was", "all will"): it opens no noun phrase.
_VERBS_AFTER_PRONOUN = frozenset(
    "is was are were will would can could should shall may might must has have had does did isn't wasn't".split()
)
_TITLES = frozenset("mr mrs ms dr st prof mt".split())
# A phrase starts before these ("jumps | over the dog", "the dog | that barked"); not before "of", which binds its
# phrase to the noun before it ("the top of the hill").
_PHRASE_OPENERS = (_PREPOSITIONS | _CONJUNCTIONS | _RELATIVES) - {"of"}
# Never cut right after these: they belong with the words that follow.
_BINDS_FORWARD = _DETERMINERS | _PREPOSITIONS | _CONJUNCTIONS | _RELATIVES | _TITLES
_NOUN_PHRASE_WORDS = 3  # a determiner's noun phrase is taken to run this many words on ("the quick brown fox")

# Chatterbox's punc_norm replacements, plus double quotes removed: Turbo voices `"` as a sigh (chatterbox#433).
TURBO_PUNCTUATION = (
    ("…", ", "),
    (":", ","),
    ("—", "-"),
    ("–", "-"),
    ("“", ""),
    ("”", ""),
    ('"', ""),
    ("‘", "'"),
    ("’", "'"),
)
_SENTENCE_ENDERS = (".", "!", "?", "-", ",")


class BoundaryKind(IntEnum):
    """How natural a place to end a chunk is; higher is better."""

    HARD = 0  # no natural boundary within the length cap: cut between characters (never inside a tag)
    INSIDE = 1  # between words of one phrase: "the | dog", "over | the", "the quick | brown fox"
    WORD = 2  # any other word boundary
    PHRASE = 3  # before a conjunction, preposition or relative pronoun: "jumps | over the dog"
    CLAUSE = 4  # after , ; : and the like
    SENTENCE = 5
    END = 6  # the end of text the client closed (flush or end of input)

    @property
    def ends_sentence(self) -> bool:
        """Whether a chunk ending here ends a sentence (and may be normalised as one)."""
        return self >= BoundaryKind.SENTENCE


@dataclass(frozen=True)
class Boundary:
    end: int  # a chunk ending here is text[:end]; whitespace follows it
    kind: BoundaryKind


def tag_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every tag in ``text``, including a trailing ``[`` still open (text may still be arriving)."""
    spans = [m.span() for m in TAG.finditer(text)]
    opened = text.rfind("[")
    if opened >= 0 and (not spans or spans[-1][0] < opened) and "]" not in text[opened:]:
        if len(text) - opened < TAG_MAX_LEN and "\n" not in text[opened:]:
            spans.append((opened, len(text)))
    return spans


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start < position < end for start, end in spans)


def find_boundaries(text: str) -> list[Boundary]:
    """Every place ``text`` may be cut before whitespace, in order, classified; none inside a tag.

    Only cuts that whitespace confirms are returned: the end of the text is not one (a streamed word may be
    incomplete); the caller decides whether the text is closed.
    """
    spans = tag_spans(text)
    found: list[Boundary] = []
    phrase_words = _NOUN_PHRASE_WORDS  # words since the last determiner (past the limit: not in a noun phrase)
    start = 0  # where the word before the current whitespace begins
    for space in _SPACE_RUN.finditer(text):
        end = space.start()
        if end == 0 or _inside(end, spans):
            continue
        # What the end-anchored rules read: the words since the last boundary and the whitespace before them (not
        # text[:end], which each search would scan from its start: quadratic in the text's length).
        before = text[max(start - 1, 0):end]
        words = text[start:end].split()
        previous = _bare(words[-1]) if words else ""
        start = space.end()
        following = _bare(m.group()) if (m := _NON_SPACE.match(text, start)) else ""
        opens_noun_phrase = previous in _DETERMINERS and following not in _VERBS_AFTER_PRONOUN
        phrase_words = 0 if opens_noun_phrase else phrase_words + 1
        if "\n" in space.group() or (_SENTENCE_END.search(before) and not _ABBREVIATION.search(before)):
            kind = BoundaryKind.SENTENCE
        elif _CLAUSE_END.search(before):
            kind = BoundaryKind.CLAUSE
        elif previous in _BINDS_FORWARD or (phrase_words < _NOUN_PHRASE_WORDS and following not in _PHRASE_OPENERS):
            kind = BoundaryKind.INSIDE
        elif following in _PHRASE_OPENERS:
            kind = BoundaryKind.PHRASE
        else:
            kind = BoundaryKind.WORD
        if kind >= BoundaryKind.CLAUSE:
            phrase_words = _NOUN_PHRASE_WORDS
        found.append(Boundary(end, kind))
    return found


def _bare(word: str) -> str:
    """A word lower-cased without the punctuation around it."""
    return _BARE.sub("", word).lower()


def safe_cut(text: str, limit: int) -> int:
    """The largest cut position <= ``limit`` that is not inside a tag (for text with no natural boundary)."""
    limit = min(limit, len(text))
    for start, end in tag_spans(text):
        if start < limit < end:
            return start if start > 0 else min(end, len(text))
    return limit


def count_words(text: str) -> int:
    """Spoken words: whitespace-separated pieces with a letter or digit, tags not counted."""
    return sum(1 for piece in TAG.sub(" ", text).split() if _WORD.search(piece))


def punc_norm(text: str, *, starts_sentence: bool = True, ends_sentence: bool = True) -> str:
    """Chatterbox-Turbo's ``punc_norm`` without harm to tags, and with double quotes removed.

    Tags are held apart as pieces of their own while the rest is rewritten, never as markers inside the text, so no
    input can pass for a held tag. Empty (or all-whitespace) text gives "" rather than Turbo's filler sentence.

    A whole sentence (the default) is normalised as Turbo does (a leading capital, a full stop where no ending
    punctuation is), and Turbo's own ``punc_norm`` leaves the result unchanged. A fragment of a sentence is not: one
    that does not start a sentence keeps its first letter, and one that does not end a sentence gets no full stop, so
    the model is never told a sentence ends where none does. (The worker feeds Turbo's tokenizer directly, so its own
    ``punc_norm`` never runs on a fragment.)
    """
    tags = [" ".join(match.group().split()) for match in TAG.finditer(text)]
    plain = [_plain_norm(piece) for piece in TAG.split(text)]  # one more piece than tags: around and between them
    text = "".join(piece + tag for piece, tag in zip(plain, [*tags, ""])).strip()
    if not text:
        return ""
    if starts_sentence:
        text = text[0].upper() + text[1:]  # as Turbo does: only a leading letter ("[" of a tag is left as it is)
    if ends_sentence and not text.endswith(_SENTENCE_ENDERS):
        text += "."
    return text


def _plain_norm(text: str) -> str:
    """Turbo's replacements and whitespace rules on text outside tags (a whitespace run becomes one space)."""
    for old, new in TURBO_PUNCTUATION:
        text = text.replace(old, new)
    return _SPACE_RUN.sub(" ", text).replace(" ,", ",")


_SPACES = re.compile(r"\s+")


def strip_tags(text: str) -> str:
    """``text`` without its paralinguistic tags such as ``[laugh]``: the words an engine that cannot voice tags speaks."""
    kept, start = [], 0
    for tag_start, tag_end in tag_spans(text):
        kept.append(text[start:tag_start])
        start = tag_end
    kept.append(text[start:])
    return _SPACES.sub(" ", " ".join(kept)).strip()
