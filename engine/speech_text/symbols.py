"""Emoji, stray symbols and the symbols a person reading aloud says as words. Pure.

Emoji are removed by a Unicode range rule (pictographs, dingbats, arrows, box drawing, variation selectors, skin
tones, joiners, tag characters, keycaps, flags) rather than the ``emoji`` package: one character class, O(n), no
dependency. ``&`` -> "and", ``@`` -> "at", ``%`` -> "percent", ``+`` -> "plus", ``=`` -> "equals", ``/`` between words
-> "or", arrows -> "to", a keypad's ``#`` and ``*`` after "press"/"dial"/... -> "pound", "star"; an em or en dash between words becomes a spaced pause (" - ").
"""

from __future__ import annotations

import re

from engine.speech_text import words as w
from engine.speech_text.numbers import VERBS_IN_S, UNITS, Rule, trie

EMOJI = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21ff\u2300-\u23ff\u2460-\u24ff\u2500-\u27bf\u2900-\u297f"
    "\u2b00-\u2bff\u3030\u303d\u3297\u3299\ufe00-\ufe0f\u200b-\u200d\u2060\ufeff\u20e3\u00ad"
    "\U0001f000-\U0001faff\U000e0000-\U000e007f"
)
_WORDS = {
    "&": " and ", "@": " at ", "%": " percent", "+": " plus ", "=": " equals ", "==": " equals ", "===": " equals ",
    "!=": " does not equal ", "≠": " does not equal ", "<=": " less than or equal to ", "≤": " less than or equal to ",
    ">=": " greater than or equal to ", "≥": " greater than or equal to ", "->": " to ", "=>": " to ", "→": " to ",
    "⟶": " to ", "×": " times ", "÷": " divided by ", "±": " plus or minus ", "+/-": " plus or minus ", "+-": " plus or minus ", "≈": " approximately ", "§": " section ", "§§": " sections ",
    "№": " number ", "°": " degrees", "√": " square root of ", "π": " pi ", "∠": " angle ",
    "©": " copyright ", "®": "", "™": "", "‰": " per mille", "‱": " per ten thousand", "¶": " paragraph ",
    "∞": " infinity ", "Δ": " delta ", "∆": " delta ", "∛": " cube root of ", "∜": " fourth root of ", "∓": " minus or plus ", "∑": " the sum of ",
    "≡": " is equivalent to ", "∝": " is proportional to ", "∴": " therefore ",
    # Greek letters as maths and science name them ("θ", "λ"; "µ" and "Ω" after a number are units, numbers.py)
    "α": " alpha ", "β": " beta ", "γ": " gamma ", "δ": " delta ", "ε": " epsilon ", "θ": " theta ", "λ": " lambda ",
    "μ": " mu ", "σ": " sigma ", "φ": " phi ", "ω": " omega ", "Ω": " omega ", "Σ": " sigma ", "τ": " tau ",
    "ρ": " rho ", "η": " eta ", "κ": " kappa ", "χ": " chi ", "ψ": " psi ", "ν": " nu ", "ξ": " xi ", "ζ": " zeta ",
}


def _said(match: re.Match[str]) -> str:
    return _WORDS[match.group()]


_BE_BEFORE = re.compile(r"(?<![\w'])(?:is|are|was|were|be|been|being|isn't|aren't|wasn't|weren't|"
                        r"stays?|stayed|staying|remains?|remained|remaining|kept|keeps?|held|holds?|"
                        r"becomes?|became|gets?|got|falls?|fell|rises?|rose|drops?|dropped)[ \t]*\Z", re.I)
# "LTV < 80% means no PMI", "Temp > 40°F triggers an alert": a relation whose term after it is followed by the sentence's
# verb is the subject's description, no statement of its own ("L T V less than eighty percent means")
_TERM = r"[ \t]*[-−]?[$€£¥]?\d[\d,]*(?:\.\d+)?"  # the relation's term: a number, signed, priced
_BARE_VERB_AFTER = re.compile(_TERM + r"%?[ \t]+([a-z]+)\b")
_VERB_AFTER = re.compile(_TERM + r"[ \t]?(?:%|°[ \t]?[FCK]?|(?:[A-Za-zµμ]{1,4}(?:/[A-Za-zµμ]{1,4})?|/[A-Za-zµμ]{1,4})"
                                  r"(?=[ \t]))?[ \t]+([a-z]+)\b")  # "mg/dL", "/µL": a unit per a unit
