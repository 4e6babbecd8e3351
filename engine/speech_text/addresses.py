"""Addresses: house numbers and street names, apartments and suites, ZIP codes. Pure.

``1428 Elm St.`` "fourteen twenty-eight Elm Street" (a house number is said in pairs, as people say them);
``Apt. 4B`` "apartment four B"; ``Ste. 200`` "suite two hundred"; ``CA 94107-1234`` "C A nine four one oh seven,
one two three four"; ``PO Box 1234``. A street's type is expanded only after a street's name (``St.`` is Saint
elsewhere: abbreviations.py).
"""

from __future__ import annotations

import re

from engine.speech_text import words as w
from engine.speech_text.codes import NUMBERING, spell_code
from engine.speech_text.numbers import Rule, ends_sentence_after, trie

STREET_TYPES = {"St": "Street", "Ave": "Avenue", "Av": "Avenue", "Blvd": "Boulevard", "Rd": "Road", "Dr": "Drive",
                "Ln": "Lane", "Ct": "Court", "Pl": "Place", "Pkwy": "Parkway", "Hwy": "Highway", "Ter": "Terrace",
                "Terr": "Terrace", "Cres": "Crescent", "Expy": "Expressway", "Fwy": "Freeway", "Plz": "Plaza",
                "Cir": "Circle", "Sq": "Square", "Trl": "Trail", "Way": "Way", "Street": "Street", "Avenue": "Avenue",
                "Boulevard": "Boulevard", "Road": "Road", "Drive": "Drive", "Lane": "Lane", "Court": "Court",
                "Place": "Place", "Parkway": "Parkway", "Highway": "Highway", "Terrace": "Terrace", "Circle": "Circle",
                "Square": "Square", "Trail": "Trail", "Hwy.": "Highway", "Crescent": "Crescent", "Expressway": "Expressway",
                "Freeway": "Freeway", "Plaza": "Plaza"}
# A shouted address ("77 MAIN ST", "742 EVERGREEN TER") or one typed in small letters ("88 cedar ave"): the types that
# are no word or other abbreviation of their own ("DR", "CT", "WAY" are; in small letters, "pl", "ter" too).
_NO_WORD = "St Ave Blvd Rd Ln Pkwy Hwy".split()
STREET_TYPES |= {kind.upper(): STREET_TYPES[kind] for kind in _NO_WORD + "Ter Cir Pl Trl Plz Expy Fwy Sq".split()}
STREET_TYPES |= {kind.lower(): STREET_TYPES[kind] for kind in _NO_WORD}
# ... and in small letters after a house number and small-letter names, last: "16 maple ct", "9 birch cir"
_SMALL_TYPES = {"ct": "Court", "cir": "Circle", "pkwy": "Parkway", "trl": "Trail"}
# ... and the types that are words or other abbreviations too, only after a house number and a shouted name, last
_SHOUTED_TYPES = {"DR": "Drive", "CT": "Court", "WAY": "Way"}
DIRECTIONS = {"N": "North", "S": "South", "E": "East", "W": "West", "NE": "Northeast", "NW": "Northwest",
              "SE": "Southeast", "SW": "Southwest"}
UNITS = {"apt": "apartment", "apartment": "apartment", "ste": "suite", "suite": "suite", "unit": "unit",
         "rm": "room", "room": "room", "fl": "floor", "floor": "floor", "bldg": "building", "building": "building",
         "gate": "gate", "terminal": "terminal", "seat": "seat", "platform": "platform", "dock": "dock", "bay": "bay",
         "flat": "flat", "lot": "lot", "row": "row", "locker": "locker", "pier": "pier", "box": "box",
         "po box": "P O box", "p.o. box": "P O box", "hangar": "hangar", "cabin": "cabin", "berth": "berth",
         "car": "car", "coach": "coach", "counter": "counter", "desk": "desk", "level": "level", "door": "door",
         "window": "window", "booth": "booth", "table": "table", "lane": "lane", "carousel": "carousel",
         "aisle": "aisle", "exit": "exit", "track": "track", "train": "train", "route": "route", "bus": "bus", "stall": "stall",
         "seats": "seats", "gates": "gates", "rooms": "rooms", "rows": "rows"}
_PLURAL_UNITS = frozenset(("seats", "gates", "rooms", "rows"))  # only before a code with a letter: "Seats 23A and 23B"
STATES = dict(zip(
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK "
    "OR PA RI SC SD TN TX UT VT VA WA WV WI WY PR".split(),
    "Alabama,Alaska,Arizona,Arkansas,California,Colorado,Connecticut,Delaware,D C,Florida,Georgia,Hawaii,Idaho,"
    "Illinois,Indiana,Iowa,Kansas,Kentucky,Louisiana,Maine,Maryland,Massachusetts,Michigan,Minnesota,Mississippi,"
    "Missouri,Montana,Nebraska,Nevada,New Hampshire,New Jersey,New Mexico,New York,North Carolina,North Dakota,Ohio,"
    "Oklahoma,Oregon,Pennsylvania,Rhode Island,South Carolina,South Dakota,Tennessee,Texas,Utah,Vermont,Virginia,"
    "Washington,West Virginia,Wisconsin,Wyoming,Puerto Rico".split(",")))
