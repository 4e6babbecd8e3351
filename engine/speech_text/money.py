"""Money: a currency's symbol or ISO code before or after an amount, scales, ranges and rates. Pure.

``$4.99`` "four dollars and ninety-nine cents", ``$.50`` "fifty cents", ``₩460 billion`` "four hundred sixty billion
won", ``CHF 40`` "forty Swiss francs", ``1,200 USD`` "one thousand two hundred dollars", ``12€``, ``$20-$30``,
``$15/hr``.
"""

from __future__ import annotations

import re

from engine.speech_text import words as w
from engine.speech_text.numbers import _END, MULTIPLIERS, PER, UNITS, Rule, trie
from engine.speech_text.numbers import NOT_DESCRIBED, attributive

# A currency -> (one, many, one hundredth, hundredths).
_DOLLARS = ("dollar", "dollars", "cent", "cents")


def _dollar(country: str) -> tuple[str, str, str, str]:
    return (f"{country} dollar", f"{country} dollars", "cent", "cents")


def _peso(country: str) -> tuple[str, str, str, str]:
    return (f"{country} peso", f"{country} pesos", "centavo", "centavos")


CURRENCIES = {
    "$": _DOLLARS, "£": ("pound", "pounds", "penny", "pence"), "€": ("euro", "euros", "cent", "cents"),
    "¥": ("yen", "yen", "sen", "sen"), "₹": ("rupee", "rupees", "paisa", "paise"), "₩": ("won", "won", "jeon", "jeon"),
    "₽": ("ruble", "rubles", "kopek", "kopeks"), "₺": ("lira", "lira", "kuruş", "kuruş"),
    "₦": ("naira", "naira", "kobo", "kobo"), "₱": ("peso", "pesos", "centavo", "centavos"),
    "฿": ("baht", "baht", "satang", "satang"), "₫": ("dong", "dong", "xu", "xu"),
    "₪": ("shekel", "shekels", "agora", "agorot"), "₴": ("hryvnia", "hryvnias", "kopiyka", "kopiykas"),
    "₼": ("manat", "manat", "qəpik", "qəpik"), "₲": ("guaraní", "guaraníes", "céntimo", "céntimos"),
    "zł": ("zloty", "zlotys", "grosz", "groszy"), "kr": ("krona", "kronor", "öre", "öre"),
    "Php": ("peso", "pesos", "centavo", "centavos"), "EC$": _dollar("East Caribbean"), "BZ$": _dollar("Belize"),
    "FJ$": _dollar("Fijian"), "DM": ("Deutsche Mark", "Deutsche Marks", "pfennig", "pfennigs"),
    "USD$": ("US dollar", "US dollars", "cent", "cents"),
    "USD": _DOLLARS,  # en-US: its own currency, "dollars"
    "EUR": ("euro", "euros", "cent", "cents"), "GBP": ("pound", "pounds", "penny", "pence"),
    "JPY": ("yen", "yen", "sen", "sen"), "INR": ("rupee", "rupees", "paisa", "paise"),
    "CHF": ("Swiss franc", "Swiss francs", "centime", "centimes"),
    "CAD": _dollar("Canadian"), "AUD": _dollar("Australian"), "NZD": _dollar("New Zealand"),
    "HKD": _dollar("Hong Kong"), "SGD": _dollar("Singapore"), "TWD": _dollar("New Taiwan"), "JMD": _dollar("Jamaican"),
    "TTD": _dollar("Trinidad and Tobago"),
    "CNY": ("yuan", "yuan", "fen", "fen"), "KRW": ("won", "won", "jeon", "jeon"),
    "MXN": _peso("Mexican"), "PHP": _peso("Philippine"), "DOP": _peso("Dominican"), "ARS": _peso("Argentine"),
    "CLP": _peso("Chilean"), "COP": _peso("Colombian"),
    "UYU": ("Uruguayan peso", "Uruguayan pesos", "centésimo", "centésimos"),
    "BRL": ("real", "reais", "centavo", "centavos"), "ZAR": ("rand", "rand", "cent", "cents"),
    "SEK": ("krona", "kronor", "öre", "öre"), "NOK": ("Norwegian krone", "Norwegian kroner", "øre", "øre"),
    "DKK": ("Danish krone", "Danish kroner", "øre", "øre"), "PLN": ("zloty", "zlotys", "grosz", "groszy"),
    "RUB": ("ruble", "rubles", "kopek", "kopeks"), "TRY": ("lira", "lira", "kuruş", "kuruş"),
    "AED": ("dirham", "dirhams", "fils", "fils"), "SAR": ("riyal", "riyals", "halala", "halalas"),
    "ILS": ("shekel", "shekels", "agora", "agorot"), "THB": ("baht", "baht", "satang", "satang"),
    "NGN": ("naira", "naira", "kobo", "kobo"), "CZK": ("Czech koruna", "Czech korunas", "haler", "halers"),
    "HUF": ("forint", "forints", "filler", "fillers"), "IDR": ("rupiah", "rupiahs", "sen", "sen"),
    "MYR": ("ringgit", "ringgits", "sen", "sen"), "VND": ("dong", "dong", "xu", "xu"),
    "PKR": ("Pakistani rupee", "Pakistani rupees", "paisa", "paise"),
    "LKR": ("Sri Lankan rupee", "Sri Lankan rupees", "cent", "cents"),
    "NPR": ("Nepalese rupee", "Nepalese rupees", "paisa", "paise"), "BDT": ("taka", "taka", "poisha", "poisha"),
    "EGP": ("Egyptian pound", "Egyptian pounds", "piastre", "piastres"),
    "KES": ("Kenyan shilling", "Kenyan shillings", "cent", "cents"),
    "UGX": ("Ugandan shilling", "Ugandan shillings", "cent", "cents"),
    "TZS": ("Tanzanian shilling", "Tanzanian shillings", "cent", "cents"), "GHS": ("cedi", "cedis", "pesewa", "pesewas"),
    "PEN": ("sol", "soles", "céntimo", "céntimos"), "ISK": ("Icelandic krona", "Icelandic kronur", "eyrir", "aurar"),
    "UAH": ("hryvnia", "hryvnias", "kopiyka", "kopiykas"), "QAR": ("Qatari riyal", "Qatari riyals", "dirham", "dirhams"),
    "KWD": ("Kuwaiti dinar", "Kuwaiti dinars", "fils", "fils"), "BHD": ("Bahraini dinar", "Bahraini dinars", "fils", "fils"),
    "OMR": ("Omani rial", "Omani rials", "baisa", "baisa"),
    "JOD": ("Jordanian dinar", "Jordanian dinars", "piastre", "piastres"),
    "MAD": ("dirham", "dirhams", "centime", "centimes"), "RON": ("leu", "lei", "ban", "bani"),
    "BGN": ("lev", "leva", "stotinka", "stotinki"), "HRK": ("kuna", "kunas", "lipa", "lipa"),
    "KZT": ("tenge", "tenge", "tiyn", "tiyn"), "GEL": ("lari", "lari", "tetri", "tetri"),
    "CRC": ("colón", "colones", "céntimo", "céntimos"), "XOF": ("CFA franc", "CFA francs", "centime", "centimes"),
    "ZMW": ("kwacha", "kwacha", "ngwee", "ngwee"), "ETB": ("birr", "birr", "santim", "santim"),
    "RSD": ("dinar", "dinars", "para", "para"), "MMK": ("kyat", "kyat", "pya", "pya"),
    "KHR": ("riel", "riels", "sen", "sen"), "LAK": ("kip", "kip", "att", "att"),
    "IQD": ("Iraqi dinar", "Iraqi dinars", "fils", "fils"), "IRR": ("rial", "rials", "dinar", "dinars"),
    "DZD": ("Algerian dinar", "Algerian dinars", "centime", "centimes"),
    "TND": ("Tunisian dinar", "Tunisian dinars", "millime", "millimes"),
    "ETH": ("ether", "ether", "", ""), "BTC": ("bitcoin", "bitcoin", "", ""),  # no cents: its decimals are said
}
# A currency's other written forms: a country's letters before its dollar, peso, yuan or yen, other symbols and codes,
# and the short forms written after amounts.
_ALIASES = {
    "US$": "USD", "$US": "USD", "C$": "CAD", "CA$": "CAD", "A$": "AUD", "AU$": "AUD", "NZ$": "NZD", "HK$": "HKD",
    "S$": "SGD", "NT$": "TWD", "J$": "JMD", "TT$": "TTD", "R$": "BRL", "MX$": "MXN", "Mex$": "MXN", "CN¥": "CNY",
    "JP¥": "JPY", "元": "CNY", "RMB": "CNY", "Rs": "INR", "Rs.": "INR", "Rp": "IDR", "Kč": "CZK", "SFr": "CHF",
    "TL": "TRY", "₡": "CRC", "₵": "GHS", "₸": "KZT", "₾": "GEL", "৳": "BDT", "₿": "BTC", "XAF": "XOF",
}
CURRENCIES.update({alias: CURRENCIES[code] for alias, code in _ALIASES.items()})
_SYMBOLS = sorted((c for c in CURRENCIES if not c.isalpha()), key=len, reverse=True)
_CODES = sorted(c for c in CURRENCIES if c.isalpha())
_CODE = trie(_CODES)  # a trie: the codes are tried after every number, not one by one
_AFTER_ONLY = {"DM", "TL"}  # a currency after its amount only: "a DM", a team's "TL" before a number are not money
_CODE_BEFORE = trie([code for code in _CODES if code not in _AFTER_ONLY])
_CURRENCY = r"(?:%s|%s(?=[ \t]?[\d.]))" % ("|".join(re.escape(s) for s in _SYMBOLS), _CODE_BEFORE)
# after an amount: every one-character symbol ("12€", "50₱"), "¢", a dollar sign not before a word, any code ("100USD")
_SUFFIX = r"(?:[ \t]?(?:[%s¢]|\$(?![\w$]))|[ \t]?%s(?![\w]))" % (
    "".join(re.escape(s) for s in _SYMBOLS if len(s) == 1 and s != "$"), _CODE)
