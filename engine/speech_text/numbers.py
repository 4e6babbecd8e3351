"""Numbers in context: money, percentages, units, temperatures, times, dates, phone numbers, fractions, ranges,
versions, ordinals, years. Pure.

Each rule is a regular expression for one construct, matched at a token's start, that looks at most two tokens past
its own start ("$3" + "million", "March 5," + "2024", "(555)" + "123-4567"): its whole match becomes one rewritten
piece. Conventions: "3/5/2024" is a US date (month first); a plain four-digit number from 1100 to 2099 is a year;
"3-5" is a range ("three to five"); times say "AM"/"PM".
"""

from __future__ import annotations

import math
import re
from typing import Callable

from engine.speech_text import words as w

Rule = tuple[str, str, Callable[[re.Match[str]], "str | None"]]

NUM = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+|(?=\.\d))(?:\.\d+)?"  # ".5" too
_START = r"(?<![\w.,/:])"  # a number starts a token (or follows a sign, a bracket, a dash: "COVID-19")
_END = r"(?![\w])"

MULTIPLIERS = {
    "k": "thousand", "K": "thousand", "thousand": "thousand",
    "m": "million", "M": "million", "mn": "million", "million": "million",
    "b": "billion", "B": "billion", "bn": "billion", "billion": "billion",
    "t": "trillion", "T": "trillion", "tn": "trillion", "trillion": "trillion",
    "lakh": "lakh", "lakhs": "lakh", "crore": "crore", "crores": "crore",
}
PER = {"hr": "hour", "h": "hour", "hour": "hour", "day": "day", "wk": "week", "week": "week", "mo": "month",
       "month": "month", "yr": "year", "year": "year", "night": "night", "person": "person", "user": "user",
       "seat": "seat", "unit": "unit", "GB": "gigabyte", "kg": "kilogram", "lb": "pound", "item": "item"}
# Unit -> (one, many, may stand a space apart from its number: "5 km"; "5 in" and "5 s" may not).
UNITS = {
    "km": ("kilometer", "kilometers", True), "m": ("meter", "meters", True), "cm": ("centimeter", "centimeters", True),
    "mm": ("millimeter", "millimeters", True), "nm": ("nanometer", "nanometers", True),
    "mi": ("mile", "miles", True), "ft": ("foot", "feet", True), "in": ("inch", "inches", False),
    "yd": ("yard", "yards", True), "kg": ("kilogram", "kilograms", True), "g": ("gram", "grams", True),
    "t": ("tonne", "tonnes", True),  # a metric ton: "a 7.5 t payload"
    "mg": ("milligram", "milligrams", True), "lb": ("pound", "pounds", True), "lbs": ("pound", "pounds", True),
    "oz": ("ounce", "ounces", True), "L": ("liter", "liters", True), "l": ("liter", "liters", False),
    "ml": ("milliliter", "milliliters", True), "mL": ("milliliter", "milliliters", True),
    "gal": ("gallon", "gallons", True), "km/h": ("kilometer per hour", "kilometers per hour", True),
    "kph": ("kilometer per hour", "kilometers per hour", True), "mph": ("mile per hour", "miles per hour", True),
    "kn": ("knot", "knots", True), "kts": ("knot", "knots", True),  # "21 kn": a ship's or the wind's speed
    "m/s": ("meter per second", "meters per second", True), "KB": ("kilobyte", "kilobytes", True),
    "MB": ("megabyte", "megabytes", True), "GB": ("gigabyte", "gigabytes", True), "TB": ("terabyte", "terabytes", True),
    "PB": ("petabyte", "petabytes", True), "kbps": ("kilobit per second", "kilobits per second", True),
    "Mbps": ("megabit per second", "megabits per second", True),
    "Gbps": ("gigabit per second", "gigabits per second", True), "Hz": ("hertz", "hertz", True),
    "kHz": ("kilohertz", "kilohertz", True), "MHz": ("megahertz", "megahertz", True),
    "GHz": ("gigahertz", "gigahertz", True), "W": ("watt", "watts", True), "kW": ("kilowatt", "kilowatts", True),
    "kWh": ("kilowatt hour", "kilowatt hours", True),
    "hp": ("horsepower", "horsepower", True), "bhp": ("horsepower", "horsepower", True),  # "250 hp", "300 bhp"
    "PS": ("horsepower", "horsepower", True),  # "150 PS": metric horsepower, as car makers list it
    "V": ("volt", "volts", True),
    "mAh": ("milliamp hour", "milliamp hours", True), "ms": ("millisecond", "milliseconds", True),
    "s": ("second", "seconds", False), "sec": ("second", "seconds", True), "secs": ("second", "seconds", True),
    "min": ("minute", "minutes", True), "mins": ("minute", "minutes", True), "h": ("hour", "hours", False),
    "hr": ("hour", "hours", True), "hrs": ("hour", "hours", True), "yr": ("year", "years", True),
    "yrs": ("year", "years", True), "px": ("pixel", "pixels", True), "dB": ("decibel", "decibels", True),
    "fps": ("frame per second", "frames per second", True), "x": ("times", "times", False),
    "req/s": ("request per second", "requests per second", True), "rps": ("request per second", "requests per second", True),
    "¢": ("cent", "cents", False), "%": ("percent", "percent", True), "A": ("amp", "amps", False),
    "mcg": ("microgram", "micrograms", True), "µg": ("microgram", "micrograms", True),
    "μg": ("microgram", "micrograms", True), "IU": ("international unit", "international units", True),
    "kcal": ("kilocalorie", "kilocalories", True), "cal": ("calorie", "calories", True),
    "bpm": ("beat per minute", "beats per minute", True), "rpm": ("revolution per minute", "revolutions per minute", True),
    "ppm": ("part per million", "parts per million", True), "ppi": ("pixel per inch", "pixels per inch", True),
    "dpi": ("dot per inch", "dots per inch", True), "mmHg": ("millimeter of mercury", "millimeters of mercury", True),
    "sq ft": ("square foot", "square feet", True), "sq. ft.": ("square foot", "square feet", True), "sqft": ("square foot", "square feet", True),
    "ft²": ("square foot", "square feet", True), "m²": ("square meter", "square meters", True),
    "km²": ("square kilometer", "square kilometers", True), "tsp": ("teaspoon", "teaspoons", True),
    "tbsp": ("tablespoon", "tablespoons", True), "fl oz": ("fluid ounce", "fluid ounces", True),
    "mA": ("milliamp", "milliamps", True), "MW": ("megawatt", "megawatts", True), "GW": ("gigawatt", "gigawatts", True),
    "kV": ("kilovolt", "kilovolts", True), "mV": ("millivolt", "millivolts", True), "Wh": ("watt hour", "watt hours", True),
    "µs": ("microsecond", "microseconds", True), "ns": ("nanosecond", "nanoseconds", False),
    "wk": ("week", "weeks", True), "wks": ("week", "weeks", True), "mo": ("month", "months", True),
    "mos": ("month", "months", True), "pcs": ("piece", "pieces", True), "GiB": ("gibibyte", "gibibytes", True),
    "MiB": ("mebibyte", "mebibytes", True), "Kbps": ("kilobit per second", "kilobits per second", True),
    "Tbps": ("terabit per second", "terabits per second", True), "mph": ("mile per hour", "miles per hour", True),
    "mpg": ("mile per gallon", "miles per gallon", True),
    "gph": ("gallon per hour", "gallons per hour", True),  # "9 gph": an engine's fuel burn
    "psi": ("P S I", "P S I", True),
    "cu ft": ("cubic foot", "cubic feet", True), "cu. ft.": ("cubic foot", "cubic feet", True),
    "cu yd": ("cubic yard", "cubic yards", True), "cu. yd.": ("cubic yard", "cubic yards", True),  # "3 cu. yd. of mulch"
    "m³": ("cubic meter", "cubic meters", True), "cm³": ("cubic centimeter", "cubic centimeters", True),
    "ft³": ("cubic foot", "cubic feet", True), "dL": ("deciliter", "deciliters", True), "sq. ft": ("square foot", "square feet", True), "mmol": ("millimole", "millimoles", True),
    "mEq": ("milliequivalent", "milliequivalents", True),
    "ac": ("acre", "acres", True),  # "a 0.5 ac lot": a land's area
    "pCi": ("picocurie", "picocuries", True), "Ci": ("curie", "curies", True),  # "4.6 pCi/L": radon's activity
}
def _si_units() -> dict[str, tuple[str, str, bool]]:
    """The SI (and common metric) units with their prefixes, as unit tables of TN grammars (NeMo's, Sparrowhawk's)
    and style guides have them: symbols are case-sensitive ("mW" milliwatt, "MW" megawatt; "Mb" a megabit, "MB" a
    megabyte), the micro sign written "µ", "μ" or "u"; an area or a volume of a length unit with "²"/"³", "^2"/"^3" or
    a bare "2"/"3" ("m2"), "sq"/"cu" before it; and the all-capital or all-small spellings people write for units
    no other reading claims ("5KG", "10 KM", "3 MG", "2.4 ghz", "100 kwh"). A prefixed symbol that is also a word,
    a time or a name ("pm", "am", "Pa" stays: a pascal) is left out, and one that a bare space before it would make a
    word ("um", "dam") is read attached only."""
    units: dict[str, tuple[str, str, bool]] = {}
    micro = ("µ", "μ", "u")
    prefixes = {"k": "kilo", "M": "mega", "G": "giga", "T": "tera", "c": "centi", "m": "milli", "n": "nano",
                "p": "pico", "d": "deci", "h": "hecto", **{sign: "micro" for sign in micro}}
    # base symbol -> (name, plural, the prefixes it takes)
    bases = {
        "m": ("meter", "meters", "k c m d n µ μ"), "g": ("gram", "grams", "k m µ μ u n"),
        "L": ("liter", "liters", "m c d h µ μ u n k"), "l": ("liter", "liters", "m c d h µ μ"),
        "s": ("second", "seconds", "m µ μ n"), "Hz": ("hertz", "hertz", "k M G T m"),
        "W": ("watt", "watts", "k M G T m µ μ"), "Wh": ("watt hour", "watt hours", "k M G T m"),
        "V": ("volt", "volts", "k m µ μ"), "A": ("amp", "amps", "k m µ μ"), "Ah": ("amp hour", "amp hours", "m k"),
        "Ω": ("ohm", "ohms", "k M m"), "F": ("farad", "farads", "m µ μ u n p"),
        "Pa": ("pascal", "pascals", "k M G h"), "J": ("joule", "joules", "k M G"),
        "N": ("newton", "newtons", "k"), "mol": ("mole", "moles", "m µ μ u n p k"),
        "M": ("molar", "molar", "m µ μ u n p"), "eV": ("electron volt", "electron volts", "k M G T"),
        "T": ("tesla", "teslas", "m µ μ"), "Gy": ("gray", "grays", "m"), "Sv": ("sievert", "sieverts", "m µ μ"),
        "Bq": ("becquerel", "becquerels", "k M G"), "bar": ("bar", "bars", "m k"), "cal": ("calorie", "calories", "k"),
        "B": ("byte", "bytes", "k K M G T P E"), "b": ("bit", "bits", "k K M G T"),
        "bps": ("bit per second", "bits per second", "k K M G T"), "Bps": ("byte per second", "bytes per second", "k K M G T"),
        "VA": ("volt-ampere", "volt-amperes", "k M"), "lm": ("lumen", "lumens", ""), "lx": ("lux", "lux", ""),
        "Nm": ("newton meter", "newton meters", ""), "ohm": ("ohm", "ohms", "k M"), "ohms": ("ohm", "ohms", "k M"),
    }
    said_prefix = {"K": "kilo"}
    bytes_prefix = {"k": "kilo", "K": "kilo", "M": "mega", "G": "giga", "T": "tera", "P": "peta", "E": "exa"}
    for base, (one, many, allowed) in bases.items():
        for sign in allowed.split():
            name = (bytes_prefix if base in ("B", "b", "bps", "Bps") else {**prefixes, **said_prefix})[sign]
            units[sign + base] = (name + one, name + many, True)
        if base not in ("m", "g", "L", "l", "s", "V", "A", "F", "N", "M", "T", "B", "b", "W", "J"):
            units[base] = (one, many, base not in ("Nm", "VA", "bar"))
    for word in ("um", "dam", "ha", "us", "pg", "Mg", "nm", "ps", "Gb"):  # spaced, a word or a clash; "Gb" kept below
        units.pop(word, None)
    units["Gb"] = ("gigabit", "gigabits", True)
    units["ha"] = ("hectare", "hectares", True)
    units["um"] = ("micrometer", "micrometers", False)
    units["us"] = ("microsecond", "microseconds", False)
    units["cc"] = ("cubic centimeter", "cubic centimeters", True)
    units["kgs"] = ("kilogram", "kilograms", True)
    units["kms"] = ("kilometer", "kilometers", True)
    units["gm"] = ("gram", "grams", True)
    units["Nm"] = ("newton meter", "newton meters", True)
    for written, names in {"kmph": ("kilometer per hour", "kilometers per hour"), "kgf": ("kilogram-force", "kilograms-force"),
                           "dBm": ("D B M", "D B M"), "dBmV": ("D B M V", "D B M V"), "dBA": ("decibel", "decibels"), "ppb": ("part per billion", "parts per billion"),
                           "yds": ("yard", "yards"), "qt": ("quart", "quarts"), "qts": ("quart", "quarts"),
                           "kts": ("knot", "knots"), "kt": ("knot", "knots"), "nmi": ("nautical mile", "nautical miles"),
                           "doz": ("dozen", "dozen"), "deg": ("degree", "degrees"), "deg C": ("degree Celsius", "degrees Celsius"),
                           "deg F": ("degree Fahrenheit", "degrees Fahrenheit"), "lbf": ("pound-force", "pounds-force"),
                           "ft-lb": ("foot-pound", "foot-pounds"), "ft-lbs": ("foot-pound", "foot-pounds"),
                           "cfm": ("cubic foot per minute", "cubic feet per minute"), "gpm": ("gallon per minute", "gallons per minute"),
                           "mmHg": ("millimeter of mercury", "millimeters of mercury"), "inHg": ("inch of mercury", "inches of mercury"),
                           "mSv": ("millisievert", "millisieverts"), "Gbit": ("gigabit", "gigabits"), "Mbit": ("megabit", "megabits"),
                           "kbit": ("kilobit", "kilobits")}.items():
        units[written] = (*names, True)
    units["m/s²"] = units["m/s^2"] = units["m/s2"] = ("meter per second squared", "meters per second squared", True)
    # Areas and volumes of a length unit.
    lengths = {"mm": "millimeter", "cm": "centimeter", "dm": "decimeter", "m": "meter", "km": "kilometer",
               "µm": "micrometer", "μm": "micrometer", "in": "inch", "ft": "foot", "yd": "yard", "mi": "mile"}
    plurals = {"inch": "inches", "foot": "feet"}
    for symbol, one in lengths.items():
        many = plurals.get(one, one + "s")
        for power, word, marks in ((2, "square", ("²", "^2", "2")), (3, "cubic", ("³", "^3", "3"))):
            for mark in marks:
                units[symbol + mark] = (f"{word} {one}", f"{word} {many}", True)
            if symbol not in ("µm", "μm", "dm"):
                units[f"{'sq' if power == 2 else 'cu'} {symbol}"] = (f"{word} {one}", f"{word} {many}", True)
    # Capital and small spellings people write for units no other reading claims.
    for written, unit in {"KG": "kg", "Kg": "kg", "KGS": "kgs", "Kgs": "kgs", "KM": "km", "Km": "km", "KMS": "kms",
                          "CM": "cm", "MM": "mm", "MG": "mg", "ML": "mL", "LB": "lb", "LBS": "lbs", "Lbs": "lbs",
                          "OZ": "oz", "FT": "ft", "YD": "yd", "MPH": "mph", "KPH": "kph", "KMH": "km/h",
                          "kmh": "km/h", "km/hr": "km/h", "KW": "kW", "kw": "kW", "KWH": "kWh", "kwh": "kWh",
                          "KWh": "kWh", "HZ": "Hz", "hz": "Hz", "KHZ": "kHz", "khz": "kHz", "MHZ": "MHz",
                          "mhz": "MHz", "GHZ": "GHz", "ghz": "GHz", "gb": "GB", "tb": "TB", "MBPS": "Mbps",
                          "mbps": "Mbps", "GBPS": "Gbps", "gbps": "Gbps", "kbps": "kbps", "MAH": "mAh",
                          "mah": "mAh", "MCG": "mcg", "KCAL": "kcal", "Kcal": "kcal", "CC": "cc", "mls": "ml", "KM/H": "km/h", "Km/h": "km/h", "KM/HR": "km/h", "KMPH": "kmph",
                          "Tbsp": "tbsp", "TBSP": "tbsp", "tbs": "tbsp", "Tbs": "tbsp", "Tsp": "tsp", "TSP": "tsp",
                          "ltr": "L", "ltrs": "L", "Ltr": "L", "lt": "L", "YDS": "yd", "yds": "yd", "Yds": "yd",
                          # times in capitals, as a work order or an invoice writes them: "4 HRS", "30 MIN"
                          "GAL": "gal", "GALS": "gal", "HR": "hr", "HRS": "hrs", "Hr": "hr", "Hrs": "hrs", "MIN": "min", "MINS": "mins",
                          "Mins": "mins", "SECS": "secs", "Secs": "secs", "YRS": "yrs", "Yrs": "yrs", "YR": "yr"}.items():  # not "SEC": "the 2 SEC schools"
        units[written] = units.get(unit) or UNITS[unit]
    return units