# Abbreviations inside a street's name.
NAME_WORDS = {"Mt.": "Mount", "Mt": "Mount", "Ft.": "Fort", "Ft": "Fort", "St.": "Saint", "Pt.": "Point",
              "Ctr": "Center", "Ctr.": "Center", "Hts": "Heights", "Hts.": "Heights", "Jct": "Junction", "Lk": "Lake",
              "Rte": "Route", "Rte.": "Route", "Rt": "Route", "Rt.": "Route", "Hwy": "Highway", "Hwy.": "Highway",
              "HWY": "Highway", "RTE": "Route",
              "Dr.": "Doctor", "Jr.": "Junior", "Jr": "Junior"}  # "705 Dr. Martin Luther King Jr. Blvd."
PROVINCES = {"AB": "Alberta", "BC": "British Columbia", "MB": "Manitoba", "NB": "New Brunswick",
             "NL": "Newfoundland and Labrador", "NS": "Nova Scotia", "NT": "Northwest Territories", "NU": "Nunavut",
             "ON": "Ontario", "PE": "Prince Edward Island", "QC": "Quebec", "SK": "Saskatchewan", "YT": "Yukon"}

_NAME = r"(?:(?:Mt|Ft|St|Pt|Ctr|Hts|Jr)\.?(?=[ \t])|Dr\.(?=[ \t])|[A-Z][a-z']+(?:[A-Z][a-z']+)?|\d{1,3}(?:st|nd|rd|th)|[A-Z]{2,})"
_STREET_TYPE = r"(?:%s)" % "|".join(sorted((k for k in STREET_TYPES if not k.endswith(".")), key=len, reverse=True))
_DIRECTION = r"(?:%s)" % "|".join(sorted(DIRECTIONS, key=len, reverse=True))
_ROUTE = (r"(?:Highway|Hwy\.?|HWY|RTE|Route|Rte\.?|Rt\.?|County[ \t]Road|State[ \t]Route)[ \t]+\d{1,4}"
          r"(?:[ \t]+[NSEW](?![\w]))?")  # "2500 N. Highway 1", "2250 Hwy 101 S"
# a Queens house number, its cross street's and its own joined by a hyphen ("31-15 Steinway St"); a street named by
# one letter ("800 K St NW")
_ADDRESS = (rf"(?<![\w.,$#/-])(?:\d{{1,6}}(?:-?[A-Z]|[ \t]1/2)?|\d{{2,3}}-\d{{2}})[ \t]+(?:{_DIRECTION}\.?[ \t]+)?(?:{_ROUTE}|(?:{_NAME}(?:[ \t]+{_NAME}){{0,4}}"
            rf"[ \t]+{_STREET_TYPE}|[A-Z][ \t]+(?:St|Street))\.?(?:[ \t]+{_DIRECTION}\.?(?=[ \t,;]|$))?)(?![\w])"
            rf"|(?<![\w.,$#/-])\d{{1,6}}(?:[ \t]+[A-Z]{{3,}}){{1,4}}[ \t]+(?:DR|CT|WAY)(?=[ \t]*(?:[,;]|\.?$))"  # "318 LAKESHORE DR,": shouted, at the line's end or before a comma
            rf"|(?<![\w.,$#/-])\d{{1,6}}[ \t]+{_DIRECTION}\.?[ \t]+[A-Z][a-z]+(?:[ \t]+{_DIRECTION}\.?)?(?=,|[ \t]+#)"
            # "201 Broadway, Fl 3": a house number and a one-word street's name before a floor, suite or unit
            rf"|(?<![\w.,$#/-])\d{{2,5}}[ \t]+[A-Z][a-z]{{3,}}(?=,?[ \t]+(?:Fl|Floor|Ste|Suite|Apt|Unit)\.?[ \t]*#?\d)"  # "4021 N. Broadway, Chicago", "2600 S. Loop W, Houston"
            rf"|(?<![\w.,$#/-])\d{{1,6}}(?:[ \t]+[nsew])?(?:[ \t]+(?:[a-z][a-z']+|\d{{1,3}}(?:st|nd|rd|th))){{1,3}}"
            rf"[ \t]+(?:st|ave|blvd|rd|ln|ct|cir|pkwy|trl)\.?(?![\w])")  # "88 cedar ave", "55 w 14th st", all in small letters