# "WBC > 17,000/µL suggests infection", "Glucose < 60 mg/dL is too low": a lab value's bound, then the sentence's verb
_FINDING_VERBS = frozenset("is are was suggests indicates signals warrants implies".split())
# "Keep nitrate < 20 ppm": what is kept, then its bound (the verb is "keep"), no verb added
_KEEP_BEFORE = re.compile(r"(?<![\w'])(?i:keep|keeps|keeping|kept|maintain|maintains)[ \t]+(?:(?i:the|your|its)[ \t]+)?"
                          r"[a-z]+[ \t]*\Z")
# "Orders < 10 items can use the lane": the compared value (a count of a noun), then the sentence's modal verb
_MODAL_AFTER = re.compile(_TERM + r"%?(?:[ \t]+[a-z]+)?[ \t]+"
                          r"(?:can|cannot|can't|will|won't|should|must|may|might|could|would|need|get|qualify)\b")


# "for every n ≥ 1", "for all x > 0": a quantified variable's bound is no statement, so it has no verb
_QUANTIFIED_BEFORE = re.compile(r"(?<![\w'])(?i:every|all|each|any|some)[ \t]+[A-Za-z][ \t]*\Z")


# "Is 5 > 3?", "Why is x < 0?": a question whose verb comes before its first term, so the relation adds none
_ASKED_BE_BEFORE = re.compile(r"(?:^|[.!?:][ \t]+|\n|(?i:\b(?:why|how|when|so|and|but|then))[ \t]+)"
                              r"(?i:is|are|was|were|isn't|aren't)[ \t]+[-−]?(?:\d[\d,]*(?:\.\d+)?|[A-Za-z])[ \t]*\Z")


# "with a credit score < 600", "for orders > $50": a noun after "with" or "for" that the relation narrows, no statement
_NARROWED_BEFORE = re.compile(r"(?<![\w'])(?i:with|without|for|having|(?:need|needs|require|requires|want|wants)"
                              r"(?=[ \t]+(?i:a|an|any|your|their|its|all)[ \t]))[ \t]+(?:(?i:a|an|the|any|your|their|its|all)[ \t]+)?"
                              r"(?:[a-z]+[ \t]+)?[a-z]{3,}[ \t]*\Z")


# "Set the threshold to < 5 errors": a relation with no term before it (after a preposition) has no verb
_NO_SUBJECT_BEFORE = re.compile(r"(?<![\w'])(?i:to|at|of|by|from|under|over|into|than|with|without|within|for|among)"
                                r"[ \t]*\Z")  # "Homes with < 5 outages": "with less than five"
# "We need n ≥ 30 responses": a variable's bound given as a count of a noun names a size, no statement
_ONE_LETTER_BEFORE = re.compile(r"(?<![\w'])(?i:need|needs|want|wants|require|requires|with)[ \t]+[A-Za-z][ \t]*\Z")
_COUNT_AFTER = re.compile(r"[ \t]*\d[\d,]*[ \t]+[a-z]{3,}s\b")

# "Headwind > 20 kt? The solo is cancelled.": a bound asked of a noun, its question mark right after the value, is a
# condition (no verb is said)
_ASKED_AFTER = re.compile(r"[ \t]*[-−]?[$€£¥]?\d[\d,.]*(?:[ \t]?[A-Za-z%°]{1,4})?\?")


def _verb(match: re.Match[str]) -> str:
    """The relation's verb, unless the writer wrote one ("your score is < 600", "Is 5 > 3?") or it narrows a noun
    ("with a credit score < 600")."""
    before = match.string[max(0, match.start() - 16):match.start()]
    asked = _ASKED_BE_BEFORE.search(match.string, max(0, match.start() - 24), match.start())
    narrowed = _NARROWED_BEFORE.search(match.string, max(0, match.start() - 40), match.start())
    counted = _ONE_LETTER_BEFORE.search(before) and _COUNT_AFTER.match(match.string, match.end())
    verb_after = _VERB_AFTER.match(match.string, match.end())
    finding = verb_after is not None and verb_after[1] in _FINDING_VERBS
    if verb_after and verb_after[1] not in VERBS_IN_S:  # "< 7,500 gets the rate": the verb, not a unit, after it
        verb_after = _BARE_VERB_AFTER.match(match.string, match.end()) or verb_after
    return "" if _BE_BEFORE.search(before) or _QUANTIFIED_BEFORE.search(before) or asked or narrowed \
        or _NO_SUBJECT_BEFORE.search(before) or counted or (verb_after and verb_after[1] in VERBS_IN_S) \
        or finding \
        or _KEEP_BEFORE.search(match.string, max(0, match.start() - 32), match.start()) \
        or _MODAL_AFTER.match(match.string, match.end()) or _ASKED_AFTER.match(match.string, match.end()) else \
        " are" if _PLURAL_BEFORE.search(before) else " is"