# "1.200,50", "2,50": as much of Europe writes it; "4,5 million" (one decimal before a scale)
_DECIMAL_COMMA = (r"(?:(?:\d{1,3}(?:\.\d{3})+|\d+),\d\d(?![\d,])"
                  r"|\d{1,3},\d(?=[ \t]?(?:million|billion|trillion|mn|bn|tn|M|B)(?![\w])))")
# "₹1,50,000", "Rs 12,34,567": thousands, then lakhs and crores grouped by two (as India writes them); "$20 000" with a
# thin, a no-break or (for "000") a plain space
_GROUPED = r"\d{1,2}(?:,\d\d)+,\d{3}(?![\d,])|[1-9]\d{0,2}(?:(?:[\u00a0\u202f\u2009]\d{3})+|[ ]000)(?![\d]|[ \u00a0\u202f\u2009]\d)"
# (".50" written as its own alternative, not as an empty whole before optional decimals: where a rule may start is
# read from its pattern's first characters, semiotic.py, and an empty amount would let "100 USD"'s rule start anywhere)
_AMOUNT = rf"(?:{_DECIMAL_COMMA}|(?:{_GROUPED}|\d{{1,3}}(?:,\d{{3}})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)"
# a scale after an amount: "$1.5k", "£2m", "$5MM" (finance's thousand thousands), "€3.5 mln", "$4 mil"
_SCALE_WORDS = ("thousand", "million", "billion", "trillion")
_SCALES = {**MULTIPLIERS, "MM": "million", "mil": "million", "mln": "million", "mio": "million", "Mio": "million",
           "bln": "billion", "Bn": "billion", "BN": "billion",
           # a scale's word in a headline's or a shouted text's capitals: "US$7.5 MILLION", "$2 Billion"
           **{cased(scale): scale for scale in _SCALE_WORDS for cased in (str.upper, str.title)}}