_UNIT = (r"(?<![\w])(?i:%s)(?:\.?[ \t]*#[ \t]*|\.?[ \t]+|\.)(?!1Z(?:[ \t]?[0-9A-Z]){16}(?![\w-]))(?:[A-Z]?\d+[A-Z]?|[A-Z]{1,2}\d*|\d+[a-z])(?![\w–-]|:\d)"
         % trie(list(UNITS)).replace(r"\ ", r"[ \t]"))  # a trie: tried at every small word; not before a range's dash
# ("train 2–3 times" is a range, not "Train 2")
_ROUTE_ALONE = (r"(?<![\w.])(?:(?:County|State|Farm|Forest)[ \t](?:Rd\.?|Road|Hwy\.?|Highway|Rte\.?|Route)|Hwy\.?|Highway"
                r"|Rte\.?|Rt\.?|Route|Interstate|HWY|RTE)[ \t]+\d{1,4}(?:[A-Z](?![\w]))?(?:[ \t]+[NSEW](?![\w]))?"
                r"(?![\w:/-]|[.,]\d)")  # "Take Hwy 101", "Hwy 101 S", "Rt 66", "County Rd 12", "Rte 9W" (a letter)
_POSTAL = r"(?<![\w])(?:%s),?[ \t]+[A-Z]\d[A-Z][ \t]?\d[A-Z]\d(?![\w-])" % "|".join(PROVINCES)  # "ON M5V 1J5"
# A state's code in small letters that is no word (not "in", "or", "me", "la", "co", "pa"): before a ZIP code only
_SMALL_STATES = "ny nj tx fl nv az nm nc sc nd wv wi wy vt ut tn ky ks ia ak mn nh ri mi".split()
_ZIP = (r"(?<![\w])(?:(?:%s),?[ \t]+|(?i:zip|zip[ \t]code|postal[ \t]code|zipcode)(?:[ \t]+(?:is|was|still|now|as|to|on[ \t]file)){0,3}:?[ \t]+)\d{5}(?:-\d{4})?(?![\w-])"
        % "|".join(STATES)
        + r"|(?<=[a-z][ \t])(?:%s)[ \t]+\d{5}(?:-\d{4})?(?![\w-])" % "|".join(_SMALL_STATES))


# The end of a text that may yet become an address: a house number and, so far, only what a street's name may hold.
_OPEN_ADDRESS = re.compile(rf"(?<![\w.,$#/-])(?:\d{{1,6}}(?:-?[A-Z]|[ \t]1/?2?)?|\d{{2,3}}-\d{{0,2}})(?:[ \t]+(?:(?:{_DIRECTION}|[nsew])\.?|{_NAME})){{0,5}}(?:,?[ \t]+[A-Za-z.]{{1,12}})?(?:[ \t]+#)?\s*\Z")  # the last word may be unfinished; a unit's "#" may follow


# ... or one in small letters whose street type has begun ("900 w olympic b" before "lvd"; the last form of _ADDRESS)
_OPEN_SMALL_ADDRESS = re.compile(r"(?<![\w.,$#/-])\d{1,6}(?:[ \t]+[nsew])?(?:[ \t]+(?:[a-z][a-z']+|\d{1,3}(?:st|nd|rd|th)))"
                                 r"{1,3}[ \t]+(?:st?|a(?:ve?)?|b(?:lv?d?)?|rd?|ln?|c(?:t|ir?)?|p(?:kw?y?)?|t(?:rl?)?)\.?\s*\Z")


def open_address(text: str) -> int | None:
    """Where an address that later text may finish starts at the end of ``text`` ("233 S. Wacker" before "Dr."),
    or None."""
    start = max(0, len(text) - 120)
    tail = _OPEN_ADDRESS.search(text, start) or _OPEN_SMALL_ADDRESS.search(text, start)
    return tail.start() if tail else None


def house_number(text: str) -> str:
    """"1428" -> "fourteen twenty-eight", "123" -> "one twenty-three", "1005" -> "ten oh five", "12345" "twelve three
    forty-five" (a pair, then three as a house number of three is said); other numbers of five digits and more digit
    by digit."""
    if len(text) <= 2 or text[0] == "0":
        return w.cardinal(text)
    if len(text) == 5 and text[2] != "0":
        return w.cardinal(text[:2]) + " " + house_number(text[2:])
    if len(text) > 4 or text.endswith("000"):
        return w.digits(text) if len(text) > 4 else w.cardinal(text)
    head, tail = text[:-2], text[-2:]
    if tail == "00":
        return w.cardinal(head) + " hundred"
    return w.cardinal(head) + " " + ("oh " + w.cardinal(tail[1]) if tail[0] == "0" else w.cardinal(tail))


