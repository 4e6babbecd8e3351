"""URLs and email addresses, spoken: "https://example.com/docs" -> "example dot com slash docs". Pure.

The scheme is dropped, a query string or fragment is not read; each separator is named. A name is said as a word
unless people spell it: "www", a known acronym ("irs", "hr", "api"), a name with no vowel, a two-letter country
domain ("io", "ai"; not "co" or "me"); an initial before a surname is split off ("jsmith" -> "J smith"). Numbers of
one or two digits are said as numbers, longer ones digit by digit ("localhost:8080", "/sale/2025").
"""

from __future__ import annotations

import re

from engine.speech_text import words as w
from engine.speech_text.abbreviations import COMMON_WORDS, SAYABLE_START, SPELLED, caps, one_syllable
from engine.speech_text.numbers import CODE_NOUN, Rule, ip, ipv4, port

TLDS = ("com org net io dev ai co edu gov app uk de fr ca au us info biz me tv ly gg xyz tech cloud sh travel shop "
        "store online site blog news health bank page live club life world today email "
        # countries' domains that are no English word ("in", "it", "no", "at", "be" are: any case of them would do)
        "jp cn ru br es nl se fi dk pl ch nz za mx kr tw hk sg ie il gr pt cz ar cl eu asia mobi").split()
_SPELLED_NAMES = frozenset(
    {name.lower() for name in SPELLED} - COMMON_WORDS
    | set("irs ups dmv dhl faq hbo bbc cnn nbc abc cbs npr ibm aws nyc cdc fda nih mit nyu usps ssa fbi cia usda epa faa "
          "tsa sku imdb ap ar qa ios ta vip".split())  # (a venue's VIP desk: "vip@")  # (and offices': accounts payable, receivable, quality, a teaching
    # assistant's: "ap@", "ap.org", "ta_help@")
)
_CODAS = frozenset("ck ct ft ld lf lk lm lp lt mp nd ng nk nt pt rb rd rk rm rn rp rt sh sk sp st th ch ff ll ss "
                   "ks ps ts gs ds ns ms ls rs bs rg rl rf rv lb lv lg wl wn ws xt rc".split())  # ("arc", "arcadia")
_SAID_DOMAINS = frozenset({"co", "me"})
_RUN_TOGETHER = {"noreply": "no reply", "donotreply": "do not reply", "dontreply": "don't reply"}
_SAID_NAMES = frozenset({"gmail", "hotmail", "ymail", "icloud"})  # said as words, whatever their first letters
# Two consonants that can open an English syllable; any other pair opening a name marks an initial ("jsmith").
_ONSETS = frozenset("bl br ch cl cr dr dw fl fr gh gl gn gr kl kn kr ph pl pr ps qu rh sc sh sk sl sm sn sp sq st sw "
                    "th tr ts tw vl wh wr".split())
_SEPARATORS = {".": " dot ", "/": " slash ", "-": " dash ", "_": " underscore ", "@": " at ", "~": " tilde ",
               ":": " colon ", "+": " plus ", "=": " equals ", "&": " and ", "%": " percent "}
_TAIL = r"[^\s<>\"'’”)\]]{0,2000}?(?=[.,;:!?'’”)\]]*(?:\s|$))"
FILE_TYPES = ("pdf doc docx xls xlsx csv txt rtf ppt pptx odt json yaml yml toml xml html htm md log ini cfg conf "
              "png jpg jpeg gif svg heic webp bmp tiff mp3 mp4 wav m4a mov avi zip tar gz rar exe dmg apk msi py js ts "
              "ics vcf eml epub sh cpp hpp cs go rb php java kt swift lua sql db sqlite css scss jsx tsx vue mjs lock "
              "bat ps1 jar whl deb rpm iso 7z bz2 xz tgz ipynb mkv webm flac ogg aac psd srt vtt bak tmp pem crt bin img").split()
# (no "c" or "h": the file rule reads a type in any case, and "D.C." is a place)
# A scheme as RFC 3986 writes one ("https://", "file:///", "ssh://", "s3://"); http, https and ftp are not said.
_SCHEME = r"[A-Za-z][A-Za-z0-9+.-]{0,15}://"
URL = (
    rf"(?<![\w@/.])(?:{_SCHEME}|www\.){_TAIL}"
    rf"|(?<![\w@/.-])(?:(?=[\w-]{{1,63}}+\.)[A-Za-z0-9][\w-]{{0,62}}(?:\.[\w-]{{1,63}}){{0,5}}\.(?:{'|'.join(TLDS)}|{'|'.join(TLDS).upper()}|{'|'.join(t.title() for t in TLDS if len(t) > 2)})"
    rf"(?!\.[A-Za-z0-9])"
    rf"|(?=[a-z0-9-]{{1,63}}+\.)[a-z0-9][a-z0-9-]{{0,62}}(?:\.[a-z0-9-]{{2,63}}){{0,4}}\.[a-z]{{2,24}}(?=/[A-Za-z0-9])"  # any TLD before a path
    # any top-level domain (RFC 1034 labels: letters, digits, hyphens; the last of 2-24 letters) on a small-letter
    # host of names of two characters or more, not a file's type ("node.js" is a file): "example.museum"
    rf"|(?=[a-z0-9-]{{2,63}}+\.[a-z])[a-z0-9][a-z0-9-]{{1,62}}(?:\.[a-z0-9-]{{2,63}}){{0,4}}\.(?!(?:{'|'.join(FILE_TYPES)})(?![a-z]))[a-z]{{2,24}}"
    rf"(?![\w@(-]|\.\w)"
    # a path, or a query of named values right after the host ("track.parcelo.com?id=88213")
    rf"|localhost(?=:\d))(?::\d{{1,5}})?(?:/{_TAIL}|\?(?=[A-Za-z][\w-]*=){_TAIL})?(?![\w@-])"
)
# an address, or an SSH remote's ("git@github.com:user/repo.git": its path after a colon, with a slash)
EMAIL = (r"(?<![\w.+'-])(?:mailto:)?[\w+'-]{1,64}+(?:\.[\w+'-]{1,64}+){0,8}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){1,8}"
         r"(?::(?=[\w.~-]*/)[\w~-][\w./~-]{0,120}[\w/](?![\w@])|(?![\w-]))")