_SCALE_WORD = "(?:%s)" % "|".join(_SCALE_WORDS)
_MULTIPLIER = (r"(?:[ \t]?(?:MM|Mio|mio|mln|bln|Bn|BN|k|K|M|m|mn|bn|B|b|tn|T)(?![\w])"
               r"|[ \t](?:%s|lakh|lakhs|crore|crores|mil)(?![\w]))" % "|".join(
                   cased(scale) for scale in _SCALE_WORDS for cased in (str, str.upper, str.title)))
# What a price is per: a span of time, a count ("/person"), or a unit of measure ("$3.49/gal", "$12/kg").
_PER_WORDS = {**{unit: names[0] for unit, names in UNITS.items() if unit.isalpha() and len(unit) > 1}, **PER,
              "L": "liter", "l": "liter", "g": "gram", "h": "hour",
              **{noun: noun for noun in "share head ticket guest room license seat visit session class lesson pack "
                                        "box bottle page word call trade order piece pair dozen mile trip".split()},
              "pp": "person",
              # "$150/sq ft": per square foot (an area's unit after a price's slash)
              **{f"sq{gap}{unit}": f"square {name}" for unit, name in (("ft", "foot"), ("m", "meter"), ("yd", "yard"),
                                                                     ("mi", "mile"), ("km", "kilometer"), ("in", "inch"))
                 for gap in (" ", "")}}
