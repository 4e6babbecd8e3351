"""Codes and things read character by character or by their parts: serials and confirmation codes, digit groups,
vanity numbers and extensions, roman numerals in context, arithmetic. Pure.

A code (``C24``, ``AB12-9XZ``, ``1Z999AA1``) is spelled in its natural groups: a run of letters as caps.py reads
capitals ("A B", "Covid"), a run of one or two digits as a number ("twenty-four"), a longer run digit by digit.
Digits in three or more hyphenated groups (``123-123-5678-1``) are read group by group, as a phone number is. A roman
numeral is a number after a word that numbers things (``Chapter IV`` "Chapter four", ``World War II``) and a regnal
ordinal after a monarch's or pope's name (``Henry VIII`` "Henry the eighth"); anywhere else it is a word.
"""

from __future__ import annotations

import re

from engine.speech_text import words as w
from engine.speech_text.abbreviations import (ABBREVIATIONS, COMMON_WORDS, SAYABLE_START, SPELLED, SPOKEN_CAPS, TITLES,
                                              WORD_ACRONYMS, caps)
from engine.speech_text.dates import MONTHS, WEEKDAYS, date_words, fiscal_year
from engine.speech_text.money import CURRENCIES
from engine.speech_text.numbers import UNITS, Rule, fraction_words

_RUN = re.compile(r"[A-Z]+|\d+")
_SCALED = re.compile(r"\d+(?:\.\d+)?(?:M|B|BN)")  # "4B": four billion, unless context says it is a code (addresses.py)
_SCALED_RANGE = re.compile(r"\d{1,3}[KMB]-\d{1,3}[KMB]")  # "10K-20K": a range of counts (numbers.py), not a code
_MEASURED = re.compile(r"\d+(?:\.\d+)?([A-Za-z]+)")
_CODED_AMOUNT = re.compile(r"(?:USD|EUR|GBP|CAD|AUD|INR|JPY|CHF|CNY)\d+")


def spell_code(text: str) -> str:
    """"AB12-9XZ" -> "A B twelve-nine X Z" (a hyphen kept where the code has one: "COVID-19" "Covid-nineteen")."""
    said = ""
    for run in _RUN.finditer(text):
        if said:
            said += "-" if text[run.start() - 1] == "-" else " "
        part = run.group()
        if part.isdigit():
            alone = len(re.findall(r"\d+", text)) == 1
            # "F-150", "A380", "I-405", "XR-550": a model's or a road's number, paired as people say it
            lettered = re.fullmatch(r"[A-Z]-?\d{3}|[A-Z]{2}-\d{3}", text)
            # "AX3000", "WH-1000XM4": a round thousand among letters is a number
            round_thousand = re.fullmatch(r"[1-9]000", part) or alone and re.fullmatch(r"[1-9]0{2,3}", part)
            said += w.cardinal(part) if round_thousand or alone and len(part) <= 2 and part[0] != "0" \
                else w.paired(part) if lettered and part[0] != "0" else w.digits(part)
        else:
            sayable = len(part) == 1 or SAYABLE_START.match(part) or part.lower() in COMMON_WORDS
            if len(part) == 2 and part not in SPOKEN_CAPS:  # "SO-7741", "PO": two capitals in a code are initials
                sayable = False
            # "ILKAR7B11": letters among four runs or more of letters and digits in one piece are a part number's,
            # spelled unless a word ("PRO", "MAX")
            piece = re.search(r"[A-Z0-9]*\Z", text[:run.start()]).group() + re.match(r"[A-Z0-9]*", text[run.start():]).group()
            if len(_RUN.findall(piece)) >= 4 and part.lower() not in COMMON_WORDS and part not in WORD_ACRONYMS:
                sayable = False
            said += part if len(part) == 1 else caps(part) if sayable else " ".join(part)  # "6TRWQA": no word
    return said


def _serial(match: re.Match[str]) -> str | None:
    text = match.group()
    ends = re.fullmatch(r"([A-Z]+)(\d+)[-–]\1(\d+)", text)
    if ends:  # "Q1-Q3": a range
        return f"{spell_code(ends[1] + ends[2])} to {spell_code(ends[1] + ends[3])}"
    ranged = re.fullmatch(r"\d+(?:\.\d+)?-\d+(?:\.\d+)?([A-Za-z]+)", text)
    cued = _CODE_CUE_WORD.search(match.string, max(0, match.start() - 20), match.start())
    if ranged and ranged[1] in UNITS and not cued or re.fullmatch(r"\d+(?:ST|ND|RD|TH)|[1-9]\d{1,2}K", text):
        return None  # "100-240V" (not "Part No. 7741-22A", a code), "1ST", "250K" (a count; "4K" stays a code)
    measured = _MEASURED.fullmatch(text)
    if measured and measured[1] in CURRENCIES and measured[1].isupper() or _CODED_AMOUNT.fullmatch(text):
        return None  # "100USD", "USD100": an amount (money.py)
    if re.fullmatch(r"(?:1[0-2]|0?[1-9])[AP]M(?:-(?:1[0-2]|0?[1-9])[AP]M)?", text) and not cued:
        return None  # "10AM", "10AM-9PM": an hour or opening hours in capitals (dates.py), not a code
    scaled = _SCALED.fullmatch(text) or _SCALED_RANGE.fullmatch(text)
    if len(text) > 40 or (scaled or (measured and measured[1] in UNITS)) and not cued:
        return None
    return spell_code(text.upper())


# A university course's subject as catalogues write it in capitals before the course's number ("CHEM 101", "MATH
# 2413", "CS 61A"): the number is a code, said as a course is ("one oh one", "twenty-four thirteen", "sixty-one A")
COURSE_SUBJECTS = ("CS|EE|ME|CE|ECE|EECS|CSE|CHE|CHEM|MATH|PHYS|BIO|BIOL|STAT|STATS|ECON|PSYC|PSYCH|PHIL|HIST|ENGL|SOC|"
                   "ANTH|GEOG|GEOL|ASTR|LING|SPAN|FREN|GERM|COMM|ACCT|MGMT|MKTG|NURS|EDUC|ENGR|GOVT|POLS|MCB|ORGO|"
                   "CALC|KINE|HLTH|MUSIC|MUS|THEA|ARTH|CHIN|JAPN|LATN|ITAL|RELI|PHYSICS|BIOCHEM|NEURO")


# A noun that names a thing by its code: after one, "4417A" is a build, not 4,417 amps; "2B" a version, not two
# billion (numbers.CODE_NOUN and a build's, a release's, a firmware's, a ticket's).
_CODE_CUE_WORD = re.compile(r"(?i:\b(?:build|builds|model|part|unit|ref\.?|reference|version|ver\.?|rev\.?|revision|serial|sku|"
                            r"firmware|release|patch|ticket|item|product|code|id|no\.|type|variant|batch|lot|catalog|"
                            r"cat\.|style|mk\.?|mark|series|chassis|engine|board|chip|kit|form|\w*room|seat|gate|row|section|ward|wing|"
                            r"terminal|concourse|platform|dock|bay|berth|cabin|stall|booth|locker|aisle|suite|apt\.?|"
                            r"station|workstation|lab|bed|desk|pod|table|lane|slot|pier|pump|counter|cubicle|bench|"
                            r"carrel|level|deck))[ \t]*(?:#|no\.|number)?[ \t]*:?[ \t]*\Z"
                            # a course's code: a subject's capitals before its number and section's letter ("CS 61A",
                            # "EE 16B": not sixty-one amps)
                            rf"|(?<![\w.])(?:{COURSE_SUBJECTS})[ \t]+\Z")


def _quarter(match: re.Match[str]) -> str:
    """"in 2Q22" -> "in the second quarter of twenty twenty-two", "our 1H24 sales" -> "our first half twenty
    twenty-four sales" (after its determiner it describes the noun), "Q4'23" -> "Q four twenty-three"."""
    text = match.group()
    if text[0] == "Q":
        return f"Q {w.cardinal(text[1])} " + w.cardinal(re.sub(r"\D", "", text[2:]))
    year = re.sub(r"\D", "", text[2:])
    part = "quarter" if text[1] == "Q" else "half"
    said = f"{w.ordinal(text[0])} {part}"
    if _DETERMINED.search(match.string, max(0, match.start() - 12), match.start()):  # before its noun: "a 1H25 goal"
        return said + (" " + w.year(int(year) if len(year) == 4 else 2000 + int(year)) if year else "")
    return "the " + said + (" of " + w.year(int(year) if len(year) == 4 else 2000 + int(year)) if year else "")


_DETERMINED = re.compile(r"(?i:\b(?:the|a|this|that|our|your|their|its|his|her|my|each|every|last|next|same)|['’]s)"
                         r"[ \t]+\Z")  # "our 2Q results": its own determiner; "in 2Q22" "in the second quarter"


def _small_code(match: re.Match[str]) -> str | None:
    """"cd-38" -> "C D-thirty-eight": each part of letters spelled unless a word ("top-10", "covid-19" stay words),
    each part of digits a number up to two digits, else digit by digit."""
    parts = match.group().split("-")
    said, spelled = [], False
    for part in parts:
        if part.isdigit():
            said.append(w.cardinal(part) if len(part) <= 2 and part[0] != "0" else w.digits(part))
        elif part.isalpha():
            word = (part in COMMON_WORDS and len(part) > 1) or len(part) > 3 or (  # "a-1": a letter, not "a"
                len(part) == 3 and re.search(r"[aeiouy]", part) and part.upper() not in SPELLED)  # "utf-8": spelled
            spelled = spelled or not word
            said.append(part if word else " ".join(part.upper()))
        else:
            spelled = True
            said.append(spell_code(part.upper()))
    return "-".join(said) if spelled or len(parts) > 2 else None


# Airlines' two-character codes that start a flight number ("BA 287"; "US" is left to the country).
AIRLINES = ("AA AC AF AM AS AY AZ BA B6 CX DL EI EK EY F9 FR G4 HA IB JL KE KL LH LX NH NK NZ OS QF QR SK SQ SY TK "
            "UA VS WN WS").split()


def _flight(match: re.Match[str]) -> str:
    """"BA 287" -> "B A two eighty-seven", "Flight 1204" -> "twelve oh four": as a flight or a train is called."""
    code, number = re.fullmatch(r"([A-Z][A-Z0-9][A-Z]?|\d[A-Z])?[ \t]?(\d+)", match.group()).groups()  # type: ignore[union-attr]
    return ((" ".join(code) if code.isalpha() else spell_code(code)) + " " if code else "") + w.paired(number)


def _processor(match: re.Match[str]) -> str:
    number, suffix = re.fullmatch(r"(\d+)(\w+)", match.group()).groups()  # type: ignore[union-attr]
    said = w.paired(number) if len(number) == 4 else f"{w.cardinal(number[:2])} {w.paired(number[2:])}"
    return f"{said} {spell_code(suffix)}"


def _number_code(match: re.Match[str]) -> str:
    """"#A7-4402": an order or item code after a number sign."""
    code = match.group()[1:].strip()
    if re.fullmatch(r"\d+(?:[ \t]\d+)+", code):  # "#7712 3456 7890": groups of digits, group by group
        return "number " + ", ".join(w.digits(group) for group in code.split())
    return "number " + " slash ".join(spell_code(part.upper()) for part in code.split("/"))


# Before a run of digits, words that make it a code to read digit by digit: "member ID is 884 211 907", "ends in 4821".
_CODE_CUE = re.compile(
    r"(?:\b(?:ID|PIN|VIN|OTP|IMEI|MEID|ICCID|IMSI|ESN|SKU|UPC|EAN|S/N|[Cc]ode|[Pp]asscode|[Pp]ager|[Ss]erial)|(?i:\b(?:account|acct|policy|member|reference|ref|confirmation|"
    r"tracking|case|ticket|invoice|claim|receipt|booking|reservation|order|serial|card|routing|rx|prescription|group|meter)(?:[ \t]+(?:number|no\.|#|"
    r"ID|code)|#))|\b(?:ends?|ending)[ \t]+(?:in|with)|(?:\b(?:ICCID|IMEI|IMSI|MEID|SIM|ID)|(?i:\b(?:card|account)))[ \t]+(?:ends|ending)|(?i:\b(?:card|account|acct\.?|number))[ \t]+ending|\b[Ll]ast[ \t]+(?:four|4)(?:[ \t]+digits)?)"
    r"(?:[ \t]+(?:is|was|are|reads))?:?[ \t]+\Z")
_SHORT_CODE_CUE = re.compile(r"(?i:\b(?:reply|text|txt))(?:[ \t]+[A-Z]{2,})?[ \t]+to[ \t]+\Z")
_PHONE_CUE = re.compile(r"(?i:\b(?:call|phone|tel|dial|fax|mobile|cell|landline|hotline|helpline"
                        r"|(?:support|help|service|customer|sales|info|enquiries|inquiries|contact|phone)[ \t]+line))\b\.?:?[ \t]+\Z")


_ACRONYM_BEFORE = re.compile(r"(?<![\w.])([A-Z]{2,5})(?:#|[ \t]+(?:is|was|number|no\.|#))?:?[ \t]+\Z")
# A number sign or "no." after a word: what follows is a number that names, not counts ("Bar no. 2104417")
_NUMBER_SIGN_BEFORE = re.compile(r"(?:\b[Nn][Oo]\.|#):?[ \t]*\Z")