def _address(match: re.Match[str]) -> str:
    text = match.group()
    number, rest = text.split(None, 1)
    half = rest.startswith("1/2")  # "123 1/2 Pine Ln": a house number and a half, "one twenty-three and a half"
    rest = rest[3:].lstrip() if half else rest
    queens = re.fullmatch(r"(\d{2,3})-(\d{2})", number)
    if queens:  # "31-15": "thirty-one fifteen", "45-07": "forty-five oh seven"
        said = [house_number(queens[1]) + " " + (w.cardinal(queens[2]) if queens[2][0] != "0" else "oh " + w.cardinal(queens[2][1]))]
    else:
        digits, letter = re.fullmatch(r"(\d+)-?([A-Z]?)", number).groups()  # type: ignore[union-attr]
        said = [house_number(digits) + (" " + letter if letter else "") + (" and a half" if half else "")]
    words = rest.split()
    for i, word in enumerate(words):
        bare = word.rstrip(".")
        if len(bare) == 1 and bare.islower() and i == 0 and len(words) > 2:  # "55 w 14th st"
            bare = bare.upper()
        if i == 0 and bare in DIRECTIONS and (len(words) > 2 or words[-1].rstrip(".") not in STREET_TYPES):
            said.append(DIRECTIONS[bare])
        elif word.isdigit():  # a route's number, as a house number is said: "Highway two ninety"
            said.append(house_number(word))
        elif bare in _SHOUTED_TYPES and i == len(words) - 1 and rest.isupper():
            said.append(_SHOUTED_TYPES[bare])
        elif bare in STREET_TYPES and i >= len(words) - 2 and (i == len(words) - 1 or words[-1].rstrip(".") in DIRECTIONS):
            said.append(STREET_TYPES[bare])
        elif i == len(words) - 1 and bare in _SMALL_TYPES and rest.islower():
            said.append(_SMALL_TYPES[bare])
        elif i == len(words) - 1 and bare in DIRECTIONS:
            said.append(DIRECTIONS[bare])
        elif word in NAME_WORDS or bare in NAME_WORDS:
            said.append(NAME_WORDS.get(word) or NAME_WORDS[bare])
        elif re.fullmatch(r"\d+(?:st|nd|rd|th)", word):
            said.append(w.ordinal(word[:-2]))
        else:
            said.append(word)
    return " ".join(said) + ("." if text.endswith(".") and ends_sentence_after(match) else "")


_SMALL_WORDS = frozenset("to of in on at by or an is it as up so no do go be we me my us if he".split())


def _unit(match: re.Match[str]) -> str | None:
    word, code = re.fullmatch(r"(.+?)\.?[ \t]*#?[ \t]*(\S+)", match.group()).groups()  # type: ignore[union-attr]
    if re.fullmatch(r"[IVXLC]{2,}", code) or (code in ("I", "V", "X") and word.title() in NUMBERING):
        return None  # "Level IV", "Level I": a roman numeral (codes.py)
    if word in STATES and re.fullmatch(r"\d{5}", code):  # "Miami, FL 33139": a state and its ZIP code
        return None
    if word.isupper() and code.isalpha() and code.lower() in _SMALL_WORDS:
        return None  # "RETURN CAR TO: ...": a shouted line's next word, not a car's letters
    if code[-1].islower() and not (word.islower() and word in ("apt", "ste", "unit", "rm", "suite", "apartment", "room")):
        return None  # "apt 3b": a flat's letter in small letters, only in an address typed so
    if word.lower() in _PLURAL_UNITS and code.isdigit():
        return None  # "The stadium seats 68,500 fans": a verb or a count, not a list of codes
    name = UNITS[re.sub(r"[ \t]+", " ", word.lower())]
    if word[0].isupper() and name[0].islower():
        name = name.capitalize()
    if "#" in match.group():  # "lot #L2291A", "Apt #4B": the number sign is said, "lot number L two two nine one A"
        name += " number"
    if code.isdigit():
        return f"{name} {house_number(code)}"
    return f"{name} {spell_code(code.upper())}"


# "Seats 23A and 23B", "Gates B4, B6 or B9": a list of codes after a unit's word goes on in the same reading
_MORE_UNITS_BEFORE = re.compile(r"(?<![\w])(?i:%s)\.?[ \t]*#?[ \t]*[A-Z]?\d+[A-Z]?"
                                r"(?:(?:,|,?[ \t]+(?:and|or|&))[ \t]+[A-Z]?\d+[A-Z]?)*(?:,|,?[ \t]+(?:and|or|&))[ \t]+\Z"
                                % "|".join(sorted((k for k in UNITS if " " not in k and "." not in k), key=len, reverse=True)))