# a rate's unit named in full and shouted, as a rate sheet writes it: "$2.10/MILE", "$95/HOUR"
_PER_WORDS.update({word.upper(): word for word in set(_PER_WORDS.values())
                   if word.isalpha() and word.islower() and len(word) > 2 and word.upper() not in _PER_WORDS})
_PER = (r"(?:[ \t]?/[ \t]?(?:%s)(?![\w])|[ \t]?(?:pp|p\.p\.)(?![\w]))"  # "£20pp", "£20 p.p.": per person
        % "|".join(sorted(_PER_WORDS, key=len, reverse=True)))
_PER_PARTS = r"(?:[ \t]?/[ \t]?(?P<per>sq[ \t]?(?:ft|m|yd|mi|km|in)(?![\w])|\w+)|[ \t]?(?P<pp>pp|p\.p\.))?"
# "$5 USD", "$20 CAD": an ISO code after a symbol's amount names the currency ("twenty Canadian dollars"), not said again
_ISO = trie([code for code in CURRENCIES if len(code) == 3 and code.isupper()])
_ISO_AFTER = rf"(?:[ \t](?P<iso>{_ISO})(?![\w]))?"
_MONEY = (
    rf"(?<![\w.])(?:[-−](?={_CURRENCY}))?{_CURRENCY}[ \t]?(?:[-−](?=[\d.]))?{_AMOUNT}{_MULTIPLIER}?"
    rf"(?:[ \t]?[-–][ \t]?{_CURRENCY}?[ \t]?{_AMOUNT}{_MULTIPLIER}?)?{_ISO_AFTER.replace('?P<iso>', '?:')}{_PER}?{_END}"
)
_MONEY_PARTS = re.compile(
    rf"(?P<sign>[-−]?)(?P<cur>{_CURRENCY})[ \t]?(?P<sign2>[-−]?)(?P<a>{_AMOUNT})(?P<am>{_MULTIPLIER})?"
    rf"(?:[ \t]?[-–][ \t]?(?:{_CURRENCY})?[ \t]?(?P<b>{_AMOUNT})(?P<bm>{_MULTIPLIER})?)?{_ISO_AFTER}{_PER_PARTS}"
)
_MILLIONS_DOTTED = r"[1-9]\d{0,2}(?:\.\d{3}){2,}(?![\d,])"  # "1.250.000 zł" (_after: thousands by full stops)
_AFTER = rf"(?<![\w.,$])(?:[-−])?(?:{_MILLIONS_DOTTED}|{_AMOUNT})(?:[ \t]?[-–][ \t]?{_AMOUNT})?{_MULTIPLIER}?{_SUFFIX}{_PER}?(?![\w])"
_AFTER_PARTS = re.compile(
    rf"(?P<sign>[-−]?)(?P<a>{_AMOUNT})(?:[ \t]?[-–][ \t]?(?P<b>{_AMOUNT}))?(?P<bm>)(?P<am>{_MULTIPLIER})?[ \t]?"
    rf"(?P<cur>\S+?){_PER_PARTS}")