# Medical and billing code sets whose five-digit codes are read digit by digit ("CPT 99213", "HCPCS 97110")
_CODE_SETS = frozenset("CPT HCPCS NDC DRG CDT".split())


def _named_number(match: re.Match[str], before: int) -> bool:
    """Six or more digits, unbroken, after an acronym that names them ("Your MRN is 48213077", "NPI: 1234567893"),
    five after one for a number ("CRN 40517") or after a number sign ("MLS# 6204481", "Bar no. 2104417"): an
    identifier, not a quantity (a currency's code names an amount)."""
    named = _ACRONYM_BEFORE.search(match.string, before, match.start())
    digits = match.group()
    if digits.isdigit() and len(digits) >= 5 and _NUMBER_SIGN_BEFORE.search(match.string, before, match.start()):
        return True  # "Bar no. 2104417", "MLS# 6204481": five digits or more after a number sign name a thing
    # (an initialism for a "... number", "CRN 40517", "EIN 12345": from five digits)
    return named is not None and named[1] not in CURRENCIES and digits.isdigit() and (
        len(digits) >= 6 or len(digits) == 5 and (named[1].endswith("N") or named[1] in _CODE_SETS)
        and not digits.endswith("000"))


# A word earlier in the sentence that names a long run of digits as a code: "The IMEI on that phone is 356938035643809."
_SENTENCE_CODE_WORD = re.compile(r"(?:\b(?:(?:PASS|USER|CARD|MEMBER|GUEST|LOGIN|CUSTOMER|STUDENT|EMPLOYEE|TRAVELER)?ID|IMEI|MEID|ICCID|IMSI|ESN|VIN|SKU|UPC|EAN)|(?i:\b(?:serial|account|acct|"
                                 r"tracking|order|policy|member|confirmation|reference|invoice|claim|receipt|"
                                 r"routing|booking|reservation)))\b[^.!?\n]*\Z")


def _long_code(match: re.Match[str]) -> bool:
    """Unbroken digits no one counts: twelve or more, or nine or more after a code's name in the same sentence, unless
    a plural noun follows."""
    digits = match.group()
    if re.match(r"[ \t]+(?!(?:is|was|has|does)\b)[a-z]+s\b", match.string[match.end():match.end() + 20]):
        return False  # "1500000000 points": a count of things
    return digits.isdigit() and (len(digits) >= 12 or len(digits) >= 9 and _SENTENCE_CODE_WORD.search(
        match.string, max(0, match.start() - 80), match.start()) is not None)


# "Your cabin on deck 9 is 9214": a room's or a cabin's number given after "is", said in pairs as a door's number
_ROOM_IS_BEFORE = re.compile(r"(?i:\b(?:your|my|our|the|his|her|their)[ \t]+(?:cabin|room|stateroom|suite))\b"
                             r"[^.!?\n]{0,24}[ \t](?:is|was|will[ \t]be):?[ \t]+\Z")


def _room_number(match: re.Match[str]) -> str | None:
    if not _ROOM_IS_BEFORE.search(match.string, max(0, match.start() - 48), match.start()) \
            or re.match(r"[ \t]+[a-z]", match.string[match.end():match.end() + 2]):
        return None  # "the room is 1200 square feet": a size
    return w.paired(match.group())


# "Known Traveler Number: 98765432", "Redress number 2201947": five digits or more after a kind of number named by a
# noun before "number" (not "the number", "a large number", "number of")
_KIND_NUMBER_BEFORE = re.compile(r"(?<![\w'’])(?!(?i:the|a|an|any|this|that|same|total|large|small|big|huge|great|"
                                 r"lucky|magic|prime|even|odd|whole|round|random|high|low|record|growing)\b)"
                                 r"[A-Za-z]{3,}[ \t]+(?:Number|number|NUMBER)(?:[ \t]+(?:is|was))?:?[ \t]+\Z")


def _cued_digits(match: re.Match[str]) -> str | None:
    """Digits after a word that makes them a code or a phone number, group by group, digit by digit; a national
    number with its trunk zero ("07700 900123") is a phone number wherever it stands, and seven digits or more in
    groups right after a word about calling ("Ph: 9555 0142", "Tel: 01 23 45 67 89", "Call 1300 555 123")."""
    before = max(0, match.start() - 40)
    groups = match.group().replace("-", " ").split()
    trunk = len(groups) > 1 and groups[0][0] == "0" and len(groups[0]) >= 3 and 10 <= len("".join(groups)) <= 11 \
        or len(groups) == 3 and groups[0] in ("1300", "1800") and len("".join(groups)) == 10  # "1300 655 506": Australia's
    phone = trunk or len(groups) > 1 and (groups[0][0] == "0" or len("".join(groups)) >= 7) and _PHONE_CUE.search(
        match.string, before, match.start())
    # "Reply STOP to 72345": a texting short code, digit by digit (not "reply to 20000 emails", a count)
    short_code = len(match.group()) in (5, 6) and match.group().isdigit() and _SHORT_CODE_CUE.search(
        match.string, before, match.start()) and not re.match(r"[ \t]+[a-z]+s\b", match.string[match.end():])
    part = len(match.group()) >= 5 and match.group().isdigit() and _PART_CUE.search(match.string, before, match.start())
    if not phone and not short_code and not part and not _CODE_CUE.search(match.string, before, match.start()) \
            and not _named_number(match, before) and not _long_code(match) \
            and not (len("".join(groups)) >= 5 and _KIND_NUMBER_BEFORE.search(match.string, before, match.start())):
        return None
    return ", ".join(w.digits(group) for group in groups)


_PART_CUE = re.compile(r"(?i:\bpart)[ \t]+\Z")  # "the filter is part 4396841": a part's number, digit by digit
_NEAR_PHONE_CUE = re.compile(r"(?i:\b(?:call|calls|called|phone|tel|dial|fax|mobile|cell|text|reach|contact|number"
                             r")\b)")


def _bare_phone(match: re.Match[str]) -> str | None:
    """"call me back at 5551234567": ten digits shaped as a North American number, near a word about calling, in
    the groups people say (3, 3, 4)."""
    before = match.string[max(0, match.start() - 40):match.start()]
    if not _NEAR_PHONE_CUE.search(before) or _CODE_CUE.search(before):
        return None
    digits = match.group()
    groups = ([digits[0]] if len(digits) == 11 else []) + [digits[-10:-7], digits[-7:-4], digits[-4:]]
    return ", ".join(w.digits(group) for group in groups)


def _grouped_digits(match: re.Match[str]) -> str | None:
    text = match.group()
    if re.fullmatch(r"\d{4}-\d\d-\d\d", text):  # an ISO date
        return None
    if re.fullmatch(r"\d\d-\d\d-\d{4}", text) and 1 <= int(text[:2]) <= 12 and 1 <= int(text[3:5]) <= 31:
        return date_words(int(text[:2]), int(text[3:5]), int(text[6:]))  # a US date written with dashes
    return ", ".join("eight hundred" if group == "800" else group if group == "X" else w.digits(group)
                     for group in re.split(r"[- \t]", text))


# A word about calling, before a number it makes a phone number ("calling 311", "dialing 311", "TTY: 711": a relay
# service)
_DIALLED = re.compile(r"(?i:call(?:s|ing)?|phone|tel|dial(?:l?ing|l?ed|s)?|text|fax|number|reach|contact|line|hotline|desk|office|"
                      r"mobile|cell|tty|tdd|relay)\b")


def _local_phone(match: re.Match[str]) -> str | None:
    """"555-1234" after a word about calling (or before an extension) is a phone number; elsewhere a range ("555
    0199", spaced, only right after such a word)."""
    before = match.string[max(0, match.start() - 30):match.start()]
    after = match.string[match.end():match.end() + 8]
    if " " in match.group():
        if not _PHONE_CUE.search(before):
            return None
    elif not _DIALLED.search(before) and not re.match(r"[ \t,]*(?:[Ee]xt|x\d)", after):
        first, second = re.split(r"[-.]", match.group())
        if "." in match.group() or int(first) % 10 == 0 or int(second) % 10 == 0 or int(second) < int(first):
            return None  # "100-1500", "250-1000": a range; "555-0199" has a phone number's shape
    return ", ".join(w.digits(group) for group in re.split(r"[-. ]", match.group()))


_KEYS = {"*": "star", "#": "pound"}
_KEYED_BEFORE = re.compile(r"(?i:\b(?:enter|dial|press|key[ \t]+in|type|punch[ \t]+in)):?[ \t]+\Z")


def _star_code(match: re.Match[str]) -> str | None:
    """A code keyed on a phone: a star and two to four digits ("*67"), perhaps a pound after, or any digits with two
    keys of star or pound ("*#06#"); "#1" is a number sign."""
    code = match.group()
    if code[0].isdigit():  # "PIN 7732#": a code keyed in after its cue, closed by the pound key
        before = match.string[max(0, match.start() - 32):match.start()]
        if not (_SECRET_CUE.search(before) or _CODE_CUE.search(before) or _KEYED_BEFORE.search(before)):
            return None
    elif sum(char in _KEYS for char in code) < 2 and not re.fullmatch(r"\*\d{2,4}", code):
        return None
    return " ".join(_KEYS.get(part) or w.digits(part) for part in re.findall(r"\d+|[*#]", code))


# Right before a number: the verb that dials it ("dial 100"), or calls it ("call 999", "rang 000").
_DIAL_VERB = re.compile(r"(?i:\bdial(?:l?ed|l?ing|s)?[ \t]+\Z)")
_CALL_VERB = re.compile(r"(?i:\b(?:call(?:ed|ing|s)?|r[ia]ng|ringing|phon(?:e|ed|ing)|text(?:ed|ing)?)[ \t]+\Z)")
# Emergency and service numbers of other countries ("999", "112", "000", "111", "101", "110", "119"), said digit by
# digit after a verb that calls them
_SERVICE_NUMBERS = frozenset("000 101 110 111 112 118 119 999".split())


_SERVICE = r"(?<![\w.$#-])(?:[2-9]11|988|000|10[01]|11[0-9]|999)"
_OPEN_SERVICE = re.compile(_SERVICE + r"(?:[ \t]+[^\s]+){0,4}[ \t]*\Z")  # the last word may be unfinished
# A word about emergencies or help lines a few words before or after a service number ("many cities use 311 for
# non-emergencies", "112 is the emergency number"): it is said digit by digit.
_EMERGENCY = re.compile(r"(?i:\b(?:non-?)?emergenc(?:y|ies)\b|\b(?:hot|help)lines?\b)")
_EMERGENCY_AFTER = re.compile(r"(?:[ \t]+[^\s]+){1,4}")  # the few words after the number that are looked at
# After a service number, a verb ("112 is the ...", "311 handles ...") rather than what it counts ("112 patients")
_SERVICE_VERB = re.compile(r"[ \t]+(?:is|was|will|can|also|works|connects|covers|reaches|handles|routes)\b")


def _emergency(match: re.Match[str]) -> bool:
    """Whether a word about emergencies is near the service number ``match`` and it counts nothing after it."""
    if _COUNTED.match(match.string, match.end()) and not _SERVICE_VERB.match(match.string, match.end()):
        return False
    after = _EMERGENCY_AFTER.match(match.string, match.end())
    return bool(_EMERGENCY.search(match.string, max(0, match.start() - 40), match.start())
                or after and _EMERGENCY.search(after.group()))


def open_service(text: str) -> int | None:
    """Where a service number starts whose next few words (which may name an emergency) are not all there yet."""
    tail = _OPEN_SERVICE.search(text, max(0, len(text) - 80))
    return tail.start() if tail else None


def _service_code(match: re.Match[str]) -> str | None:
    """"911", "311" after a word about calling, digit by digit; any three digits after "dial" ("dial 100"), and
    another country's emergency number after "call" ("call 999"); any near a word about emergencies."""
    number, start = match.group(), match.start()
    if _emergency(match):
        return w.digits(number)
    if re.fullmatch(r"[2-9]11|988", number):
        before = match.string[max(0, start - 30):start]
        return w.digits(number) if _DIALLED.search(before) or number in ("911", "988") else None
    dialled = _DIAL_VERB.search(match.string, max(0, start - 12), start) or number in _SERVICE_NUMBERS and \
        _CALL_VERB.search(match.string, max(0, start - 12), start) and not _COUNTED.match(match.string, match.end())
    return w.digits(number) if dialled else None


# After a number that was called, a word that is no adverb or function word makes it a count ("called 999 people")
_COUNTED = re.compile(r"[ \t]+(?!(?:now|immediately|instead|again|first|right|straight|back|today|tonight|if|and|or|"
                      r"but|for|from|at|on|in|to|with|when|as|so|then|before|after)\b)[a-z]{2,}\b")


_DRAW_CUE = re.compile(r"(?i:\b(?:lottery|lotto|powerball|mega[ \t]?millions|euromillions|keno|winning[ \t]+numbers"
                       r"|numbers[ \t]+drawn|draw|drawing|drawn)\b)[^.!?\n]{0,40}\Z")