for _unit, _names in _si_units().items():
    UNITS.setdefault(_unit, _names)
# A unit's name after "per" in a compound unit ("GB/s", "mg/mL", "kg/kg").
_PER_UNIT = {"s": "second", "sec": "second", "h": "hour", "hr": "hour", "min": "minute", "d": "day", "day": "day",
             "wk": "week", "mo": "month", "yr": "year", "dose": "dose", "tab": "tablet", "cap": "capsule",
             # a time or a count named in full after the slash: "40 hrs/week", "2 GB/user", "10 min/page"
             **{name: name for name in ("hour", "week", "month", "year", "person", "user", "unit", "page")}}
_DEGREES = {"F": "Fahrenheit", "C": "Celsius", "K": "Kelvin", "": ""}


def trie(words: "list[str] | set[str]") -> str:
    """One pattern matching any of ``words``, as a trie ("m(?:m|ph|i)?", not "mph|mm|mi|m"): the same matches,
    a longer word tried first at every branch, without trying every word at every number."""
    tree: dict = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(char) + pattern(child) for char, child in sorted(node.items(), key=lambda kv: (
            -_depth(kv[1]), kv[0])) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return "(?:" + pattern(tree) + ")"


def _depth(node: dict) -> int:
    return max((1 + _depth(child) for char, child in node.items() if char), default=0)


_UNIT = trie(set(UNITS))
_SPACED_UNIT = trie({u for u in UNITS if UNITS[u][2]})
_DENOMINATOR = trie(set(UNITS) - {"%", "¢", "x"} | set(_PER_UNIT))
_NUMERATOR_ONLY = {"J": ("joule", "joules"), "kJ": ("kilojoule", "kilojoules"), "N": ("newton", "newtons")}
_COMPOUND = rf"(?:(?:{_UNIT}|J|N)/(?:\d{{1,4}}[ \t]?)?{_DENOMINATOR}(?:/{_DENOMINATOR})?(?![\w/]))"  # "mg/mL", "mcg/kg/min"
_SIGN = r"(?:[-−+](?=\d))?"
_QUANTITY = (
    rf"{_START}{_SIGN}{NUM}(?:(?:-|–|[ \t]–[ \t]?)[-−]?{NUM})?"
    rf"(?:st|nd|rd|th|ST|ND|RD|TH|(?:[ \t]?(?:°[ \t]?[FCK]?|[℃℉]))|[ \t]?{_COMPOUND}|(?:{_UNIT}|[ \t]{_SPACED_UNIT}(?!-[A-Z][a-z])|[ \t]in(?=\.(?:\s|\Z))|[ \t]IN(?=\.(?:\s|\Z)))(?:(?<=[a-z])\.(?=[ \t]+[a-z]))?|(?<![\d,]\d{{3}})(?:k|K|M|bn|B)(?![\w]))?"
    rf"{_END}"
)


_ONE_BEFORE = re.compile(r"(?<![\d.,])1[ \t]\Z")


def one_before(match: re.Match[str]) -> bool:
    """Whether the number just before ``match`` (a spaced unit's: "1 h", "1 A") is one, not "21" or "0.1"."""
    return _ONE_BEFORE.search(match.string, max(0, match.start() - 4), match.start()) is not None


def ends_sentence_after(match: re.Match[str]) -> bool:
    """Whether the text after ``match`` starts a new sentence (the end, a line break, or a capital next)."""
    rest = match.string[match.end(): match.end() + 3]
    return not rest.strip(" \t") or rest.lstrip(" \t")[:1] == "\n" or (rest[:1] == " " and rest[1:2].isupper())


# --- quantities: plain numbers, signs, ranges, percentages, units, temperatures, ordinals ---------------------------

_QUANTITY_PARTS = re.compile(
    rf"(?P<sign>[-−+]?)(?P<a>{NUM})(?:(?:-|–|[ \t]–[ \t]?)(?P<bsign>[-−]?)(?P<b>{NUM}))?[ \t]?(?P<suffix>.*)", re.S
)


def _value(text: str, alone: bool) -> str:
    """A number's words; a plain four-digit one alone is a year."""
    return w.year(int(text)) if alone and w.is_year(text) else w.number(text)


def quantity_kind(text: str) -> str:
    """The semiotic class of what the quantity rule read: ordinal, range, measure, decimal or cardinal."""
    parts = _QUANTITY_PARTS.fullmatch(text)
    suffix = parts["suffix"].strip().removesuffix(".") if parts else ""  # "12 oz. of water"
    if suffix.lower() in ("st", "nd", "rd", "th"):
        return "ordinal"
    if parts and parts["b"]:
        return "range"
    if suffix and suffix not in MULTIPLIERS:
        return "measure"
    return "decimal" if parts and "." in parts["a"] else "cardinal"


_DETERMINER = re.compile(r"(?:^|\s)(?i:an?|the|your|our|my|his|her|its|their|this|that)[ \t]\Z")
_NOUN_AFTER = re.compile(r"[ \t]+([A-Za-z][a-z]*|[A-Z]{2,})\b")
_COMPOUND_AFTER = re.compile(r"[ \t]+([a-z]+)[ \t]+([a-z]+)\b")  # "support calls"
_WORD_BEFORE = re.compile(r"\b[a-z]+[ \t]+\Z")
# What follows a measure without it describing that word: "20 GB of data", "10 km a day", "5 kg left", "2 mi away".
NOT_DESCRIBED = frozenset(
    """of in on at to for from and or but per each a an the is are was were be been will would can could should may
    must with by as than left remaining total more less over under up down off out away ago later long tall wide high
    deep thick old apart ahead behind before after into onto daily weekly monthly yearly i you he she it we they
    this that these those which who plus minus times""".split()
    # the people a price or a measure is for, not a kind of thing it describes: "$12 adults, $8 kids" ("twelve
    # dollars adults"), "2 GB students" ("a $12 adult ticket" is singular and describes)
    + """adults kids children seniors students members nonmembers guests teens youths infants toddlers veterans
    residents visitors families couples""".split())

# After "with"/"has", a lower-case plural noun after a measure is what the measure describes ("with 9 ft ceilings";
# elsewhere the word may be a verb: "11 kW takes", "$0.00 means").
_HAVING = re.compile(r"(?:^|\s)(?i:with|without|has|have|had)[ \t]\Z")
_PLURAL_NOUN = re.compile(r"[a-z]{2,}[^su]s")
# Verbs in -s that follow a measure or a price as its subject ("11 kW takes", "$5 buys", "5 kg costs").
VERBS_IN_S = frozenset("""takes means makes costs gives needs uses lasts weighs holds gets covers fits requires seems
    looks goes comes keeps provides allows lets helps adds saves burns feels sounds works stays remains includes
    contains equals becomes produces delivers offers supports buys pays gets earns brings leaves puts sets runs
    moves turns shows tells asks wants beats feeds serves charges yields lowers raises reduces increases
    grows rises falls drops doubles triples shrinks accrues qualifies applies suffices exceeds meets triggers
    entitles""".split())
_NOT_PLURAL_NOUNS = frozenset("""towards afterwards always sometimes besides perhaps across thus does goes its
    hers ours yours theirs whereas lengthwise tops outdoors indoors upstairs downstairs overseas
    backwards forwards nowadays""".split())  # "$5k tops": at most


# Singular nouns a duration describes without a determiner before it ("20 min wait", "10 min walk")
_HOW_OFTEN = frozenset("daily weekly monthly yearly annual quarterly hourly nightly".split())
_TIMED_NOUNS = frozenset("wait walk drive ride commute delay nap workout flight layover".split())
_DURATION_END = re.compile(r"(?i:min|mins|minutes?|hrs?|hours?|secs?|seconds?|days?|weeks?|months?|years?)\.?\Z")


# "a"/"an", and perhaps one word ("a brisk"), before a measure: the noun after it is the one thing it describes.
# (a term before a comma too: "a 5-year, $275M extension")
_A_BEFORE = re.compile(r"(?:^|\s)(?i:an?)[ \t]+(?:[a-z]+[ \t]+|\d{1,3}-[a-z]+,[ \t]+|\d{1,4}[ \t][A-Za-z]{1,3},[ \t]+)?\Z")
# (and a spaced measure before a comma: "a 20 A, 120 V circuit")
_NOUNS_AFTER_A = frozenset({"can"})  # words of NOT_DESCRIBED that are nouns after "a": "a 12 oz can" ("12 oz can be")
_NOUN_AFTER_A_END = re.compile(r"(?![ \t]+[a-z])|[ \t]+(?:of\b|[a-z]+(?:s|ed)\b)")  # "can of soda", "can holds", "can."


_LINE_START = re.compile(r"(?:^|\n|\b[A-Za-z]+:)[ \t]*\Z")
_LAYOUT_AFTER = re.compile(r"[ \t]+[A-Z]\d{1,2}(?![\w%°/-]|[.,:]\d)")


def attributive(match: re.Match[str]) -> bool:
    """Whether a measure describes the noun that follows it, its unit said singular: after a determiner ("a 5000 mAh
    battery", "your 20 GB plan", "a 512GB SSD", "a brisk 10 km walk") or before a plural noun ("9 ft ceilings"). (A range, "5-10 mg twice daily", "10-25 lb weights", says too little
    to tell.)"""
    after = _NOUN_AFTER.match(match.string, match.end(), match.end() + 24)
    if after is None:
        # "3.5L V6", "5.0L V8", "1998cc I4": an engine's size before its layout (a capital and a digit or two)
        return match.group().endswith(("L", "cc")) and _LAYOUT_AFTER.match(match.string, match.end(),
                                                                            match.end() + 8) is not None
    article = _A_BEFORE.search(match.string, max(0, match.start() - 24), match.start()) is not None
    if (_LINE_START.search(match.string, max(0, match.start() - 24), match.start()) and re.fullmatch(
            r"\d+(?:\.\d+)?[A-Za-z]+", match.group()) and after[1].islower() and after[1] not in NOT_DESCRIBED
            and after[1] not in VERBS_IN_S and not after[1].endswith("ed")):
        return True  # "850W power supply", "Engine: 2.0L turbo": a measure run into its unit opening a line or a label's value
    if after[1] in _HOW_OFTEN and (article or _DETERMINER.search(match.string, max(0, match.start() - 8),
                                                                 match.start())):
        # "a $5 monthly fee", "your 10 km daily walk": how often, then the noun it describes
        noun = _NOUN_AFTER.match(match.string, after.end(), after.end() + 24)
        return noun is not None and noun[1].islower() and noun[1] not in NOT_DESCRIBED
    if after[1].lower() in NOT_DESCRIBED and not (article and after[1] in _NOUNS_AFTER_A
                                                   and _NOUN_AFTER_A_END.match(match.string, after.end())):
        return False
    if article and after[1] not in VERBS_IN_S:
        return True  # "a brisk 10 km walk", "A 12 oz can of soda": "a" (and a word) before, a noun after
    if _PLURAL_NOUN.fullmatch(after[1]) and after[1] not in _NOT_PLURAL_NOUNS and after[1] not in VERBS_IN_S:
        return True  # "with 9 ft ceilings", "2–4 kg weights", "$5 bills": a plural noun, not a verb ("11 kW takes")
    if after[1] in _TIMED_NOUNS and _DURATION_END.search(match.group()):
        return True  # "a 20 min wait", "approx. 20 min wait": a duration before the thing it times
    return _DETERMINER.search(match.string, max(0, match.start() - 8), match.start()) is not None