def _amount(text: str, names: tuple[str, str, str, str]) -> str:
    """"4.99" -> "four dollars and ninety-nine cents"; "0.50" -> "fifty cents"; "1" -> "one dollar"."""
    whole, _, cents = text.replace(",", "").partition(".")
    if len(cents) > 2 or cents and not names[2]:  # "₿0.5": a currency with no cents says its decimals
        return w.number(text.replace(",", "")) + " " + (names[0] if text == "1" else names[1])
    said = [] if whole in ("", "0") and cents else [w.cardinal(whole) + " " + (names[0] if whole == "1" else names[1])]
    if cents and int(cents.ljust(2, "0")):
        hundredths = int(cents.ljust(2, "0"))
        said.append(w.cardinal(str(hundredths)) + " " + (names[2] if hundredths == 1 else names[3]))
    return " and ".join(said) or w.cardinal(whole or "0") + " " + names[1]


def _scaled(amount: str) -> str:
    """An amount before a scale or in a range of them, its decimals' trailing zeros unsaid: "$12.50 million" "twelve
    point five million dollars", "$10.00M" "ten million"."""
    amount = amount.replace(",", "")
    return w.number(amount.rstrip("0").rstrip(".") if "." in amount else amount)


def _said(parts: re.Match[str], names: tuple[str, str, str, str]) -> str:
    a_mult, b_mult = (_SCALES[(m or "").strip()] if m else None for m in (parts["am"], parts["bm"]))
    cents = [amount.partition(".")[2] for amount in (parts["a"], parts["b"] or "")]
    if parts["b"] and not a_mult and not b_mult and any(0 < len(c) <= 2 for c in cents) and all(len(c) <= 2 for c in cents):
        # a range of prices with cents: "$0.25-$0.50" "twenty-five to fifty cents", "$5.50-$7.25" each in full
        low, high = (amount.replace(",", "") for amount in (parts["a"], parts["b"]))
        if float(low) < 1 and float(high) < 1:
            said = " to ".join(w.cardinal(str(int(amount.partition(".")[2].ljust(2, "0")))) for amount in (low, high))
            said += " " + (names[2] if float(high) == 0.01 else names[3])
        else:
            said = _amount(low, names) + " to " + _amount(high, names)
    elif parts["b"] or a_mult or b_mult:
        said = _scaled(parts["a"]) + (" " + a_mult if a_mult else "")
        if parts["b"]:
            said += " to " + _scaled(parts["b"]) + (" " + b_mult if b_mult else "")
        said += " " + names[1]
    else:
        said = _amount(parts["a"], names)
    if parts["per"]:
        said += " per " + _PER_WORDS[parts["per"]]
    elif parts["pp"]:
        said += " per person"
    return ("minus " if parts["sign"] or "sign2" in parts.groupdict() and parts["sign2"] else "") + said


# "$500 - $120 = $380": a spaced dash between two amounts before "=" is a minus, not a range.
_MINUS = re.compile(r"[ \t][-–−][ \t]")
_EQUALS_AFTER = re.compile(r"[ \t]*=")


# Singular nouns an amount describes, without a determiner before it as a headline writes it: "signs $162M deal",
# "approves $2B budget" ("one hundred sixty-two million dollar deal")
_DESCRIBED_AFTER = re.compile(r"[ \t]+(?:deal|contract|budget|settlement|fine|bonus|salary|loan|grant|donation|gift|"
                              r"investment|expansion|upgrade|renovation|project|lawsuit|payout|package|bond|offer|"
                              r"fund|acquisition|merger|mortgage|bill|check|cheque|fee|price[ \t]tag|raise|prize|"
                              r"jackpot|purse|stadium|facility|plant|campus|overhaul|bailout|penalty|verdict|judgment|"
                              r"deficit|surplus|shortfall|loss|profit|windfall|tax[ \t]cut|tax[ \t]break|"
                              r"coupon|voucher|discount|rebate|surcharge|gift[ \t]card|deductible|ded)(?![\w'’-])")  # "a $10 coupon",