def _lottery(match: re.Match[str]) -> str | None:
    """"Powerball ticket: 07 19 33 41 60": a lottery's numbers, rising, each a number ("seven nineteen thirty-three
    ..."), after a word about a draw in the same sentence."""
    numbers = [int(n) for n in match.group().split()]
    if any(b <= a for a, b in zip(numbers, numbers[1:])) or not 1 <= numbers[0] or numbers[-1] > 99 \
            or not (cue := _DRAW_CUE.search(match.string, max(0, match.start() - 80), match.start())) \
            or re.search(r"(?i:\b(?:call|phone|tel|dial|fax|hotline|helpline|text|sms)\b)", cue.group()):
        return None  # "lottery hotline: 01 23 45 67 89": a phone number
    return " ".join(w.cardinal(str(n)) for n in numbers)


def _short_code(match: re.Match[str]) -> str | None:
    """"Text HELP to 72345", "text us at 20555": a texting short code, digit by digit."""
    before = match.string[max(0, match.start() - 40):match.start()]
    texted = re.search(r"(?i:\btext|\btxt|\bsms)\b.*\b(?i:to)[ \t]+$", before) or re.search(  # "text us at 20555" too
        r"(?i:\b(?:text|txt|sms)(?:[ \t]+(?:us|me|them|him|her))?[ \t]+at)[ \t]+$", before)
    return ", ".join(w.digits(group) for group in match.group().split("-")) if texted else None


def _hex(match: re.Match[str]) -> str:
    """"0x80070005" -> "zero x eight zero zero seven zero zero zero five"."""
    return "zero x " + " ".join(w.digits(c) if c.isdigit() else c.upper() for c in match.group()[2:])


def _vanity_word(group: str) -> str:
    """A vanity number's letters: the word they spell, or the acronym as it is said ("USA" "U S A", "AAA" "triple
    A")."""
    return caps(group) if group in SPELLED or group in SPOKEN_CAPS else group.lower()


def _vanity(match: re.Match[str]) -> str | None:
    """"1-800-FLOWERS" -> "one, eight hundred, flowers": the digits in groups, the letters as the word they spell
    ("500 USD" is money)."""
    groups = re.split(r"[-. ]", match.group())
    if groups[-1] in CURRENCIES:
        return None
    if re.fullmatch(r"\d{3} [A-Z]+", match.group()) and not (
            re.fullmatch(r"8(?:00|33|44|55|66|77|88)", groups[0]) and len(groups[1]) >= 4):
        return None  # "500 BCE", "300 MPH", "800 DPI": a count and its word; "800 FLOWERS" is toll free
    said = []
    for group in groups:
        if group.isdigit():
            said.append("eight hundred" if group == "800" else w.digits(group))
        else:
            said.append(_vanity_word(group) if group.isalpha() and len(group) > 1 else spell_code(group))
    return ", ".join(said)


def _extension(match: re.Match[str]) -> str:
    return "extension " + w.digits(re.sub(r"\D", "", match.group()))


# --- roman numerals ----------------------------------------------------------------------------------------------------

_ROMAN = r"(?=[MDCLXVI])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
_ROMAN_LOWER = r"(?=[mdclxvi]{2})" + _ROMAN.lower().replace("(?=[mdclxvi])", "")  # "Scene ii", not "Type x"
_VALUES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}
NUMBERING = ("Rule Rules Chapter Chapters Part Parts Volume Vol. vol. ch. Ch. pt. Pt. no. Book Act ACT Scene SCENE Section Phase Stage Level Tier "
             "Article Appendix Class Type Grade Round Season Episode Step Schedule Category Division Annex Title Clause "
             "Page Pages Psalm Fig. Figure Table Exhibit Lesson Module Unit Auto Rocky Fantasy Bowl War Wars Mark Mk. Model Series Gen "
             "Generation Apollo iPhone Sections Articles Steps Phases Stages Levels Tiers Books Acts Scenes Units Modules Lessons "
             "Appendices Volumes Titles Clauses Canto Cantos Dynasty Dynasties").split()
# A school subject or course before its level ("Spanish V", "Algebra II", "Chemistry I"). A lone "I" after one, or
# after a plural numbering word ("Sections I, II"), is a numeral only before a stop, a list's next word or a word
# about the course ("took French I, then...", "Parts I and II"; not "in French I learned", "the Lessons I learned")
SUBJECTS = ("Spanish French Latin German Italian Chinese Mandarin Japanese Russian Arabic Portuguese Greek Hebrew "
            "Korean English Calculus Algebra Geometry Trigonometry Chemistry Physics Biology Statistics Economics "
            "Accounting Math Mathematics Composition").split()
_SUBJECT = "|".join(SUBJECTS)
_LISTED_I = re.compile(r"[ \t]*(?:[,.;:)&–-]|\Z|[ \t](?:and|or|to|through|(?i:honors|class|course|students?))\b)")
REGNAL = ("King Queen Pope Emperor Empress Tsar Czar Prince Princess Louis Henry Elizabeth Charles George Edward "
          "William Richard James John Paul Benedict Pius Leo Gregory Innocent Clement Urban Napoleon Peter Catherine "
          "Mary Philip Frederick Ferdinand Alexander Nicholas Ivan Ramesses Ramses Constantine Alfonso Carlos Juan "
          "Felipe Harald Olaf Gustav Willem Victor Umberto Ludwig Otto Rudolf Francis Stephen Malcolm David Robert "
          "Anne Matilda Edmund Harold Canute Sigismund Wilhelm Friedrich Franz Karl Sixtus Boniface Adrian").split()
_NUMBERING = r"(?:%s)" % "|".join(re.escape(word) for word in NUMBERING)
# After these, a lone "I" is the pronoun: "Chapter I wrote", "James I think".
_PRONOUN_VERBS = frozenset("am was have had will would can could think thought went said know knew want wanted love "
                           "do did need needed saw got get feel felt believe mean hope guess just really also".split())


def roman_value(text: str) -> int:
    total = 0
    for i, letter in enumerate(text):
        value = _VALUES[letter]
        total += -value if i + 1 < len(text) and _VALUES[text[i + 1]] > value else value
    return total


def _pronoun(match: re.Match[str]) -> bool:
    """Whether the lone "I" at the end of ``match`` is the pronoun: a verb follows it."""
    following = re.match(r"[ \t]+([a-z']+)", match.string[match.end():match.end() + 20])
    return match.group().endswith(" I") and following is not None and following[1] in _PRONOUN_VERBS


# Short numbering words before a roman numeral, said as what they number ("pt. iii" "part three", "no. iv" "number four")
_SHORT_NUMBERING = {"pt.": "part", "Pt.": "Part", "no.": "number"}


def _numbered(match: re.Match[str]) -> str | None:
    if _pronoun(match):
        return None
    words, numeral = match.group().rsplit(None, 1)
    word = words.split()[-1]
    if numeral == "I" and (word in SUBJECTS or word[-1] == "s" and word[:-1] in NUMBERING) \
            and not _LISTED_I.match(match.string, match.end()):
        return None  # "in French I learned", "the Lessons I learned": the pronoun
    if numeral in ("C", "D", "L", "M"):  # "Medicare Part D", "Schedule C": a letter
        return None
    if word in ("Model", "Series", "Type", "Generation", "Gen") and numeral == "X":  # "Xbox Series X", "Tesla Model X",
        # "Type X drywall" (fire-rated), "Generation X": a product's or a kind's letter
        return None
    # "Vol. XXI": the numbering word said in full, "Volume twenty-one"
    said = words[:-len(word)] + (_SHORT_NUMBERING.get(word) or TITLES.get(word) or ABBREVIATIONS.get(word) or word)
    return f"{said} {w.cardinal(str(roman_value(numeral.upper())))}"


_NUMBERED_BEFORE = re.compile(
    rf"(?:(?<![\w]){_NUMBERING}|(?<![\w])(?i:chapters|volumes|books|acts|cantos|dynasty|dynasties|parts|sections|"
    rf"scenes|steps|phases|stages|levels|tiers|articles|clauses|seasons|episodes|types|classes|grades|nerves))"
    rf"[ \t]+(?P<first>{_ROMAN}|{_ROMAN_LOWER})[ \t]*(?:to|and|or|through|[–-])[ \t]*\Z")


_LIST_OWNER = re.compile(r"(?<![\w])(?i:types|classes|grades|stages|phases|levels|tiers|parts|nerves|volumes|chapters|"
                         r"sections|books|acts|articles|titles|units|modules|lessons|seasons|episodes|steps)[ \t]\Z")
# A job title before its level ("Analyst I", "Engineer II"): a lone "I" after one is the level one where it ends its
# phrase or a word about the job follows ("from Analyst I to Analyst II", "an Engineer I role"), not "the Engineer I met"
JOB_TITLES = ("Analyst Engineer Specialist Technician Coordinator Associate Clerk Assistant Developer Administrator "
              "Accountant Consultant Designer Scientist Representative Officer Nurse Programmer Manager Director "
              "Generalist Recruiter Auditor Underwriter Adjuster Planner Buyer Therapist Teacher Librarian").split()
_JOB_LEVEL_AFTER = re.compile(r"[ \t]+(?:position|positions|role|roles|level|title|pay|salary|band|job|jobs|opening|openings)\b")


def _job_level(match: re.Match[str]) -> str | None:
    """A job title's level "I" read "one" where a list or a word about the job follows ("Analyst I to Analyst II",
    "an Engineer I role"); None elsewhere ("the Engineer I met": the pronoun)."""
    if not (_LISTED_I.match(match.string, match.end()) or _JOB_LEVEL_AFTER.match(match.string, match.end())):
        return None
    return match.group()[:-1] + "one"



def _numbered_letter(match: re.Match[str]) -> str:
    """"Stage IIIB" -> "Stage three B": the numeral, then its sub-stage's letter, said as a capital."""
    words, code = match.group().rsplit(None, 1)
    return f"{words} {w.cardinal(str(roman_value(code[:-1])))} {code[-1].upper()}"


def _second_numeral(match: re.Match[str]) -> str | None:
    first = _NUMBERED_BEFORE.search(match.string, max(0, match.start() - 40), match.start())
    numeral = match.group()
    if not first or first["first"].isupper() != numeral.isupper() or numeral == "I":
        return None
    return w.cardinal(str(roman_value(numeral.upper())))


_PAGE = rf"(?:{_ROMAN_LOWER}|[ivx])"


def _roman_page(match: re.Match[str]) -> str | None:
    """"pp. iii–vii" -> "pages three to seven"; None for a word ("p. mix")."""
    word, *pages = re.split(r"[ \t]*[-–][ \t]*|(?<=\.)[ \t]*|[ \t]+", match.group())
    if any(page in COMMON_WORDS for page in pages):
        return None
    said = "page" + ("s" if len(pages) > 1 or word.lower() in ("pp.", "pages") else "")
    return (said.capitalize() if word[0] == "P" else said) + " " + " to ".join(
        w.cardinal(str(roman_value(page.upper()))) for page in pages)


def _roman_year(match: re.Match[str]) -> str | None:
    """"MMXXIV" on a cornerstone or in credits: a year."""
    return w.year(roman_value(match.group())) if len(match.group()) >= 4 else None


# "Charles I was executed": a monarch's name that starts a sentence, then "I was"/"I had", is the first of the name
# (a speaker's "I" after a name wants a comma: "Charles, I was"); "James I think" stays the pronoun.
_REIGN_STARTS = re.compile(r"(?:[.!?][ \t]+|\n)[ \t]*\Z")
_REIGN_VERB = re.compile(r"[ \t]+(?:was|had)\b")  # "I was executed", "I had ..." (a word no further: streaming)


def _reign_starts(match: re.Match[str]) -> bool:
    start = match.start()
    return (not match.string[:start].strip() or _REIGN_STARTS.search(match.string, max(0, start - 8), start)
            is not None) and _REIGN_VERB.match(match.string, match.end()) is not None


def _regnal(match: re.Match[str]) -> str | None:
    name, numeral = match.group().rsplit(None, 1)
    if _pronoun(match) and not _reign_starts(match) or (
            numeral == "I" and name in ("King", "Queen", "Pope")):
        return None
    initial = re.match(r"\.[ \t]+([A-Z][a-z]+)\b", match.string[match.end():match.end() + 24])
    if len(numeral) == 1 and name in FIRST_NAMES and initial and initial[1].lower() not in COMMON_WORDS:
        return None  # "John V. Smith": a middle initial between a given name and a surname, not "the fifth"
    return f"{name.title() if name.isupper() else name} the {w.ordinal(str(roman_value(numeral)))}"  # "LOUIS XVI"