# a host by an address with a three-digit octet, every octet digit by digit ("192.168.1.50": "five zero"; "10.0.0.1"
# keeps "ten", as its readers say it)
_IPV4 = re.compile(r"(?=[\d.]*\d{3})\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?")
_PART = re.compile(r"[A-Za-z]+|\d+|.", re.S)


def _coda(cluster: str) -> bool:
    """Whether consonants close an English syllable: "rts", "nds", "lps", "rst" ("spn", "sgs" do not)."""
    cluster = re.sub(r"(.)\1", r"\1", cluster)  # a doubled letter is one sound: "apps", "adds"
    if len(cluster) == 1:
        return True
    if len(cluster) == 2:
        return cluster in _CODAS
    return (cluster[:2] in _CODAS and cluster[2] in "st") or (cluster[0] in "lnmr" and cluster[1:] in _CODAS) \
        or cluster == "tch"  # "itch", "notch"


def _name(part: str, domain: bool, host: bool = False, url_path: bool = False) -> str:
    """One name of a URL or address: "irs" -> "I R S", "jsmith" -> "J smith", "io" at the end -> "I O"; in a host,
    two letters that are no word are spelled ("aa.com", "511ny.org", "ev-charging": "A A", "N Y", "E V")."""
    lower = part.lower()
    if len(part) == 4 and lower.endswith("s") and lower[2] != "s" and _name(part[:-1], False) == " ".join(part[:-1].upper()):
        return " ".join(part.upper())  # an acronym's plural, spelled with its "s": "kpis" "K P I S", "apis"
    if (lower in _SPELLED_NAMES or lower == "www" or len(part) == 1 or not re.search(r"[aeiouy]", lower)
            or (domain and len(part) == 2 and lower not in _SAID_DOMAINS)
            or (host and len(part) == 2 and lower not in COMMON_WORDS and lower not in _SAID_DOMAINS)
            # "y" its only vowel, after two consonants no word opens with: "qty" ("dry", "gym" are words)
            or re.fullmatch(r"[^aeiouy]{2}[^aeiou]*", lower) and lower[:2] not in _ONSETS
            # a short name that opens no English syllable: "cmu", "nyu" ("mit", "abc" do: listed)
            or len(part) <= 3 and not SAYABLE_START.match(lower)
            # a short name whose only vowel ends it after consonants no English syllable opens with: "flsa" ("spa" does)
            or len(part) <= 5 and re.fullmatch(r"[^aeiouy]{2,}[aeiou]", lower) and not SAYABLE_START.match(lower)
            # in a host, a vowel and two consonants that close no English syllable: "adp", "aig" ("act", "ant" do)
            or (host or url_path) and re.fullmatch(r"[aeiou]([^aeiouy])(?!\1)[^aeiouy]", lower) and lower[1:] not in _CODAS
            and lower not in COMMON_WORDS and lower not in TLDS
            # in a host, a short name opening with its only vowel whose consonants after close no English syllable:
            # "espn", "usgs" ("arts", "ends", "alps" do)
            or host and len(part) == 4 and re.fullmatch(r"[aeiou][^aeiouy]{3}", lower) and not _coda(lower[1:])
            and lower not in COMMON_WORDS
            # in a host, a short name ending in two consonants, no liquid, nasal or "s" among them, that close no
            # English syllable: "nicb" ("bank", "yelp", "hertz" do)
            or host and 4 <= len(part) <= 5 and re.fullmatch(r"[a-z]*[aeiouy]([b-df-hj-kp-qtv-xz])(?!\1)[b-df-gj-np-rtv-xz]", lower)
            and lower[-2:] not in _CODAS and lower not in COMMON_WORDS):
        return " ".join(part.upper())
    if host and len(part) >= 6 and lower[0] in "aeiou":
        # a known acronym run into a word in a host, where the two consonants at the seam neither close nor open a
        # syllable: "apnews" "A P news" ("pn")
        for cut in (2, 3):
            seam = lower[cut - 1:cut + 1]
            if (lower[:cut] in _SPELLED_NAMES and re.fullmatch(r"[^aeiouy]{2}", seam) and seam not in _CODAS
                    and seam not in _ONSETS and SAYABLE_START.match(lower[cut:]) and len(part) - cut >= 4):
                return " ".join(part[:cut].upper()) + " " + part[cut:]
    if host and re.fullmatch(r"ny[b-df-hj-np-tv-z][a-z]{3,}", lower) and SAYABLE_START.match(lower[2:]):
        return "N Y " + part[2:]  # New York's initials run into a name: "nytimes" "N Y times", "nypost"
    if len(part) >= 4 and re.match(r"[^aeiouy]{2}", lower) and lower[:2] not in _ONSETS and lower not in _SAID_NAMES:
        # initials before a name: each consonant that no syllable opens with ("jsmith" "J smith", "sfbart" "S F
        # bart"); a rest of two letters is spelled too ("kqed" "K Q E D")
        peeled = 1
        while peeled < 3 and not SAYABLE_START.match(lower[peeled:]) and re.match(r"[^aeiouy]", lower[peeled]):
            peeled += 1
        if lower[:peeled + 1] in _SPELLED_NAMES and len(part) - peeled > 4 and SAYABLE_START.match(lower[peeled + 1:]):
            peeled += 1  # a known acronym run into a word: "cbsnews" "C B S news" (not "C B snews")
        if len(part) - peeled <= 2:
            return " ".join(part.upper())
        return " ".join(part[:peeled].upper()) + " " + part[peeled:]
    return part