# Before a number, words that make it a year whatever follows ("in 2010 prices", "the 2020 elections").
_YEAR_BEFORE = re.compile(r"(?i:\b(?:in|since|from|by|until|till|class[ \t]+of|the|circa|ca\.|year|during|before|after|between|"
                          r"through|to|and|or|early|late|mid|spring|summer|fall|autumn|winter|'s|’s))[ \t]+\Z")
# Plural nouns a year describes ("2010 levels", "2024 models").
_YEAR_NOUNS = frozenset("""levels prices elections models graduates figures rates sales results standards games
    olympics seasons championships census budgets taxes earnings guidelines rules numbers dollars terms estimates
    editions versions releases winners finals playoffs nominees highs lows""".split())


_COUNT_BEFORE = re.compile(r"(?i:\b(?:more|less|fewer|greater|higher|lower)[ \t]+than|\bat[ \t]+(?:least|most)|"
                           r"\bup[ \t]+to|\bover|\bunder|\bexactly|\btotal[ \t]+of|\btotaling|\btotalling)[ \t]+\Z")


def _counts(match: re.Match[str]) -> bool:
    """Whether a plain four-digit number counts the plural noun after it ("2010 employees", "1999 items": a number,
    not a year), unless a word before it makes it a year; or is an amount after a word that compares amounts
    ("more than 1500", "at least 2024")."""
    if _COUNT_BEFORE.search(match.string, max(0, match.start() - 16), match.start()):
        return True
    after = _NOUN_AFTER.match(match.string, match.end(), match.end() + 24)
    noun = after[1] if after else ""
    # "handled 2024 support calls": a lower-case compound noun's plural, after a lower-case word (a verb, not "Q3 2024
    # beat forecasts")
    if after and not _PLURAL_NOUN.fullmatch(noun) and _WORD_BEFORE.search(match.string, max(0, match.start() - 20),
                                                                          match.start()):
        pair = _COMPOUND_AFTER.match(match.string, match.end(), match.end() + 32)
        noun = pair[2] if pair and pair[1] not in NOT_DESCRIBED else noun
    if not _PLURAL_NOUN.fullmatch(noun) or noun in _NOT_PLURAL_NOUNS or noun in VERBS_IN_S or noun in _YEAR_NOUNS:
        return False
    return _YEAR_BEFORE.search(match.string, max(0, match.start() - 12), match.start()) is None


# Singular nouns that name a thing by its code: after one, "12-3" is an identifier ("room twelve-three"), not a range.
CODE_NOUN = re.compile(r"(?i:\b(?:model|room|rm\.?|unit|lot|case|docket|exit|invoice|part|item|apartment|apt\.?|suite|"
                        r"ste\.?|bus|route|gate|platform|version|ver\.?|rev\.?|revision|serial|policy|account|batch|"
                        r"bay|dock|locker|stall|cabin|berth|flight|code|id|no\.|ref\.?|reference|po|sku|product|catalog|"
                        r"confirmation|reservation|permit|license|licence))[ \t]*[#:]?[ \t]*\Z")  # not a verb: "order 2-3"


# A range of rooms, suites, gates by their numbers ("Rooms 301–310", "suites 1204-1210")
_ROOMS_BEFORE = re.compile(r"(?i:\b(?:rooms?|rms?\.?|suites?|ste\.?|apartments?|apts?\.?|gates?|berths?|cabins?))[ \t]*\Z")
_FORM_BEFORE = re.compile(r"(?<![\w'’])(?:Form|form|FORM)[ \t]\Z")
_THE_BEFORE = re.compile(r"(?<![\w'])(?i:the)[ \t]+(?:\d{1,2}s[ \t]+(?:and|or|&)[ \t]+)?\Z")  # "the 1s and 2s"
_RACE_DISTANCES = frozenset("3 5 8 10 12 15 21 25".split())  # a race's kilometers: "a 5K", "the 10K"
_NAMED_AFTER = re.compile(r"[ \t]*(?:[.,;:!?)]|\Z)|[ \t]+(?:and|or)\b")
_PLURAL_AFTER = re.compile(r"[ \t]+(?:[a-z]{2,}[^su']s|people|men|women|children|feet)\b")


# A length named before a number on its line ("DEPTH: 4.6 M", "clearance 3.2 M"): a capital "M" after it is meters
_LENGTH_BEFORE = re.compile(r"(?i:\b(?:depth|height|length|width|distance|elevation|altitude|clearance|draft|"
                            r"headroom|span))\b[^\n\d]{0,24}\Z")


# "a 0.1 M solution", "Prepare 500 mL of 2 M HCl": a spaced capital "M" after a number is molar where a solution
# is the subject (a volume, moles, a solution named on the line)
_MOLAR_NEAR = re.compile(r"\b(?:mL|ml|µL|L|mol|mmol|moles?|molar|molarity|solutions?|concentrations?|dilut\w*|titrat\w*|"
                         r"buffers?|HCl|NaOH|NaCl|H2SO4|stock)\b")


def _molar(match: re.Match[str]) -> bool:
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    before = match.string[max(line_start, match.start() - 48):match.start()]
    after = match.string[match.end():match.end() + 24].split("\n")[0]
    return _MOLAR_NEAR.search(before) is not None or re.match(r"[ \t]+(?:solutions?|HCl|NaOH|NaCl|H2SO4|buffer|stock)\b",
                                                                   after) is not None


_VISIBILITY_BEFORE = re.compile(r"(?i:\b(?:visibility|vis|vsby))\b[^\n\d]{0,12}\d[\d./ ]*[ \t]\Z")


def _spaced_meters(match: re.Match[str]) -> str | None:
    if _molar(match):
        return "molar"
    number = re.search(r"(?<![\w.,])(\d+(?:\.\d+)?)[ \t]\Z", match.string[max(0, match.start() - 16):match.start()])
    if not number or not _LENGTH_BEFORE.search(match.string, max(0, match.start() - 48), match.start() - len(number[0])):
        return None
    return "meter" if number[1] == "1" else "meters"


# "24 nm out", "120 kt ÷ 60 = 2 nm": "nm" where a flight's or a boat's speed, fuel or distance is the subject (a knot,
# a statute mile, a descent on its line, "out"/"away" after it) is a nautical mile; a chip's or light's a nanometer
_NAUTICAL_BEFORE = re.compile(r"(?i:\b(?:kts?|knots?|nautical|statute|fuel|descent|descend|climb|runway|rwy|airport|"
                              r"flight|fly|flying|heading|gph|vfr|ifr|nm|nmi)\b)[^\n]*\Z")
_NAUTICAL_AFTER = re.compile(r"[ \t]+(?:out|away|offshore|from|final|north|south|east|west)\b")


def nautical(match: re.Match[str]) -> bool:
    """Whether an "nm" after a number (``match`` ending with it) is a nautical mile, by the words around it."""
    line = match.string.rfind("\n", 0, match.start()) + 1
    return _NAUTICAL_BEFORE.search(match.string, max(line, match.start() - 64), match.start()) is not None \
        or _NAUTICAL_AFTER.match(match.string, match.end()) is not None


# "If x = hours over 40, OT = 1.5x": after a formula's "=", in a sentence that has set the variable x, "1.5x" is
# a coefficient of x, not "times"
_X_DEFINED_BEFORE = re.compile(r"(?<![\w'’])x[ \t]?[=<>≤≥][^.!?\n]*=[ \t]?\Z")


def _quantity(match: re.Match[str]) -> str | None:
    parts = _QUANTITY_PARTS.fullmatch(match.group())
    assert parts
    sign, a, b, suffix = parts["sign"], parts["a"], parts["b"], parts["suffix"].strip()
    if suffix == "IN":
        if not re.search(r"\b[A-Z]{2,}[ \t]+\Z", match.string[max(0, match.start() - 16):match.start()]):
            return None
        suffix = "in"  # "SNOWFALL UP TO 18 IN. EXPECTED": a shouted "in." after a number (a shouted word before it)
    if suffix.endswith(".") and suffix[:-1] in UNITS:
        suffix = suffix[:-1]  # "12 oz. of water": the unit's own full stop, not a sentence's
    if suffix == "x" and not b and not sign and (re.match(r"[ \t]*(?:[<>=≤≥≠]|[+−][ \t]*\d)", match.string[match.end():match.end() + 4])
                                                 or _X_DEFINED_BEFORE.search(match.string, max(0, match.start() - 80), match.start())):
        return w.number(a) + " x"  # "If 2x < 10", "2x + 3 = 7": a coefficient of the variable x in a formula, not "times"
    if suffix == "t" and match.string[match.end():match.end() + 1] in ("-", "'", "’"):
        return None  # "2 t-shirts": a word's letter, not tonnes
    if b and not suffix and not sign and "-" in match.group() and "." not in a + b and "," not in a + b and (
            CODE_NOUN.search(match.string, max(0, match.start() - 16), match.start())
            or (len(b) > 1 and b[0] == "0")  # no range's end starts with a zero
            or (len(b) >= 6 and len(b) - len(a) >= 3 and len(b.rstrip("0")) >= 4)):  # nor from 12 to an
        # unround million ("EIN 12-3456789"; "1-100000" is a range)
        long = max(len(a), len(b)) >= 6  # an identifier's digits one by one
        return "-".join(w.cardinal(g) if len(g) <= 2 and g[0] != "0" and not long else w.digits(g)
                        for g in (a, b))  # "room 12-3"
    if suffix == "s" and not b and not sign and a.isdigit() and len(a) <= 2 \
            and _THE_BEFORE.search(match.string, max(0, match.start() - 20), match.start()) \
            and _NAMED_AFTER.match(match.string, match.end()):
        return w.plural(w.cardinal(a))  # "on the 8s", "the 1s and 2s": the numbers themselves, not seconds
    if suffix == "K" and not b and not sign and a in _RACE_DISTANCES \
            and _DETERMINER.search(match.string, max(0, match.start() - 8), match.start()) and not _PLURAL_AFTER.match(
                match.string, match.end()):
        return w.cardinal(a) + " K"  # "the 10K start", "run a 5K": a race by its distance ("the 10K steps" counts)
    if not b and not suffix and not sign and re.fullmatch(r"[1-9]\d{2,3}", a) and _FORM_BEFORE.search(
            match.string, max(0, match.start() - 8), match.start()):
        return w.paired(a)  # "Form 8962", "Form 990": a form's number read in pairs, as a year is ("eighty-nine sixty-two")
    if b and a == b and not suffix and not sign and "-" in match.group():
        return f"{w.cardinal(a)}-{w.cardinal(b)}"  # "50-50": a tie, an even split
    if suffix.lower() in ("st", "nd", "rd", "th") and not b and "." not in a:
        said = w.ordinal(a)
    else:
        plain = not suffix and not (not b and _counts(match))
        if b and plain and not sign and not parts["bsign"] and a.isdigit() and b.isdigit() and 3 <= len(a) <= 4 \
                and len(b) <= 4 and _ROOMS_BEFORE.search(match.string, max(0, match.start() - 12), match.start()):
            return f"{w.paired(a)} to {w.paired(b)}"  # "Rooms 301–310": rooms by their numbers, "three oh one to three ten"
        # "1001-1050": a range's ends are both years or both numbers, and a range of years starts after 1100 (items
        # "1001-1050" are "one thousand one to one thousand fifty")
        years = plain and not (b and w.is_year(a) and int(a) < 1100)
        said = _value(a, years)
        if b:
            said += " to " + ("minus " if parts["bsign"] else "") + _value(b, years)
        if suffix in ("k", "K") and a in ("401", "403", "457") and not b:
            said = w.paired(a) + " K"  # "a 401k plan": a retirement plan's name, not 401,000
        elif suffix in ("k", "K", "M", "bn", "B"):
            said += " " + MULTIPLIERS[suffix]
        elif suffix.startswith("°") or suffix in ("℃", "℉"):
            scale = {"℃": "C", "℉": "F"}.get(suffix, suffix[1:].strip())
            one = (a == "1" and not b) or attributive(match)  # "a 60° angle"
            said += (" degree" if one else " degrees") + (" " + _DEGREES[scale] if scale else "")
        elif suffix:
            unit, _, per = suffix.partition("/") if suffix not in UNITS else (suffix, "", "")
            one, many = UNITS[unit][:2] if unit in UNITS else _NUMERATOR_ONLY[unit]
            if unit == "nm" and nautical(match):
                one, many = "nautical mile", "nautical miles"
            said += " " + (one if (a == "1" and not b) or attributive(match) else many)
            if per:
                count, per = re.fullmatch(r"(\d*)[ \t]?(.+)", per).groups()  # type: ignore[union-attr]
                said += " per " + " per ".join(  # "mcg/kg/min": "per kilogram per minute"
                    w.cardinal(count) + " " + UNITS[one][1] if count and count != "1" and not i else
                    _PER_UNIT.get(one) or UNITS[one][0] for i, one in enumerate(per.split("/")))
    return {"-": "minus ", "−": "minus ", "+": "plus "}.get(sign, "") + said