# Given names common in the US and UK (a person's suffix, "John Smith III", follows one; a title's number, "Street
# Fighter II", follows words).
FIRST_NAMES = frozenset("""James John Robert Michael William David Richard Joseph Thomas Charles Christopher Daniel
    Matthew Anthony Mark Donald Steven Paul Andrew Joshua Kenneth Kevin Brian George Timothy Ronald Edward Jason Jeffrey
    Ryan Jacob Gary Nicholas Eric Jonathan Stephen Larry Justin Scott Brandon Benjamin Samuel Gregory Alexander Frank
    Patrick Raymond Jack Dennis Jerry Tyler Aaron Jose Adam Nathan Henry Douglas Zachary Peter Kyle Ethan Walter Noah
    Jeremy Christian Keith Roger Terry Gerald Harold Sean Austin Carl Arthur Lawrence Dylan Jesse Jordan Bryan Billy
    Joe Bruce Gabriel Logan Albert Willie Alan Juan Wayne Elijah Randy Roy Vincent Ralph Eugene Russell Bobby Mason
    Philip Louis Harry Howard Fred Martin Allen Lee Bill Bob Jim Tom Tim Mike Dave Dan Don Ron Ted Ed Hank Chuck
    Mary Patricia Jennifer Linda Elizabeth Barbara Susan Jessica Sarah Karen Lisa Nancy Betty Margaret Sandra Ashley
    Kimberly Emily Donna Michelle Carol Amanda Dorothy Melissa Deborah Stephanie Rebecca Sharon Laura Cynthia Kathleen
    Amy Angela Shirley Anna Brenda Pamela Emma Nicole Helen Samantha Katherine Christine Debra Rachel Carolyn Janet
    Catherine Maria Heather Diane Ruth Julie Olivia Joyce Virginia Victoria Kelly Lauren Christina Joan Evelyn Judith
    Megan Andrea Cheryl Hannah Jacqueline Martha Gloria Teresa Ann Sara Madison Frances Kathryn Janice Jean Abigail
    Alice Judy Sophia Grace Denise Amber Doris Marilyn Danielle Beverly Isabella Theresa Diana Natalie Brittany
    Charlotte Marie Kayla Alexis Lori Ava Mia Harper Ella Chloe Lucy Jane Kate Sue Beth""".split())
_NAME_PART = r"(?:[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)?|[A-Z]\.?)"
_PERSON = re.compile(rf"(?<![\w.])[A-Z][a-z]+(?:[ \t]+{_NAME_PART})+,?[ \t]+\Z")  # "Robert Lee Smith ", "Richard J. Whitman "
_TITLED = re.compile(r"(?<![\w.])(?:[A-Z][a-z]+[A-Z]?[a-z]*|[A-Z]{2,})[ \t]+\Z")  # "Civilization ", "WrestleMania ", "GTA "
_SIZE_WORDS = re.compile(r"(?i:\bsizes?)[ \t]+\Z")
_HONORIFIC = re.compile(r"(?<![\w])(?:Mr|Mrs|Ms|Mx|Dr|Sir|Mister|Madam|Ch|Champion)\.?[ \t]+\Z")  # before a person's name
# (or a show dog's registered name after its title, "Ch. Rosewood Duke III")
# "We named her Bella II", "called him Max III": a given name after a naming verb, its numeral the name's ordinal
_NAMED = re.compile(r"(?<![\w'’])(?i:named|called|name[ \t]+is|name's|name’s)[ \t]+(?:(?i:her|him|it|them)[ \t]+)?"
                    r"[A-Z][a-z]+[ \t]+\Z")


def _bible_book(match: re.Match[str]) -> str:
    """"II Corinthians", "1 John": the book's number as its ordinal, "Second Corinthians", "First John"."""
    number, book = match.group().split()
    return ("First", "Second", "Third")[(int(number) if number.isdigit() else roman_value(number)) - 1] + " " + book


def _after_name(match: re.Match[str]) -> str | None:
    """A roman numeral after a capitalised name: a person's suffix after a first name and a surname ("Robert Lee Smith
    III" "the third"), a title's number after one name ("Civilization VI" "six", "GTA V"); a word or a size
    elsewhere ("Size XL", "MIX")."""
    numeral = match.group()
    before = match.string[max(0, match.start() - 40):match.start()]
    value = roman_value(numeral)
    if numeral.lower() in COMMON_WORDS or not 2 <= value <= 89 or _SIZE_WORDS.search(before) or _pronoun(match):
        return None
    person = _PERSON.search(before)
    if numeral in ("II", "III", "IV", "V") and _NAMED.search(before):
        return "the " + w.ordinal(str(value))
    if numeral in ("II", "III", "IV", "V") and person and (person.group().split()[0] in FIRST_NAMES
                                                      or _HONORIFIC.search(before, 0, person.start())):
        return "the " + w.ordinal(str(value))  # "Robert Lee Smith III", "Mr. Thurston Howell IV"; "Street Fighter II"
        #                                        is a title's number
    titled = _TITLED.search(before)
    if titled is None or (len(numeral) == 1 and not titled.group().strip().isupper()  # "Model X": a letter
                          and (numeral != "V" or re.match(r"\.|[ \t]+[A-Z]", match.string[match.end():match.end() + 2]))):
        return None  # ("Saturn V rocket", "Category V": "V" is no letter a name is given, before a name's next word)
    return w.cardinal(str(value))


# --- arithmetic ----------------------------------------------------------------------------------------------------

# A function applied to its argument: "sin(30°)" "sine of thirty degrees", "log₂(8)" "log base two of eight".
_FUNCTIONS = {"sin": "sine of", "cos": "cosine of", "tan": "tangent of", "log": "log of", "ln": "the natural log of",
              "exp": "the exponential of", "O": "big O of"}
# Written without brackets before a number, an angle or one letter ("sin 30°", "log 100", "ln x"), its name alone:
# "sine thirty degrees".
_FUNCTION = r"(?:%s)[₀-₉]*(?:(?=\()|[ \t](?=[\d√]|[a-z](?![a-z])))" % "|".join(sorted(_FUNCTIONS, key=len, reverse=True))
_TERM = (rf"(?:(?:(?:\d+(?:\.\d+)?|[a-z])(?=\())?(?:sqrt(?=\())?(?:{_FUNCTION})?\(?[-−]?[√∛∜]?(?:[a-z]\([a-z]\)|[A-Z](?=[ \t]?=)"
         r"|[a-z]{2}(?=\^|[²³])|(?!(?:is|it|in|on|at|to|of|or|an|as|am|be|by|do|go|he|if|me|my|no|so|up|us|we|ok)\b)[a-z]{2}"
         r"(?=[ \t][+*=][ \t]|[+*=][a-z\d(]|[ \t]?(?:[+*=][ \t]*)?\Z)|\d+[a-z]{2,3}(?![\w(])|(?:\d+(?:\.\d+)?)?[a-z](?![A-Za-z0-9_(])"
         r"|(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:!(?=[ \t]?[-−+*×÷/=]|(?![\w!])))?°?)[²³]?\)?)")
_OPERATOR = r"(?:[ \t]?[-−+*×÷/^=·][ \t]?|[ \t]x[ \t]|(?<=\))(?=\())"  # "(x + 1)(x − 1)": a product
# (a term in small letters is at most two of them or starts with a function's name: a longer word fails at once, not
# after every kind of term was tried at it; the rule is tried at every word)
_MATH = (rf"(?<![\w.,/:$-])(?:(?![a-z]{{3}})|(?=sin|cos|tan|log|exp|sqrt)){_TERM}(?:{_OPERATOR}{_TERM}){{1,12}}"
         r"(?![\w]|\.\d|[-+*/^=]\w|/[ \t])")
_OPERATORS = {" x": "times", "·": "times", "√": "the square root of", "∛": "the cube root of", "∜": "the fourth root of", "sqrt": "the square root of", "!": "factorial", "-": "minus", "−": "minus",
              "+": "plus", "*": "times", "×": "times", "÷": "divided by", "/": "divided by", "=": "equals"}
_MATH_PARTS = re.compile(
    rf"{_FUNCTION}|°|(?<=\d)/[a-z](?![a-z])|(?<![\d.])\d{{1,2}}/\d{{1,2}}(?![\d.])|"
    r"(?<=[\d)])\((?=[\w√-])|(?<=(?<![\w])[a-z])\((?=[\w√-])|(?<=[\w)²³])[ \t]x(?=[ \t]+[\w(])|[√∛∜]|sqrt|[A-Z]|(?<=\d)!|(?<![\d\w])[-−](?=[\d\w])|[a-z]\([a-z]\)|[fgh]\(\d+(?:\.\d+)?\)|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\^[ \t]?[-−]?(?:\d+(?:\.\d+)?|[a-z](?![a-z]))|(?<![a-z\d])(?:km|mi|cm|mm|kg|lbs?|ft|yd|oz)(?![a-z])|[a-z]|[²³]|[-−+*×÷/=·]")


_UNIT_LETTERS = frozenset(unit for unit in UNITS if len(unit) == 1 and unit != "x")
_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
_ASKED = re.compile(  # "What is 7 - 3?": a question about an expression, so its hyphen is a minus
    r"(?i:\bwhat(?:'s|’s|[ \t]is)|\b(?:calculate|compute|solve|evaluate|simplify)|\b(?:result|answer|value)[ \t]+of)"
    r"[ \t]+\Z")  # "WHAT IS 6 × 7?" too; "enter the result of 7 × 8"
_OPEN_MATH = re.compile(rf"(?<![\w.,/:$-]){_TERM}(?:{_OPERATOR}(?:{_TERM})?){{1,12}}\s*\Z")


_LINE_START = re.compile(r"(?:\A|\n)[ \t]*\Z")
_OPERATOR_BEFORE = re.compile(r"[-−+*×÷/=(][ \t]?\Z")
_OPERATOR_AFTER = re.compile(r"[ \t]?[-−+*×÷/=)]")


def _factorial(match: re.Match[str]) -> str | None:
    """"5!", "n!": a factorial beside an operator ("= 5!", "(5!)") or where it starts its line and ends it or goes on
    in small letters ("5!", "10! is big"); "We won 5!" exclaims."""
    text, start, end = match.string, match.start(), match.end()
    alone = _LINE_START.search(text, max(0, start - 8), start) and re.match(r"[ \t]*(?:\Z|\n|[a-z])", text[end:end + 8])
    if not (alone or _OPERATOR_BEFORE.search(text, max(0, start - 2), start) or _OPERATOR_AFTER.match(text, end)):
        return None
    term = match.group()[:-1]
    return (w.cardinal(term) if term.isdigit() else term) + " factorial"


_OPEN_TRACKING = re.compile(r"(?<![\w-])1Z(?:[ \t]?[0-9A-Z]){0,15}[ \t]*\Z"  # a postal item's too: "LX 1042 8893" before "US"
                            r"|(?<![\w-])[A-Z]{2}[ \t]?\d(?:[ \t]?\d){0,8}(?:[ \t]?[A-Z])?[ \t]*\Z")


def open_tracking(text: str) -> int | None:
    """Where a UPS tracking number or a postal item's number that later text may go on with starts at the end of
    ``text`` ("1Z 999 AA1" before "01 2345 6784", "LX 1042" before "8893 US"), or None."""
    tail = _OPEN_TRACKING.search(text, max(0, len(text) - 40))
    return tail.start() if tail else None


def open_math(text: str) -> int | None:
    """Where an expression that later text may continue starts at the end of ``text`` ("100 - 35" before "= 65"),
    or None."""
    tail = _OPEN_MATH.search(text, max(0, len(text) - 120))
    return tail.start() if tail else None


def _function(part: str) -> str:
    """"sin", "log₂" before a bracket: "sine of", "log base two of"; "sin " before its bare argument: "sine"."""
    name = part.rstrip(" \t₀₁₂₃₄₅₆₇₈₉")
    base = part[len(name):].strip().translate(_SUBSCRIPTS)
    if base:
        return _FUNCTIONS[name].replace(" of", f" base {w.cardinal(base)} of")
    return _FUNCTIONS[name].removeprefix("the ").removesuffix(" of") if part[-1] in " \t" else _FUNCTIONS[name]


# A unit's symbol standing for its quantity in a conversion, by its name in the plural: beside a formula's operator
# with no number of its own ("mi × 1.609 = km" "miles times ... equals kilometers"), or named against a unit's word
# ("Miles to km")
_CONVERTED_UNITS = ("km", "mi", "cm", "mm", "kg", "mg", "lb", "lbs", "ft", "yd", "gal", "oz", "ml", "mph", "kph", "qt",
                    "kW", "kWh", "MW", "MWh", "Wh", "Mbps", "Gbps", "Kbps", "MB/s", "GB/s")  # "kWh = kW × hours"
_RATES = {"MB/s": "megabytes per second", "GB/s": "gigabytes per second"}  # (no symbol of their own in UNITS)
_CONVERTED = "(?:%s)" % "|".join(sorted(_CONVERTED_UNITS, key=len, reverse=True))
_FORMULA_UNIT = (rf"(?<![\w°./]){_CONVERTED}(?=[ \t]?[×*÷=](?!=))|(?:(?<=[×*÷=][ \t])|(?<=[×*÷=])){_CONVERTED}(?![\w/])"
                 rf"|(?<=[a-z][ \t]to[ \t]){_CONVERTED}(?![\w/])")
_UNIT_NAMES = frozenset(name for unit in _CONVERTED_UNITS if unit in UNITS for name in UNITS[unit][:2])
_UNIT_WORD_TO = re.compile(r"(?i:([a-z]+)[ \t]to[ \t])\Z")


