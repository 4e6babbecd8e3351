"""URLs and email addresses, spoken: "https://example.com/docs" -> "example dot com slash docs". Pure.

The scheme is dropped, a query string or fragment is not read; each separator is named. A name is said as a word
unless people spell it: "www", a known acronym ("irs", "hr", "api"), a name with no vowel, a two-letter country
domain ("io", "ai"; not "co" or "me"); an initial before a surname is split off ("jsmith" -> "J smith"). Numbers of
one or two digits are said as numbers, longer ones digit by digit ("localhost:8080", "/sale/2025").
"""

from __future__ import annotations

import re

from engine.speech_text import words as w
from engine.speech_text.abbreviations import COMMON_WORDS, SPELLED
from engine.speech_text.numbers import Rule

TLDS = ("com org net io dev ai co edu gov app uk de fr ca au us info biz me tv ly gg xyz tech cloud sh travel shop "
        "store online site blog news health bank page live club life world today email").split()
_SPELLED_NAMES = frozenset(
    {name.lower() for name in SPELLED} - COMMON_WORDS
    | set("irs ups dmv dhl faq hbo bbc cnn nbc abc cbs npr ibm aws nyc cdc fda nih mit nyu usps ssa fbi cia".split())
)
_SAID_DOMAINS = frozenset({"co", "me"})
# Two consonants that can open an English syllable; any other pair opening a name marks an initial ("jsmith").
_ONSETS = frozenset("bl br ch cl cr dr dw fl fr gh gl gn gr kl kn kr ph pl pr ps qu rh sc sh sk sl sm sn sp sq st sw "
                    "th tr ts tw vl wh wr".split())
_SEPARATORS = {".": " dot ", "/": " slash ", "-": " dash ", "_": " underscore ", "@": " at ", "~": " tilde ",
               ":": " colon ", "+": " plus ", "=": " equals ", "&": " and ", "%": " percent "}
_TAIL = r"[^\s<>\"'’”)\]]{0,2000}?(?=[.,;:!?'’”)\]]*(?:\s|$))"
URL = (
    rf"(?<![\w@/.])(?:(?:https?|ftp)://|www\.){_TAIL}"
    rf"|(?<![\w@/.-])(?:[A-Za-z0-9][A-Za-z0-9-]{{0,62}}(?:\.[A-Za-z0-9-]{{1,63}}){{0,5}}\.(?:{'|'.join(TLDS)})"
    rf"|localhost(?=:\d))(?::\d{{1,5}})?(?:/{_TAIL})?(?![\w@-])"
)
EMAIL = r"(?<![\w.+-])[\w+-]{1,64}(?:\.[\w+-]{1,64}){0,8}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){1,8}(?![\w-])"
_PART = re.compile(r"[A-Za-z]+|\d+|.", re.S)


def _name(part: str, domain: bool) -> str:
    """One name of a URL or address: "irs" -> "I R S", "jsmith" -> "J smith", "io" at the end -> "I O"."""
    lower = part.lower()
    if (lower in _SPELLED_NAMES or lower == "www" or len(part) == 1 or not re.search(r"[aeiouy]", lower)
            or (domain and len(part) == 2 and lower not in _SAID_DOMAINS)):
        return " ".join(part.upper())
    if len(part) >= 4 and re.match(r"[^aeiouy]{2}", lower) and lower[:2] not in _ONSETS:
        return f"{part[0].upper()} {part[1:]}"
    return part


def _spoken_parts(text: str, domain_at: int = -1) -> str:
    """Say ``text`` part by part; the name that starts at ``domain_at`` is the top-level domain."""
    said = []
    for found in _PART.finditer(text):
        part = found.group()
        if part.isdigit():
            said.append(w.cardinal(part) if len(part) <= 2 else w.digits(part))
        elif part.isalpha():
            said.append(_name(part, found.start() == domain_at))
        else:
            said.append(_SEPARATORS.get(part, " "))
    return " ".join("".join(s if s.startswith(" ") else f" {s} " for s in said).split())


def _domain_at(text: str) -> int:
    """Where the top-level domain of the host that ``text`` starts with begins (-1 when it has none)."""
    host = re.match(r"[^/:]*", text).group()  # type: ignore[union-attr]
    return host.rfind(".") + 1 if "." in host else -1


def _url(match: re.Match[str]) -> str:
    text = re.sub(r"^(?:https?|ftp)://", "", match.group(), flags=re.I)
    text = re.split(r"[?#]", text, maxsplit=1)[0].rstrip("/")
    return _spoken_parts(text, _domain_at(text))


def _email(match: re.Match[str]) -> str:
    text = match.group()
    at = text.index("@") + 1
    return _spoken_parts(text, at + _domain_at(text[at:]))


def _handle(match: re.Match[str]) -> str:
    """"@the.bake.shop" -> "at the dot bake dot shop"."""
    return "at " + _spoken_parts(match.group()[1:])


def _hashtag(match: re.Match[str]) -> str | None:
    """"#SummerSale" -> "hashtag summer sale"; "#A7" is a code, not a tag."""
    if re.fullmatch(r"#[A-Z0-9]*\d[A-Z0-9]*", match.group()):
        return None
    return "hashtag " + " ".join(re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", match.group()[1:])).lower()


RULES: list[Rule] = [
    ("email", EMAIL, _email), ("url", URL, _url),
    ("handle", r"(?<![\w@.])@[A-Za-z_][\w.]{0,29}[\w](?![\w@])", _handle),
    ("hashtag", r"(?<![\w&#])#[A-Za-z][A-Za-z0-9_]{1,60}(?![\w#])", _hashtag),
]