def _more_units(match: re.Match[str]) -> str | None:
    if not _MORE_UNITS_BEFORE.search(match.string, max(0, match.start() - 60), match.start()):
        return None
    code = match.group()
    return house_number(code) if code.isdigit() else spell_code(code)


def _zip(match: re.Match[str]) -> str:
    text = match.group()
    code = re.search(r"\d{5}(?:-\d{4})?$", text)
    assert code
    before = text[:code.start()]
    state = before.strip().rstrip(",")
    state = state.upper() if state.islower() and len(state) == 2 else state  # "burlington vt 05401"
    lead = (STATES[state] + ("," if "," in before else "") + " ") if state in STATES else before
    return lead + ", ".join(w.digits(part) for part in code.group().split("-"))


def _ordinal_street(match: re.Match[str]) -> str:
    *direction, number, kind = match.group().split()[:3] if match.group()[0].isalpha() else match.group().split()[:2]
    after = match.group().split()[len(direction) + 2:]
    said = f"{w.ordinal(number[:-2]).capitalize()} {STREET_TYPES[kind.rstrip('.')]}"
    if direction:
        said = f"{DIRECTIONS[direction[0].rstrip('.')]} {said}"
    if after:
        said += " " + DIRECTIONS[after[0].rstrip(".")]
    last = after[0] if after else kind
    return said + ("." if last.endswith(".") and ends_sentence_after(match) else "")


_NAME_BEFORE = re.compile(r"(?:^|[^\w.'’])((?:St\.[ \t]+)?[A-Z][a-z']+|[A-Z]{2,}|Saint[ \t]+[A-Z][a-z']+)[ \t]\Z")
_SENTENCE_OPENS = re.compile(r"(?:^|[.!?:][ \t]+|\n)(?:St\.[ \t]+)?[A-Z][a-z']+[ \t]\Z")


def _street_type(match: re.Match[str]) -> str | None:
    """A street's type after its name with no house number before: "Main St toward" "Main Street", "St. Charles
    Ave" "Saint Charles Avenue", shouted "CLOSES MAIN ST". Its name is a capitalised word that does not open the
    sentence (or a shouted one among shouted words); "St" before a name is Saint ("ST LOUIS")."""
    kind = match.group().rstrip(".")
    before = match.string[max(0, match.start() - 40):match.start()]
    name = _NAME_BEFORE.search(before)
    if name is None:
        return None
    after = match.string[match.end():match.end() + 24]
    if kind.isupper():
        if not name[1].isupper() or re.search(r"[a-z]", before[-24:] + after):
            return None  # shouted only among shouted words
        if kind == "ST" and re.match(r"[ \t]+[A-Z]{2,}(?![\w'’])", after) and \
                not re.match(r"[ \t]+(?:[NSEW]|NE|NW|SE|SW)\b", after):
            return None  # "ST LOUIS": Saint, or a word the shouted text goes on with
    else:
        cross = re.match(r"[ \t]+(?:&|and)[ \t]+(?:\d{1,3}(?:st|nd|rd|th)|[A-Z][a-z]+)[ \t]", after)  # "Magnolia Ave & 5th St"
        if name[1].isupper() or _SENTENCE_OPENS.search(before) and not cross and not name[1].startswith(("St.", "Saint")):
            return None
        if kind == "St" and re.match(r"[ \t]+[A-Z][a-z]", after):
            return None  # "St Kilda": Saint before a name
    return STREET_TYPES[kind] + ("." if match.group().endswith(".") and ends_sentence_after(match) else "")


_INITIAL_BEFORE = re.compile(r"(?:^|[^\w])[A-Z][a-z]*\.?[ \t]\Z")


def _street_direction(match: re.Match[str]) -> str | None:
    if _INITIAL_BEFORE.search(match.string, max(0, match.start() - 20), match.start()):
        return None  # "John S. Park Dr.": a middle initial after a name, or the sentence's first word
    return DIRECTIONS[match.group().rstrip(".")]


def _route(match: re.Match[str]) -> str:
    """"Hwy 101 S" "Highway one oh one South", "County Rd 12" "County Road twelve"."""
    words = match.group().split()
    direction = [DIRECTIONS[words.pop()]] if not words[-1][0].isdigit() else []
    number, letter = re.fullmatch(r"(\d+)([A-Z]?)", words.pop()).groups()  # type: ignore[union-attr]
    number = house_number(number) + (" " + letter if letter else "")
    return " ".join([*(NAME_WORDS.get(word) or STREET_TYPES.get(word.rstrip("."), word) for word in words), number,
                     *direction])


def _postal(match: re.Match[str]) -> str:
    """A Canadian province and postal code: "Ontario M five V one J five"."""
    province, code = re.fullmatch(r"([A-Z]{2}),?[ \t]+(.+)", match.group()).groups()  # type: ignore[union-attr]
    return f"{PROVINCES[province]}{',' if ',' in match.group() else ''} {spell_code(code.replace(' ', ''))}"