# --- phone numbers, fractions, versions, number signs --------------------------------------------------------------

_PHONE = (
    r"(?<![\w+])(?:\(\d{3}\)[ \t]?\d{3}[-. \t]\d{4}|\(0\d{1,4}\)[ \t]?\d{3,4}[-. \t]?\d{3,4}"
    r"|\+\d{1,3}(?:[ \t]?\(0\)[ \t]?\d{1,5}(?!\d))?(?:[-. \t]\(?\d{1,8}\)?(?![\d])){1,5}|\+\d{1,3}[-. \t]\d{10}(?!\d)"
    r"|00[1-9]\d{0,2}(?:[-. \t]\d{1,8}(?!\d)){2,5}"  # "+44 (0)20 ...", "0044 20 ...": a trunk zero, a dialled prefix
    r"|\(\+\d{1,3}\)[ \t]?\d{2,4}(?:[-. \t]\d{2,4}){1,3}"
    r"|(?:1[-. ])?\d{3}[-. ]\d{3}[-. ]\d{4}|\d{3}/\d{3}-\d{4}|0\d{1,4}[ -]\d{3,4}[ -]\d{3,4}"
    r"|0[1-9](?:[ ]\d\d){4}(?![ .]\d)|0[1-9](?:\.\d\d){4}(?![ .]\d))(?![\w-])"  # "06 12 34 56 78": France's, in pairs
)
_DIGIT_GROUP = re.compile(r"\d+")
# The end of a text that may yet become a phone number written in spaced groups ("1 800 273" before "8255").
_OPEN_PHONE = re.compile(r"(?<![\w.,+-])(?:(?:\+\d{1,3}[ \t]+|1[ \t]+)?(?:\(\d{3}\)|\d{3})(?:[ \t]+\d{1,4}){0,2}"
                         r"|0[1-9](?:[ ]\d\d){0,3}(?:[ ]\d)?|0[1-9](?:\.\d\d){0,3}(?:\.\d?)?"
                         r"|\d{3}/(?:\d{1,3}(?:-\d{0,3})?)?)[ \t]*\Z")  # "503/555-0174": an area code and a slash


# The end of a text that may yet become a compound duration ("2 h 15" before " min"): held, so its hours are read with
# the minutes that follow
_OPEN_DURATION = re.compile(r"(?<![\w.])\d{1,3}[ \t]?h[ \t]?\d{1,2}(?:[ \t]?(?:m|mi))?[ \t]*\Z")


def open_duration(text: str) -> int | None:
    """Where a compound duration that later text may finish starts at the end of ``text``, or None."""
    tail = _OPEN_DURATION.search(text, max(0, len(text) - 16))
    return tail.start() if tail else None


def open_phone(text: str) -> int | None:
    """Where a phone number that later text may finish starts at the end of ``text``, or None."""
    tail = _OPEN_PHONE.search(text, max(0, len(text) - 40))
    return tail.start() if tail else None


_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_WORDLIKE_UNITS = frozenset("in us ha am pm cal mo min ms a t".split())


def _superscript_power(match: re.Match[str]) -> str:
    """A power written in superscript after a number, as a teacher says it: "10⁸" "ten to the eighth", "10²³" "ten
    to the twenty-third", "10⁻³" "ten to the minus three" ("2²" is the squared rule's; "^" is "to the power of")."""
    power = match.group().translate(_SUPERSCRIPTS)
    return " to the minus " + w.number(power[1:]) if power[0] == "-" else " to the " + w.ordinal(power)


def _phone(match: re.Match[str]) -> str | None:
    groups = _DIGIT_GROUP.findall(match.group())
    if re.fullmatch(r"\+\d{1,3}\.\d{1,2}", match.group()):
        return None  # "+1.5", "+12.75": a signed decimal
    said = [w.digits(g) for g in groups]
    if match.group().lstrip("(").startswith("+"):
        said[0] = "plus " + said[0]
    return ", ".join(said)


_FRACTION_NAMES = {2: ("half", "halves"), 4: ("quarter", "quarters")}
_SPECIAL_FRACTIONS = {"24/7": "twenty-four seven", "50/50": "fifty-fifty", "9/11": "nine eleven"}


def fraction_words(numerator: int, denominator: int) -> str:
    """"7/16" -> "seven sixteenths", "1/100" -> "one hundredth"; a denominator over 1,000 (or 0, 1) "over"."""
    if not 2 <= denominator <= 1000:
        return f"{w.cardinal(str(numerator))} over {w.cardinal(str(denominator))}"
    one, many = _FRACTION_NAMES.get(denominator) or (w.ordinal(str(denominator)),) * 2
    many = many if denominator in _FRACTION_NAMES else one + "s"
    if numerator == 1 and one.startswith("one "):
        return one
    return f"{w.cardinal(str(numerator))} {one if numerator == 1 else many}"


_DATE_CUES = re.compile(r"(?:(?i:\b(?:on|by|starts?|starting|due|until|till|thru|through|from|since|before|after|"
                        r"expires?|expiring|exp|dated?|effective|ends?|ending|week of|as of|open|opens|closed|closes|closing|delivered|available|avail\.?|"
                        r"scheduled|arrives?|arriving|shipped|ships|move[- ]?in|move[- ]?out|check[- ]?in|check[- ]?out|deadline|"
                        r"(?:moved|pushed|postponed|rescheduled|delayed|bumped|shifted)(?:[ \t]+(?:back|up|out))?[ \t]+(?:to|for|until)|date[ \t]+(?:is|was|will[ \t]+be)))"
                        r"|\b(?:Mon|Tues?|Wed(?:nes)?|Thu(?:rs?)?|Fri|Sat(?:ur)?|Sun)(?:day)?"
                        r"|\b(?:mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day"
                        r"|\b(?:MON|TUES?|WED|THU(?:RS?)?|FRI|SAT|SUN)\.?)\W*$")  # "Monday 9/22", "tues 11/12", "DUE FRI 11/8"
_CHANGED_BY = re.compile(r"(?i:\b(?:cut|cuts|reduced?|reduces|lowers?|lowered|raised?|raises|increased?|increases|"
                         r"decreased?|decreases|grew|grows?|rose|rises?|fell|falls?|dropped|drops?|shrank|shrinks?|"
                         r"discounted|multiply|multiplies|multiplied|divide|divides|divided|scale|scales|scaled|up|down)\b[^.!?]{0,30}\b(?:by|from)\W*)$")  # "cuts it by 1/4", "down from 3/4":
#                                                                                   a change of a quantity, a fraction

# "each work 5/8 time", "employed at 3/4 time": a share of a full-time job, a fraction (no time signature)
_WORKED_BEFORE = re.compile(r"(?i:\b(?:work|works|worked|working|employed|paid|scheduled|hired)(?:[ \t]+at)?)[ \t]+\Z")
_OF_AFTER = re.compile(r"[ \t]+of\b")  # "sat 3/4 of the way": a part of something, a fraction
_NOT_A_DAY_AFTER = re.compile(r"[ \t]+(?:[a-z]+s|of|out|scale|in|on|per|a|an|the|and|or|to|inch|mile|cup|[^a-z])\b")
_NOT_A_DAY_BEFORE = re.compile(r"(?i:\b(?:scored?|got|gets|rated|about|only|just|of|by|over|under|than|is|was|are|were|"
                               r"(?:simplif(?:y|ies|ied)|reduc(?:e|es|ed)|equals?|becomes?|converts?|rounds?)(?:[ \t]+to)?))"
                               r"[ \t]+\Z")  # "simplifies to 12/25.": arithmetic's result, a fraction


def _odd_denominator_date(match: re.Match[str], day: int) -> bool:
    """"The 12/25 flight", "12/26 has seats", "cards go home 5/1.": twelfths, twenty-fifths and ones are no fraction
    anyone writes bare, so a month and a day 1 or 13-31 (not 16, an inch's sixteenths) before a singular noun, a verb
    or a sentence's end after a word is a date ("17/20 questions" before a plural noun, "1/20 of", "scored 17/20" stay
    fractions)."""
    if not (13 <= day <= 31 or day == 1) or day == 16:
        return False
    after = match.string[match.end():match.end() + 16]
    verb = re.match(r"[ \t]+(?:has|is|was|does)\b", after)
    ends = re.match(r"[.!?](?:\s|$)", after) and re.search(r"[a-z][ \t]+\Z", match.string[:match.start()])
    if not ends and (not re.match(r"[ \t]+[a-z]", after) or _NOT_A_DAY_AFTER.match(after) and not verb):
        return False
    return not _NOT_A_DAY_BEFORE.search(match.string, max(0, match.start() - 24), match.start())


_SLASHED = re.compile(r"(?<![\w./,])\d{1,2}/\d{1,2}(?![\w/])")  # the month_day rule's pattern


_UNIT_AFTER = re.compile(r"[ \t]+(?:percentage[ \t]+)?([a-z]+)\b(?![.'’-]\w)")


def _month_day(match: re.Match[str]) -> str | None:
    """"11/29" after a word about when ("starts 11/29") is a date; "08/27" (a leading zero) always is."""
    a, b = match.group().split("/")
    if not (1 <= int(a) <= 12 and 1 <= int(b) <= 31):
        return None
    before = match.string[max(0, match.start() - 24):match.start()]
    if a[0] == "0" and re.search(r"(?i:(?:exp\w*|valid\w*|card)(?:[ \t]+(?:date|thru|through|until))?"
                                 r"(?:[ \t]+(?:is|of))?)\W*$", before):  # a card's MM/YY
        return f"{w.digits(a[0])} {w.cardinal(a[1])} {w.cardinal(b)}"
    # "on 12/24 and 12/31": the next of a list whose first is a date ("add 3/5 and 4/5": fractions, as the first)
    listed = re.search(r"\b\d{1,2}/\d{1,2}(?=[ \t]+(?:and|or|&|through|thru)[ \t]+$)", before)
    if listed:
        first = _SLASHED.match(match.string, match.start() - len(before) + listed.start())
        listed = first is not None and first.end() == match.start() - len(before) + listed.end() \
            and _month_day(first) is not None
    # "is 10/6.": a month over a day that no one writes as a fraction (improper and reducible: ten sixths is five
    # thirds), a date; halves stay ("4/2", a home's beds and baths)
    reducible = int(a) > int(b) > 2 and math.gcd(int(a), int(b)) > 1 and not _OF_AFTER.match(match.string, match.end())
    unit = _UNIT_AFTER.match(match.string, match.end())
    if int(a) < int(b) and unit and (unit[1] in _UNIT_WORDS or unit[1] == "point") and not listed:
        return None  # "by 1/4 point", "rise 1/2 meter": a proper fraction before a unit it measures, no date
    # "pumpkin spice is 10/31": a day no fraction is said over ("thirty-firsts"; not 25, 16's inches) after "is" and
    # ending its phrase, a date
    stated = 21 <= int(b) <= 31 and int(b) != 25 and int(a) < int(b) and re.search(
        r"(?i:\b(?:is|was|are|were|be))[ \t]+\Z", before) is not None and re.match(
        r"(?:[.!?;,)]|[ \t]*(?:\n|\Z))", match.string[match.end():]) is not None
    if a[0] != "0" and not listed and not reducible and not stated and not _odd_denominator_date(match, int(b)) and \
            (not _DATE_CUES.search(before) or _CHANGED_BY.search(before) or _OF_AFTER.match(match.string, match.end())):
        return None
    from engine.speech_text.dates import date_words  # dates.py builds on this module
    return date_words(int(a), int(b), None)


def _month_year(match: re.Match[str]) -> str:
    """"12/2027" (an expiry, a card) -> "December twenty twenty-seven"."""
    from engine.speech_text.dates import date_words  # dates.py builds on this module
    month, year = match.group().split("/")
    return date_words(int(month), None, int(year))


_VULGAR = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5), "⅖": (2, 5), "⅗": (3, 5),
           "⅘": (4, 5), "⅙": (1, 6), "⅚": (5, 6), "⅛": (1, 8), "⅜": (3, 8), "⅝": (5, 8), "⅞": (7, 8)}


def _pressure(match: re.Match[str]) -> str:
    """"120/80 mmHg" -> "one twenty over eighty millimeters of mercury", as a blood pressure is said."""
    high, low = re.findall(r"\d+", match.group())[:2]
    return f"{w.paired(high)} over {w.paired(low)} millimeters of mercury"


_DETERMINER_BEFORE = re.compile(r"(?i:\b(?:the|this|that|my|your|our|their|his|her|its|an?|every|each))[ \t]+\Z")  # "every ½ hour"
# "the first ½ hour", "another ¼ mile": a word of order or addition before a lone fraction, which takes no article
_ORDER_BEFORE = re.compile(r"(?i:\b(?:first|last|next|final|another|extra))[ \t]+\Z")
_HALF_PRICE = re.compile(r"[ \t]+(?i:off|price|priced|full|empty|done|open|closed|finished|complete|cooked|filled|"
                         r"charged|loaded|frozen|melted|asleep)\b")  # "½ off", "1/2 price", "½ full": "half full"
_HALF_OF = re.compile(r"[ \t]+(?i:of)\b|" + _HALF_PRICE.pattern)  # "½ of customers" too ("1/2 of" stays "one half of")
_HALVED_BEFORE = re.compile(r"(?i:\b(?:by|in))[ \t]+\Z")  # "reduce by ½", "cut in ½": "by half", "in half"