# "when weekly hours < 30": a plural noun (not "status", "basis", "this") before a relation takes "are"
_PLURAL_BEFORE = re.compile(r"(?<![\w'’])[a-z]{2,}(?<![siu'’])s[ \t]*\Z")


def _related(match: re.Match[str]) -> str:
    """A relation between two terms is said with its verb: "x ≥ 10" is "x is greater than or equal to ten"."""
    return _verb(match) + _WORDS[match.group()] if match.group() != "≠" else _WORDS["≠"]


_MEASURE_BEFORE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*[ \t]?[A-Za-z][A-Za-z/²³]{0,7}[ \t]\Z")


def _measure_related(match: re.Match[str]) -> str | None:
    """A relation after a measure ("1 km ≈ 0.62 mi") is said with its verb, as after a number."""
    return _related(match) if _MEASURE_BEFORE.search(match.string, max(0, match.start() - 20), match.start()) else None


_CONDITIONS = r"if|when|whenever|while|unless|until|where"  # the words a condition opens with
_CONDITION_BEFORE = re.compile(rf"(?i:\b(?:{_CONDITIONS}|"
                               r"(?:make|making|makes)[ \t]+sure(?:[ \t]+that)?|ensure|ensures|verify|confirm)"
                               r"(?:[ \t]+(?:the|that|this|your|its))?)[ \t]+[a-z_]+[a-rt-z_][ \t]?\Z")  # not a plural;
# "make sure the total ≤ 500": a that-clause's subject, its relation said with its verb


def _conditioned(match: re.Match[str]) -> str | None:
    """A relation after a condition's one-word subject ("if age ≥ 18", "when load ≤ 80%") is said with its verb."""
    return _related(match) if _CONDITION_BEFORE.search(match.string, max(0, match.start() - 24), match.start()) else None


# "Children < 2 fly free", "Kids > 12": a bound on the people a noun names, before an age, is "under" or "over"
_PEOPLE_BEFORE = re.compile(r"(?<![\w'])(?i:children|kids|infants|babies|toddlers|guests|passengers|travell?ers|"
                            r"adults|seniors|people|persons|ages?|aged)[ \t]*\Z")
_AGE_AFTER = re.compile(r"[ \t]*\d{1,2}(?![\d.,%])")


# "Settings > Privacy > Location Services": a ">" between capitalised names (a menu's or a folder's) is a path, a pause
_MENU_BEFORE = re.compile(r"(?<![\w'])[A-Z][a-z]+[ \t]\Z")
_IF_BEFORE = re.compile(rf"(?i:\b(?:{_CONDITIONS})[ \t]+)[A-Z][a-z]+[ \t]\Z")  # "if Revenue > Cost"
_MENU_AFTER = re.compile(r"[ \t]*[A-Z][a-z]+\b")


def _compare(match: re.Match[str]) -> str:
    if match.group().strip() == ">" and _MENU_BEFORE.search(match.string, max(0, match.start() - 24), match.start()) \
            and _MENU_AFTER.match(match.string, match.end()) \
            and not _IF_BEFORE.search(match.string, max(0, match.start() - 32), match.start()):
        return ","
    if _PEOPLE_BEFORE.search(match.string, max(0, match.start() - 16), match.start()) \
            and _AGE_AFTER.match(match.string, match.end()):
        return " under " if match.group().strip() == "<" else " over "
    return _verb(match) + (" less than " if match.group().strip() == "<" else " greater than ")


_COUNT_BEFORE = re.compile(r"(?<![\w.,])\d[\d,]*[ \t]+[a-z]{2,}[ \t]?\Z")