# A state's code after its town ("Austin, TX", "Portland, OR,"), or, for the codes that are no word and no other common
# abbreviation, after "in", "from", "to", "near", "across" ("moved to TX"): the state's name, as people say it.
_WORD_STATES = frozenset("OK HI OH IN ME OR".split())  # words too: "Fine, OK", "Hi, HI"
_PLACE_STATES = frozenset("NY NJ TX FL CA NV AZ NM NC SC ND WV WI WY VT UT TN KY KS IA AK MN MT NH RI MI "
                          "MO CO".split())  # not LA (Los Angeles), VA, MD, CT, PA, DC, ID, MS (Word), AR, SD, NE, ...
_NOT_TOWNS = frozenset("yes no fine okay sure well oh hi hey good great thanks thank right alright cool done".split())
_TOWN = re.compile(r"(?:^|[^\w.])([A-Z][a-z]{2,}(?:[ \t][A-Z][a-z]+)?),[ \t]\Z")
_BARE_TOWN = re.compile(r"(?:^|[^\w.])(?:[A-Z][a-z]+[ \t])?[A-Z][a-z]{2,}[ \t]\Z")  # "Austin TX."
_STATE = (rf"(?:(?<=[a-z],[ \t])(?:{'|'.join(STATES)})"
          rf"|(?<=[a-z][ \t])(?:{'|'.join(sorted(set(STATES) - _WORD_STATES))})(?=[ \t]*(?:[.,;:!?)]|$))|(?:(?<=\bin[ \t])|(?<=\bfrom[ \t])|(?<=\bto[ \t])|(?<=\bnear[ \t])"
          rf"|(?<=\bacross[ \t]))(?:{'|'.join(sorted(_PLACE_STATES))}))(?![\w'’&/-]|[ \t]+\d|\.\w)")


def _state(match: re.Match[str]) -> str | None:
    code = match.group()
    before = match.string[max(0, match.start() - 32):match.start()]
    if before.endswith((",", ", ", ",\t")):  # after a town's name: not "Fine, OK", "Hi, HI"
        town = _TOWN.search(before)
        if town is None or town[1].lower() in _NOT_TOWNS or (code in _WORD_STATES and len(town[1]) < 4):
            return None
    elif re.search(r"\b(?:in|from|to|near|across)[ \t]\Z", before):
        if code not in _PLACE_STATES:  # "back in LA": Los Angeles
            return None
    else:  # "Austin TX.": a town's name right before (not a code that is also an acronym: "Member ID:")
        town = _BARE_TOWN.search(before)
        if town is None or town.group().split()[-1].lower() in _NOT_TOWNS or code not in _PLACE_STATES:
            return None
    return STATES[code]


# Two state codes or more in a list ("except AK and HI", "CA, OR, and WA"): states, when one of them is no word and
# no common acronym (_PLACE_STATES) or "state" comes before ("states like ID and MT").
_JOIN = r"(?:,[ \t]*(?:(?:and|or|&)[ \t]+)?|[ \t]+(?:and|or|&)[ \t]+|/)"
# (two capitals at each place, each checked against STATES after: an alternation of every code tried at every capital
# would cost every sentence)
_STATE_LIST = rf"(?<![\w'’&/-])[A-Z]{{2}}(?:{_JOIN}[A-Z]{{2}}){{1,12}}(?![\w'’&/-]|\.\w)"
_STATE_WORD = re.compile(r"(?i:\bstates?\b)[^.!?\n]{0,40}\Z")


def _state_list(match: re.Match[str]) -> str | None:
    codes = re.findall(r"[A-Z]{2}", match.group())
    if not all(code in STATES for code in codes):
        return None
    if not any(code in _PLACE_STATES for code in codes) and not _STATE_WORD.search(
            match.string, max(0, match.start() - 48), match.start()):
        return None
    return re.sub(r"[A-Z]{2}", lambda code: STATES[code.group()], match.group())


# A compass point in a weather report: before a speed ("NW 15 km/h") or after "wind(s)" ("Winds from the SSW at 10"):
# "northwest", "south-southwest".
_COMPASS = r"(?<![\w./&-])(?:[NS]{1,2}[EW]|[EW][NS][EW]|[NSEW])(?![\w/&'’-])"
_POINTS = {"N": "north", "S": "south", "E": "east", "W": "west"}
_SPEED_AFTER = re.compile(r"[ \t]+(?:at[ \t]+)?\d{1,3}(?:[-–]\d{1,3})?[ \t]?(?:km/h|kmh|kph|mph|kts?|knots?|m/s)(?![\w/])")
_WIND_BEFORE = re.compile(r"(?i:\bwinds?)[ \t]*:?[ \t]*(?:(?:from|out[ \t]+of)[ \t]+(?:the[ \t]+)?)?\Z")