def _vulgar(match: re.Match[str]) -> str:
    """"3½" -> "three and a half", "¼" -> "a quarter"; "¾\" copper line" -> "three quarters inch copper line"."""
    if match.group()[-1] in "\"”″":  # an inch mark, before what it measures
        whole, symbol = match.group()[:-2].strip(" \t"), match.group()[-2]
        if not whole:
            said = _before_hyphen(*_VULGAR[symbol])  # "a ½\" bit": "a half inch bit", "a ¾″ line": "three quarter"
            return (said.removesuffix("s") if said.endswith("quarters") else said) + " inch"
        said = fraction_words(*_VULGAR[symbol])
        said = ("an " if said[4] == "e" else "a ") + said[4:] if said.startswith("one ") else said
        return f"{w.cardinal(whole)} and {said} inch"  # "a 1½\" pipe": "a one and a half inch pipe"
    whole, symbol = match.group()[:-1].strip(" \t"), match.group()[-1]
    numerator, denominator = _VULGAR[symbol]
    said = fraction_words(numerator, denominator)
    if not whole and match.string.startswith("-", match.end()):
        return _before_hyphen(numerator, denominator)
    if not whole and (of_a := _fraction_of(numerator, denominator, match)) != said:
        return of_a  # "¾ inch.": "three quarters of an inch."
    if numerator == 1 and not whole and denominator == 2 and _HALF_OF.match(match.string, match.end()):
        said = "half"  # "½ of customers", "½ off", "½ price": "half of", not "a half of"
    elif (numerator, denominator) == (1, 2) and not whole and not re.match(r"[ \t]*\w", match.string[match.end():]) \
            and _HALVED_BEFORE.search(match.string, max(0, match.start() - 4), match.start()):
        said = "half"  # "reduce the stock by ½.": "by half", as the amount alone
    elif numerator == 1:
        said = said.split(" ", 1)[-1]
        if not whole and (_DETERMINER_BEFORE.search(match.string, max(0, match.start() - 8), match.start())
                          or _ORDER_BEFORE.search(match.string, max(0, match.start() - 8), match.start())):
            return said  # "the ¼ lb burger": "the quarter pound"; "a ⅓ share": "a third share", one article
        said = ("an " if said.startswith("e") else "a ") + said  # "an eighth"
    return f"{w.cardinal(whole)} and {said}" if whole else said


def _before_hyphen(numerator: int, denominator: int) -> str:
    """A fraction joined to what it measures: "½-price", "¼-inch" "half-price", "quarter-inch"; any other keeps its
    "one" ("a ⅛-inch gap" "a one eighth-inch gap", never "a eighth"; "a 1/10-scale model")."""
    said = fraction_words(numerator, denominator)
    return said.removeprefix("one ") if denominator in (2, 4) else said


_RATED = re.compile(r"(?i:\b(?:rated|rates|rating(?:[ \t]of)?|scored?|score[ \t]of|gave[ \t](?:it|us|them)|"
                    r"graded?|ranked|reviews?))[ \t]+\Z")
_GOT = re.compile(r"(?i:\b(?:got|get|gets|earned|received))[ \t]+\Z")  # "got 17/20 on the quiz", not "got 1/4 of"


# Betting odds: "3/1 to win", "a 5/2 favorite", "odds of 7/4", "backed at 9/1" ("three to one")
_ODDS_AFTER = re.compile(r"(?i:[ \t]+(?:to[ \t]+win|odds|(?:fav(?:ou?rite)?s?|shot|underdogs?|outsiders?)\b))")
_ODDS_BEFORE = re.compile(r"(?i:\bodds(?:[ \t]+(?:of|are|at))?|\bat)[ \t]+\Z")


def _odds(match: re.Match[str], a: str, b: str) -> bool:
    """Whether the fraction ``a/b`` is betting odds: a bookmaker's small denominator, before a word about winning,
    after "odds" (or after "at" where it is more than one: "at 9/1", not "at 1/2 price"; "odds of 1/5000" is a
    chance)."""
    if int(b) > 30:
        return False
    if _ODDS_AFTER.match(match.string, match.end()):
        return True
    cue = _ODDS_BEFORE.search(match.string, max(0, match.start() - 12), match.start())
    return cue is not None and (not cue.group().lower().startswith("at") or int(a) > int(b))


# A cable's gauge over its conductors ("12/2 NM", "a roll of 14/3"): beside a word about wire, never "twelve halves"
_WIRE_AFTER = re.compile(r"[ \t]+(?i:wire|cable|romex|nm(?:-b)?|uf(?:-b)?|w/|with[ \t]+ground)\b")
_WIRE_BEFORE = re.compile(r"(?i:\b(?:roll|rolls|spool|spools|coil|wire|wiring|cable|romex|run|gauge|awg)\b)(?:[ \t]+[a-z]+){0,2}[ \t]+\Z")


def _fraction(match: re.Match[str]) -> str:
    if match.group() in _SPECIAL_FRACTIONS:
        return _SPECIAL_FRACTIONS[match.group()]
    a, b = match.group().split("/")
    if a in ("14", "12", "10", "8", "6") and b in ("2", "3") and (_WIRE_AFTER.match(match.string, match.end())
                                                                 or _WIRE_BEFORE.search(match.string, max(0, match.start() - 30), match.start())):
        return f"{w.cardinal(a)} {w.cardinal(b)}"  # "a roll of 12/2", "14/3 wire": a cable's gauge and conductors
    if b.isdigit() and _odds(match, a, b):
        return f"{w.cardinal(a)} to {w.cardinal(b)}"
    before = max(0, match.start() - 20)
    marked = b in ("5", "10", "20", "25", "50", "100") and int(a) <= int(b) \
        and not re.match(r"[ \t]+of\b", match.string[match.end():match.end() + 4])  # "scored 3/4 of the goals"
    rated = marked and _RATED.search(match.string, before, match.start())
    got = marked and int(a) > 1 and _GOT.search(match.string, before, match.start())
    # "a 10/10", "5/5": a full score (no one says "ten tenths"); "a 9/10." a score given as a thing, ending its phrase
    full = marked and (a == b or b == "10" and int(a) > 1 and re.search(r"\b[Aa][ \t]\Z", match.string[before:match.start()])
                       and re.match(r"[ \t]*(?:[.,;:!?)]|\Z)", match.string[match.end():match.end() + 2]))
    if rated or got or full:
        return f"{w.cardinal(a)} out of {w.cardinal(b)}"  # "rated 8/10", "got 17/20 on the quiz": a score
    if not b.isdigit():  # "1/4th": "one fourth"
        b = b.rstrip("thsrdn")
        return f"{w.cardinal(a)} {w.ordinal(b)}" + ("s" if a != "1" else "")
    after = match.string[match.end():match.end() + 40]
    if a == "1" and after[:1] == "-" and _DETERMINER_BEFORE.search(match.string, before, match.start()):
        return _before_hyphen(1, int(b))  # "a 1/4-inch bolt": "a quarter-inch bolt"
    if int(a) > 1 and b == "4" and re.match(r"-[a-z]", after):
        return fraction_words(int(a), 4).removesuffix("s")  # "3/4-inch copper": "three quarter inch", as "three-quarter"
    if match.group() == "1/2" and (_HALF_PRICE.match(after) or _HALVES_AFTER.match(after)
                                   or _HALVES_BEFORE.search(match.string, max(0, match.start() - 24), match.start())):
        return "half"  # "1/2 price", "1/2 off": "half price", as "½ price" is; "1/2 cheese 1/2 pepperoni": halves
    if a == "1" and b in ("2", "4") and re.match(r"[ \t]+(?:[a-z]{2,}|HP)\b(?![.'’-]\w)", after) \
            and re.search(r"\b[Aa][ \t]\Z", match.string[before:match.start()]):
        return fraction_words(1, int(b)).removeprefix("one ")  # "a 1/4 turn": "a quarter turn", "a 1/2 HP motor": "a half"
    if int(a) > 1 and b == "4" and (noun := _MATERIAL_AFTER.match(after)) and noun[1] not in _UNIT_WORDS \
            and not _AMOUNT_BEFORE.search(match.string, before, match.start()) \
            and noun[1] not in _NOT_A_MATERIAL and not noun[1].endswith(("ly", "ed", "ing")):
        return fraction_words(int(a), 4).removesuffix("s")  # "3/4 plywood": a size before what it sizes, "three-quarter"
    counted = _COUNTED.match(after)
    if counted and counted[1] not in _UNIT_WORDS and counted[1] not in _MATH_VERBS and int(a) > 1:
        if b in ("2", "4", "8", "16"):  # "3/4 sleeves", "5/8 studs": a size in halves, quarters, eighths, what it sizes
            said = fraction_words(int(a), int(b))
            return said.removesuffix("s") if b == "4" else said  # "three quarter sleeves", as "three-quarter" is
        return f"{w.cardinal(a)} out of {w.cardinal(b)}"  # "7/10 customers", "17/20 questions": so many of so many
    return _fraction_of(int(a), int(b), match)


# A singular noun after a fraction in quarters, the thing it sizes ("3/4 plywood", "3/4 conduit"), not a word that
# takes the fraction as an amount ("3/4 of", "3/4 full", "3/4 is")
_MATERIAL_AFTER = re.compile(r"[ \t]+([a-z]{3,})\b(?![.'’-]\w)(?![ \t]+(?:of|is|was|are|were)\b)")
_AMOUNT_BEFORE = re.compile(r"(?i:\b(?:at|is|was|are|were|be|been|being|about|nearly|almost|only|just|over|under|"
                            r"around|roughly|now|already))[ \t]+\Z")  # "at 3/4 health", "is 3/4 met": how much, "three quarters"
_NOT_A_MATERIAL = frozenset("""and the for but not are was were has had have off price full empty done open closed
    finished complete cooked filled charged loaded frozen melted asleep way time more less than then that this with
    from into onto over under per each what which who when where while people men women children folks""".split())


# A thing split in halves, one named after the other ("1/2 cheese 1/2 pepperoni", "1/2 plain, 1/2 salted")
_HALVES_AFTER = re.compile(r"[ \t]+[a-z]+,?[ \t]+(?:and[ \t]+)?1/2(?![\w/])")
_HALVES_BEFORE = re.compile(r"(?<![\w/])1/2[ \t]+[a-z]+,?[ \t]+(?:and[ \t]+)?\Z")


# Units and the measures a recipe or a distance is counted in, singular and plural (not a count of things).
_UNIT_WORDS = frozenset(word for unit, names in UNITS.items() for word in (unit, *names[:2]) if word.isalpha()) | {
    word + plural for word in "cup pint quart acre stick day week month hour share portion dose".split()
    for plural in ("", "s")}
_MATH_VERBS = frozenset("equals simplifies reduces becomes means represents makes gives".split())  # "6/8 simplifies"
_COUNTED = re.compile(r"[ \t]+([a-z]{2,}[^s\W]s)\b")  # a plural noun: "customers", not "class" or a unit
_OF_A = re.compile(r"[ \t]+([a-z]+)(?:[ \t]+(?:from|away|past|beyond|ahead|behind|north|south|east|west|down|up)\b"
                   r"|[ \t]*(?:\.(?![ \t]+[a-z])|[,;:!?)]|\Z))")  # ("in. screws": an abbreviation's stop)


def _of_a(after: str) -> str:
    """" of a" before a lone unit that ends a clause or comes before a word of where ("3/4 mile from": "three quarters
    of a mile from", "1/1000 s.": "a thousandth of a second."); nothing before a unit that describes what follows
    ("5/8 inch thick", "1/2 cup of milk")."""
    unit = _OF_A.match(after)
    if unit is None or unit[1] not in _UNIT_WORDS or (unit[1].endswith("s") and unit[1] not in UNITS):  # singular
        return ""
    name = UNITS.get(unit[1], (unit[1],))[0]
    return " of an" if name[0] in "aeiou" or name.startswith("hour") else " of a"


# a singular unit after a fraction, and whether a word of where or how, or a clause's end, follows it
_LONE_UNIT = re.compile(r"[ \t]+([a-z]+)\b(?![.'’-]\w)((?=[ \t]+(?:by|from|away|in|to|per|each|deep|long|tall|wide|thick|high|"
                        r"higher|lower|more|less|farther|further|closer)\b)|(?=[ \t]*(?:[,;:!?)]|\.(?![ \t]*[a-z])|\Z)))?")


def _fraction_of(numerator: int, denominator: int, match: re.Match[str]) -> str:
    """A fraction's words; a lone unit after one is "of a" unit ("3/4 mile away" "three quarters of a mile away",
    "1/1000 s." "a thousandth of a second."), though not after an article ("a ⅓ share") nor after a half or a
    quarter, said as one word with its unit ("1/4 acre." "one quarter acre.")."""
    said = fraction_words(numerator, denominator)
    unit = _LONE_UNIT.match(match.string, match.end())
    if "/" in match.group() and numerator == 1 and denominator in (2, 4) and unit and (unit[1] in _UNIT_WORDS or unit[1] == "point") \
            and not unit[1].endswith("s") and not _DETERMINER_BEFORE.search(match.string, max(0, match.start() - 8), match.start()):
        if unit[2] is not None:  # "by 1/4 point." "a quarter point", "rise 1/2 meter by" "half a meter by": an amount
            if denominator == 4:  # alone, not a recipe's ("1/4 cup of butter" "one quarter cup")
                return "a quarter"
            return "half an" if unit[1][0] in "aeio" or unit[1].startswith("hour") else "half a"
    of = _of_a(match.string[match.end():match.end() + 40])
    if not of or _DETERMINER_BEFORE.search(match.string, max(0, match.start() - 8), match.start()) \
            or numerator == 1 and denominator in (2, 4):
        return said
    if numerator != 1:
        return said + of
    part = said.split(" ", 1)[1]
    return ("an " if part[0] in "aeio" else "a ") + part + of


def _percent_range(match: re.Match[str]) -> str:
    a, b = re.fullmatch(rf"({NUM})%[ \t]?[-–][ \t]?([-−]?{NUM})%", match.group()).groups()  # type: ignore[union-attr]
    return f"{w.number(a)} to {'minus ' if b[0] in '-−' else ''}{w.number(b.lstrip('-−'))} percent"