# "w/ $250 ded" (an insurance deductible)


_DETERMINER_BEFORE = re.compile(r"(?:^|\s)(?i:an?|the|your|our|my|his|her|its|their|this|that)[ \t]\Z")

# "$8 meal + $2 tip = $10", "= $4,200 − $350 refunds": an amount and the noun that names it in a formula (an operator
# after the noun, or the line's end after an operator before the amount)
_TERM_AFTER = re.compile(r"[ \t]+([a-z]{3,})(?:[ \t]*([=+−×÷])|[ \t]*(?=\n|\Z))")
_SINGULAR_AFTER = re.compile(r"[ \t]+(?:[a-z]+[ \t]+){0,2}[a-z]+[^s\W][ \t.,!?]|[ \t]+(?:[a-z]+[ \t]+){0,2}[a-z]+[^s\W]\Z")

def _money(match: re.Match[str]) -> str | None:
    parts = _MONEY_PARTS.fullmatch(_points(match.group()))
    if parts is None:  # "£ .100USD": a symbol whose amount another rule reads
        return None
    names = CURRENCIES[parts["iso"] or parts["cur"]]
    if parts["b"] and (minus := _MINUS.search(match.group())) and _EQUALS_AFTER.match(match.string, match.end()):
        low, high = (_MONEY_PARTS.fullmatch(_points(half)) for half in (match.group()[:minus.start()],
                                                                         match.group()[minus.end():]))
        if low and high:
            return f"{_said(low, names)} minus {_said(high, names)}"
    described = _DESCRIBED_AFTER.match(match.string, match.end()) and not parts["b"]  # "to $162M deal" (a headline)
    whole = all("." not in amount.rstrip("0").rstrip(".") for amount in (parts["a"], parts["b"] or ""))
    formula = _TERM_AFTER.match(match.string, match.end())
    operated = re.search(r"[=+−×÷][ \t]*\Z", match.string[max(0, match.start() - 3):match.start()])
    if formula and formula[2] is None and not operated:
        formula = None  # "a $5 fee": no formula's operator either side
    if formula and not parts["b"] and formula[1].endswith("s") and operated:
        return _said(parts, names)  # "= $4,200 − $350 refunds": a formula's term named by a plural, "dollars"
    if formula and formula[2] and not parts["b"] and whole and formula[1] not in NOT_DESCRIBED and (
            formula[2] == "+" or re.search(r"\+[ \t]*\Z", match.string[max(0, match.start() - 3):match.start()])) \
            and formula[1] not in ("extra", "only", "flat", "net", "back", "cash", "now", "upfront", "down", "due"):
        return _said(parts, (names[0], names[0], names[2], names[2]))  # "$8 meal + $2 tip = $10": "eight dollar meal"
    if not parts["b"] and not whole and not parts["am"] and names[2] == "cent" and attributive(match) and _DETERMINER_BEFORE.search(
            match.string, max(0, match.start() - 8), match.start()) and _SINGULAR_AFTER.match(match.string, match.end()):
        # "a $7.99 charge" "a seven dollar and ninety-nine cent charge", "A $0.50 service charge" "a fifty-cent" (dollars' cents; "a £4.50 sandwich" keeps its plurals)
        said = _said(parts, (names[0], names[0], names[2], names[2]))
        return said.replace(" cent", "-cent") if " " not in said[:-5] and "-" not in said and said.endswith(" cent") else said
    if (attributive(match) or described) and (not parts["b"] and whole or parts["am"] or parts["b"] and whole and (
            not parts["sign"] and _DETERMINER_BEFORE.search(match.string, max(0, match.start() - 8), match.start()))):
        # "a $5 fee": "a five dollar fee"; "in the $2,000-$5,000 range": "two thousand to five thousand dollar range"
        # (an amount with cents keeps its plurals: "a £4.50 sandwich")
        names = (names[0], names[0], names[2], names[2])
    return _said(parts, names)