def _counts_times(match: re.Match[str]) -> str | None:
    """"6 nights x 2 rooms = 12 room-nights": an "x" between two counts of things is "times"."""
    return " times" if _COUNT_BEFORE.search(match.string, max(0, match.start() - 24), match.start() + 1) else None


_TIME_BEFORE = re.compile(r"\d(?:[:.]\d\d)?[ \t]?(?i:[ap]\.?m\.?)?\Z")
_TIME_AFTER = re.compile(r"\d{1,2}(?:[:.]\d\d)?[ \t]?(?i:[ap]\.?m\b)")


def _time_to(match: re.Match[str]) -> str | None:
    """"3pm–midnight", "noon–2pm": a dash between a time and "midnight" or "noon" is "to"."""
    text, start, end = match.string, match.start(), match.end()
    if text[start - 1:start].isalpha() and text[max(0, start - 8):start].lower().endswith(("midnight", "noon")):
        return " to " if _TIME_AFTER.match(text, end) else None
    return " to " if _TIME_BEFORE.search(text, max(0, start - 10), start) else None


# "phone # on file", "your account # below": a number sign after a noun that names a number is "number"
_NUMBERED_BEFORE = re.compile(r"(?<![\w'])(?i:phone|cell|fax|account|order|ticket|case|member|tracking|confirmation|"
                              r"policy|invoice|reference|ref|claim|serial|part|model|room|item|ID)[ \t]\Z")


def _named_number(match: re.Match[str]) -> str | None:
    return "number" if _NUMBERED_BEFORE.search(match.string, max(0, match.start() - 16), match.start()) else None


def _sharp(match: re.Match[str]) -> str:
    return match.group()[0] + " sharp"


_KEYPAD_BEFORE = re.compile(r"(?i:\b(?:press|pressing|hit|dial|enter|tap|touch|then|followed[ \t]by|or))[ \t]+\Z")
_KEYPAD_AFTER = re.compile(r"[ \t]+(?i:key|button|sign)\b")


def keypad_key(text: str, start: int, end: int) -> bool:
    """Whether the ``#`` or ``*`` at ``text[start:end]`` is a phone keypad's key, pressed or named ("Press #", "the *
    key"), not markdown's mark or a stray symbol."""
    return text[start:end] in ("#", "*") and bool(_KEYPAD_BEFORE.search(text[max(0, start - 16):start])
                                                  or _KEYPAD_AFTER.match(text, end))


def _keypad(match: re.Match[str]) -> str | None:
    if keypad_key(match.string, match.start(), match.end()):
        return " pound" if match.group() == "#" else " star"
    return None


_COUNTED_BEFORE = re.compile(r"(?<![\w.,])\d[\d,.]*[ \t]?[^\W\d_]+\Z")  # "8 hours", "5 days", "3 rides"


def _per(match: re.Match[str]) -> str | None:
    """A slash after a counted word, before a time or a count ("8 hours/day", "5 days/week"), is "per"."""
    return " per " if _COUNTED_BEFORE.search(match.string, max(0, match.start() - 24), match.start()) else None


# A unit's symbol that is no word, after a word and a slash: "cells/µL", "thousand/mm³", "copies/mL" ("per
# microliter"); small-letter symbols only with the micro sign ("kg", "in", "ft" may be words or a pair's half)
_SLASH_UNITS = {unit: names[0] for unit, names in UNITS.items() if len(unit) >= 2 and " " not in unit and (
    "µ" in unit or "μ" in unit or not unit.isupper() and not unit.islower() and not unit.istitle() and unit.isalpha()
    or unit[-1] in "²³")}


def _per_unit(match: re.Match[str]) -> str:
    return " per " + _SLASH_UNITS[match.group()[1:]]


# Subscript letters and digits, and their plain characters ("xᵢ" "x sub i", "x₁" "x sub one")
_SUBSCRIPT = str.maketrans("ₐₑₒₓₕₖₗₘₙₚₛₜᵢᵣᵤᵥⱼ₀₁₂₃₄₅₆₇₈₉", "aeoxhklmnpstiruvj0123456789")
_SUB_LETTERS = "ₐₑₒₓₕₖₗₘₙₚₛₜᵢᵣᵤᵥⱼ"