# "a 26' truck": a length after an article, before what it measures, is said as one word with it ("foot")
_ARTICLE_BEFORE = re.compile(r"(?i:\b(?:an?|the))[ \t]+\Z")
_MEASURED_AFTER = re.compile(r"[ \t]+(?!(?:of|and|or|to|by|from|in|on|at|with|x|is|was)\b)[a-z]")


_NOT_A_NOUN_AFTER = re.compile(r"[ \t]+(?:tall|high|long|wide|deep|thick|now|ago|then|but|so|yet|as|for|when|while|"
                               r"barefoot|and|or)\b")


def _feet(match: re.Match[str]) -> str:
    feet, inches = re.findall(r"\d+", match.group()) + [""] * (2 - len(re.findall(r"\d+", match.group())))
    attributive = _ARTICLE_BEFORE.search(match.string, max(0, match.start() - 6), match.start()) \
        and _MEASURED_AFTER.match(match.string, match.end())
    if inches and _MEASURED_AFTER.match(match.string, match.end()) \
            and not _NOT_A_NOUN_AFTER.match(match.string, match.end()):
        return f"{w.cardinal(feet)}-foot-{w.cardinal(inches)}"  # "the 7'4\" rookie": a height before its noun
    said = w.cardinal(feet) + (" foot" if feet == "1" or attributive else " feet")
    return said + (f" {w.cardinal(inches)} inch" + ("" if inches == "1" or attributive else "es") if inches else "")


def _mixed_words(text: str) -> str:
    """"4" -> "four", "1 1/4" -> "one and a quarter": a whole number or a mixed number's words."""
    text = text.strip().replace("-", " ")
    if " " not in text:
        return w.cardinal(text)
    whole, fraction = text.split()
    a, b = (int(x) for x in fraction.split("/"))
    said = fraction_words(a, b)
    if a == 1:
        rest = said.split(" ", 1)[1]
        said = ("an " if rest[0] in "aeio" else "a ") + rest
    return f"{w.cardinal(whole)} and {said}"


def _hyphen_mixed(match: re.Match[str]) -> str:
    """"1-1/4\"" -> "one and a quarter inch" before what it sizes, "inches" where it ends a phrase."""
    said = _mixed_words(match.group().rstrip("\"”″").replace("-", " "))
    if match.group()[-1] not in "\"”″":
        return said
    sized = re.match(r"[ \t]+[\w-]", match.string[match.end():]) and not _HOW_BIG_AFTER.match(match.string, match.end())
    return said + (" inch" if sized else " inches")


def _mixed_fraction(match: re.Match[str]) -> str:
    whole, fraction = match.group().split()
    a, b = (int(x) for x in fraction.split("/"))
    said = fraction_words(a, b)
    if a == 1:
        rest = said.split(" ", 1)[1]
        said = ("an " if rest[0] in "aeio" else "a ") + rest  # "three and an eighth"
    return f"{w.cardinal(whole)} and {said}"


def port(digits: str) -> str:
    """A port's number: a round thousand as a number ("3000" "three thousand"), others digit by digit ("8080")."""
    return w.cardinal(digits) if re.fullmatch(r"[1-9]000", digits) else w.digits(digits)


def ipv4(text: str) -> list[str] | None:
    """``text``'s four parts where it is an IPv4 address, else None."""
    parts = text.split(".")
    return parts if len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts) else None


def _version(match: re.Match[str]) -> str | None:
    if "/" in match.group():  # "10.0.0.0/24": a network and its prefix's length
        address, _, bits = match.group().partition("/")
        parts = ipv4(address)
        return None if parts is None or int(bits) > 32 else ip(parts) + " slash " + w.cardinal(bits)
    text, _, digits = match.group().partition(":")
    if digits:  # an address and its port: "10.0.0.12:8080"
        parts = ipv4(text)
        return None if parts is None else ip(parts) + " colon " + port(digits)
    prefix = letter = ""
    if text[-1].isalpha():  # "7.2.1a": a release's letter after its last part, said as a capital
        text, letter = text[:-1], " " + text[-1].upper()
    if text[0] in "vV":
        prefix, text = "version ", text[1:]
    parts = text.split(".")
    if not prefix and ipv4(text):  # an IP address
        return ip(parts)
    if len(parts) == 2:
        return prefix + w.number(text)
    if not prefix and len(parts) == 3 and len(parts[0]) <= 3 and all(len(p) == 3 for p in parts[1:]) \
            and parts[0] != "0" and (parts[1:] == ["000", "000"] or len(parts[0]) < 3):
        return w.cardinal("".join(parts))  # "1.000.000": thousands grouped by full stops, as much of Europe writes
    # "1.0.4521": a build's number of four digits or more, digit by digit
    return prefix + " point ".join(w.digits(p) if len(p) >= 4 else w.cardinal(p) for p in parts) + letter


def ip(parts: list[str]) -> str:
    """"10.0.0.24" "ten dot zero dot zero dot twenty-four"; once an address holds a three-digit part, its later parts
    are read digit by digit too ("203.0.113.42": "... one one three dot four two")."""
    said, by_digit = [], False
    for part in parts:
        by_digit = by_digit or len(part) == 3
        said.append(w.digits(part) if by_digit else w.cardinal(part))
    return " dot ".join(said)


def _number_sign(match: re.Match[str]) -> str:
    """"#4521" -> "number forty-five twenty-one" (an order, a unit: in pairs, as people say them); "#1,204" a rank,
    as a number; after "dial" or "press", the pound key ("Dial #250": "pound two five zero")."""
    digits = match.group()[1:].strip()
    if len(digits) >= 2 and "," not in digits and _KEYED.search(match.string, max(0, match.start() - 24), match.start()):
        return "pound " + w.digits(digits)  # "Dial #250": keyed on a phone, the pound key and its digits
    return "number " + (w.cardinal(digits) if "," in digits else w.paired(digits))


# (or after a code's word: "Gate code is #5823", a code keyed on a pad, its pound key first)
_KEYED = re.compile(r"(?i:\b(?:dial|dialing|press|key|punch|enter)(?:[ \t]+in)?|\b(?:pass)?code(?:[ \t]+is)?:?)[ \t]+\Z")


_SIZE_UNIT = r"(?:in|ft|cm|mm|km|mi|m|yd|px|['’′]|[\"”″])"  # "10' x 12'": feet and inches by their marks too
_SIZE_UNIT_AT = r"(?:[ \t]?(?:in|ft|cm|mm|km|mi|m|yd|px)(?![\w])|['’′\"”″])"  # a size's unit where it stands
_SIZE_MARKS = {"'": "ft", "’": "ft", "′": "ft", '"': "in", "”": "in", "″": "in"}


def _dimensions(match: re.Match[str]) -> str:
    """"22 x 14 x 9 in" -> "twenty-two by fourteen by nine inches"; "30 cm x 20 cm" -> "thirty centimeters by twenty
    centimeters"."""
    sizes = re.findall(rf"({NUM})(?:[ \t]?({_SIZE_UNIT}))?", match.group())
    sizes = [(size, _SIZE_MARKS.get(unit, unit)) for size, unit in sizes]
    if len(sizes) == 2 and all(re.fullmatch(r"[1-9]\d{2,3}", size) and unit in ("", "px") for size, unit in sizes):
        # "1920×1080": a screen's pixels, "nineteen twenty by ten eighty"; "1920x1080px" and "pixels"
        return " by ".join(w.paired(size) for size, _ in sizes) + (" pixels" if sizes[1][1] else "")
    # "Area = 20 ft × 15 ft = 300 sq ft": sizes with their units before "=" are multiplied, "times"; so are sizes
    # before "is" and a number, a product stated ("12 × 8 is 96")
    # ("7 × 2 cups = 14 cups": a count of a thing before "=", too)
    joint = " times " if re.match(r"[ \t]*(?:[a-z]{2,12}[ \t]*)?(?:=|(?:is|equals)[ \t]+[-−]?\d)",
                                  match.string[match.end():match.end() + 26]) \
        else " by "
    return joint.join(w.number(size.replace(",", "")) + (" " + UNITS[unit][1] if unit else "") for size, unit in sizes)


def _count_times(match: re.Match[str]) -> str:
    count, size, unit = re.fullmatch(rf"(\d+)[ \t]*[x×][ \t]*({NUM})[ \t]?(\w+)", match.group()).groups()
    return f"{w.cardinal(count)} times {w.number(size.replace(',', ''))} {UNITS[unit][0 if size == '1' else 1]}"


def _hyphen_unit(match: re.Match[str]) -> str:
    """"a 10-min walk" -> "a ten minute walk": a measure that describes what follows, its unit singular."""
    size, unit = match.group().split("-", 1)
    return f"{w.number(size.replace(',', ''))} {UNITS[unit.rstrip('.')][0]}"


_HOW_BIG_AFTER = re.compile(r"[ \t]+(?:[oO]\.[cC](?=\.)|wide|long|tall|deep|high|thick|across|diagonal|apart|of|in|on|at|from|above|below|under|off|up|down|or|and|for)\b"
                            r"|[ \t]+(?:to|through|thru)[ \t]+\d{1,3}(?:\.\d)?[\"”″]")  # "from 25\" to 50\"": a range's
# start, in inches as its end is


def _inches(match: re.Match[str]) -> str:
    size = match.group()[:-1]
    if _HOW_BIG_AFTER.match(match.string, match.end()):  # "18\" wide", "6\" of snow": the plural, no noun described
        return w.number(size) + (" inch" if size == "1" else " inches")
    return w.number(size) + " inch"  # before what it measures: "a 65\" TV" "a sixty-five inch TV"


_COMPASS = {"N": "north", "S": "south", "E": "east", "W": "west", "NE": "northeast", "NW": "northwest",
            "SE": "southeast", "SW": "southwest"}


def _land_part(match: re.Match[str]) -> str:
    point, fraction = match.group().split()
    return _COMPASS[point] + (" quarter" if fraction.endswith("4") else " half")


def _military(match: re.Match[str]) -> str:
    hours, minutes = match.group()[:2], match.group()[2:4]
    said = w.cardinal(str(int(hours))) if hours[0] != "0" else "zero " + w.cardinal(hours[1])
    said += " hundred" if minutes == "00" else " " + w.cardinal(minutes)
    return said + (" hours" if match.group().lower().endswith(("hr", "hrs")) else "")  # "1100 hrs": the unit with its time


def _duration(match: re.Match[str]) -> str:
    """"1h 30m" -> "one hour thirty minutes", "45m 30s": a compound duration (a lone "5m" is meters)."""
    parts = re.findall(r"(\d+)[ \t]?([hms])", match.group())  # "2 h 15 min" too
    names = {"h": "hour", "m": "minute", "s": "second"}
    return " ".join(f"{w.cardinal(n)} {names[u]}{'' if n == '1' else 's'}" for n, u in parts)


def _fraction_unit(match: re.Match[str]) -> str:
    """A unit after a fraction another rule read: "1/8 tsp" one eighth teaspoon, "½ tsp"; "1 1/2 cups", "1½ cups"
    teaspoons; singular before a plural noun it describes ("3 1/4 ft lengths" three and a quarter foot lengths)."""
    whole = re.search(r"\d[ \t]\d+/\d+[ \t]$|\d[ \t]?[½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞][ \t]$",
                      match.string[max(0, match.start() - 8):match.start()])
    return UNITS[match.group().rstrip(".")][1 if whole and not attributive(match) else 0]


# "ISO chip: 900 164 000 123 456", "Microchip # 985 112 003 456 789": an identifier's digits in groups after its noun
_ID_NOUN_BEFORE = re.compile(r"(?<![\w'])(?i:chip|microchip|serial|ID|IMEI|account|acct)\.?(?:[ \t]*(?:#|no\.|number))?"
                             r":?[ \t]*\Z")


def _grouped_thousands(match: re.Match[str]) -> str:
    """"1 000 000" (thousands grouped by spaces, as SI and ISO 31-0 write them) -> "one million"."""
    groups = match.group().split(" ")
    if len(groups) >= 4 and all(len(group) == 3 for group in groups) and _ID_NOUN_BEFORE.search(
            match.string, max(0, match.start() - 24), match.start()):
        return ", ".join(w.digits(group) for group in groups)
    return w.cardinal(re.sub(r"\D", "", match.group()))


def _scientific(match: re.Match[str]) -> str:
    """"3.2e-5" -> "three point two times ten to the power of minus five" (E notation)."""
    mantissa, power = re.split(r"[eE]", match.group())
    sign = "minus " if power.startswith(("-", "−")) else ""
    return f"{w.number(mantissa)} times ten to the power of {sign}{w.cardinal(power.lstrip('+-−'))}"


# "the 2d Infantry", "the 3d Circuit", "32d President": the military's and the courts' "d" for "nd" and "rd", before a
# name (a capital); "3d printing", "2D game" (a capital D) are dimensions
_D_ORDINAL = r"(?<![\w.,])(?:\d*[02-9])?[23]d(?=[ \t]+[A-Z][a-z])(?![ \t]+(?:Printer|Printing|Printed|Model|Scan|Movie|Glasses)\b)"
_HOURS_BEFORE = re.compile(r"(?:(?i:\b(?:every|within|for|after|over|in|q))[ \t]+|[×÷=][ \t]?)\d+(?:\.\d+)?[ \t]\Z")
_HOURS_AFTER = re.compile(r"[ \t]*(?:[.,;:!?)=×÷]|\Z)|[ \t]+(?:of|after|before|later|ago|apart|or|and|to|for|per|each|daily)\b")


# "Hold for 5 to 10 s", "wait 30 s until": a spaced "s" after a number (or a range's end) is seconds after a word of
# how long, or where a phrase ends or goes on with how long after it
_SECONDS_BEFORE = re.compile(r"(?i:\b(?:every|within|for|after|over|in|wait|hold|holds|lasts?|takes?|took|about|"
                             r"around|under))[ \t]+(?:\d+(?:\.\d+)?[ \t]?(?:to|-|–)[ \t]?)?\d+(?:\.\d+)?[ \t]\Z")