_MODIFIERS = {"ctrl": "control", "control": "control", "alt": "alt", "shift": "shift", "cmd": "command",
              "command": "command", "opt": "option", "option": "option", "win": "windows", "fn": "function",
              "super": "super", "meta": "meta"}
_KEYS = {"del": "delete", "delete": "delete", "esc": "escape", "escape": "escape", "enter": "enter",
         "return": "return", "tab": "tab", "space": "space", "backspace": "backspace", "ins": "insert",
         "insert": "insert", "home": "home", "end": "end", "pgup": "page up", "pgdn": "page down", "up": "up",
         "down": "down", "left": "left", "right": "right", **{f"f{n}": f"F {w.cardinal(str(n))}" for n in range(1, 25)}}
_MODIFIER = "|".join(sorted({*_MODIFIERS, *(m.upper() for m in _MODIFIERS), *(m.title() for m in _MODIFIERS)},
                            key=len, reverse=True))
_KEY = "|".join(sorted({*_KEYS, *(k.upper() for k in _KEYS), *(k.title() for k in _KEYS)}, key=len, reverse=True))


def _key_chord(match: re.Match[str]) -> str | None:
    """"Ctrl+Alt+Del" -> "control alt delete": modifiers by name, then the key (a letter in capitals); joined by
    hyphens only with a capital ("Cmd-Z"; "alt-right" is a word)."""
    if "+" not in match.group() and match.group()[0].islower():
        return None
    *modifiers, key = re.split(r"[+-]", match.group())
    said = [_MODIFIERS[m.lower()] for m in modifiers]
    return " ".join([*said, _KEYS.get(key.lower()) or (w.cardinal(key) if key.isdigit() else key.upper())])


_CAPITALS = re.compile(r"(?<![\w'’])[A-Z]{2,5}(?=s?(?![\w'’]))")


def capitals_before(match: re.Match[str]) -> frozenset[str]:
    """The initialisms the text writes in capitals just before ``match`` (as far as a streamed text's context holds:
    64 characters), in small letters: "the HOA docs to board@pinecrest-hoa.org" reads "hoa" as "H O A"."""
    return frozenset(found.group().lower() for found in _CAPITALS.finditer(match.string, max(0, match.start() - 64),
                                                                              match.start())
                     if " " in caps(found.group()))