def _points(text: str) -> str:
    """Amounts with a decimal comma written as this module reads them: "EUR 1.200,50" -> "EUR 1200.50"."""
    text = re.sub(_GROUPED, lambda found: re.sub(r"[, \u00a0\u202f\u2009]", "", found.group()), text)
    return re.sub(_DECIMAL_COMMA, lambda found: found.group().replace(".", "").replace(",", "."), text)


# "5.000 €", "1.250.000 zł": full stops grouping thousands, as the countries that write a currency after its amount do
_DOTTED_THOUSANDS = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?:\.\d{3})+(?![\d.,])")
_AFTER_DOTTED = ("€", "zł", "Kč", "kr", "₽", "₺", "₴")


def _after(match: re.Match[str]) -> str | None:
    """An amount with its currency after it: "12€", "1,200 USD", "50¢"."""
    text = match.group()
    if text.rstrip().endswith(_AFTER_DOTTED):
        text = _DOTTED_THOUSANDS.sub(lambda found: found.group().replace(".", ""), text)
    parts = _AFTER_PARTS.fullmatch(_points(text))
    if parts is None:
        return None
    if parts["cur"] == "¢":  # "10–20¢" "ten to twenty cents"; "a 50¢ bag fee" "a fifty cent bag fee"
        said = w.number(parts["a"]) + (" to " + w.number(parts["b"]) if parts["b"] else "")
        one = parts["a"] == "1" and not parts["b"] or attributive(match) and not parts["b"]
        per = " per " + _PER_WORDS[parts["per"]] if parts["per"] else " per person" if parts["pp"] else ""
        return ("minus " if parts["sign"] else "") + said + (" cent" if one else " cents") + per  # "14.2¢/kWh"
    names = CURRENCIES[parts["cur"]]
    if _RATE_BEFORE.search(match.string, max(0, match.start() - 3), match.start()) and not parts["b"] \
            and re.fullmatch(r"0\.\d+", parts["a"]) and not parts["am"] and not parts["per"] and not parts["pp"]:
        return w.number(parts["a"]) + " " + names[1]  # "1 USD ≈ 0.92 EUR": a rate, "zero point nine two euros"
    return _said(parts, names)


# A relation before an amount under one: a conversion's rate ("1 USD ≈ 0.92 EUR"), its currency kept ("ninety-two
# cents" would lose the euro)
_RATE_BEFORE = re.compile(r"[=≈][ \t]?\Z")


def _pair(match: re.Match[str]) -> str:
    """"EUR/USD" -> "euro dollar": an exchange rate's pair of currencies, each by its name."""
    return " ".join(CURRENCIES[code][0] for code in match.group().split("/"))


_PAIR = r"(?<![\w/])%s/%s(?![\w/])" % (_CODE, _CODE)
_TIME_CUE = re.compile(r"(?i:\b(?:at|by|until|till|from|to|before|after|around|about))[ \t]+\Z")


def _pence(match: re.Match[str]) -> str | None:
    """"50p" -> "fifty pence", "a 1p coin" "one penny" (British coins; "at 5p" is a time)."""
    number = match.group()[:-1]
    if _TIME_CUE.search(match.string, max(0, match.start() - 10), match.start()):
        return None
    return w.cardinal(number) + (" penny" if number == "1" else " pence")


# "$10 to $15 million", "between $2 and $3 billion": a range whose scale is written once, after its high end ("ten to
# fifteen million dollars")
_SCALED_RANGE = (rf"(?<![\w.])(?:{_CURRENCY})[ \t]?{_AMOUNT}[ \t]+(?:to|and)[ \t]+(?:{_CURRENCY})[ \t]?{_AMOUNT}"
                 rf"[ \t]{_SCALE_WORD}{_END}")