def _formula_unit(match: re.Match[str]) -> str | None:
    text, start = match.string, match.start()
    if text[start - 3:start] == "to " or text[start - 3:start] == "to\t":
        named = _UNIT_WORD_TO.search(text, max(0, start - 24), start)
        if not named or named.group(1).lower() not in _UNIT_NAMES:
            return None  # "Miles to km": a unit's word before
    elif re.search(r"\d[ \t]?\Z", text[max(0, start - 2):start]):
        return None  # "5 km = ...": the unit of its number (numbers.py)
    return _RATES.get(match.group()) or UNITS[match.group()][1]


def _math(match: re.Match[str]) -> str | None:
    """An expression with "=" or an operator no range, date or fraction uses: "1-2=5", "2+2", "x^2"."""
    text = match.group()
    if text in UNITS and re.search(r"\d[ \t]?\Z", match.string[max(0, match.start() - 2):match.start()]):
        return None  # "g = 9.8 m/s²": a unit after its number ("meters per second squared"), not a division
    if text[0] in _UNIT_LETTERS and not text[1:2].isalpha() and re.search(
            r"[\d²³⁰¹⁴-⁹][ \t]\Z", match.string[max(0, match.start() - 2):match.start()]):
        return None  # "2.5 h = 150 mi", "10³ W = 1 kW": the unit of the number before it, not a variable
    lead = re.match(r"[a-z]{2,3}(?=[ \t]?=)", text)
    if lead and lead.group() in UNITS and re.search(r"\d[ \t]\Z", match.string[max(0, match.start() - 2):match.start()]):
        return None  # "15 ft = 300 sq ft": the unit of the number before it, not a two-letter variable
    if re.fullmatch(r"[\d.]+[ \t]*=[ \t]*[\d.]+", text) and re.match(r"–[ \t]?\d", match.string[match.end():match.end() + 3]):
        return None  # "Zone 2 = 60–70%": "=", then a range that starts there ("sixty to seventy percent")
    if re.match(r"[ \t][KMGT]B/s(?![\w/])", match.string[match.end():match.end() + 7]) and text[-1].isdigit():
        return None  # "8 = 125 MB/s": the last number's rate after it ("megabytes per second"), numbers.py's
    if re.search(r"\d[eE][-+−]?\d", text):
        return None  # "k = 1.38e-23": a number in E notation, not "1.38 e" minus 23
    asked = _ASKED.search(match.string, max(0, match.start() - 20), match.start())
    # "2x - 3 > 7": an expression with a variable before a relation ("2024-01-15 > x" stays a date)
    related = re.search(r"[a-z]", text) and re.match(r"[ \t]*[<>≤≥≈≠]", match.string[match.end():match.end() + 3])
    over = re.fullmatch(r"\d+/([a-z])", text) and text[-1] not in _UNIT_LETTERS  # "1/x", not "1/s" (a unit)
    if not re.search(r"[=+*×÷^²³·√∛∜−]|[ \t]/[ \t]", text) and not asked and not related and not over:
        return None
    if re.fullmatch(r"\d+(?:\.\d+)?(?:[ \t]?×[ \t]?\d+(?:\.\d+)?){1,2}", text) and not asked and not re.search(
            r"[=+]\s*\Z", match.string[max(0, match.start() - 4):match.start()]):
        return None  # "1920×1080", "10×12 feet": sizes, "by" (numbers.py's dimensions); "What is 6 × 7?" a product
    said = []
    parts = _MATH_PARTS.findall(text)
    for i, part in enumerate(parts):
        if part == "(":  # "2(x + 3)", "n(n+1)": a product
            said.append("times")
        elif part.rstrip(" \t₀₁₂₃₄₅₆₇₈₉") in _FUNCTIONS:
            said.append(_function(part))
        elif part == "°":
            said.append("degrees")
        elif part[0] == "/" and len(part) == 2:  # "1/x": a fraction with a variable below is "over"
            said.append("over " + part[1])
        elif "/" in part and len(part) > 2:  # "1/2 + 1/4 = 3/4": a proper fraction is a fraction, "6/3" a division
            a, b = (int(n) for n in part.split("/"))
            factor = 0 < a and b > 1 and (parts[i - 1] in ("×", "*") if i else bool(  # "°C × 9/5": a factor,
                re.search(r"[×*][ \t]?\Z", match.string[max(0, match.start() - 2):match.start()])))  # "nine fifths"
            if i == 0 and parts[1:2] == ["="] and 0 < a <= b and b >= 10 and match.string[match.end():match.end() + 1] == "%":
                said.append(f"{w.cardinal(str(a))} out of {w.cardinal(str(b))}")  # "45/50 = 90%": a score, its share
                continue
            said.append(fraction_words(a, b) if 0 < a < b or factor else
                        f"{w.cardinal(str(a))} divided by {w.cardinal(str(b))}")
        elif part in "²³":
            said.append("squared" if part == "²" else "cubed")
        elif part[1:2] == "(":  # "f(x)"; a function letter before a number: "f(3)" "f of three"
            said.append(f"{part[0]} of {w.number(part[2:-1]) if part[2].isdigit() else part[2]}")
        elif part[0] == "^":
            power = part[1:].strip()
            minus, power = power[0] in "-−", power.lstrip("-−")  # "10^-3", "e^-x"
            named = None if minus else {"2": "squared", "3": "cubed"}.get(power)
            said.append(named or ("to the minus " if minus else "to the power of ")  # "10^-3": "ten to the minus three"
                        + (w.number(power) if power[0].isdigit() else power))
        elif part == "!" and "=" in parts and i == len(parts) - 1:
            said[-1] += "!"  # "2 + 2 = 4!": an exclamation after the result, not its factorial
        elif part in _OPERATORS and (said or part in ("√", "∛", "∜", "sqrt")):
            said.append(_OPERATORS[part])
        elif part in "-−":
            said.append("minus")
        else:
            said.append(w.number(part.replace(",", "")) if part[0].isdigit() else
                        UNITS[part][1] if part in UNITS and len(part) > 1 else part)  # "= km": a unit, "kilometers"
    return " ".join(said)


# A password, a PIN, a Wi-Fi key: after a word that names one, every character said, as an agent reads it out to be
# typed: letters spelled (a capital said so where the secret mixes cases), digits one by one, symbols by name; a run of
# letters that is a word stays a word ("Blue-Sky_42": "Blue dash Sky underscore four two"); one of capitals and digits
# alone is read as any code
_SECRET_CUE = re.compile(r"(?i:\b(?=[pwnasvolt])(?:password|passcode|passphrase|pin|pin code|wi-?fi key|network key|access code|"
                         r"security code|verification code|one-time code|otp|login code|temporary code)s?)"
                         r"(?:[ \t]+(?:is|was|will be|reads))?[ \t]*[:=]?[ \t]*[\"'“‘]?\Z")
_SECRET_SYMBOLS = {"#": "hash", "$": "dollar sign", "!": "exclamation mark", "@": "at", "%": "percent", "^": "caret",
                   "&": "ampersand", "*": "star", "_": "underscore", "+": "plus", "=": "equals", "?": "question mark",
                   "~": "tilde", ".": "dot", "-": "dash"}
_SECRET_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|.")


_PICKED_BEFORE = re.compile(r"(?<![\w'])(?i:the|for|all|any|no|of|our|your|open|and|or|more|fewer|two|three|four|five|"
                           r"several|many|some|these|those|\d+)[ \t]+\Z")


def _plural_code(match: re.Match[str]) -> str | None:
    if not _PICKED_BEFORE.search(match.string, max(0, match.start() - 12), match.start()):
        return None
    return f"{match.group()[0]} {w.plural(w.cardinal(match.group()[1:-1]))}"


def _secret(match: re.Match[str]) -> str | None:
    """A secret after its cue (``_SECRET_CUE``), character by character; None elsewhere."""
    token = match.group()
    if not _SECRET_CUE.search(match.string, max(0, match.start() - 32), match.start()) \
            or not re.search(r"[a-z#$!@%^&*_+=?~.]", token):  # capitals, digits and hyphens: a code ("4F9A-22C1")
        return None
    cased = re.search(r"[a-z]", token) is not None and re.search(r"[A-Z]", token) is not None
    said = []
    for run in _SECRET_RUN.findall(token):
        if run.isdigit():
            said.append(w.digits(run))
        elif run in _SECRET_SYMBOLS:
            said.append(_SECRET_SYMBOLS[run])
        elif run.isupper() and not cased:
            said.append(spell_code(run))  # as a code's letters: "GUEST2024" "guest two zero two four", "XKCD" spelled
        elif len(run) >= 3 and (run.istitle() or run.islower()) and SAYABLE_START.match(run) \
                and re.search(r"[aeiouy]", run):
            said.append(run)  # a word
        else:
            said.extend(f"capital {c}" if cased and c.isupper() else c.upper() for c in run)
    return " ".join(said)


_MIXED = re.compile(r"(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9]+")
_LEFTOVER_RUN = re.compile(r"[A-Z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|\d+")
# "e3b0c442": a hash, a commit (its letters and digits interleaved, not "12feb2024"), its digits one by one
_HEX_STRING = re.compile(r"(?=.*\d[a-f]+\d)(?=.*[a-f]\d+[a-f])[0-9a-f]{7,}")
# "pickup code is hx92", "password: ab123": a code named before it, its digits one by one
# "your pass id is ab12cd", "ID: x7k2", "pickup code is hx92": a code named just before one that mixes letters and digits
_CODE_IS = re.compile(r"(?i:\b(?:code|pin|passcode|password|id))(?:[ \t]+(?:is|was))?[ \t]*:?[ \t]*\Z")
_SYMBOL_NAMES = {"$": "dollars", "€": "euros", "£": "pounds", "¥": "yen", "₹": "rupees", "₩": "won", "¢": "cents"}


def _leftover(match: re.Match[str]) -> str:
    """What no other rule read but holds digits or a currency symbol: never handed to the model raw. Digits as a
    number (up to four) or digit by digit, short letter runs spelled unless a capitalised word ("Blue7Fox"), symbols
    named."""
    said = []
    runs = _LEFTOVER_RUN.findall(match.group()) if match.group()[0] not in _SYMBOL_NAMES else []
    text, start, end = match.string, match.start(), match.end()
    before = re.search(r"([A-Za-z0-9]+)-\Z", text[max(0, start - 24):start])
    after = re.match(r"-([A-Za-z0-9]+)", text[end:end + 24])
    # "8f3a-77c2": an ID of letters and digits mixed on both sides of its hyphen, its digits one by one
    # ("a3f9-22bc": a mixed piece beside another, however few its runs)
    code = (len(runs) >= 3 or _MIXED.fullmatch(match.group()) is not None) and \
        any(side and _MIXED.fullmatch(side[1]) for side in (before, after)) or _HEX_STRING.fullmatch(match.group()) \
        or _MIXED.fullmatch(match.group()) is not None and _CODE_IS.search(text, max(0, start - 24), start) is not None
    for run in runs:
        if run.isdigit():
            said.append(w.cardinal(run) if len(run) <= 4 and run[0] != "0" and not code else w.digits(run))
        else:
            word = run.istitle() and len(run) > 2 and re.search(r"[aeiouy]", run) is not None  # "Blue7Fox"
            said.append(" ".join(run.upper()) if len(run) <= 3 and not word and any(c.isdigit() for c in match.group())
                        else run)
    return " ".join(said) or " ".join(_SYMBOL_NAMES[c] for c in match.group())



def _letter_range(match: re.Match[str]) -> str | None:
    """"A–D" -> "A to D": a range only when its letters are in order ("B–A" is no range)."""
    first, last = match.group()[0], match.group()[-1]
    return f"{first} to {last}" if first < last else None


# A number that names a document, a standard or a product ("RFC 2616", "ISO 9001", "RTX 4090"), as people say one:
# up to two digits a number; one round but for its last digit, or five digits in round hundreds, a number ("9001" "nine
# thousand one", "27001", "12800"); three or four digits in pairs ("2616" "twenty-six sixteen", "802" "eight oh two");
# five, two and three ("62443" "sixty-two four forty-three")
def identifier_number(digits: str) -> str:
    if len(digits) <= 2 or re.fullmatch(r"[1-9]\d?00\d|[1-9]\d{2}00", digits):
        return w.cardinal(digits)
    if len(digits) == 5 and digits[0] != "0":
        return w.cardinal(digits[:2]) + " " + w.paired(digits[2:])
    return w.paired(digits)


# Bodies that publish standards, and series of documents: the number after one (or after two joined by a slash,
# "ISO/IEC 27001", the slash unsaid) names a document, its parts by "dot" and "dash", its year after a colon
# ("IEEE 802.11ac" "I E E E eight oh two dot eleven A C", "ISO 9001:2015", "ISO 3166-1")
_BODY = "(?:ISO|IEC|IEEE|ANSI|ASTM|DIN|EN|BS|ITU|ETSI|NIST|SAE|ASME|UL|CSA|JIS|NFPA|ISA|ECMA|RFC)"
_STANDARD_NUMBER = r"\d{1,5}(?:\.\d{1,3})*[A-Za-z]{0,3}(?:-\d{1,2})?(?::(?:19|20)\d\d)?(?![\w]|[.,:/-]\w)"