def _compass(match: re.Match[str]) -> str | None:
    point = match.group()
    if len(point) == 3 and point[0] not in point[1:]:
        return None  # of three letters, the first is one of the two after it: "NNE", "ENE" (not "NSE")
    if not (_SPEED_AFTER.match(match.string, match.end())
            or _WIND_BEFORE.search(match.string, max(0, match.start() - 24), match.start())):
        return None
    said = "".join(_POINTS[letter] for letter in point[-2:]) if len(point) > 1 else _POINTS[point]
    return f"{_POINTS[point[0]]}-{said}" if len(point) == 3 else said


# "Orange Co., CA", "Cook Co. Sheriff", "in Co. Cork": a county (after a place's name, before its state or a county's
# office or road; before an Irish county's name); "Co." elsewhere is Company (abbreviations.py)
_COUNTY = (r"(?<=[a-z][ \t])Co\.(?=,?[ \t]+(?:%s|%s)(?![\w])|[ \t]+(?:Rd|Road|Hwy|Highway|Sheriff|Courthouse|Clerk|Jail|"
           r"Fair|Line|Commission|Commissioners|Park|Route)(?![\w]))|(?<=\bin[ \t])Co\.(?=[ \t][A-Z][a-z])"
           % ("|".join(STATES), "|".join(STATES.values())))


# The AP's abbreviations of the states' names (those it shortens), as in a politician's party-and-state tag
AP_STATES = {"Ala.": "Alabama", "Ariz.": "Arizona", "Ark.": "Arkansas", "Calif.": "California", "Colo.": "Colorado",
             "Conn.": "Connecticut", "Del.": "Delaware", "Fla.": "Florida", "Ga.": "Georgia", "Ill.": "Illinois",
             "Ind.": "Indiana", "Kan.": "Kansas", "Ky.": "Kentucky", "La.": "Louisiana", "Md.": "Maryland",
             "Mass.": "Massachusetts", "Mich.": "Michigan", "Minn.": "Minnesota", "Miss.": "Mississippi",
             "Mo.": "Missouri", "Mont.": "Montana", "Neb.": "Nebraska", "Nev.": "Nevada", "N.H.": "New Hampshire",
             "N.J.": "New Jersey", "N.M.": "New Mexico", "N.Y.": "New York", "N.C.": "North Carolina",
             "N.D.": "North Dakota", "Okla.": "Oklahoma", "Ore.": "Oregon", "Pa.": "Pennsylvania", "R.I.": "Rhode Island",
             "S.C.": "South Carolina", "S.D.": "South Dakota", "Tenn.": "Tennessee", "Vt.": "Vermont", "Va.": "Virginia",
             "Wash.": "Washington", "W.Va.": "West Virginia", "Wis.": "Wisconsin", "Wyo.": "Wyoming",
             "Penn.": "Pennsylvania"}
# A politician's party and state, in brackets or between commas: "(D-Mass.)", "(R-TX)", ", I-Vt.," -> "D Massachusetts"
_PARTY_STATE = (r"(?:(?<=\()|(?<=,[ \t]))[DRI]-(?:%s|(?:%s)\.?)(?=[),])"
                % ("|".join(re.escape(k) for k in sorted(AP_STATES, key=len, reverse=True)), "|".join(STATES)))


# A state's AP abbreviation in running text: "from Calif. to Fla.", "Seattle, Wash.". Those that are words or names as
# well ("Wash.", "Miss.", "Mass.", "Ark.", "Pa.", "N.Y.") only after a place's name and a comma or after "from", "in"...
_WORDLIKE_STATES = {"Wash.", "Miss.", "Mass.", "Ind.", "La.", "Mo.", "Del.", "Ore.", "Ark.", "Ill.", "Pa.", "Penn."}
_PLACE_BEFORE = r"(?:(?<=[a-z],[ \t])|%s)" % "|".join(rf"(?<=\b{word}[ \t])" for word in "from to in of near".split())
_AP_STATE = r"(?<![\w.])(?:(?:%s)|%s(?:%s))(?![\w.-])" % (
    "|".join(re.escape(k) for k in AP_STATES if k not in _WORDLIKE_STATES and k.count(".") == 1), _PLACE_BEFORE,
    "|".join(re.escape(k) for k in sorted(AP_STATES, key=len, reverse=True) if k in _WORDLIKE_STATES or k.count(".") > 1))