_SECONDS_AFTER = re.compile(r"[ \t]*(?:[.,;:!?)=×÷]|\Z)|[ \t]+(?:of|after|before|later|ago|apart|or|and|to|for|per|each|"
                            r"until|till|then|while|when)\b")


def _spaced_second(match: re.Match[str]) -> str | None:
    text, start, end = match.string, match.start(), match.end()
    before = text[max(0, start - 32):start]
    if not (_SECONDS_BEFORE.search(before) and _SECONDS_AFTER.match(text, end)):
        return None
    return "second" if one_before(match) else "seconds"


def _spaced_hour(match: re.Match[str]) -> str | None:
    """"every 8 h", "within 24 h of onset", "lasts 1.5 h.": a spaced "h" after a number is hours after a word of how
    long or how often, or where a phrase ends after it (not "the 5 h mark", a letter's label maybe)."""
    text, start, end = match.string, match.start(), match.end()
    before = text[max(0, start - 24):start]
    if not (_HOURS_BEFORE.search(before) or _HOURS_AFTER.match(text, end)):
        return None
    return "hour" if one_before(match) else "hours"


# "Counting by 7s", "grouped in 3s": numbers in the plural after a word of counting or grouping, not seconds
_COUNTED_BY = re.compile(r"(?i:\b(?:count|counts|counting|counted|skip-count\w*|group|groups|grouping|grouped|"
                         r"line[ \t]up|lined[ \t]up|go|goes|going|went|sort|sorted|arrange|arranged)[ \t]+(?:by|in)[ \t]+"
                         r"(?:\d{1,3}s,?[ \t]+(?:and|or|then)?[ \t]*)?)\Z")
# "a net force of 10 N": a newton after a number, where a force is named before it (elsewhere "N" may be north)
_FORCE_BEFORE = re.compile(r"(?i:\b(?:force|forces|weight|tension|thrust|drag|friction|lift|load|pull|push|"
                           r"newtons?)\b)[^.;:!?\n]{0,24}\Z")


# "rated for 200 A", "a 20 A breaker": a spaced capital "A" after a number is amps where electricity is the subject
# (elsewhere it may be a grade, a letter, a label)
_ELECTRIC_BEFORE = re.compile(r"(?i:\b(?:rated|rating|breakers?|panels?|circuits?|fuses?|amps?|amperage|service|"
                              r"current|volts?|electrical|wiring|wires?|outlets?|chargers?|draws?|drawing))\b"
                              r"|\d[ \t]?(?:[kM]?W|k?V|kVA)(?![\w/])"  # "240 V × 32 A", "11.5 kW (48 A)": beside power
                              r"(?:[^.;:!?\n]|\.(?=\d)){0,40}\Z")  # "draws 0.5 A": a decimal point inside
_ELECTRIC_AFTER = re.compile(r"[ \t]+(?i:(breaker|circuit|fuse|service|panel|outlet|charger|receptacle|plug|load|"
                             r"supply|main|disconnect)s?)\b")


_A_BEFORE_NUMBER = re.compile(r"(?:^|\s)(?i:an?)[ \t]+\d+(?:\.\d+)?[ \t]\Z")
# "a 20 A, 120 V circuit": amps and then volts, both describing the noun after them
_VOLTS_AFTER = re.compile(r",[ \t]*\d+(?:\.\d+)?[ \t]?k?V(?:[ \t]+([a-z]+))?(?![\w/])")


def _amps(match: re.Match[str]) -> str | None:
    text, start = match.string, match.start()
    after = _ELECTRIC_AFTER.match(text, match.end())
    volts = _VOLTS_AFTER.match(text, match.end(), match.end() + 24)
    if not after and not volts and not _ELECTRIC_BEFORE.search(text, max(0, start - 64), start - 1):
        return None
    described = volts is not None and volts[1] is not None and volts[1] not in NOT_DESCRIBED \
        and volts[1] not in VERBS_IN_S and _A_BEFORE_NUMBER.search(text, max(0, start - 32), start) is not None
    return "amp" if after or described or one_before(match) else "amps"


# "842 − 790 = 52 kWh", "120 × 15 = 1,800 W": a unit after a formula's result (which the formula's rule read)
_RESULT_BEFORE = re.compile(r"[=×][ \t]?[-−]?[\d,]+(?:\.\d+)?[ \t]\Z")


def _result_unit(match: re.Match[str]) -> str | None:
    if not match.string[match.start() - 2:match.start()].strip().isdigit():
        return UNITS[match.group()][0]  # "your 250th kWh": one unit, counted by its ordinal
    if not _RESULT_BEFORE.search(match.string, max(0, match.start() - 24), match.start()):
        return None
    if match.group() == "nm" and nautical(match):
        return "nautical mile" if one_before(match) else "nautical miles"
    return UNITS[match.group()][0 if one_before(match) else 1]


def _tire_size(match: re.Match[str]) -> str:
    """"225/65R17" "two twenty-five sixty-five R seventeen", "P215/60R16" "P two fifteen sixty R sixteen": a tire's
    width (in pairs, as a year), its aspect ratio and its rim's diameter, the construction's letters spelled."""
    kind, width, ratio, build, rim = re.fullmatch(r"(P|LT|ST|T)?(\d{3})/(\d{2})(Z?R)(\d{2})",
                                                  match.group()).groups()  # type: ignore[union-attr]
    said = [" ".join(kind)] if kind else []
    return " ".join(said + [w.paired(width), w.cardinal(ratio), " ".join(build), w.number(rim)])


def _counted_by(match: re.Match[str]) -> str | None:
    if not _COUNTED_BY.search(match.string, max(0, match.start() - 40), match.start()):
        return None
    return w.plural(w.cardinal(match.group()[:-1]))


_BATTING_BEFORE = re.compile(r"(?i:\b(?P<cue>hitting|batting|batted|bats|hit|hits|average[ \t]+of|avg\.?)[ \t]+\Z)"
                             r"|(?:\b(?:an?|his|her|their)[ \t]+\Z)")
_BATTING_AFTER = re.compile(r"[ \t]+(?:average|avg|batting|hitter|clip|mark|OBP|slugging|on-base)\b")


def _batting_average(match: re.Match[str]) -> str | None:
    """".310" after "hitting", "batting", or ("a .285 average") before "average": three figures read in pairs."""
    before = match.string[max(0, match.start() - 24):match.start()]
    cue = _BATTING_BEFORE.search(before)
    if cue and (cue["cue"] or _BATTING_AFTER.match(match.string, match.end())):
        return w.paired(match.group()[1:])
    return None


# "0 K", "at 77 K": a spaced capital "K" after a number is kelvin where a temperature is the subject (elsewhere, after
# money, "50 K" may be thousands)
_TEMPERATURE_NEAR = re.compile(r"(?i:\b(?:temperatures?|temp|absolute|zero|kelvin|cool\w*|cold\w*|heat\w*|warm\w*|"
                               r"boil\w*|freez\w*|melt\w*|thermal|cryo\w*|degrees?|hot|°))")


def _kelvin(match: re.Match[str]) -> str | None:
    if not _TEMPERATURE_NEAR.search(match.string, max(0, match.start() - 48), match.start()):
        return None
    return "kelvin"


def _newtons(match: re.Match[str]) -> str | None:
    if not _FORCE_BEFORE.search(match.string, max(0, match.start() - 40), match.start()):
        return None
    return "newton" if one_before(match) else "newtons"


_LENGTH_NAMED = re.compile(r"(?i:\b(?:height|width|length|depth|thickness|diameter|wide|tall|long|deep|high))"
                           r"[ \t]*[:=]?[ \t]*\d[\d.,]*[ \t]\Z")


_STOOD_BEFORE = re.compile(r"(?<![\w'])(?i:stands|stood|standing|measures|measured|measuring)[ \t]+\Z")