def _spoken_parts(text: str, domain_at: int = -1, by_digit: bool = False,
                  spelled: frozenset[str] = frozenset()) -> str:
    """Say ``text`` part by part; the name that starts at ``domain_at`` is the top-level domain, and a two-letter name
    between dots of the host before it a country's ("dmv.ca.gov"); numbers digit by digit if ``by_digit``."""
    said = []
    host_start = text.rfind("@", 0, max(domain_at, 0)) + 1
    host_end = host_start + len(re.match(r"[^/:?#]*", text[host_start:]).group())  # type: ignore[union-attr]
    mixed = not text.isupper()  # capitals among small letters are initials ("AP@Contoso.com"); all capitals are not
    for found in _PART.finditer(text):
        part = found.group()
        if part.isdigit():  # in an address's name before its "@", digit by digit ("doe_92": nine two)
            if len(part) == 4 and w.is_year(part) and "/" in text[:found.start()] and (
                    text[found.start() - 1].isalpha() or re.search(r"[A-Za-z]-\Z", text[:found.start()])
                    or text[found.start() - 1] == "/" and re.match(r"[-_][A-Za-z]", text[found.end():found.end() + 2])):
                # a year run into a word in a path, or hyphened to one: "r/travel2025" "travel twenty twenty-five",
                # "rebates-2025", "form-1040" "form dash ten forty", "docs/2025-budget.pdf" (a year before a word)
                said.append(w.year(int(part)))
                continue
            said.append(w.cardinal(part) if len(part) <= 2 and found.start() >= host_start and not by_digit
                        and not (found.start() < host_end and _IPV4.fullmatch(text, host_start, host_end))
                        else w.digits(part))
        elif part.isalpha():
            start, end = found.start(), found.end()
            country = host_start < start < domain_at and text[start - 1] == "." and text[end:end + 1] == "."
            if mixed and start == domain_at:  # "ClearWater.NET": a top-level domain is read as one, in any case
                part = part.lower()
            initials = mixed and part.isupper() and len(part) <= 3 and part.lower() not in _SAID_DOMAINS
            if mixed and part.isupper() and len(part) > 3 and "/" in text[:start]:
                said.append(caps(part))  # "github.com/NVIDIA": a name in capitals as capitals are said ("nvidia")
                continue
            trailing = re.fullmatch(r"([A-Z]?[a-z]{3,})([A-Z]{2,3})", part) if "/" in text[:start] else None
            if trailing:  # "facebook.com/RiversideHS": a name run into its initials, "Riverside H S"
                said.append(_name(trailing[1], False) + " " + " ".join(trailing[2]))
                continue
            if part.lower() == "it" and text[end:end + 1] in "-._" and (start < host_start or start != domain_at
                                                                         and text[start - 1:start] in "@."):
                said.append("I T")  # "it-help@", "@it-services.net", "it.example.edu": the department, I T
                continue
            if part.islower() and part in spelled and start != domain_at and not (
                    one_syllable(part) and part[-1] not in "aeiouy"):  # ("PODs ... pod.dockside.us": a word, "pod")
                said.append(" ".join(part.upper()))  # "HOA ... hoa.lakeside.org": initials the text writes in capitals
                continue
            if len(part) == 2 and part.islower() and part not in COMMON_WORDS and part not in _SAID_DOMAINS and (
                    domain_at >= 0 and start > host_end and text[start - 1] == "/" and text[end:end + 1] in ("/", "")
                    or start < host_start and text[end:end + 1] in ("_", "-") and text[start - 1:start] in ("", "_", "-", ".")):
                said.append(" ".join(part.upper()))  # "/ev/charge-now", "ev_support@": a two-letter folder or
                continue  # department that is no word, its letters
            if host_start <= start < host_end and len(part) == 3 and part.islower() and part not in COMMON_WORDS \
                    and re.match(r"\.gov(?![a-z])", text[end:end + 5]) \
                    and re.fullmatch(r"(?:[a-z]+://)?(?:www\.)?", text[host_start:start], re.I):
                said.append(" ".join(part.upper()))  # "dol.gov", "sec.gov": a government agency's initials, the
                continue  # host's own name (not a subdomain's word: "nhtsa.dot.gov")
            if part.lower() in _RUN_TOGETHER:  # "noreply@": the words run together, said apart
                said.append(_RUN_TOGETHER[part.lower()])
                continue
            said.append(" ".join(part) if initials else _name(part, start == domain_at or country,
                                                              host_start <= start < host_end and domain_at >= 0,
                                                              domain_at >= 0 and start > host_end))
        else:
            said.append(_SEPARATORS.get(part, " "))
    return " ".join("".join(s if s.startswith(" ") else f" {s} " for s in said).split())


def _domain_at(text: str) -> int:
    """Where the top-level domain of the host that ``text`` starts with begins (-1 when it has none)."""
    host = re.match(r"[^/:]*", text).group()  # type: ignore[union-attr]
    return host.rfind(".") + 1 if "." in host else -1


def _url(match: re.Match[str]) -> str:
    text = re.sub(r"^(?:https?|ftp)://", "", match.group(), flags=re.I)
    scheme = re.match(_SCHEME, text)
    if scheme:  # "file:///etc/hosts": "file colon slash slash slash etc slash hosts"
        return (_spoken_parts(scheme.group()[:-3]) + " colon slash slash "
                + (_path(text[scheme.end():]) if text[scheme.end():] else "")).strip()
    text, _, fragment = text.partition("#")
    text, _, query = text.partition("?")
    trailing = text.endswith("/") and "/" in text.rstrip("/")  # "docs.python.org/3/": its last slash is said
    text = text.rstrip("/")
    host, *path = text.split("/")
    if any(_slug(part) for part in path):  # "bit.ly/3xYz9Q": a short link's code, character by character
        said = " slash ".join([_spoken_parts(host, _domain_at(host), spelled=capitals_before(match))] + [
            " ".join(w.digits(run) if run.isdigit() else " ".join(run.upper()) for run in _RUNS.findall(part))
            if _slug(part) else _spoken_parts(part) for part in path])
    else:
        said = _spoken_parts(text, _domain_at(text), spelled=capitals_before(match))
    said = _port(said, text)
    if trailing:
        said += " slash"
    if _SHORT_QUERY.fullmatch(query):
        # "cart?id=7&qty=2": a query's "&" joins its fields, named as the character it is
        said += " question mark " + " ampersand ".join(_spoken_parts(field) for field in query.split("&"))
    if re.fullmatch(r"[A-Za-z][\w-]{0,23}", fragment):  # "faq#returns": a page's section, said; a long one is not
        said += " hash " + _spoken_parts(fragment)
    return said