def _standard_number(text: str) -> str:
    """"802.11ac" -> "eight oh two dot eleven A C", "3166-1" -> "thirty-one sixty-six dash one"."""
    text, _, year = text.partition(":")
    said = []
    for part in re.findall(r"\d+|[A-Za-z]+|[.-]", text):
        said.append("dot" if part == "." else "dash" if part == "-" else " ".join(part.upper()) if part.isalpha()
                    else identifier_number(part) if not said else w.cardinal(part) if len(part) <= 2 else w.digits(part))
    return " ".join(said) + (" " + w.year(int(year)) if year else "")


def _standard(match: re.Match[str]) -> str:
    bodies, _, number = match.group().replace("\t", " ").partition(" ")
    return " ".join(caps(body) for body in bodies.split("/")) + (" " + _standard_number(number) if number else "")


# A product line's capitals before its model number ("RTX 4090" "R T X forty ninety", "XPS 13 9340" "X P S thirteen
# ninety-three forty"): the number names the model, said in pairs; not after a currency's code, a word, a month or a
# weekday ("JAN 15 2026"), nor before a unit or a counted noun ("PTO 120 hours"; "RTX 4090 draws 450 W": a verb,
# its object a number or after "the")
_LINE_COUNTED = re.compile(r"[ \t]*%|[ \t]+(?!(?:is|was|has|does|this|his|its|thus|plus|less|unless|across)\b)[a-z]+s\b(?![ \t]+(?:[$€£¥]?\d|the\b|about\b|up[ \t]to\b))"
                           r"|[ \t]?([A-Za-z]+)\b")


_CARD_NUMBER_BEFORE = re.compile(r"(?i:\bcard)[ \t]*(?:no\.|number|#)[ \t]*:?[ \t]*\Z")


def _card_groups(match: re.Match[str]) -> str | None:
    """A card's letters and groups of four digits after "card no." ("GC 5521 0093": "G C five five two one, zero zero
    nine three"); None after anything else."""
    if not _CARD_NUMBER_BEFORE.search(match.string, max(0, match.start() - 20), match.start()):
        return None
    line, *groups = match.group().split()
    return " ".join(line) + " " + ", ".join(w.digits(group) for group in groups)


def _model(match: re.Match[str]) -> str | None:
    line, *numbers = match.group().split()
    counted = _LINE_COUNTED.match(match.string, match.end())
    named_day = line.title() in WEEKDAYS or line.title() in (month[:3] for month in MONTHS) or line == "SEPT"
    if re.fullmatch(r"TTY|TDD", line) and re.fullmatch(r"[2-9]11", numbers[-1]):
        return None  # "TTY 711": a number a text telephone calls (the service code's rule), not a model
    if re.match(r"[ \t]\d{4}[ \t]\d{4}", match.string[match.end():match.end() + 10]):
        return None  # "USPS 9400 1118 9922 ...": the first of a tracking number's groups (grouped_digits), no model
    course = re.fullmatch(COURSE_SUBJECTS, line) and len(numbers) == 1  # "CHEM 101": a course, its subject a word
    if line in CURRENCIES or line == "FY" or named_day or " " not in caps(line) and not course or counted and (
            counted[1] is None or counted[1] in UNITS and counted[1] not in COMMON_WORDS):  # "in": a word
        return None
    return " ".join([caps(line), *(identifier_number(number) for number in numbers)])


_TAX_FORMS = "1040|1041|1042|1065|1094|1095|1098|1099|1120|5498|8949"  # the IRS's forms that carry letters after them
_BEDROOMS_BEFORE = re.compile(r"\d[ \t]?(?:BR|BD|br|bd)\b[^\n\d]{0,6}\Z")


def _rooms(match: re.Match[str]) -> str:
    """"3BR/2BA" -> "three bedroom two bath", "2BA" -> "two bath": a listing's rooms, each after its count."""
    spaced_bath = "/" not in match.group() and match.group()[1] in " \t" and match.group()[-2:].upper() == "BA"
    if spaced_bath and not _BEDROOMS_BEFORE.search(match.string, max(0, match.start() - 30), match.start()):
        return None  # "3 BR, 2 BA", "3 BR/2 BA": spaced, only after the bedrooms ("2 BA degrees" stays spelled)
    return " ".join(w.cardinal(part[0]) + (" bath" if part[-2:].upper() == "BA" else " bedroom")
                    for part in match.group().split("/"))


# --- chemical formulas -------------------------------------------------------------------------------------------------
# An element's symbol (two letters first), spelled as its letters in a formula: "CO₂" "C O two", "Fe₂O₃" "F E two O
# three", "NaOH" "N A O H"; a subscript is its count said as a number, a leading coefficient too ("2H₂O" "two H two O")
ELEMENT = (r"(?:He|Li|Be|Ne|Na|Mg|Al|Si|Cl|Ar|Ca|Sc|Ti|Cr|Mn|Fe|Co|Ni|Cu|Zn|Ga|Ge|As|Se|Br|Kr|Rb|Sr|Zr|Nb|Mo|Tc|Ru|"
           r"Rh|Pd|Ag|Cd|In|Sn|Sb|Te|Xe|Cs|Ba|La|Ce|Pr|Nd|Pm|Sm|Eu|Gd|Tb|Dy|Ho|Er|Tm|Yb|Lu|Hf|Ta|Re|Os|Ir|Pt|Au|Hg|"
           r"Tl|Pb|Bi|Po|At|Rn|Fr|Ra|Ac|Th|Pa|Np|Pu|Am|Cm|Bk|Cf|Es|Fm|Md|No|Lr|[HBCNOFPSKVYIWU])")
_GROUP = rf"(?:{ELEMENT}[₀-₉]*|\((?:{ELEMENT}[₀-₉]*)+\)[₀-₉]*)"
# with a subscript count somewhere in it; or, without one, symbols only, mixed case, two capitals or more, ending in a
# halide, or three symbols or more ending in a capital ("HCl", "NaCl", "NaOH"; not "HeLa", "NaN", "Co", "In")
FORMULA = (rf"(?<![\w'’(])\d*(?=(?:{ELEMENT}|[()₀-₉])*[₀-₉])(?:{_GROUP})+(?![\w'’])"
           rf"|(?<![\w'’])(?=[A-Z][a-z]?[A-Z])(?=[A-Z]*[a-z])(?:(?:{ELEMENT}){{3,6}}(?<=[A-Z])|(?:{ELEMENT}){{1,5}}(?:Cl|Br))(?![\w'’])")
_SUBSCRIPT_DIGITS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


def _formula(match: re.Match[str]) -> str:
    """"2H₂O" -> "two H two O", "Fe₂O₃" -> "F E two O three", "Ca(OH)₂" -> "C A O H two"."""
    said = []
    for part in re.findall(r"^\d+|[A-Za-z]|[₀-₉]+", match.group()):
        said.append(w.cardinal(part.translate(_SUBSCRIPT_DIGITS)) if not part.isalpha() else part.upper())
    return " ".join(said)


# A bank's SWIFT (BIC) code after its label: four letters for the bank, two for its country, two for its place (and
# three for a branch), spelled, its digits one by one ("SWIFT code BOFAUS3N" "B O F A U S three N")
_SWIFT_LABEL = re.compile(r"(?:\bSWIFT|\bSwift|\bswift|\bBIC)(?:/BIC)?(?:[ \t]+(?i:code|no\.|number))?:?[ \t]+\Z")


def _swift(match: re.Match[str]) -> str | None:
    if not _SWIFT_LABEL.search(match.string, max(0, match.start() - 24), match.start()):
        return None
    return " ".join(w.cardinal(c) if c.isdigit() else c for c in match.group())


def _cell_range(match: re.Match[str]) -> str:
    """"A1:A20", "B2:D10": a spreadsheet's range of cells, each its column's letters and row's number, "to" between."""
    def cell(text: str) -> str:
        letters = text.rstrip("0123456789")
        return f"{' '.join(letters)} {w.cardinal(text[len(letters):])}"
    return " to ".join(cell(side) for side in match.group().split(":"))