def _subscript(match: re.Match[str]) -> str:
    """A variable's index: "xᵢ" -> "x sub i", "aᵢⱼ" -> "a sub i j", "x₁₂" -> "x sub twelve"."""
    index = match.group().translate(_SUBSCRIPT)
    return " sub " + (w.number(index) if index.isdigit() else " ".join(index))


def _saying(words: str):  # type: ignore[no-untyped-def]
    """A handler that says ``words`` for whatever it matched."""
    return lambda match: words


# A spaced slash between two labelled fields ("DOB: ON FILE / SECONDARY POLICY: N/A") separates them: a pause, no "or".
# The label after it ends within two words (what a stream holds past the slash).
_FIELD_BEFORE = re.compile(r"[^\W\d_]:[ \t]+[^:/\n]{1,40}\Z")
_FIELD_AFTER = re.compile(r"[ \t]*[^\W\d_]+(?:[ \t][^\W\d_]+)?:")
# "Doors 7pm / Show 8pm", "Adults 10am / Kids 2pm": a capitalised label and its value (with a digit) on each side of a
# spaced slash, two listed items, a pause
_ITEM_BEFORE = re.compile(r"(?<![\w'’])[A-Z][a-z]+[ \t]+[^\s/]*\d[^\s/]*(?:[ \t](?:[AaPp]\.?[Mm]\.?|[A-Z]{2,3}))?[ \t]\Z")
# (its value may end with a time's half or zone: "Doors 6:30 PM / Show 8:00 PM")
_ITEM_AFTER = re.compile(r"[ \t]*[A-Z][a-z]+[ \t]+[^\s/]*\d")


# A command-line flag, then the start of the word the slash is in: "git checkout -b feature/login" (a branch, a path)
_FLAG_BEFORE = re.compile(r"(?:^|[ \t`])--?[A-Za-z][\w-]*[ \t]+[\w.-]*\Z", re.M)


_LONE_CAPITAL_BEFORE = re.compile(r"(?<![\w'’./-])[A-Z]\Z")
_LONE_CAPITAL_AFTER = re.compile(r"[A-Z](?![\w'’/-])")


def _slash(match: re.Match[str]) -> str:
    """"wet/dry", "Mr. / Ms.": "or"; a pause between two labelled fields ("A: x / B: y"); "slash" in a command's
    argument after a flag ("-b feature/login")."""
    if match.group() == "/" and _FLAG_BEFORE.search(match.string, max(0, match.start() - 48), match.start()):
        return " slash "
    if match.group() == "/" and _LONE_CAPITAL_BEFORE.search(match.string, max(0, match.start() - 2), match.start()) \
            and _LONE_CAPITAL_AFTER.match(match.string, match.end()):
        return " "  # "K/D", "A/B testing", "P/E": two initials of a ratio or a pair, said as letters
    fields = " " in match.group() and _FIELD_BEFORE.search(match.string, max(0, match.start() - 48), match.start()) \
        and _FIELD_AFTER.match(match.string, match.end())
    items = " " in match.group() and _ITEM_BEFORE.search(match.string, max(0, match.start() - 32), match.start() + 1) \
        and _ITEM_AFTER.match(match.string, match.end())
    return ", " if items or fields else " or "


# A spaced slash or hyphen in a formula (an "=" before it on its line, or after the term it divides by): "ROI = (gain −
# cost) / cost", "$9,000 / 30 = $300" "divided by"; "Net = gross - 15%" "minus"
_FORMULA_BEFORE = re.compile(r"=[^=\n.!?;]{1,48}\Z")
_FORMULA_AFTER = re.compile(r"[ \t]*[$€£¥]?\d[\d,.]*(?:[ \t]+[a-z]+)?[ \t]*=")  # "/ 24 months = $10": a count


# "ROI = gain / cost", "x = a / b": two bare words either side of a spaced slash make a ratio only right after a formula's
# "=" whose left side is one variable (a letter or an acronym); "Mode = on / off" after a word stays "or"
# "= salary / midpoint = 1.07": a word between the slash and a further "=" (a formula on both sides), "divided by"
_TERM_EQUALS_AFTER = re.compile(r"[a-z]+[ \t]*=")
_WORD_RATIO_BEFORE = re.compile(r"(?<!\w)(?:[A-Z]{2,5}|[A-Za-z])[ \t]?=[ \t]?[a-z]+\Z")