_SLUG = re.compile(r"(?=[A-Za-z0-9]{4,12}$)(?=.*\d)(?:[A-Za-z]+|\d+){3,}")  # letters and digits mixed thrice and more
_RUNS = re.compile(r"[A-Za-z]+|\d+")


def _slug(part: str) -> bool:
    """A short link's code: letters and digits mixed, in three runs or more ("3xYz9Q"; "travel2025" is a word and a
    year)."""
    return bool(_SLUG.fullmatch(part)) and len(_RUNS.findall(part)) >= 3
# a folder's or a file's name (a full stop after it ends a sentence; one before it a hidden file's: ".bashrc")
_PATH_PART = r"\.?[\w-](?:[\w.-]{0,62}[\w-])?"
_FOLDER = rf"{_PATH_PART}(?: {_PATH_PART}){{0,4}}"  # a folder's name may hold spaces ("Program Files"): a backslash follows
# a query of a few named values ("promo?ref=sms", "login?next=/dashboard", "search?q=shoes&page=2"), said in full;
# a long one (tracking, tokens) is not
_SHORT_QUERY = re.compile(r"(?=.{1,40}$)[A-Za-z][\w-]*=[\w./:+-]*\w(?:&[A-Za-z][\w-]*=[\w./:+-]*\w){0,2}")


def _port(said: str, text: str) -> str:
    """A round port ("3000", "8000") is said as a number, as developers say one ("localhost:3000" "localhost colon
    three thousand"); any other digit by digit ("8080", "5432")."""
    found = re.match(r"[^/:]*:(\d{2,5})(?![\d])", text)
    if found and port(found.group(1)) != w.digits(found.group(1)):
        return said.replace(" colon " + w.digits(found.group(1)), " colon " + port(found.group(1)), 1)
    return said


_HEX_GROUP = re.compile(r"[0-9]+|[A-Fa-f]+")
# groups of one to four hex digits by colons, "::" once for a run of zero groups, a prefix's length after "/"
IPV6 = (r"(?<![\w:.])(?=[0-9A-Fa-f]{0,4}::?[0-9A-Fa-f:])(?:[0-9A-Fa-f]{1,4}|(?=::))(?::{1,2}[0-9A-Fa-f]{1,4}){1,7}:{0,2}"
        r"(?:/\d{1,3})?(?![\w:])")


# six pairs of hex digits, all by colons or all by hyphens (no back-reference: the rules are joined in one pattern)
MAC = r"(?<![\w:-])[0-9A-Fa-f]{2}(?:(?::[0-9A-Fa-f]{2}){5}|(?:-[0-9A-Fa-f]{2}){5})(?![\w:-])"


def _mac(match: re.Match[str]) -> str:
    """"00:1A:2B:3C:4D:5E" -> "zero zero one A two B ...": a network card's address, pair by pair (its separators
    not said)."""
    return " ".join(" ".join(w.digits(c) if c.isdigit() else c.upper() for c in pair)
                    for pair in re.split("[:-]", match.group()))


def _ipv6(match: re.Match[str]) -> str | None:
    """"2001:db8::1" -> "two thousand one colon D B eight colon colon one": an IPv6 address group by group (a group
    of digits as a number, letters spelled, digits among letters one by one), "::" as "colon colon"."""
    text, _, prefix = match.group().partition("/")
    groups = text.split(":")
    if text.count("::") > 1 or ":::" in text or len(groups) > 8 or len(groups) < 3:
        return None
    if "::" not in text and len(groups) != 8:
        return None
    if "::" not in text and all(g.isdigit() for g in groups) and len(groups) < 5:
        return None  # "12:30:45" is a time
    said = []
    for group in groups:
        if not group:
            said.append("")
        elif group.isdigit():
            said.append(w.cardinal(group) if not group.startswith("0") or group == "0" else w.digits(group))
        else:
            said.append(" ".join(w.digits(run) if run.isdigit() else " ".join(run.upper())
                                 for run in _HEX_GROUP.findall(group)))
    spoken = " ".join(" colon ".join(said).split())
    return spoken + (" slash " + w.cardinal(prefix) if prefix else "")


def _path(text: str) -> str:
    """A file system path, each "/" said: "/usr/local/bin/run.sh" -> "slash usr slash local slash bin slash run dot
    S H", "~/notes" -> "tilde slash notes"; a file's name at its end as a file's name."""
    folders, _, name = text.rpartition("/")
    said = _spoken_parts(folders + "/") if folders or text.startswith("/") else ""
    named = re.fullmatch(_FILE, name)
    return (said + " " + (_file_name(named) if named else _spoken_parts(name))).strip()