# A state's statutes or code after its abbreviation: "Fla. Stat. § 83.56", "Cal. Civ. Code", "Ohio Rev. Code" (the
# abbreviation's full stop is no sentence's end)
LAW_AFTER = re.compile(r"[ \t]+(?:Stat|Code|Civ|Penal|Rev|Admin|Gen|Comp|Const|Ann|Gov['’]t|Fam|Evid|Veh|Lab|Prop|"
                       r"Health|Ins|Educ|Bus|Crim|Proc|Pub|Prob|Consol|Laws|R\.[ \t]?Civ)\b")


def _ap_state(match: re.Match[str]) -> str | None:
    if match.group() == "Mass." and not re.search(r"[a-z],[ \t]\Z", match.string[:match.start()]):
        return None  # "to Mass.": the church's
    return AP_STATES[match.group()] + ("." if ends_sentence_after(match) and not LAW_AFTER.match(
        match.string, match.end()) else "")


def _party_state(match: re.Match[str]) -> str:
    party, state = match.group().split("-", 1)
    return f"{party} {AP_STATES.get(state) or STATES[state.rstrip('.')]}"


RULES: list[Rule] = [
    ("party_state", _PARTY_STATE, _party_state),
    # "RR 2 Box 45": a rural route's number and its box, "Rural Route two Box forty-five"
    ("rural_route", r"(?<![\w.'’-])(?:RR|R\.R\.)(?=[ \t]*#?\d{1,3},?[ \t]+(?:Box|BOX)(?![\w]))", lambda match: "Rural Route"),
    ("county", _COUNTY, lambda match: "County"),
    ("ap_state", _AP_STATE, _ap_state),
    ("state_list", _STATE_LIST, _state_list),
    ("state", _STATE, _state),
    ("address", _ADDRESS, _address), ("unit", _UNIT, _unit),
    # "the 3500 block of Oak Blvd." "thirty-five hundred": a block's number said as a house number is
    # "the 4500 block of S. Halsted St.", "on N. Clark St": a direction before a street's name and type
    ("street_direction", r"(?<![\w.'’-])(?:NE|NW|SE|SW|[NSEW])\.?(?=[ \t]+[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)?[ \t]+"
     r"(?:St|Ave|Blvd|Rd|Dr|Ln|Pkwy|Hwy|Street|Avenue|Boulevard|Road|Drive|Lane|Parkway|Highway)(?![\w'’-]))",
     _street_direction),
    ("block", r"(?<![\w.,$#/-])\d{3,4}(?=[ \t]+block[ \t]+(?:of|on)(?![\w]))", lambda m: house_number(m.group())),
    ("unit", r"(?<=[ \t])(?:[A-Z]\d{1,4}[A-Z]?|\d{1,4}[A-Z])(?![\w–-]|:\d)", _more_units), ("zip", _ZIP, _zip), ("postal", _POSTAL, _postal),
    ("route", _ROUTE_ALONE, _route), ("compass", _COMPASS, _compass),
    ("ordinal_street", r"(?<![\w.])(?:[NSEW]\.?[ \t]+)?\d{1,3}(?:(?:st|nd|rd|th)[ \t]+(?:St|Ave|Av|Blvd|Rd|Dr|Ln|Pl|Pkwy|Ter)"
     r"|(?:ST|ND|RD|TH)[ \t]+(?:ST|AVE|BLVD|RD|LN|PL|PKWY|TER))\.?(?![\w])"
     r"(?:[ \t]+(?:NE|NW|SE|SW|[NSEW])\.?(?=[ \t]*[,;:()]|[ \t]*$|[ \t]+[a-z(]|(?<=\.)[ \t]|[!?]))?",
     _ordinal_street),  # "10th Ave. S (between", "5th St NW,": a direction after the type  # "the 42nd St entrance", "1st Ave", "E 60th St", shouted "AT 3RD ST"
    ("street_type", r"(?<=[A-Za-z][ \t])(?:St|Ave|Blvd|Rd|Ln|Pkwy|Hwy|(?:ST|AVE|BLVD|RD|LN|PKWY|HWY)\.?)(?![\w.'’&/-]|[ \t]+\d)",
     _street_type),  # "Main St toward", "St. Charles Ave", shouted "CLOSES MAIN ST": no house number before
    # "15 Rue de Rivoli, 75001 Paris": a postcode before its town, digit by digit
    ("postcode", r"(?<=,[ \t])\d{5}(?=[ \t]+[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)?(?:[,.;]|[ \t]*$))", lambda m: w.digits(m.group())),
    ("floor", r"(?:(?<=\dst[ \t])|(?<=\dnd[ \t])|(?<=\drd[ \t])|(?<=\dth[ \t]))(?:Fl|Flr|fl|flr)\.?(?![\w])",
     lambda m: "Floor" + ("." if m.group().endswith(".") and ends_sentence_after(m) else "")),  # "9th Fl."
]