def _formula(match: re.Match[str]) -> str | None:
    if match.string[match.end():match.end() + 1].isalpha() and match.string[match.start() - 1:match.start()].isalpha() \
            and not _WORD_RATIO_BEFORE.search(match.string, max(0, match.start() - 32), match.start()) \
            and not _TERM_EQUALS_AFTER.match(match.string, match.end()):
        return None
    before = _FORMULA_BEFORE.search(match.string, max(0, match.start() - 50), match.start())
    if not (before or match.group().strip() == "/" and _FORMULA_AFTER.match(match.string, match.end())):
        return None
    return " divided by " if match.group().strip() == "/" else " minus "


_FORMULA_TOKEN = re.compile(r"\d*(?=[A-Za-z\d]*\d)(?:[A-Z][a-z]?\d*){2,}")  # "CaCl2", "H2O", "2HCl" (no "NY", "A1")


def _formula_arrow(match: re.Match[str]) -> str | None:
    text = match.string
    left = re.search(r"(\S+)[ \t]*\Z", text[max(0, match.start() - 16):match.start()])
    right = re.match(r"[ \t]*(\S+)", text[match.end():match.end() + 16])
    formula = [side is not None and _FORMULA_TOKEN.fullmatch(side[1]) is not None for side in (left, right)]
    if not (formula[0] or formula[1]) or not (left and right):
        return None
    return " yields "



# "Your savings ≈ 30% of the bill", "1 half tray ≈ 10 servings": "≈" after a noun its determiner or count names (the
# sentence's subject), before a number, is its verb ("are approximately" after a plural); "takes ≈ 5 min" keeps the word
_SUBJECT_BEFORE = re.compile(r"(?:(?<![\w'])(?i:your|the|my|our|their|this|that|each|every|one)[ \t]"
                             r"|(?<![\w.,])\d+[ \t])[ \t]*(?:[a-z]+[ \t]+){0,2}([a-z]{3,})\Z", re.IGNORECASE)

_LINE_SUBJECT_BEFORE = re.compile(r"(?:\A|\n)[ \t]*[A-Z]?[a-z]{2,}\Z")


def _approximately(match: re.Match[str]) -> str | None:
    before = match.string[max(0, match.start() - 60):match.start()]
    if re.search(r"[=+×÷−*][^\n≈=]*\Z", before):
        return " is approximately "  # "$6,550 ÷ 26 pay periods ≈ $251.92": after a formula's left side
    if _LINE_SUBJECT_BEFORE.search(before) and re.match(r"[a-z]{2,}[ \t]+[a-z]", match.string[match.end():match.end() + 24]):
        return " is approximately "  # "Crosswind ≈ wind speed × sin(angle)": a formula's one-word left side, opening its
        #                              line, equated to named quantities ("Arrival ≈ 4:50 PM" labels a value)
    subject = _SUBJECT_BEFORE.search(before)
    if not subject or not re.match(r"[-−]?[$€£¥]?\d", match.string[match.end():match.end() + 3]) \
            or subject[1].lower() in VERBS_IN_S or subject[1].lower().endswith(("ed", "ing")):
        return None
    plural = subject[1].endswith("s") and not subject[1].endswith(("ss", "us", "is"))
    return " are approximately " if plural else " is approximately "