def _windows_path(match: re.Match[str]) -> str:
    """"C:\\Users\\Documents" -> "C colon backslash Users backslash Documents"; a folder named by a year is the year,
    a file's name at its end a file's name ("config dot I N I")."""
    drive, rest = match.group().split(":", 1)
    parts = [part for part in rest.split("\\") if part]
    folders, name = (parts, "") if rest.endswith("\\") or not parts else (parts[:-1], parts[-1])
    said = [w.year(int(part)) if len(part) == 4 and w.is_year(part) else _spoken_parts(part) for part in folders]
    if name:
        named = re.fullmatch(_FILE, name)
        said.append(_file_name(named) if named else _spoken_parts(name))
    return f"{drive.upper()} colon backslash " + " backslash ".join(said)


def _unc_path(match: re.Match[str]) -> str:
    """"\\\\server\\share\\file.txt" -> "backslash backslash server backslash share backslash file dot T X T"."""
    *folders, name = match.group()[2:].split("\\")
    named = re.fullmatch(_FILE, name)
    said = [_spoken_parts(part) for part in folders] + ([_file_name(named) if named else _spoken_parts(name)] if name else [])
    return "backslash backslash " + " backslash ".join(said)


def _email(match: re.Match[str]) -> str:
    """An address; an SSH remote's ("git@github.com:user/repo.git"), its address, "colon", then its path."""
    address, colon, path = match.group().removeprefix("mailto:").partition(":")  # "mailto:" is not said
    at = address.index("@") + 1
    if (parts := ipv4(address[at:])) is not None:  # "user@192.168.0.10": a host by its IP address, read as one
        return _spoken_parts(address[:at - 1]) + " at " + ip(parts) + (" colon " + _spoken_parts(path) if colon else "")
    said = _spoken_parts(address, at + _domain_at(address[at:]), spelled=capitals_before(match))
    if address[:at - 1].lower() in _DESK_MAILBOXES:  # "ada@arena.com": a desk's initials, the whole mailbox's name
        said = " ".join(address[:at - 1].upper()) + said[said.index(" at "):]
    return said + (" colon " + _spoken_parts(path) if colon else "")


# A whole mailbox's name that is a department's or a desk's initialism, though a name or a word elsewhere: "ada@" (the
# accessibility desk, after the ADA), "it@" (information technology)
_DESK_MAILBOXES = frozenset({"ada", "it"})


def _file_name(match: re.Match[str]) -> str:
    """"report_2024.pdf" -> "report underscore twenty twenty-four dot P D F"; a hyphen in the name is not said."""
    name, extension = match.group().rsplit(".", 1)
    said = []
    for found in _PART.finditer(name):
        part = found.group()
        if part.isdigit():
            said.append(w.year(int(part)) if len(part) == 4 and w.is_year(part) else
                        w.cardinal(part) if len(part) <= 2 else w.digits(part))
        elif part.isalpha():
            # "hw3_smith.pdf" "H W three": small letters with no vowel run into a number ("nb.ipynb" stays "nb")
            said.append(" ".join(part.upper()) if part.islower() and len(part) >= 2 and (
                            not re.search(r"[aeiouy]", part) and name[found.end():found.end() + 1].isdigit()
                            or part in _SPELLED_NAMES) else
                        part if part.islower() or part.istitle() and len(part) > 1 else
                        caps(part) if part.isupper() and len(part) >= 4 else " ".join(part.upper()))  # "README"
        else:
            said.append({"-": " ", " ": " "}.get(part) or _SEPARATORS.get(part, " "))
    spoken_extension = " ".join(_extension(group) if group.isalpha() else w.cardinal(group)
                                for group in re.findall(r"[A-Za-z]+|\d+", extension.upper()))
    return " ".join("".join(s if s.startswith(" ") else f" {s} " for s in said).split()) + " dot " + spoken_extension


# file types said as words (caps() spells them: no common word) and one it would say that nobody does
_SAID_EXTENSIONS = frozenset("tar java toml lua jar flac log conf bin".split())  # "app dot log", "nginx dot conf"
_SPELLED_EXTENSIONS = frozenset({"ipynb"})


def _extension(name: str) -> str:
    """A file's type as developers say it: "PDF" "P D F", "ZIP" "zip", "TAR" "tar", "IPYNB" "I P Y N B"."""
    lower = name.lower()
    return lower if lower in _SAID_EXTENSIONS else " ".join(name) if lower in _SPELLED_EXTENSIONS else caps(name)


def _doi(match: re.Match[str]) -> str:
    """"doi:10.1000/182" -> "D O I ten dot one zero zero zero slash one eight two": a document's identifier."""
    prefix, _, suffix = re.sub(r"(?i:doi):?[ \t]?", "", match.group(), count=1).partition("/")
    return f"D O I ten dot {w.digits(prefix[3:])} slash " + _spoken_parts(suffix, by_digit=True)


