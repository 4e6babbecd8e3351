"""URLs and email addresses, spoken: "https://example.com/docs" -> "example dot com slash docs". Pure.

The scheme is dropped, "www" is spelled, a query string or fragment is not read; each separator is named.
"""

from __future__ import annotations

import re

from engine.speech_text import words as w
from engine.speech_text.numbers import Rule

TLDS = "com org net io dev ai co edu gov app uk de fr ca au us info biz me tv ly gg xyz tech cloud sh".split()
_SEPARATORS = {".": " dot ", "/": " slash ", "-": " dash ", "_": " underscore ", "@": " at ", "~": " tilde ",
               ":": " colon ", "+": " plus ", "=": " equals ", "&": " and ", "%": " percent "}
_TAIL = r"[^\s<>\"'’”)\]]{0,2000}?(?=[.,;:!?'’”)\]]*(?:\s|$))"
URL = (
    rf"(?<![\w@/.])(?:(?:https?|ftp)://|www\.){_TAIL}"
    rf"|(?<![\w@/.-])[A-Za-z0-9][A-Za-z0-9-]{{0,62}}(?:\.[A-Za-z0-9-]{{1,63}}){{0,5}}\.(?:{'|'.join(TLDS)})"
    rf"(?:/{_TAIL})?(?![\w@-])"
)
EMAIL = r"(?<![\w.+-])[\w+-]{1,64}(?:\.[\w+-]{1,64}){0,8}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){1,8}(?![\w-])"
_PART = re.compile(r"[A-Za-z]+|\d+|.", re.S)


def _spoken_parts(text: str) -> str:
    said = []
    for part in _PART.findall(text):
        if part.isdigit():
            said.append(w.cardinal(part) if len(part) <= 4 else w.digits(part))
        elif part.isalpha():
            said.append(" ".join(part.upper()) if part == "www" else part)
        else:
            said.append(_SEPARATORS.get(part, " "))
    return " ".join("".join(s if s.startswith(" ") else f" {s} " for s in said).split())


def _url(match: re.Match[str]) -> str:
    text = re.sub(r"^(?:https?|ftp)://", "", match.group(), flags=re.I)
    text = re.split(r"[?#]", text, maxsplit=1)[0].rstrip("/")
    return _spoken_parts(text)


def _email(match: re.Match[str]) -> str:
    return _spoken_parts(match.group())


def _handle(match: re.Match[str]) -> str:
    """"@the.bake.shop" -> "at the dot bake dot shop"."""
    return "at " + _spoken_parts(match.group()[1:])


def _hashtag(match: re.Match[str]) -> str:
    """"#SummerSale" -> "hashtag summer sale"."""
    return "hashtag " + " ".join(re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", match.group()[1:])).lower()


RULES: list[Rule] = [
    ("email", EMAIL, _email), ("url", URL, _url),
    ("handle", r"(?<![\w@.])@[A-Za-z_][\w.]{0,29}[\w](?![\w@])", _handle),
    ("hashtag", r"(?<![\w&#])#[A-Za-z][A-Za-z0-9_]{1,60}(?![\w#])", _hashtag),
]