RULES: list[Rule] = [
    ("cell_range", r"(?<![\w:$.])[A-Z]{1,3}[1-9]\d{0,6}:[A-Z]{1,3}[1-9]\d{0,6}(?![\w:])", _cell_range),
    # "3X A WEEK", "2X DAILY": a shouted count of times (as "3x a week"), not a code
    # "i9-14900K", "Ryzen 7 7800X3D": a processor's model number after its tier, as the chips are called: four digits
    # in pairs ("seventy-eight hundred"), five as the generation and the rest ("fourteen nine hundred"), then the suffix
    ("serial", r"(?:(?<=\b[iI][3579]-)|(?<=\bRyzen[ \t][3579][ \t])|(?<=\bRyzen[ \t]Threadripper[ \t]))"
               r"\d{4,5}[A-Z][A-Z0-9]{0,3}(?![\w-])", _processor),
    ("serial", r"(?<![\w.])\d{1,2}X(?=[ \t]+(?:A|AN|PER|EVERY|DAILY|WEEKLY|MONTHLY)\b)",
     lambda match: w.cardinal(match.group()[:-1]) + " times"),
    ("serial", r"(?<![\w-])(?<=[ \t])[A-Z]{6}[A-Z0-9]{2}(?:[A-Z0-9]{3})?(?![\w-])",
     _swift),
    ("vanity", r"(?<![\w+-])(?:1[-. ])?\d{3}[-. ](?=[A-Z0-9-]*[A-Z]{3})[A-Z0-9]{2,}(?:-[A-Z0-9]+)*(?![\w-])",
     _vanity),
    ("extension", r"(?<![\w])(?:[Ee]xt|EXT)\.?[ \t]?#?\d{1,6}(?![\w])|(?:(?<=\d[ \t])|(?<=\d,[ \t]))x[ \t]?\d{2,6}(?![\w])"
     r"|(?<=\d{3}[-.]\d{4}[ \t])x\d(?![\w])"  # "404.555.0181 x3": a one-digit extension after a phone's last four
     r"|(?:(?<=\b[Aa]t[ \t])|(?<=\b[Dd]ial[ \t])|(?<=\b[Cc]all[ \t])|(?<=\bto[ \t])|(?<=\bextension[ \t]is[ \t])"
     r"|(?<=\bextension:[ \t])|(?<=\bextension[ \t]))x\d{3,6}(?![\w])",  # "extension is x4417"
     _extension),
    ("local_phone", r"(?<![\w.+-])\d{3}[-. ]\d{4}(?![\w-]|[. ]\d)", _local_phone),  # "call 555 0199" too
    ("local_digits", r"(?<![\w.,$#-])[2-9]\d{6}(?![\w%]|[.,:/-]\d)",  # "phone 5550199": seven digits after a cue
     lambda match: w.digits(match.group()[:3]) + ", " + w.digits(match.group()[3:])
     if _PHONE_CUE.search(match.string, max(0, match.start() - 30), match.start()) else None),
    ("service_code", r"(?<![\w.$#-])(?:[2-9]11|988|000|10[01]|11[0-9]|999|(?<=[Dd]ial[ \t])\d{3}|(?<=[Dd]ialed[ \t])\d{3}"
                     r"|(?<=[Dd]ialled[ \t])\d{3}|(?<=[Dd]ialing[ \t])\d{3}|(?<=[Dd]ialling[ \t])\d{3})(?![\w.]\d|[\w-])",
     _service_code),
    ("lottery", r"(?<![\w.+$#-])\d\d?(?:[ \t]\d\d?){4,6}(?![\w-]|[ \t]\d|[.,]\d)", _lottery),
    ("short_code", r"(?<![\w.$#-])(?:\d{5,6}|\d{2,3}-\d{3})(?![\w-]|[.,]\d)", _short_code),  # "TO 33-444": dashed too
    # "Boeing 747-400", "Boeing 787-9": an airliner's model and its variant, as they are called
    # "Seats 1A–4F", "rows 10C-12D": a range of seats by their codes, "one A to four F" (not amps)
    ("airliner", r"(?:(?<=[Ss]eats[ \t])|(?<=SEATS[ \t]))\d{1,2}[A-K][ \t]?[–-][ \t]?\d{1,2}[A-K](?![\w-])",
     lambda match: " to ".join(w.cardinal(code[:-1]) + " " + code[-1]
                               for code in re.findall(r"\d+[A-K]", match.group()))),
    # "Runway 16R", "Rwy 9L": a runway's number with its side, digit by digit as a controller says it, "one six right"
    ("airliner", r"(?:(?<=Runway[ \t])|(?<=runway[ \t])|(?<=RUNWAY[ \t])|(?<=Rwy[ \t])|(?<=RWY[ \t]))(?:0?[1-9]|[12]\d|3[0-6])[LRC](?![\w-])",
     lambda match: w.digits(match.group()[:-1]) + " " + {"L": "left", "R": "right", "C": "center"}[match.group()[-1]]),
    # "Mach 0.85": a speed under the speed of sound as pilots say it, "Mach point eight five"
    ("airliner", r"(?<=\bMach[ \t])0?\.\d{1,3}(?![\w]|[.,]\d)", lambda match: "point " + w.digits(match.group().split(".")[1])),
    # "Airbus A321neo", "Cessna 172S", "Piper PA-28-181", "Embraer E175": an aircraft's model after its maker, as pilots
    # name it (digit groups in pairs, letters spelled, "neo" a word); "The 787 cruises": a Boeing by its number
    ("airliner", r"(?:(?<=Airbus[ \t])|(?<=Cessna[ \t])|(?<=Piper[ \t])|(?<=Embraer[ \t])|(?<=Beechcraft[ \t])"
                 r"|(?<=Cirrus[ \t])|(?<=Diamond[ \t])|(?<=Bombardier[ \t])|(?<=Mooney[ \t]))"
                 r"(?=[A-Z]{0,3}-?\d)[A-Z]{0,3}-?\d{2,3}(?:-\d{2,3})?(?:neo|ceo|[A-Z]{1,3})?(?![\w-])"
                 r"|(?:(?<=\b[Tt]he[ \t])|(?<=\b[Oo]ur[ \t])|(?<=\b[Tt]his[ \t]))7[0-8]7(?=[ \t]+[a-z]+s\b|[ \t]*[.,!?])",
     lambda match: " ".join(part if part.islower() else w.paired(part) if part.isdigit() and len(part) == 3
                            else w.cardinal(part) if part.isdigit() else spell_code(part)
                            for part in re.findall(r"\d+|[A-Z]+|[a-z]+", match.group()))),
    ("airliner", r"(?<=Boeing[ \t])7[0-8]7(?:-\d{1,3}(?:[A-Z]{1,2})?)?(?![\w-])",
     lambda match: " ".join(w.paired(part) if part.isdigit() else spell_code(part)
                            for part in re.findall(r"\d+|[A-Z]+", match.group()))),
    # "2:23-cv-01234", "1:21-cr-00456-JDB": a US federal case's number (division, year, kind, docket number, judge's
    # initials): the year as a number, the kind's letters spelled, the docket's digits one by one
    ("court_case", r"(?<![\w:.-])\d{1,2}:\d{2}-[a-zA-Z]{2,3}-\d{3,6}(?:-[A-Z]{2,4})*(?![\w-])",
     lambda match: " ".join(w.cardinal(part) if i < 2 else w.digits(part) if part.isdigit() else spell_code(part.upper())
                            for i, part in enumerate(re.split(r"[:-]", match.group())))),
    # "123e4567-e89b-12d3-a456-426614174000": a UUID, character by character in its groups
    ("uuid", r"(?<![\w-])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![\w-])",
     lambda match: "-".join(" ".join(w.digits(c) if c.isdigit() else c.upper() for c in group)
                            for group in match.group().split("-"))),
    # "E11.9", "J45.909", "S72.001A": a diagnosis code's shape (ICD-10: a letter, two digits, a full stop, one to four
    # more), character by character, its full stop "point" as clinicians say it
    ("dotted_serial", r"(?<![\w.])[A-UW-Z]\d\d\.\d[0-9A-Z]{0,3}(?![\w]|\.\w)",
     lambda match: " point ".join(" ".join(w.digits(c) if c.isdigit() else c for c in part)
                                  for part in match.group().split("."))),
    # "A1.B2", "2RS.9": a code's parts by full stops (a letter in its first), each spelled, "dot" between them
    # (capitals run into a decimal number, "PM2.5", are the name and its number: "P M two point five")
    ("dotted_serial", r"(?<![\w.])(?=[A-Z0-9.]*\d)(?=\d*[A-Z])[A-Z0-9]+(?:\.[A-Z0-9]+)+(?![\w]|\.\w)",
     lambda match: None if re.fullmatch(r"[A-Z]\.\d{1,3}", match.group())
     else " ".join(match.group()[:len(named[1])]) + " " + w.number(named[2])
     if (named := re.fullmatch(r"([A-Z]{2,3})([1-9]\d?\.\d)", match.group()))
     else " dot ".join(spell_code(part) for part in match.group().split("."))),
    # "H.264", "V.92": a standard's letter and number (a codec's, a modem's), "H two sixty-four"
    ("dotted_code", r"(?<![\w.])[A-Z]\.\d{1,3}(?![\w]|\.\d)",
     lambda match: match.group()[0] + " " + w.paired(match.group()[2:])),
    # (a letter and a digit or symbol in it: the word's run of the others passed over once, not each way back)
    ("secret", r"(?<![\w#$!@%^&*_+=?~.-])(?=[A-Za-z.-]*+[0-9#$!@%^&*_+=?~])(?=[0-9#$!@%^&*_+=?~.-]*+[A-Za-z])"
               r"[A-Za-z0-9#$!@%^&*_+=?~.-]{4,64}(?<![.!?-])(?![\w#$@%^&*_+=~])", _secret),
    ("hex", r"(?<![\w])0x[0-9A-Fa-f]{1,16}(?![\w])", _hex),
    # "Frequent flyer number: ZP 4471 9082": a program's letters and digit groups after a kind of number, spelled
    ("cued_digits", r"(?:(?<=[Nn]umber[ \t])|(?<=[Nn]umber:[ \t])|(?<=NUMBER[ \t])|(?<=NUMBER:[ \t]))[A-Z]{1,3}[ \t]?\d{3,}"
                    r"(?:[ \t]\d{3,}){0,3}(?![\w%]|[.,:/-]\d)",
     lambda match: " ".join(" ".join(part) if part.isalpha() else w.digits(part)
                            for part in re.findall(r"[A-Z]+|\d+", match.group()))
     if _KIND_NUMBER_BEFORE.search(match.string, max(0, match.start() - 40), match.start()) else None),
    ("flight", rf"(?<![\w])(?:{'|'.join(AIRLINES)})[ \t]?\d{{1,4}}(?![\w])"
     r"|(?:(?<=[Ff]light )|(?<=FLIGHT )|(?<=Amtrak )|(?<=AMTRAK )|(?<=[Tt]rain )|(?<=TRAIN )|(?<=[Bb]us )|(?<=BUS ))(?:[A-Z]{2,3}[ \t]\d{1,4}|\d{3,4})(?![\w]|[.,]\d)",
     _flight),  # "Train ICE 597": a train's or a flight's code after its word, spelled ("TRAIN ICE 578" too)
    ("number_code", r"(?<![\w&#])#[ \t]?(?:(?=[A-Za-z0-9-]*[A-Za-z])(?=[A-Za-z0-9-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*|\d+(?:-\d+)+|\d{3,}(?:[ \t]\d{3,}){1,4}(?![.,]\d))"
                    r"(?:/[A-Z0-9]+(?:-[A-Z0-9]+)*)*(?![\w/-])", _number_code),  # "#A7-4402", "#100-4432-9981", "#7712 3456 7890", "#B-12/34"
    # "*611", "*67", "*#06#", "##002#": keyed on a phone, every key said ("star pound zero six pound")
    ("star_code", r"(?<![\w*#])[*#][*#\d]{0,18}\d[*#\d]{0,18}(?![\w*#])|(?<![\w*#.,$-])\d{1,12}#(?![\w*#])", _star_code),
    ("bare_phone", r"(?<![\w.,$#-])1?\d{10}(?![\w%]|[.,:/-]\d)", _bare_phone),
    ("serial", r"(?<![\w.,$#-])\d{3,4}(?![\w%]|[.,:/-]\d)", _room_number),
    ("cued_digits", r"(?<![\w.,$#-])(?:\d{3,}(?:[ \t-]\d{2,}){0,4}|\d\d(?:[ \t-]\d{2,}){1,4})(?![\w%]|[.,:/-]\d)",
     _cued_digits),
    # "HS code 8471.30", "ICD code 250.00": a code with a full stop after its cue, digit by digit, "point" between
    ("cued_digits", r"(?<![\w.,$#-])\d{2,}\.\d{1,4}(?![\w%]|[.,:/-]\d)",
     lambda match: " point ".join(w.digits(part) for part in match.group().split("."))
     if _CODE_CUE.search(match.string, max(0, match.start() - 40), match.start()) else None),
    ("grouped_digits", r"(?<![\w.+-])\d+(?:-\d+){2,}(?:-X)?(?![\w-])|(?<![\w.+$-])(?:0\d{3,}-\d{3,}|\d{5,}-(?:\d{4,}|\d{1,2}))(?![\w-])"
                       r"|(?<![\w.,+$-])\d{4}(?:[ \t]\d{4}){2,}(?:[ \t]\d{1,3})?(?![\w-]|[.,]\d|[ \t]\d)",
     _grouped_digits),  # "04465-33471", "452187-3" (a check digit): a part number, not a range; "9405 5036 9930 ..."
    ("round_the_clock", r"(?<![\w./])24[ \t]?[x×/][ \t]?7(?![\w/]|\.\d)", lambda match: "twenty-four seven"),  # "24x7", "24/7"
    # "0W-20", "10W-40", "5W30": a motor oil's viscosity grade, its winter grade, "W", then its hot grade ("zero W twenty")
    ("viscosity", r"(?<![\w.-])(?:0|5|10|15|20|25)W-?(?:8|[1-6]0|16|[1-5]5)(?![\w-]|\.\d)",
     lambda match: " W ".join(w.cardinal(n) for n in re.split(r"W-?", match.group()))),
    ("grades", r"(?<![\w-])K[-–](?:1[0-2]|[1-9])(?![\w-])", lambda match: "K to " + w.cardinal(match.group()[2:])),
    # "a 2BR", "2BA", "3BR/2BA" (bedrooms and baths, the slash unsaid), "3 BR": a listing's rooms after their count
    ("rooms", r"(?<![\w.-])\d(?:BR|BD|br|bd|[ \t](?:BR|BD)(?=[ \t]*[,;/)]|[ \t]+(?:apt|apartment|house|home|condo|unit|flat|for\b)))"
              r"(?:/\d[ \t]?(?:BA|ba))?(?![\w/-])|(?<![\w.-])\d[ \t]?(?:BA|ba)(?![\w/-])", _rooms),
    # "2Q22", "3Q 2023", "1H24": a quarter or a half of a year, as analysts write them; "Q4'23" a quarter and its year
    ("quarter", r"(?<![\w-])[1-4]Q(?:[ \t]?['’]?(?:\d\d|(?:19|20)\d\d))?(?![\w-])|(?<![\w-])[12]H[ \t]?['’]?(?:\d\d|(?:19|20)\d\d)(?![\w-])"
                r"|(?<![\w-])Q[1-4][ \t]?['’]\d\d(?![\w'’-])", _quarter),
    ("fiscal_year", r"(?<![\w-])FY[ \t]?(?:\d{4}|\d\d)(?![\w-])", fiscal_year),  # before a code's reading
    ("standard", rf"(?<![\w/-]){_BODY}(?:(?:/{_BODY})*[ \t]{_STANDARD_NUMBER}|(?:/{_BODY})+(?![\w/-]))", _standard),
    ("standard", r"(?<![\w.])802\.\d{1,2}[A-Za-z]{0,3}(?![\w]|\.\d)", lambda match: _standard_number(match.group())),  # Wi-Fi's
    ("model", r"(?<![\w/-])[A-Z]{2,4}(?:[ \t]\d{1,2})?[ \t]\d{3,4}(?![\w]|[.,:/-]\d)", _model),
    # "Gift card no. GC 5521 0093": a card's letters and its groups of four digits after its number's word, the
    # letters spelled, the digits one by one group by group
    ("grouped_digits", r"(?<![\w/-])[A-Z]{1,4}(?:[ \t]\d{4}){2,3}(?![\w-]|[.,]\d|[ \t]\d)", _card_groups),
    # "a 404 error", "503 Service Unavailable", "status 404": an HTTP status code, in pairs ("four oh four")
    ("http_status", r"(?<![\w.,$#-])(?:[1-5]\d\d(?=[ \t]+(?:Not[ \t]Found|Forbidden|Unauthorized|Bad[ \t]Request|Bad[ \t]Gateway|"
                    r"Internal[ \t]Server[ \t]Error|Service[ \t]Unavailable|Gateway[ \t]Timeout|Too[ \t]Many[ \t]Requests|"
                    r"Moved[ \t]Permanently)\b)|(?:4[0-2]\d|43[01]|451|50\d|51[01])(?=[ \t]+errors?\b)|"
                    r"(?:(?<=[Ss]tatus[ \t])|(?<=[Ee]rror[ \t]))[1-5]\d\d)(?![\w]|[.,:/-]\d)", lambda match: w.paired(match.group())),
    # "the 49ers", "the 76ers": a team named by a number, "forty-niners"
    ("number_ers", r"(?<![\w.,$])\d{1,3}ers(?![\w])",
     lambda match: re.sub(r"e?$", "ers", w.cardinal(match.group()[:-3]), count=1)),
    # a US tax form's number with its letters ("1099-INT", "1040-SR", "1098-T"), as filers say it: "ten ninety-nine I N T"
    ("tax_form", rf"(?<![\w$#.-])(?:{_TAX_FORMS})-[A-Z]{{1,4}}(?![\w-])",
     lambda match: "{} {}".format(*(w.paired(part) if part.isdigit() else " ".join(part)
                                     for part in match.group().split("-")))),
    # "a NEMA 14-50 outlet", "NEMA L6-30": a plug's or a socket's configuration, its two numbers said apart, no range
    ("serial", r"(?<=NEMA[ \t])L?\d{1,2}-\d{2}[PR]?(?![\w-])",
     lambda match: " ".join(w.cardinal(part) if part.isdigit() else part for part in re.findall(r"\d+|[A-Z]", match.group()))),
    # "for P1s", "the P2s and P3s": a priority's or a grade's code in the plural after a word that counts or picks them,
    # "P ones" (elsewhere a model's small-letter suffix: "A7s")
    ("serial", r"(?<![\w-])[A-Z]\d{1,2}s(?![\w-])", _plural_code),
    # "W-2s", "I-9s", "B-52s": a form's or a model's name of a capital, a hyphen and its number, in the plural ("W twos")
    ("serial", r"(?<![\w-])[A-Z]{1,2}-\d{1,3}s(?![\w'’-])",
     lambda match: " ".join(match.group().split("-")[0]) + " " + w.plural(
         (w.cardinal if len(match.group().split("-")[1]) <= 3 else w.paired)(match.group().split("-")[1][:-1]))),
    # a bill's number in Congress, in pairs as bills are said: "H.R. 815" "H R eight fifteen", "S.J.Res. 12"
    ("serial", r"(?<![\w.])(?:H\.[ \t]?R\.|(?:H|S)\.(?:J\.|Con\.)?[ \t]?Res\.)[ \t]?\d{1,4}(?![\w]|[.,]\d)",
     lambda match: " ".join([*re.findall(r"[A-Za-z]+", match.group()), w.paired(re.search(r"\d+", match.group())[0])])),
    # a storm's invest number and its basin's letter: "Invest 91L" "ninety-one L"
    ("serial", r"(?<=Invest[ \t])\d{2}[A-Z](?![\w-])", lambda match: f"{w.cardinal(match.group()[:2])} {match.group()[2]}"),
    # an American aircraft's tail number, digit by digit: "N42RF" "N four two R F"
    ("serial", r"(?<![\w-])N[1-9]\d{1,4}[A-Z]{1,2}(?![\w-])",
     lambda match: " ".join(char if char.isalpha() else w.digits(char) for char in match.group())),
    ("serial", r"(?<![\w-])[A-Z]\d{1,2}–[A-Z]\d{1,2}(?![\w-])"  # "Q1–Q3" (with a hyphen: the second alternative)
               r"|(?<![\w$£€¥₹#.-])(?=[A-Z0-9-]*[A-Z])(?=[A-Z0-9-]*\d)[A-Z0-9]+(?:-[A-Z0-9]+)*(?:(?<=\d)[a-z])?(?![\w-])",
     _serial),  # "SN8842-KD19", "M404n" (a model's lower-case suffix)
    # "AB/12", "A1/B2": a code's parts on both sides of a slash (capitals and digits, one side of each), "slash"
    # "1Z 999 AA1 01 2345 6784": a UPS tracking number (1Z and sixteen characters, spaced or not), one by one
    ("tracking", r"(?<![\w-])1Z(?:[ \t]?[0-9A-Z]){16}(?![\w-])",
     lambda match: " ".join(w.digits(c) if c.isdigit() else c for c in match.group() if not c.isspace())),
    # "RR 123 456 789 US", "LX 1042 8893 US", "EE123456789CN": an international postal item's number (two letters, eight
    # or nine digits, spaced in groups or not, the country's two letters), each character said
    ("tracking", r"(?<![\w-])[A-Z]{2}[ \t]?(?=(?:[ \t]?\d){8,9}[ \t]?[A-Z]{2}(?![\w-]))(?:\d{3,4}[ \t]?){1,2}\d{1,4}[ \t]?[A-Z]{2}(?![\w-])",
     lambda match: " ".join(w.digits(c) if c.isdigit() else c for c in match.group() if not c.isspace())),
    # "sm-g973f", "hp-x360": a small-letter model code, a letters-only part beside one that mixes letters and digits
    ("lower_code", r"(?<![\w-])(?:[a-z]{1,2}|[b-df-hj-np-tv-z]{3,4})-[a-z]{1,3}\d[a-z0-9]{0,10}(?![\w-]|[.,]\d)",
     lambda match: spell_code(match.group().upper())),
    ("slashed_code", r"(?<![\w/-])(?=[A-Z0-9/-]*[A-Z])(?=[A-Z0-9/-]*\d)[A-Z0-9]+(?:-[A-Z0-9]+)*(?:/[A-Z0-9]+(?:-[A-Z0-9]+)*)+(?![\w/-])",
     lambda match: None if (re.fullmatch(r"\d+(?:\.\d+)?(\D.*)", match.group()) or [None, None])[1] in UNITS
     or re.fullmatch(r"(?:P|LT|ST|T)?[1-3]\d\d/[2-9]\dZ?R[12]\d", match.group())  # a tire's size (numbers.py)
     else " slash ".join(spell_code(part) for part in match.group().split("/"))),  # "100KM/H" is a speed
    # "cd-38", "ab-cd-12-34": a small-letter code with digits, its letter parts that make no word spelled
    ("small_code", r"(?<![\w-])(?=[a-z-]*+\d)[a-z]{1,3}(?:-(?:[a-z]{1,6}|\d{1,10})){1,4}(?![\w-]|[.,]\d)"
                   r"|(?<![\w-])(?=[a-z0-9-]*[a-z])\d{1,6}(?:-(?:[a-z]{1,6}|\d{1,6})){2,4}(?![\w-]|[.,]\d)", _small_code),
    # "grade IV/VI", "Grade II/VI murmur": a grade over its scale's top, "four out of six"
    ("roman", rf"(?<![\w])(?i:grade)[ \t](?=[IV]{{1,3}}/[IV]{{1,3}}(?![\w/]))(?:{_ROMAN})/(?:{_ROMAN})(?![\w/])",
     lambda match: "%s %s out of %s" % (match.group()[:5], *(w.cardinal(str(roman_value(part)))
                                                           for part in match.group()[6:].split("/")))),
    ("roman", rf"(?<![\w])(?:Super[ \t]Bowl|World[ \t]War|{_NUMBERING}|{_SUBJECT}|item|clause|paragraph|section|part|step|page|pages)"
              rf"[ \t](?:{_ROMAN}|{_ROMAN_LOWER})(?![\w])",
     _numbered),
    # "stage IV lymphoma", "note iii", "act ii": a small-letter numbering word before a numeral of two letters or
    # more, only I, V and X (not "stage mix", "type CD", nor a lone "I", the pronoun)
    ("roman", r"(?<![\w])(?:stage|phase|level|tier|grade|chapter|volume|act|scene|note|footnote|article|appendix|"
              r"schedule|figure|table|lesson|module|unit|round|season|episode|series|type|class|book|canto|"
              r"dynasty|dynasties|chapters|volumes|books|acts|cantos|subsection|subsections|subclause|subparagraph|sections|"
              r"clauses|paragraphs|items|nerve)"
              r"[ \t](?:(?=[IVX]{2,}(?![\w]))%s|(?=[ivx]{2,}(?![\w]))%s)(?![\w])" % (_ROMAN, _ROMAN.lower()),
     _numbered),
    # "Stage IIIB", "grade IIa": a stage's numeral with its sub-stage's letter, "three B"
    ("roman", r"(?<![\w])(?i:stage|phase|grade|class|type)[ \t](?=[IVX]+[A-Da-d](?![\w]))%s[A-Da-d](?![\w])" % _ROMAN,
     _numbered_letter),
    # "types I and III", "classes I–IV": a list's or a range's first numeral, a lone "I", after a plural numbering
    # word, when a numeral follows it
    ("roman", r"(?<=[sS][ \t])I(?=[ \t]*(?:,|and|or|to|through|[–-])[ \t]*%s(?![\w]))" % _ROMAN,
     lambda match: "one" if _LIST_OWNER.search(match.string, max(0, match.start() - 12), match.start()) else None),
    ("roman", r"(?<![\w])(?:%s)[ \t]I(?![\w'’])" % "|".join(JOB_TITLES), _job_level),
    # "(I, II and III)": a bracketed list opening with a lone "I" whose next item is "II": the numeral one
    ("roman", r"(?<=\()I(?=[ \t]*(?:,|and|or|&)[ \t]*II(?![\w'’]))", lambda match: "one"),
    # "dynasties XVIII to XX", "Chapters II and IV": a range's or a list's second numeral after a numbered first
    ("roman", rf"(?:(?<=\bto[ \t])|(?<=\band[ \t])|(?<=\bor[ \t])|(?<=\bthrough[ \t])|(?<=[–-])|(?<=[–-][ \t]))"
              rf"(?:{_ROMAN}|{_ROMAN_LOWER})(?![\w'’-])", _second_numeral),
    # "the XXI century", "the XXXIII Olympiad", "V Corps": a numeral before a century, a millennium, a dynasty, or
    # before a numbered gathering or unit (capitalised) is its ordinal
    ("roman_century", rf"(?<![\w]){_ROMAN}(?=[ \t]+(?:(?i:century|centuries|millennium|dynasty)|Olympiad|Olympic|"
                      r"Congress|Corps|Legion|Amendment|Army|Fleet|Council|Reich)\b)",
     lambda match: w.ordinal(str(roman_value(match.group())))),
    ("roman_year", r"(?<![\w])(?=M)" + _ROMAN + r"(?![\w])", _roman_year),
    # "II Corinthians", "1 John 3:16": the number of a book of the Bible in two or three parts is its ordinal ("Second
    # Corinthians"); a book that is also a name or a count ("John", "Kings") only before its chapter
    ("roman", r"(?<![\w.,])(?:I{1,3}|[1-3])[ \t](?:(?:Corinthians|Thessalonians|Chronicles)\b|"
              r"(?:Timothy|Peter|John|Kings|Samuel)(?=[ \t]\d))", _bible_book),
    # "pp. iii–vii", "p. xii", "page iv": front matter's page numbers in small letters, a range "to"
    ("roman_page", rf"(?<![\w.])(?:[Pp]{{1,2}}\.|[Pp]ages?)[ \t]?{_PAGE}(?:[ \t]?[-–][ \t]?{_PAGE})?(?![\w-])", _roman_page),
    ("roman_item", r"(?<![\w(])\((?:i|" + _ROMAN_LOWER + r")\)(?![\w)])",  # "clause (iv)", "items (i) to (iii)"
     lambda match: w.cardinal(str(roman_value(match.group()[1:-1].upper())))),
    ("name_numeral", rf"(?<![\w'’-])(?=[XVIL]{{1,6}}(?![\w'’-])){_ROMAN}(?![\w'’-])", _after_name),
    ("regnal", rf"(?<![\w])(?:%s)(?:[ \t][A-Z][a-z]+)?[ \t]{_ROMAN}(?![\w])" % "|".join(REGNAL), _regnal),
    # "LOUIS XVI", "KING HENRY VIII": in capitals, a numeral of two letters or more (a shouted "I" is the pronoun)
    ("regnal", rf"(?<![\w])(?:%s)(?:[ \t][A-Z]+)?[ \t](?=[MDCLXVI]{{2}}){_ROMAN}(?![\w'’])" % "|".join(
        name.upper() for name in REGNAL), _regnal),
    ("formula", FORMULA, _formula),
    # "1.5 × 10⁻³ M", "0.1 M NaOH": a capital M after a power of ten, or after a number before a formula, is molar
    ("molar", r"(?:(?<=[⁰¹²³⁴⁵⁶⁷⁸⁹][ \t])|(?<=\d[ \t]))M(?![\w'’/])(?:(?<=[⁰¹²³⁴⁵⁶⁷⁸⁹][ \t]M)|(?=[ \t]+(?:%s)))"
     % FORMULA.replace("(?<![\\w'’(])", "").replace("(?<![\\w'’])", ""), lambda match: "molar"),
    # "iron(III) oxide", "copper(II)": a roman numeral in brackets glued to a small-letter word, an oxidation state
    ("roman", rf"(?<![\w'’])[a-z]+\((?=[IV]{{1,4}}\))(?:{_ROMAN})\)(?![\w'’])",
     lambda match: match.group().split("(")[0] + " " + w.cardinal(str(roman_value(match.group().split("(")[1][:-1])))),
    ("formula_unit", _FORMULA_UNIT, _formula_unit),
    ("math", _MATH, _math),
    ("factorial", r"(?<![\w.,!])(?:\d{1,3}|[b-hj-z])!(?![\w!=])", _factorial),
]
# Last of all the rules (semiotic.py): what none of them read.
_SIZE = r"(?:XXS|XS|S|M|L|XL|XXL|XXXL|[2-5]XL)"
SIZES: list[Rule] = [  # "Sizes S–XL": clothing sizes spelled, "to" between them
    ("sizes", rf"(?<![\w-]){_SIZE}[ \t]?[-–][ \t]?{_SIZE}(?![\w-])",
     lambda match: " to ".join(" ".join(size) for size in re.split(r"[ \t]?[-–][ \t]?", match.group()))),
    # "Zones A–D", "rows C-F": two capitals in order with an en dash, or a hyphen after a plural noun ("X-Y" stays)
    ("letter_range", r"(?<![\w-])[A-Z][ \t]?–[ \t]?[A-Z](?![\w-])|(?<=[a-z]s[ \t])[A-Z]-[A-Z](?![\w-])", _letter_range),
]
LAST_RESORT: list[Rule] = [("leftover", r"(?<![A-Za-z0-9])[A-Za-z]*+\d[A-Za-z0-9]*|[$€£¥₹₩¢]+", _leftover)]