def _identifier(match: re.Match[str]) -> str:
    """"GUEST_5G" -> "guest underscore five G", "mike_t88" -> "mike underscore T eight eight": a user name, a
    network's or a variable's name, read part by part with its underscores; "1_000_000" "one million" (a number's
    thousands grouped by underscores, as code writes them)."""
    if re.fullmatch(r"\d{1,3}(?:_\d{3})+", match.group()):
        return w.cardinal(match.group().replace("_", ""))
    return _spoken_parts(match.group(), by_digit=True)


def _handle(match: re.Match[str]) -> str:
    """"@the.bake.shop" -> "at the dot bake dot shop"; capitals run into a capitalised word are an acronym before it:
    "@NWSBoston" -> "at N W S Boston"."""
    name = match.group()[1:]
    acronym = re.match(r"[A-Z]{2,5}(?=[A-Z][a-z])", name)
    if acronym:
        return f"at {' '.join(acronym.group())} {_spoken_parts(name[acronym.end():])}"
    return "at " + _spoken_parts(name)


def _hashtag(match: re.Match[str]) -> str | None:
    """"#SummerSale" -> "hashtag summer sale" (after the word "hashtag", its words only); "#A7" is a code, not a
    tag."""
    if re.fullmatch(r"#[A-Z0-9]*\d[A-Z0-9]*|#(?:[A-Za-z]{1,2}\d+)+[A-Za-z]{0,2}", match.group()) \
            and not _tag_with_year(match):
        return None  # "#a7x9": short runs of letters between digits are a code's
    named = re.search(r"(?i:\bhashtag)[ \t]+\Z", match.string[max(0, match.start() - 10):match.start()])
    return ("" if named else "hashtag ") + " dash ".join(" ".join(_tag_word(word) for word in re.findall(
        r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", piece)) for piece in match.group()[1:].split("-"))  # "#it-outages": a channel


# a name in capitals and its year, a tag unless a noun names it a code: "#WWDC24", "#AI2024"; not "Order #AB12"
_TAG_WITH_YEAR = re.compile(r"#[A-Z]{2,}(?:[1-9]\d|(?:19|20)\d\d)")
_NAMED_CODE = re.compile(r"(?i:\b(?:order|ticket|employee|member|badge|customer|patient|claim|tracking|job|issue|bug|"
                         r"number))[ \t]*\Z")  # and CODE_NOUN's nouns


def _tag_with_year(match: re.Match[str]) -> bool:
    before = max(0, match.start() - 16), match.start()
    return bool(_TAG_WITH_YEAR.fullmatch(match.group())) and not any(
        noun.search(match.string, *before) for noun in (_NAMED_CODE, CODE_NOUN))


def _tag_word(word: str) -> str:
    """One word of a hashtag: a year ("#SummerSale2025") or a number said as one, a short acronym spelled."""
    if word.isdigit():
        return w.year(int(word)) if len(word) == 4 and w.is_year(word) else w.number(word)
    return " ".join(word) if word.isupper() and len(word) <= 4 and word.lower() not in COMMON_WORDS else word.lower()


def _flag(match: re.Match[str]) -> str:
    """A command line's option: "--dry-run" -> "dash dash dry dash run", "-version" "dash version"; a short one's
    letters spelled, as each may be a flag of its own: "-la" "dash L A", "-std" "dash S T D", "-O2" "dash O two"."""
    name = match.group().lstrip("-")
    dashes = len(match.group()) - len(name)
    if dashes == 2 or len(name) > 3:
        return "dash " * dashes + _spoken_parts(name)
    return "dash " + " ".join(" ".join(run.upper()) if run.isalpha() else w.cardinal(run) for run in _RUNS.findall(name))


_FILE = (rf"(?<![\w@/.-])[A-Za-z0-9][\w-]{{0,60}}+(?:\.[\w-]{{1,30}}+){{0,2}}\.(?i:{'|'.join(FILE_TYPES)})"
         r"(?![\w@/-]|\.\w)")

RULES: list[Rule] = [
    ("mac", MAC, _mac), ("ipv6", IPV6, _ipv6),
    # "the f/1.8 lens", "shot at f/11": a lens's aperture, "f" and its number ("f one point eight")
    ("aperture", r"(?<![\w/.])f/(?:[1-9]\d?(?:\.\d)?|0\.\d{1,2})(?![\w/]|\.\d)",
     lambda match: "f " + w.number(match.group()[2:])),
    # "port 8080", "ports 80 and 443": a network port's number after the word, as developers say it (digit by digit; "port 80" is eighty)
    ("port", r"(?<=(?<![\w])[Pp]ort[ \t])[1-9]\d{2,4}(?![\w:%]|[.,]\d)", lambda match: port(match.group())),
    ("doi", r"(?<![\w])(?i:doi):?[ \t]?10\.\d{4,9}/[^\s\"<>]*[\w/]", _doi),
    ("email", EMAIL, _email), ("url", URL, _url), ("file_name", _FILE, _file_name),
    ("windows_path", rf"(?<![\w])[A-Za-z]:\\(?:{_FOLDER}\\){{0,11}}(?:{_PATH_PART})?", _windows_path),
    # "\\server\share\file.txt": a network share's path, each backslash said
    ("unc_path", rf"(?<![\w\\])\\\\{_PATH_PART}(?:\\{_FOLDER}){{1,11}}\\?(?![\w\\])", _unc_path),
    ("identifier", r"(?<![\w@/.#-])_*[A-Za-z0-9][A-Za-z0-9]*+(?:\.[A-Za-z0-9]++)*(?:_+[A-Za-z0-9]+)+(?:[-_][A-Za-z0-9]+)*_*"
                   r"(?![\w@/-]|\.\w)",
     _identifier),  # "mike.r_2024": a user name may hold dots before its underscore; "ab_12-x", "__init__"
    # a hidden file or folder in a sentence: ".env", ".gitignore" "dot env", "dot gitignore" (at the text's start or
    # after a space, a bracket, a quote, or what starts a streamed text's context: stream.py)
    ("dot_file", r"(?<!\w)(?<![^\s(\"'`|<\[\]])\.[a-z][a-z0-9_-]{1,30}(?:\.[a-z0-9]{1,8})?(?![\w./-])",
     lambda match: "dot " + _spoken_parts(match.group()[1:])),
    # "SSID: ACME-Guest", "Wi-Fi name: Cafe-5G": a network's name after its label, its words kept, "dash" between
    ("network_name", r"(?:(?<=SSID:[ \t])|(?<=(?i:network[ \t]name):[ \t])|(?<=(?i:wi-fi[ \t]name):[ \t]))"
                     r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+(?![\w@/.-]|\.\w)",
     lambda match: " dash ".join(part.capitalize() if part.isupper() and len(part) > 3 and SAYABLE_START.match(part.lower())
                                 else _spoken_parts(part, by_digit=True) for part in match.group().split("-"))),
    ("handle", r"(?<![\w@.])@[A-Za-z_][\w.-]{0,29}[\w](?![\w@])", _handle),
    # "r/gaming", "u/spez": a subreddit's or a Reddit user's name, "R slash gaming"
    ("subreddit", r"(?<![\w/.@-])[ru]/[A-Za-z0-9][A-Za-z0-9_]{1,20}(?![\w/.-]|\.\w)",
     lambda match: match.group()[0].upper() + " slash " + _spoken_parts(match.group()[2:])),
    # a Unix path: from the root, the home folder ("~/") or here ("./"), or folders down to a file of a known type
    ("unix_path", rf"(?<![\w/.:~\\])(?:(?:~|\.{{1,2}})?/{_PATH_PART}(?:/{_PATH_PART}){{1,11}}/?|(?:~|\.{{1,2}})/{_PATH_PART}"
     rf"(?:/{_PATH_PART}){{0,11}}/?|(?=[\w.-]{{1,64}}+/){_PATH_PART}(?:/{_PATH_PART}){{1,11}}\.(?i:{'|'.join(FILE_TYPES)}))(?![\w/]|\.\w)",
     lambda match: _path(match.group())),
    # "the /settings page", "type /help", "edit /etc": a route, a chat command or a folder at the root, one word after
    # a slash at a word's start, "slash settings"
    ("web_route", r"(?<![^\s(\"'`\[])/(?=[a-z][a-z0-9_-]+(?![\w/]|\.\w))", lambda match: "slash "),
    ("hashtag", r"(?<![\w&#])#[a-z]{2,}(?:-[a-z][a-z0-9_]*)+(?![\w#-])"  # a chat channel: "#it-outages", dash by dash
                r"|(?<![\w&#])#(?:[A-Za-z]|\d{1,4}(?=[A-Z]?[a-z]))[A-Za-z0-9_]{1,60}(?![\w#])", _hashtag),  # "#100DaysOfCode"
    # "prod-web-03", "db-01": a machine's name, small words and a zero-padded number, each hyphen "dash"
    ("host_name", r"(?<![\w.@/#-])[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*-0\d{1,3}(?![\w-]|\.\w)",
     lambda match: _spoken_parts(match.group(), by_digit=True)),  # "#100DaysOfCode"
    # "-std=c++17", "ls -la", "--dry-run": after a space, not after an operator or a letter ("y = -x", "x -y" are
    # minus x and y), nor a capital's word ("-Note")
    ("flag", r"(?<![^ \t\n`\"'])(?<![=+*/<>×÷−-][ \t])(?<!\b[A-Za-z][ \t])"
             r"(?:--[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*|-(?![A-Z][a-z]{2})[A-Za-z][A-Za-z0-9]*)"
             r"(?![\w-]|[.,;:!?]?[^\s.,;:!?=\"'`)\]])", _flag),
    # "Ctrl+C", "Ctrl+Shift+Esc", "Cmd-Z": a key chord, the modifiers by name, then the key, no "plus" ("control C")
    ("key_chord", rf"(?<![\w+-])(?:{_MODIFIER})(?:[+-](?:{_MODIFIER}))*[+-](?:{_KEY}|[A-Za-z0-9](?![\w+]))(?![\w+])",
     _key_chord),
    ("hash_in_word", r"(?<=[A-Za-z])#\d{1,12}(?![\w#])",  # "Welcome#123": a password's hash sign and its digits
     lambda match: " hash " + w.digits(match.group()[1:])),
]