RULES: list[Rule] = [
    ("counted_by", r"(?<![\w.,])\d{1,3}s(?![\w'’])", _counted_by),
    ("newtons", r"(?<=\d[ \t])N(?![\w/'’°-])", _newtons),
    ("d_ordinal", _D_ORDINAL, lambda match: w.ordinal(match.group()[:-1])),
    # thousands grouped by a thin or no-break space, or by plain spaces in two groups or more (or "000": "10 000")
    ("grouped_thousands", r"(?<![\w.,+-])[1-9]\d{0,2}(?:(?:[\u00a0\u202f\u2009]\d{3})+|(?:[ ]\d{3}){2,}|[ ]000)(?![\w]|[ \u00a0\u202f\u2009]?\d|[.,]\d)",
     _grouped_thousands),
    ("scientific", r"(?<![\w.])\d+(?:\.\d+)?[eE][-+−]?\d{1,3}(?![\w.])", _scientific),
    ("phone", _PHONE, _phone),
    ("version", r"(?<![\w.])(?:[vV]\d+(?:\.\d+)*|\d+\.\d+\.\d+(?:\.\d+)*(?:[a-z](?![\w]|\.\w))?)(?::\d{2,5}(?![\d:])|/\d{1,2}(?![\w/.]))?(?![\w]|\.\d)", _version),
    ("mixed_fraction", r"(?<![\w./,])\d{1,3}[ \t]\d{1,2}/\d{1,2}(?![\w/])", _mixed_fraction),
    # "1-1/4\" PVC", "a 2-1/2 inch nail": a mixed number joined by a hyphen, as the trades write sizes (never a minus)
    ("mixed_fraction", r"(?<![\w./,-])\d{1,2}-(?:1/2|[13]/4|[1357]/8|(?:[13579]|1[135])/16)(?![\w/-])[\"”″]?", _hyphen_mixed),
    # "in 4/4 time", "6/8 meter": a time signature, each number said ("four four"), not a fraction or a date
    ("time_signature", r"(?<![\w./,])(?!1/)\d{1,2}/(?:2|4|8|16)(?=[ \t]+(?:time|meter|metre|signature|time[ \t]signature)\b)",
     lambda match: None if _WORKED_BEFORE.search(match.string, max(0, match.start() - 16), match.start())
     else " ".join(w.cardinal(n) for n in match.group().split("/"))),
    # "the SW 1/4 of the NE 1/4 of Section 12": a land description's part of a section, a compass point's quarter or half
    ("fraction", r"(?<![\w/])(?:NE|NW|SE|SW|N|S|E|W)[ \t]1/[24](?![\w/])(?=[ \t]+of\b|,)", _land_part),
    ("fraction", r"(?<=\bof[ \t]the[ \t])(?:NE|NW|SE|SW|N|S|E|W)[ \t]1/[24](?![\w/])", _land_part),
    # "17,000/µL", "250/mL": a count per a volume (a blood count, a concentration), "per microliter"
    ("per_unit", r"(?<![\w./,$])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?/(?:[µμu]L|mL|dL)(?![\w/])",
     lambda match: "%s per %s" % (w.number(match.group().split("/")[0].replace(",", "")),
                                  UNITS[match.group().split("/")[1]][0])),
    ("month_day", r"(?<![\w./,])\d{1,2}/\d{1,2}(?![\w/])", _month_day),
    ("month_year", r"(?<![\w./,])(?:0?[1-9]|1[0-2])/(?:19|20)\d\d(?![\w/])", _month_year),
    ("pressure", r"(?<![\w./,])\d{2,3}/\d{2,3}[ \t]?mmHg(?![\w])", _pressure),  # "120/80 mmHg": a blood pressure
    ("fraction", r"(?<![\w./,])\d{1,3}/\d{1,4}(?:st|nd|rd|th|ths|rds|nds)?(?![\w/])", _fraction),
    # "7.5/10", "4.5/5 stars": a score with decimals over its scale, "out of" (no fraction or date has a decimal)
    ("fraction", r"(?<![\w./,])\d{1,3}\.\d{1,2}/\d{1,3}(?![\w/]|[.,]\d)",
     lambda match: " out of ".join(w.number(part) for part in match.group().split("/"))),
    ("signed_fraction", r"(?<![\w./,-])[-−]\d{1,3}/\d{1,4}(?![\w/])",  # "-1/2": "minus one half"
     lambda match: "minus " + fraction_words(*(int(x) for x in match.group()[1:].split("/")))),
    ("percent_range", rf"{_START}{NUM}%[ \t]?[-–][ \t]?[-−]?{NUM}%", _percent_range),
    ("feet_inches", r"(?<![\w.])\d{1,2}[ \t]?ft[ \t]\d{1,2}[ \t]?in(?![\w])", _feet),
    ("feet", r"(?<![\w'’])\d{1,2}['’′](?:[ \t]?\d{1,2}(?:[\"”″]|'')?|-\d{1,2}(?:[\"”″]|''))(?![\w])|(?<![\w'’])\d{1,3}['’′](?=[ \t,.;]|$)", _feet),
    ("number_sign", r"(?<![\w&#])#[ \t]?(?:\d{1,3}(?:,\d{3})+|\d+)(?![\w]|,\d)", _number_sign),
    ("vulgar_fraction", r"(?<![\w.])(?:\d{1,3}[ \t]?)?[½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞](?:[\"”″](?=[ \t]+[\w-]))?", _vulgar),  # "1½", "1 ½"
    # "4 × 25 g": a count times a measure that is no length (a mass, a volume, energy), "four times twenty-five grams"
    ("dimensions", rf"{_START}\d{{1,3}}(?:[ \t]*×[ \t]*|[ \t]x[ \t]){NUM}[ \t]?(?:mg|mcg|g|kg|ml|mL|L|oz|lbs?|kcal|cal|IU)(?![\w])"
                    r"(?=[ \t]*(?:[=≈]|[,.;:)]|\Z|(?:is|equals|of)\b))",  # a product: before "=", "of", a stop
     _count_times),
    ("dimensions", rf"{_START}{NUM}{_SIZE_UNIT_AT}?(?:[ \t]*[x×][ \t]*{NUM}{_SIZE_UNIT_AT}?){{1,2}}"
     rf"(?![\w'’′\"”″⁻])(?!(?<=\d)[ \t]*=)",  # a unit after every size too: "40 cm × 30 cm × 20 cm"
     _dimensions),
    ("inches", r"(?<![\w\"“”'.])\d{1,3}(?:\.\d)?[\"”″](?=[ \t]+[\w-])", _inches),
    # "joists 12–16\" o.c.", "a 2-4\" gap": a range of inches, the mark after its second number
    ("inches", r"(?<![\w\"“”'.,/-])\d{1,3}[ \t]?[-–][ \t]?\d{1,3}[\"”″](?=[ \t]+[\w-]|[ \t]*(?:[,.;:)]|\Z))",
     lambda match: " to ".join(w.cardinal(n) for n in re.findall(r"\d+", match.group())) + (
         " inch" if re.match(r"[ \t]+[\w-]", match.string[match.end():]) and not _HOW_BIG_AFTER.match(
             match.string, match.end()) else " inches")),
    # "2 × 48\" = 96\"": a formula's result in inches, at its end; "from 25\" to 50\"": a range's end
    ("inches", r"(?:(?<=[=×][ \t])|(?<=\d[\"”″][ \t]to[ \t]))\d{1,3}(?:\.\d)?[\"”″](?=[ \t]*(?:[,.;)]|\Z|\n))",
     lambda match: w.number(match.group()[:-1]) + (" inch" if match.group()[:-1] == "1" else " inches")),
    # "3/8\" x 4\" lag screws": a fastener's width by its length, inches each ("three eighths by four inch")
    ("fraction_inches", r"(?<![\w./,])\d{1,2}/\d{1,2}[\"”″][ \t]*[x×][ \t]*\d{1,3}(?:[ \t-]\d{1,2}/\d{1,2})?[\"”″](?![\w])",
     lambda match: "%s by %s inch" % (fraction_words(*(int(x) for x in re.findall(r"\d+", match.group())[:2])),
                                      " and ".join(_mixed_words(part) for part in re.split(r"[ \t]*[x×][ \t]*", match.group()[:-1])[1:]))
     + ("" if re.match(r"[ \t]+[a-z]", match.string[match.end():]) and not _HOW_BIG_AFTER.match(match.string, match.end()) else "es")),
    ("fraction_inches", r"(?<![\w./,])\d{1,2}/\d{1,2}[\"”″](?=[ \t]+[\w-]|[ \t]*[,.;]|$)",  # "1/4\" drywall screws"
     lambda match: (fraction_words(*(int(x) for x in match.group()[:-1].split("/"))) + " inch").replace("quarters inch", "quarter inch")
     if re.match(r"[ \t]+[\w-]", match.string[match.end():match.end() + 2]) and not _HOW_BIG_AFTER.match(match.string, match.end())
     else fraction_words(*(int(x) for x in match.group()[:-1].split("/"))) + " inch"
     if re.match(r"[ \t]+[\w-]", match.string[match.end():match.end() + 2])  # "3/4\" plywood": "three quarter inch"
     else fraction_words(*(int(x) for x in match.group()[:-1].split("/"))) + " of an inch"),
    ("military", r"(?<![\w.,:])(?:(?:[01]\d|2[0-3])[0-5]\d(?=[ \t](?:hours|HOURS)\b)|(?:[01]\d|2[0-3])[0-5]\d[ \t](?:hrs?|HRS?)(?![\w])|(?:(?<=\bat[ \t])|(?<=arrival[ \t])|(?<=departure[ \t])|(?<=departs[ \t])|(?<=arrives[ \t]))"
                 r"0\d[0-5]\d(?![\w:-]|[.,]\d)"
                 r"|(?:(?<=\bat[ \t]0\d[0-5]\d[ \t]and[ \t])|(?<=\bat[ \t]0\d[0-5]\d[ \t]or[ \t]))"
                 r"(?:[01]\d|2[0-3])[0-5]\d(?![\w:-]|[.,]\d))",
     _military),  # "1400 hours", "1100 hrs", "at 0800", "at 0800 and 2000" (a second time in the list)
    ("inches_tall", r"(?<![\w.])\d{1,3}(?:\.\d+)?[ \t]in(?=[ \t]+(?:tall|wide|long|deep|high|thick|across|diagonal)\b)",
     lambda match: w.number(match.group().split()[0]) + " inches"),  # "22 in tall": inches, not the word "in"
    # "He stands 22 in at the shoulder": a height stood or measured, then where it is taken
    ("inches_tall", r"(?<![\w.])\d{1,3}(?:\.\d+)?[ \t]in(?=[ \t]+at\b)",
     lambda match: w.number(match.group().split()[0]) + " inches" if _STOOD_BEFORE.search(
         match.string, max(0, match.start() - 16), match.start()) else None),
    ("hyphen_unit", rf"{_START}{NUM}-(?:{_SPACED_UNIT}(?:\.(?=[ \t]+[a-z]))?|in\.?)(?=[ \t]+(?:[A-Za-z]|\d{{1,2}}x\d{{1,2}}(?![\w])))", _hyphen_unit),  # "an 8-ft 2x4": a length before a board's size  # "a 12-in. skillet", "a 50-gal. tank"
    ("unit_alone", r"(?<=\d[ \t])M(?![\w'’/])", _spaced_meters),
    # "Visibility 10 SM", "vis 3 SM": a capital "SM" after a visibility's number is statute miles (a weather report's)
    ("unit_alone", r"(?<=\d[ \t])SM(?![\w'’/-])", lambda match: ("statute mile" if one_before(match) else "statute miles")
     if _VISIBILITY_BEFORE.search(match.string, max(0, match.start() - 32), match.start()) else None),
    ("unit_alone", r"(?<![$€£¥]\d[ \t])(?<![$€£¥]\d\d[ \t])(?<![$€£¥]\d{3}[ \t])(?<=\d[ \t])K(?![\w'’/])", _kelvin),  # "absolute zero is 0 K"  # "DEPTH: 4.6 M": meters after a length's name
    ("unit_alone", r"(?<=\d[ \t])(?:%s)(?![\w/])" % "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True)
                                                       if re.search(r"[/ ²³^]", u)),
     lambda match: UNITS[match.group()][1]),  # "3 × 10^8 m/s", "= 120 sq ft": a unit after a number another rule read
    # "3 × 10⁸ m/s", "10⁻³ kg": a power of a number, then any unit (not a word that may be one: "10² in all")
    ("power_unit", r"(?<=[⁰¹²³⁴⁵⁶⁷⁸⁹][ \t])(?:%s)(?![\w/])" % "|".join(
        re.escape(u) for u in sorted(UNITS, key=len, reverse=True) if (UNITS[u][2] or re.search(r"[/ ²³^]", u))
        and u not in _WORDLIKE_UNITS),
     lambda match: UNITS[match.group()][1]),
    # "93 million mi", "2.5 billion km": a unit after a number and its scale's word (which the number's rule reads)
    ("scaled_unit", r"(?:%s)(?:%s)(?![\w/])" % (
        "|".join(rf"(?<=\d[ \t]{scale}[ \t])" for scale in ("thousand", "million", "billion", "trillion")),
        "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True) if UNITS[u][2] and u not in _WORDLIKE_UNITS)),
     lambda match: UNITS[match.group()][1]),
    ("superscript_power", r"(?<=[0-9)])(?:⁻[⁰¹²³⁴⁵⁶⁷⁸⁹]+|[⁰¹⁴⁵⁶⁷⁸⁹][⁰¹²³⁴⁵⁶⁷⁸⁹]*|[²³][⁰¹²³⁴⁵⁶⁷⁸⁹]+)(?![\w])",
     _superscript_power),
    ("times_range", r"(?<![\w.])\d{1,3}x[ \t]?[-–][ \t]?\d{1,3}x(?![\w])",  # "3x–4x faster"
     lambda match: " to ".join(w.cardinal(n) for n in re.findall(r"\d+", match.group())) + " times"),
    ("duration", r"(?<![\w.])\d{1,3}[ \t]?h(?:[ \t]?\d{1,2}[ \t]?m(?:in)?)(?:[ \t]?\d{1,2}[ \t]?s(?:ec)?)?(?![\w])"
                 r"|(?<![\w.])\d{1,3}[ \t]?m[ \t]?\d{1,2}[ \t]?s(?![\w])", _duration),
    ("fraction_unit", r"(?:(?<=\d/\d[ \t])|(?<=\d/\d\d[ \t])|(?<=\d/\d{3}[ \t])|(?<=\d/\d{4}[ \t])"
                      r"|(?<=[½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞][ \t])|(?<=[½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞]-))(?:(?:%s)(?![\w/])"  # "a ¼-lb patty": a quarter-pound  # "1/1000 s": a second, after a fraction
                      r"|in\.(?=[ \t]+[a-z])|in(?=\.))"  # "a 3/8 in. drill bit", "to ¾ in.": inches (the sentence's stop kept)
     % "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True) if (UNITS[u][2] or u == "s") and u.isalpha()),
     _fraction_unit),
    # "a 1/2 HP motor", "a 5 HP pump": capital "HP" after a fraction, or before a machine, is horsepower (a game's
    # "-20 HP per second" is hit points, spelled)
    ("unit_alone", r"(?:(?<=\d/\d[ \t])|(?<=[\d½¼¾][ \t])(?=HP[ \t]+(?:motors?|pumps?|engines?|outboards?|compressors?|"
                   r"blowers?|mowers?|tractors?|generators?|disposals?|boats?|vac|vacuums?|router|saw|fans?|heat[ \t]pumps?)\b))HP(?![\w/'’-])",
     lambda match: "horsepower"),
    ("spaced_hour", r"(?<=\d[ \t])h(?![\w/'’-])", _spaced_hour),
    ("spaced_hour", r"(?<=\d[ \t])s(?![\w/'’-])", _spaced_second),
    # "1 in = 2.54 cm": a spaced "in" after a number, before a conversion's "=", is inches
    # "18 in of clearance": "in" before "of" is no preposition ("in of" is no English), inches
    ("inches_tall", r"(?<=\d[ \t])in(?=[ \t]?[=≈]|[ \t]?\([ \t]?\d|[ \t]+of\b)",  # "29 in (74 cm)": before its conversion too
     lambda match: "inch" if one_before(match) else "inches"),
    # "Desk height: 29 in", "Width 12 in,": after a word that names a length, the number, no word after
    ("inches_tall", r"(?<=\d[ \t])in(?![\w'’-]|[ \t]+[A-Za-z(])",
     lambda match: ("inch" if one_before(match) else "inches")
     if _LENGTH_NAMED.search(match.string, max(0, match.start() - 32), match.start()) else None),
    ("dimensions", r"(?<![\w/.-])(?:P|LT|ST|T)?[1-3]\d\d/[2-9]\dZ?R[12]\d(?![\w/-])", _tire_size),
    ("unit_alone", r"(?<=\d[ \t])A(?![\w'’/-])", _amps),  # "a 20 A breaker", "rated for 200 A"
    ("unit_alone", r"(?:(?<=\d[ \t])|(?<=\dst[ \t])|(?<=\dnd[ \t])|(?<=\drd[ \t])|(?<=\dth[ \t]))(?:%s)(?![\w/²³])" % "|".join(
        re.escape(u) for u in sorted(UNITS, key=len, reverse=True)
        if UNITS[u][2] and u not in _WORDLIKE_UNITS and not re.fullmatch(r"[a-z]", u)), _result_unit),
    # "= 30 − 12 = 18 g": a one-letter unit after a result, at a phrase's end ("= 18 g.")
    ("unit_alone", r"(?<=\d[ \t])(?:[gm]|in)(?![\w/²³'’-])(?=[ \t]*(?:[,.;:!?)]|\Z))", _result_unit),  # "= 40.65 in"
    # "BMI = weight (kg) ÷ height (m)²": a unit alone in brackets after a quantity's name, in a formula
    ("unit_alone", r"(?<=[a-z][ \t]\()(?:kg|g|mg|m|cm|mm|km|lbs?|ft|in|s|min|h|hr|L|mL)(?=\)(?:[²³]|[ \t]*[=÷×/*]))",
     lambda match: UNITS[match.group()][1]),
    # "10K-20K followers", "1.5M–2M": a range of numbers each with its scale's letter, "ten thousand to twenty thousand"
    ("suffix_range", r"(?<![\w.,/-])\d{1,3}(?:\.\d{1,2})?[kKMB][ \t]?[-–][ \t]?\d{1,3}(?:\.\d{1,2})?[kKMB](?![\w-])",
     lambda match: " to ".join(f"{w.number(n)} {MULTIPLIERS[scale]}"
                               for n, scale in re.findall(r"([\d.]+)([kKMB])", match.group()))),
    # "hitting .310", "a .285 average": a batting average, said as a number of thousandths in pairs ("three ten")
    ("batting_average", r"(?<![\w.,])\.[1-9]\d\d(?![\w]|[.,]\d)", _batting_average),
    ("quantity", _QUANTITY, _quantity),
    # "price ÷ sq ft", "the sq ft of a home": the area's abbreviated pair with no number is its name, "square feet"
    ("per_unit", r"(?<![\w./])(?<!\bper[ \t])(?<!\d[ \t])(?:sq\.?[ \t]?ft|SQ\.?[ \t]?FT)(?![\w])", lambda match: "square feet"),
    # "per kWh", "per sq ft": a unit named after "per" with no number before it, singular
    ("per_unit", r"(?<=\bper[ \t])(?:%s)(?![\w/²³])" % "|".join(
        re.escape(u) for u in sorted(UNITS, key=len, reverse=True) if len(u) > 1 and UNITS[u][2] and u not in (
            "in", "us", "ha", "am", "pm", "cal", "mo", "min", "ms")),
     lambda match: UNITS[match.group()][0]),
]