_SCALED_RANGE_PARTS = re.compile(rf"(?P<cur>{_CURRENCY})[ \t]?(?P<a>{_AMOUNT})[ \t]+(?P<by>to|and)[ \t]+(?:{_CURRENCY})[ \t]?"
                                 rf"(?P<b>{_AMOUNT})[ \t](?P<scale>\w+)")


_OPEN_RANGE = re.compile(rf"(?<![\w.])(?:{_CURRENCY})[ \t]?{_AMOUNT}[ \t]+(?:to|and)"
                         rf"(?:[ \t]+(?:{_CURRENCY})[ \t]?(?:{_AMOUNT}(?:[ \t]+[a-z]{{0,9}})?)?)?[ \t]*\Z")


def open_range(text: str) -> int | None:
    """Where a range of amounts whose scale may yet follow starts at the end of ``text`` ("$10 to $15", "$10 to $15
    mill" before "ion": three words past "$10", more than a stream looks ahead), or None."""
    tail = _OPEN_RANGE.search(text, max(0, len(text) - 60))
    return tail.start() if tail else None


def _scaled_range(match: re.Match[str]) -> str | None:
    parts = _SCALED_RANGE_PARTS.fullmatch(match.group())
    low, high = (parts["a"].replace(",", ""), parts["b"].replace(",", "")) if parts else ("1", "0")
    if parts is None or float(low) >= float(high):
        return None  # "$900 to $1 million": each its own amount
    names = CURRENCIES[parts["cur"]]
    return f"{w.number(low)} {parts['by']} {w.number(high)} {parts['scale']} {names[0] if attributive(match) else names[1]}"


# "$/mo", "€/kg", "USD/hr": a price's unit, a currency per a unit with no amount ("dollars per month")
_UNIT_PRICE = r"(?<![\w.$])(?:%s|%s)[ \t]?/[ \t]?(?:%s)(?![\w/])" % (
    "|".join(re.escape(s) for s in _SYMBOLS), _ISO, "|".join(sorted(_PER_WORDS, key=len, reverse=True)))


def _unit_price(match: re.Match[str]) -> str:
    currency, _, unit = match.group().partition("/")
    return f"{CURRENCIES[currency.strip()][1]} per {_PER_WORDS[unit.strip()]}"


_ROUND_PLURAL = {"100": "hundreds", "1000": "thousands", "1,000": "thousands", "1000000": "millions",
                 "1,000,000": "millions"}


def _round_plural(match: re.Match[str]) -> str:
    """"$100s" -> "hundreds of dollars", "£1,000s" "thousands of pounds": a round amount in the plural."""
    symbol = next(s for s in _SYMBOLS if match.group().startswith(s))
    return f"{_ROUND_PLURAL[match.group()[len(symbol):-1]]} of {CURRENCIES[symbol][1]}"


RULES: list[Rule] = [
    ("scaled_range", _SCALED_RANGE, _scaled_range), ("unit_price", _UNIT_PRICE, _unit_price),
    ("money_plural", r"(?<![\w.])(?:%s)(?:1,000,000|1000000|1,000|1000|100)s(?![\w'’])"
     % "|".join(re.escape(s) for s in _SYMBOLS), _round_plural),
    ("pence", r"(?<![\w.,$£€-])\d{1,2}p(?![\w'’-])", _pence),
    # "1080p", "720p": a video's lines, "ten eighty p"; "1080p60": and its frame rate, "ten eighty p sixty"
    ("video_lines", r"(?<![\w.,-])(?:240|360|480|576|720|1080|1440|2160|4320)p(?:24|25|30|48|50|60|90|120|144|240)?(?![\w'’-])",
     lambda match: w.paired(match.group().partition("p")[0]) + " p"
     + (" " + w.cardinal(match.group().partition("p")[2]) if match.group().partition("p")[2] else "")),
    ("money", _MONEY, _money), ("coded_money", _AFTER, _after), ("currency_pair", _PAIR, _pair),
]