RULES: list[Rule] = [
    ("sharp", r"(?<![\w])[CF]#(?![\w#])", _sharp),
    ("compare", r"(?:(?<=[\d)π²³])|(?<=[\d)π²³][ \t])|(?<=(?<!\w)[A-Za-zα-ωΔΣΩ])|(?<=(?<!\w)[A-Za-zα-ωΔΣΩ][ \t]))[≈≥≤≠]",
     _related),  # after a number or a variable: "π ≈ 3.14", "x ≥ 10", "φ ≈ 1.618"; "takes ≈ 5 min" is the word's
    ("compare", r"(?:(?<=[a-z])|(?<=[a-z][ \t]))(?:[≥≤]|[<>]=)(?=[ \t]?[-−]?\d)", _conditioned),  # "if age ≥ 18", "if score <= 10"
    ("compare", r"(?<=[\w²³][ \t])[≈≥≤≠]", _measure_related),  # "1 km ≈ 0.62 mi": after a measure
    # "2H₂ + O₂ → 2H₂O": an arrow after or before a chemical formula (a subscript count beside it) is a reaction's "yields"
    ("yields", r"(?:(?<=[₀-₉])|(?<=[₀-₉][ \t]))→|→(?=[ \t]?\d*[A-Z][a-z]?[₀-₉])", _saying(" yields ")),
    # "CaCO3 + 2HCl → CaCl2 + H2O": an arrow beside a formula written with plain digits (two elements' capitals, a count)
    ("yields", r"→(?=[ \t]?\d*[A-Z][A-Za-z\d]*(?![\w]))|(?<=[A-Z][a-z\d])(?<=[\w][A-Za-z\d])[ \t]?→", _formula_arrow),
    # "n → ∞", "x → 0": a variable's limit, "approaches" (an arrow elsewhere is "to")
    ("approaches", r"(?<=(?<![\w])[a-z][ \t])→(?=[ \t]?(?:[-−+]?∞|[-−]?\d))", _saying(" approaches ")),
    # a single letter's subscript is an index (digits only after a small letter: "CO₂", "H₂O" are formulas)
    ("subscript", rf"(?<=(?<![\w])[A-Za-z])[{_SUB_LETTERS}]+|(?<=(?<![\w])[a-z])[₀-₉]+(?![\w])", _subscript),
    # "Copyright © 2024", "© Copyright 2024": the sign beside the word it stands for is not said twice
    ("words", r"(?:(?<=(?i:copyright)[ \t])|(?<=(?i:copyright)))©|©(?=[ \t]?(?i:copyright)\b)", _saying("")),
    # "P(A) = 0.25", "P(B) + P(C)": a capital function letter applied to a capital letter before an operator, "P of A"
    ("applied", r"(?<![\w(])[A-Z]\([A-Z]\)(?=[ \t]?[-−+=<>≤≥≈≠×])", lambda match: f"{match.group()[0]} of {match.group()[2]}"),
    ("formula", r"(?<=[\d)])[ \t]/[ \t](?=[$€£¥(]?\d|\(|[a-z])|(?<=[a-z)])[ \t]/[ \t](?=[$€£¥(]?\d|\()"
     r"|(?<=[a-z)])[ \t]-[ \t](?=[$€£¥(]?\d)|(?<=[a-z])[ \t]/[ \t](?=[a-z]+\b)", _formula),
    # "°F = °C × 9/5 + 32": a scale's sign with no number, the scale named ("degrees Fahrenheit")
    ("words", r"(?<![\w°])°[CF](?![\w])",
     lambda match: "degrees " + ("Celsius" if match.group()[1] == "C" else "Fahrenheit")),
    # "a +/- of +18", "his +/- rating": the sports statistic named after the sign, "plus minus" (a noun, no operands)
    ("words", r"(?:(?<=\b[Aa][ \t])|(?<=\b[Tt]he[ \t])|(?<=\bhis[ \t])|(?<=\bher[ \t])|(?<=\btheir[ \t])"
              r"|(?<=\bits[ \t]))\+/-(?![ \t]?[-−+]?[\d.])|\+/-(?=[ \t]+rating\b)", _saying("plus minus")),
    # "$6,550 ÷ 26 pay periods ≈ $251.92": "≈" after a formula's left side (an operator before it on its line)
    ("compare", r"(?<=[\w%)])[ \t]≈[ \t]", _approximately),
    ("words", "|".join(re.escape(s) for s in sorted(_WORDS, key=len, reverse=True)), _said),
    ("compare", r"(?<=\s)[<>](?=\s)", _compare),
    ("minus", r"(?<=[\w)%])[ \t]?−[ \t]?(?=[\w($€£¥])", _saying(" minus ")),  # "revenue − cost", "100% − 20%": U+2212
    ("about", r"~(?=(?:[A-Z]{0,3}[$£€¥₹])?\d)", _saying("about ")),  # "~5 km", "~$5", "~US$5"
    ("power", r"(?<=[A-Za-z0-9)])\^(?=[-A-Za-z0-9(])", _saying(" to the power of ")),  # "2^10", "x^y", "e^(-x)"
    ("product", r"(?<=\d)[ \t]x(?=[ \t]+[$€£¥]\d)", _saying(" times")),  # "3 x $15 = $45"
    ("product", r"(?<=[a-z])[ \t]x(?=[ \t]+[$€£¥]?\d)", _counts_times),  # "4 lines x $25 = $100" too  # "6 nights x 2 rooms": counts multiplied
    # "sin²θ", "cos θ": a trigonometric function before a power or a Greek letter, by its name
    ("trig", r"(?<![\w])(?:sin|cos|tan|cot|sec|csc)(?=[²³]|[ \t]?[αβγδθφωτ])",
     lambda match: {"sin": "sine", "cos": "cosine", "tan": "tangent", "cot": "cotangent", "sec": "secant",
                    "csc": "cosecant"}[match.group()]),
    # "sin(angle)", "cos(heading)": a trigonometric function applied to a named quantity in brackets, "sine of angle"
    ("trig", r"(?<![\w])(?:sin|cos|tan)\([a-z]{3,}\)",
     lambda match: {"sin": "sine", "cos": "cosine", "tan": "tangent"}[match.group()[:3]] + " of " + match.group()[4:-1]),
    ("squared", r"(?<=[A-Za-z0-9)])²", _saying(" squared")),
    ("cubed", r"(?<=[A-Za-z0-9)])³", _saying(" cubed")),
    ("per_slash", r"(?<=[^\W\d_])/(?=(?:hour|day|night|week|month|year|person|user|unit|page|shift)(?![\w/]))", _per),
    ("per_slash", rf"(?<=[^\W\d_])/{trie(_SLASH_UNITS)}(?![\w/²³])", _per_unit),
    # "$2,400/12 = $200": a slash between an amount and a number before "=" divides
    ("formula", r"(?<=\d)[ \t]?/[ \t]?(?=\d[\d,]*(?:\.\d+)?[ \t]*=)|(?<=[a-z])/(?=\d[\d,]*(?:\.\d+)?[ \t]*=[ \t]*[-−]?\d)",
     _saying(" divided by ")),  # "Moment/1000 = 86.4": a named quantity divided by a number, its result after
    ("slash", r"(?<=[^\W\d_])(?:[ \t]/[ \t]|/)(?=[^\W\d_])", _slash),  # not "edit /usr": a path
    ("dash", r"[ \t]*[—–-][ \t]*(?=(?i:midnight|noon)\b)|(?<=(?i:midnight))[ \t]*[—–-][ \t]*(?=\d)"
             r"|(?<=(?i:noon))[ \t]*[—–-][ \t]*(?=\d)", _time_to),  # "3pm–midnight": a range of times, "to"
    ("dash", r"[ \t]*[—–][ \t]*", _saying(" - ")),
    ("emoji", rf"[{EMOJI}]+", _saying("")),
    # "phone # on file", "your account # below": a number sign after a noun that names a number is "number"
    ("number_word", r"(?<=[A-Za-z][ \t])#(?![\w#*])", _named_number),
    ("keypad", r"(?<![\w#*])[#*](?![\w#*])", _keypad),
    # "the office # is 415...", "Order #: 4411", "Rx# 6012345": a number sign after a noun, before "is", a colon or
    # (glued to the noun) a number, is "number"
    ("number_word", r"(?<=[A-Za-z][ \t])#(?=[ \t]*(?::|(?:is|was|are)\b))|(?<=[A-Za-z])#(?=[ \t]*(?::|(?:is|was|are)\b|\d|[A-Z]{1,3}-?\d))",
     _saying(" number")),
    # (a run of them stops before a dollar sign and its amount: "~$5" is "about five dollars", not "~$" unsaid)
    ("stray", r"(?:[\\{}<>^~*#•·†‡]|\$(?![\d.]))+", _saying("")),
    # "|x| = 5", "|−3|": the opening bar of an absolute value (a short term, no space inside; the closing bar is "bar")
    # (a sign just inside it is the number's: "|−5|" "the absolute value of negative five")
    ("absolute", r"(?<![\w|])\|(?=[-−]?\w[^|\s]{0,15}\|(?![\w|]))(?:[-−](?=\d))?",
     lambda match: "the absolute value of " + ("negative " if len(match.group()) > 1 else "")),
    # "−0.35%/°C": a share of a quantity per degree of temperature ("percent per degree Celsius")
    ("per_degree", r"(?<=%)/°[CF](?![\w])",
     lambda match: " per degree " + ("Celsius" if match.group()[-1] == "C" else "Fahrenheit")),
    ("bar", r"[|/]", _saying(" ")),
]
