"""Abbreviations, titles and ALL-CAPS words. Pure.

ALL-CAPS rule, per token of two or more capitals (a plural "s" allowed): a word in ``WORD_ACRONYMS`` is said as a
word ("NASA" -> "Nasa"); one in ``SPELLED`` is spelled ("US" -> "U S"); a common English word is lower-cased
("VERY" -> "very"); any other token of up to four letters, or with no vowel, is spelled ("FBI" -> "F B I", "HTML");
a longer one is a shouted word, lower-cased ("IMPORTANT" -> "important").
"""

from __future__ import annotations

import re

from engine.speech_text import words as w
from engine.speech_text.numbers import Rule, ends_sentence_after, one_before, trie

TITLES = {"Col.": "Colonel", "Maj.": "Major", "Cpl.": "Corporal", "Adm.": "Admiral", "Pres.": "President",
          "Rev.": "Reverend", "Hon.": "Honorable", "Supt.": "Superintendent", "Insp.": "Inspector", "Dr.": "Doctor", "Mr.": "Mister", "Mrs.": "Missus", "Ms.": "Miz", "Prof.": "Professor", "Jr.": "Junior",
          "Sr.": "Senior", "Mt.": "Mount", "Fig.": "Figure", "Eq.": "Equation", "Eqn.": "Equation", "No.": "number", "Gen.": "General", "Gov.": "Governor",
          "Sen.": "Senator", "Rep.": "Representative", "Capt.": "Captain", "Lt.": "Lieutenant", "Ft.": "Fort", "Hwy.": "Highway", "Sgt.": "Sergeant",
          "Cmdr.": "Commander", "Cdr.": "Commander", "Atty.": "Attorney"}
# Titles that stand for nothing else in small letters, said before a name written in small letters too ("adm. grace
# hopper"): not "gen." (a generation), "col." (a column), "rep." (a repetition), "ft." (feet)...
_SMALL_TITLES = r"(?:adm|capt|sgt|lt|cmdr|cdr|cpl|supt|insp|atty|prof)\.(?=[ \t]+[a-z])"
# Said in place; the full stop of those in ENDINGS also ends a sentence where one ends ("... and so on, etc.").
ABBREVIATIONS = {"e.g.": "for example", "i.e.": "that is", "etc.": "et cetera", "vs.": "versus", "vs": "versus",
                 "approx.": "approximately", "a.k.a.": "also known as", "cf.": "compare", "incl.": "including",
                 "Ave.": "Avenue", "Apt.": "apartment", "Ste.": "Suite", "avg.": "average", "Rx": "prescription",
                 "Min.": "Minimum", "Max.": "Maximum", "Est.": "Estimated",
                 "qty": "quantity", "Qty": "quantity", "ref.": "reference",
                 "Ref.": "reference", "dept.": "department", "tel.": "telephone", "Tel.": "telephone", "Blvd.": "Boulevard", "Rd.": "Road", "Dept.": "Department", "Inc.": "Incorporated",
                 "Ltd.": "Limited", "Corp.": "Corporation", "Co.": "Company", "w/": "with", "w/o": "without",
                 "Ph.D.": "P H D", "PhD": "P H D", "govt.": "government",
                 "and/or": "and or", "pH": "P H", "misc.": "miscellaneous", "appt.": "appointment", "apt.": "apartment", "401(k)": "four oh one K",
                 "403(b)": "four oh three B",
                 "appts.": "appointments", "est.": "estimated", "dept": "department", "iOS": "I O S",
                 "macOS": "mac O S", "WWII": "World War two", "WWI": "World War one", "acct.": "account",
                 "Acct.": "Account", "acct": "account", "pls": "please", "Pls": "Please", "plz": "please",
                 "w/in": "within", "w/out": "without", "yr.": "year", "yrs.": "years", "YoY": "year over year",
                 "QoQ": "quarter over quarter", "MoM": "month over month", "N/A": "N A", "n/a": "N A",
                 "hrs": "hours", "pt.": "patient", "pts.": "patients", "ins.": "insurance", "intl.": "international",
                 "intl": "international", "avail.": "available", "mgr.": "manager", "Mgr.": "Manager",
                 "req'd": "required", "ch.": "chapter", "Ch.": "Chapter", "Vol.": "Volume", "vol.": "volume",
                 "hwy": "highway", "Ctr": "Center", "Ctr.": "Center", "Hosp.": "Hospital", "hosp.": "hospital",
                 "a.k.a": "also known as", "c/o": "care of", "C/O": "care of", "a/c": "A C", "A/C": "A C",
                 "24/7/365": "twenty-four seven three sixty-five",
                 "Univ.": "University", "univ.": "university", "Assn.": "Association", "Assoc.": "Associate",
                 "Bros.": "Brothers", "Mfg.": "Manufacturing", "Natl.": "National", "natl.": "national",
                 "dist.": "district", "Dist.": "District", "Jct.": "Junction", "Bldg.": "Building", "bldg.": "building", "Bldgs.": "Buildings", "Pkwy.": "Parkway", "Ln.": "Lane",
                 "Sq.": "Square", "Ct.": "Court", "Pl.": "Place", "Ter.": "Terrace", "Hts.": "Heights",
                 "Mtn.": "Mountain", "Sta.": "Station", "Conv.": "Convention", "mo.": "month", "mos.": "months",
                 "hr.": "hour", "min.": "minute", "mins.": "minutes", "sec.": "second", "secs.": "seconds",
                 "nos.": "numbers", "Nos.": "numbers", "pp.": "pages",
                 "para.": "paragraph", "sect.": "section", "Sect.": "Section", "sec'y": "secretary",
                 "ssh": "S S H", "scp": "S C P", "sftp": "S F T P", "npm": "N P M", "dns": "D N S", "tcp": "T C P",
                 "udp": "U D P", "ssl": "S S L", "tls": "T L S", "vpn": "V P N", "pwd": "P W D", "pnr": "P N R",
                 "dm": "D M", "dms": "D Ms",  # a direct message in small letters, spelled as in capitals
                 "wk": "week", "wk.": "week", "wks": "weeks", "wks.": "weeks", "approx": "approximately",
                 "yr": "year", "yrs": "years",
                 "avg": "average", "pkg": "package", "pkg.": "package", "mgr": "manager",
                 "mtg": "meeting", "mtg.": "meeting", "mtgs": "meetings", "Mtg": "Meeting", "Mtg.": "Meeting",
                 "Lic.": "License", "lic.": "license",
                 "ppl": "people", "qtr.": "quarter", "qtr": "quarter", "Qtr.": "Quarter", "qtrs.": "quarters",
                 "Asst.": "Assistant", "asst.": "assistant", "Coord.": "Coordinator", "Accts.": "Accounts", "accts.": "accounts",
                 "Conf.": "Conference",
                 # a statement's and a receipt's shorthand: "Pmt. rec'd", "Int'l wire fee", "Bal. fwd.", "amt. due"
                 "Pmt.": "Payment", "pmt.": "payment", "Pmts.": "Payments", "pmts.": "payments", "pmt": "payment",
                 "rec'd": "received", "rec’d": "received", "Rec'd": "Received", "Rec’d": "Received",
                 "Int'l": "International", "int'l": "international", "Int’l": "International",
                 "int’l": "international", "Add'l": "Additional", "add'l": "additional", "Add’l": "Additional",
                 "add’l": "additional", "Bal.": "Balance", "bal.": "balance", "fwd.": "forward", "Fwd.": "Forward",
                 "amt.": "amount", "Amt.": "Amount", "amt": "amount", "Amt": "Amount", "Exp. Date": "Expiration Date",
                 "exp. date": "expiration date",
                 "max.": "maximum", "gov't": "government", "gov’t": "government", "blks": "blocks", "blk.": "block",
                 # a lease's, a listing's and a court filing's shorthand: "utils. incl.", "sep. entrance", "water htr.",
                 # "detached gar.", "mgmt. co.", "Hrg. continued per stip.", "Maria Lin, Esq.", "Wt. 40 lbs, Qty. 12"
                 "utils.": "utilities", "util.": "utility", "sep.": "separate", "htr.": "heater", "gar.": "garage",
                 "mgmt.": "management", "mgmt": "management", "Mgmt.": "Management", "co.": "company",
                 "Hrg.": "Hearing", "hrg.": "hearing", "stip.": "stipulation", "Esq.": "Esquire",
                 "Civ.": "Civil", "Wt.": "Weight", "wt.": "weight", "Qty.": "quantity", "qty.": "quantity",
                 "Assocs.": "Associates",
                 # an airport's, a text alert's shorthand: "Rwy 9", "INT'L ARRIVALS", "Msg & data rates may apply"
                 "Rwy": "Runway", "rwy": "runway", "INT'L": "international", "INT’L": "international",
                 "Msg": "Message", "Msgs": "Messages",
                 # a contractor's and a supplier's shorthand: "4 ea.", "10-yr mfr. warranty", "16\" o.c."
                 "ea.": "each", "mfr.": "manufacturer", "Mfr.": "Manufacturer", "mfrs.": "manufacturers",
                 "o.c.": "on center", "O.C.": "on center"}
# Capitalised or shouted on a label or a form ("Avg: 3", "MGR APPROVAL REQ'D", "QTY: 4"): the word (a shouted one in
# small letters, as the caps rule says shouted words)
_LABEL_WORDS = [(key, said) for key, said in ABBREVIATIONS.items()
                if key.rstrip(".") in ("avg", "qty", "pkg", "dept", "mgr", "req'd", "approx")]
ABBREVIATIONS |= {key.upper(): said for key, said in _LABEL_WORDS}
ABBREVIATIONS |= {key.capitalize(): said.capitalize() for key, said in _LABEL_WORDS
                  if key.capitalize() not in ABBREVIATIONS}
ENDINGS = frozenset("""ea. o.c. O.C. utils. util. htr. gar. mgmt. co. stip. Esq. qty. mgr. Mgr. fwd. Fwd. amt. bal. pmt. wk. wks. qtr.
    qtrs. intl. avail. pt. ins. avg. misc. appt. appts. ref. Ref. dept. tel. Tel. Apt. Ste. etc. Inc. Ltd. Corp. Co.
    Ave. Blvd. Rd. Ph.D. Dept. govt. max. blk. Sta. Bldg. bldg. Bldgs.""".split())

WORD_ACRONYMS = frozenset(
    "ZIP NASA NATO FIFA OPEC AIDS JPEG JSON YAML GIF PIN RAM ROM SIM LAN SARS FEMA OSHA UEFA IKEA LEGO WASP NAFTA "
    "VIX UNESCO UNICEF FICO SCUBA LASER RADAR SONAR COVID ASCII POSIX NASDAQ CAPTCHA FOMO YOLO SWAT TOEFL NAS JIRA "
    "WIC MERV FICA BOGO NEMA PEX ACME".split()  # (the nutrition program, a filter's rating; plumbing's pipe, a firm's name)
)
SPELLED = frozenset("ICCID IMSI US UK EU UN TV PC AI ID IQ DJ OS UI UX PR HR CEO CTO CFO API URL CPU GPU SQL USB USA UTF HIV POW MIA".split())
COMMON_WORDS = frozenset(
    """mix dim hi bye per a am an and any are as at be big but by can do did does done dont each else even ever far few fine for from
    get go goes good got had has have he her here hers him his how huge i if in into is it its just keep kind last
    less like long look lot love made make many may me mine more most much must my need new next nice no none nor
    not now of off oh ok old on once one only or our ours out over own past plan real rest run said same saw say
    see seen she shop show shut sign so some soon stay stop such sure take than that the them then they this thus
    time to too top try turn two up upon us use very wait want was way we well went were what when who why will
    wish with word work yes yet you your zero also back best both call came come days deal down easy fact fast feel
    free full give gone half hard hate hear help high hold home hope hour idea into item join key kill kids late
    lead life line live lose loss main mark mean meet mind miss move name near note open part pay pick play plus
    pull push read rich risk role rule safe sale save seem sell send ship side size slow sort step sure talk task
    team tell test text than till told tone tool town true type unit vote walk wall warn week what wide wife wild
    win wire word yeah year zone all any few hot law lie low mad man men nor odd out pro put raw red sad sat set
    sit six sky ten war wet why win yes yet boy car cat cup cut day die dog dry due eat end eye fix fly fun gas god
    gun guy hey hit ice job leg let lit map mom net nut oil pen pet pot ran row sea sun tax tea tie toy try van win
    won fire firm five four nine gold hand head heat hell hero kick kiss lady land lift loud luck mail mass meal
    menu mood nope okay pain pass plot poor pour race rain rank rate ring rise road rock room rush seat sick sing
    site skin slip snow soft soil song star stuff sweet tall tank tiny tire told tour tree trip unit user view wake
    warm wash wave wear wind wine wise wood yell busy lid max buy""".split()
)
ROMAN = {"II": "two", "III": "three"}
# A contact label before its colon or its number; a shouted one is the word ("FAX: 617-...": "fax", not "F A X").
LABELS = {"ref": "reference", "Ref": "Reference", "Ph": "Phone", "Tel": "Telephone", "tel": "telephone", "TEL": "Telephone", "Mob": "Mobile", "Fx": "Fax", "Attn": "Attention",
          "ATTN": "Attention", "FAX": "fax", "PHONE": "phone", "CALL": "call", "MOBILE": "mobile", "CELL": "cell",
          "MOB": "mobile"}
SPOKEN_CAPS = {"OK": "okay", "AAA": "triple A"}  # (the motor club, the battery's size)
# acronyms said as a word or part word, as their users say them: "see-pap", a pharmacy's "bin number"
SPOKEN_CAPS |= {"CPAP": "C PAP", "BIPAP": "bi PAP", "APAP": "A PAP", "BIN": "bin"}
_VOWELS = frozenset("AEIOUY")


def _street(match: re.Match[str]) -> bool:
    """Whether "St." follows a street's name: a capitalised word that does not itself open the sentence."""
    window = match.string[max(0, match.start() - 60):match.start()]
    words = window.split()
    if not words or not window[-1:].isspace():
        return False
    name = words[-1]
    opens = words[-2][-1] in ".!?:" if len(words) > 1 else match.start() <= 60
    return name[0].isupper() and name[-1] not in ".!?:,;" and not opens


_COUNTERS = frozenset("chapter volume figure section page number paragraph appendix item table equation".split())
# One token, "4-7": the streaming reader lets go of a word once the next two have come (stream.py)
_N = r"#?\d{1,4}[a-z]?"
_PAIRED = r"(?:,[ \t]?%s)*,?[ \t]+(?:and|&|to|through|thru)[ \t]+%s" % (_N, _N)  # "Fig. 2 and 3", "pp. 4, 5 and 9"
_RANGE_AFTER = re.compile(rf"[ \t]?{_N}(?:[-–]{_N}|{_PAIRED})(?![\w-])")


def _counted(match: re.Match[str], said: str) -> str:
    """A word that numbers things, plural before a range or a pair: "ch. 4-7" "chapters four to seven"."""
    return said + "s" if said.lower() in _COUNTERS and _RANGE_AFTER.match(match.string, match.end()) else said


def _title(match: re.Match[str]) -> str:
    text = match.group()
    if text == "St.":  # Street after a street's name ("Elm St. It was"), Saint before a name ("St. Louis")
        after = match.string[match.end(): match.end() + 2]
        if not _street(match) and after[:1] == " " and after[1:2].isupper():
            return "Saint"
        return "Street" + ("." if ends_sentence_after(match) else "")
    if text == "Rev." and re.match(r"[ \t]?\d", match.string[match.end():match.end() + 2]):
        return "Revision"  # "Rev. 3" is a document's revision, "Rev. Smith" a reverend
    if text == "Rev." and re.match(r"[ \t]+(?:Stat\.|Statutes\b|Code\b)", match.string[match.end():match.end() + 10]):
        return "Revised"  # "Ohio Rev. Code", "Nev. Rev. Stat.": a state's revised code or statutes
    said = _counted(match, TITLES.get(text) or TITLES[text.title().rstrip(".") + "."])  # "NO" before its colon too
    return said + " " if match.string[match.end():match.end() + 1].isalnum() else said  # "No.1": "number one"


_AFTER_COUNT = re.compile(r"\d[ \t]?\Z")
_BEFORE_YEAR = re.compile(r"[ \t]+(?:in[ \t]+)?(?:(?:1[5-9]|20)\d\d\b|M{1,2}(?:CM|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})\b)")  # "Est. MCMXCV"


def _in_context(match: re.Match[str], said: str) -> str:
    """"min." after a count is minutes, before a noun a minimum ("a min. order"); "Est." before a year is
    established ("Est. 1998"), elsewhere estimated."""
    key = match.group().lower()
    if key == "min." and not _AFTER_COUNT.search(match.string, max(0, match.start() - 3), match.start()):
        return "minimum"
    if key == "est." and _BEFORE_YEAR.match(match.string, match.end()):
        return "established"
    if match.group() == "Est." and _OF_NAME_AFTER.match(match.string, match.end()):
        return _cased(match, "estate")  # "the Est. of J. Reyes": a dead person's estate
    if key == "sec." and _NUMBER_NEXT.match(match.string, match.end()) and not _AFTER_COUNT.search(
            match.string, max(0, match.start() - 3), match.start()):
        return _cased(match, "section")  # "Sec. 4.2", "sec. 12", "Sec. B": a section before its number or letter ("30 sec." is seconds)
    if key == "assoc." and _AND_BEFORE.search(match.string, max(0, match.start() - 6), match.start()):
        return _cased(match, "associates")  # "Reyes & Assoc.": a firm's partners
    if key in ("mtg.", "mtg") and _MORTGAGE_AFTER.match(match.string, match.end()):
        return _cased(match, "mortgage")  # "Mtg. pmt.", "mtg rate": a home loan's, not a meeting's
    if key in ("approx.", "approx") and (_LABEL_NOUN_AFTER.match(match.string, match.end())
                                         or _DETERMINER_BEFORE.search(match.string, max(0, match.start() - 8), match.start())):
        return "approximate"  # before a label's noun ("Approx. wait: 2 hrs") or after "the": an adjective
    if key == "lic." and _INSURED_AFTER.match(match.string, match.end()):
        return "licensed"  # a contractor's "Lic. & ins.", "Lic. & bonded"
    if key == "ins." and _LICENSED_BEFORE.search(match.string, max(0, match.start() - 24), match.start()):
        return "insured"  # "Lic. & ins.", "bonded and ins."
    return said


def _cased(match: re.Match[str], said: str) -> str:
    return said.capitalize() if match.group()[0].isupper() else said


_OF_NAME_AFTER = re.compile(r"[ \t]+of[ \t]+[A-Z]")
_NUMBER_NEXT = re.compile(r"[ \t]?\d|[ \t][A-Z](?![\w])")  # "Sec. 4.2", "Sec. B"
_AND_BEFORE = re.compile(r"(?:&|\band)[ \t]+\Z")
_MORTGAGE_AFTER = re.compile(r"[ \t]+(?i:pmts?\b|payments?\b|rates?\b|loan|lender|broker|escrow|insurance|ins\b|"
                             r"interest|principal|servicer|statement|bal(?:ance)?\b|refi)")
# before a label's noun and its colon ("Approx. wait: 2 hrs") or a two-word noun, no number nor quantity ("Approx. wait
# time is 20 min."): an adjective
_LABEL_NOUN_AFTER = re.compile(r"[ \t]+[A-Za-z]+(?:[ \t][A-Za-z]+)?:(?![^\s])|[ \t]+(?!(?:the|an?|one|two|three|four|five|"
                               r"six|seven|eight|nine|ten|half|twice|once|every|each|per|at|in|on|from|to|for|by|"
                               r"between|up|over|under|around|as|same|double|triple|"
                               r"eleven|twelve|\w*teen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|"
                               r"dozen|few|several|many|more|less)\b)[a-z]{3,}(?<!ly)[ \t]+[a-z]{3,}\b")
_DETERMINER_BEFORE = re.compile(r"(?i:\b(?:the|an?|your|our|its|their|his|her|my))[ \t]+\Z")


# A contractor's listing: licensed, bonded and insured ("Lic. & ins.", "Licensed, bonded & ins.")
_INSURED_AFTER = re.compile(r"[ \t]*(?:,|&|/|\band\b)[ \t]*(?i:ins\.|insured\b|bonded\b)")
_LICENSED_BEFORE = re.compile(r"(?i:\blic\.|\blicensed|\bbonded)[ \t]*(?:,|&|/|\band)[ \t]*\Z")


# "Max." ending a sentence after a small word is a name ("call the vet about Max."); before a number, a unit or a
# label's word it is the maximum ("Max. 4 guests", "Max. Occupancy: 40")
_NAME_AFTER_WORD = re.compile(r"\b[a-z]+[ \t]\Z")
_SENTENCE_ENDS_AFTER = re.compile(r"[\"”’')\]]*(?:\s*\Z|\s+[A-Z\"“])")


_NUMBER_AFTER = re.compile(r"[ \t]?(?:#|[Nn]umber\b|[Nn]o\.)")


def _abbreviation(match: re.Match[str]) -> str | None:
    text = match.group()
    if text == "Max." and _SENTENCE_ENDS_AFTER.match(match.string, match.end()) and \
            _NAME_AFTER_WORD.search(match.string, max(0, match.start() - 20), match.start()):
        return None
    if text.isupper() and text not in ABBREVIATIONS and text.rstrip(".") in SPELLED and \
            not re.search(r"\d[ \t]?\Z", match.string[max(0, match.start() - 3):match.start()]):
        return None  # "for HR.": a shouted name spelled out (the department), not "hr." (hour) after no number
    if text == "sep." and not _SEPARATE.match(match.string, match.end()) or text == "sep." and _IN_MONTH_BEFORE.search(
            match.string, max(0, match.start() - 8), match.start()):
        return None  # "sep. entrance" is separate, "in sep." September
    said = _in_context(match, ABBREVIATIONS.get(text) or ABBREVIATIONS[text.lower()])
    if text.isalpha() and match.string[:match.start()].rstrip().lower().endswith(said.lower()):
        return " ".join(text.upper())  # "your prescription Rx": the word is there already, so the letters
    if text == "Rx" and _NUMBER_AFTER.match(match.string, match.end()):
        return "R X"  # "Rx#", "Rx number": the label's letters, as a pharmacy reads them
    if text[0].isupper() and text.lower() in ABBREVIATIONS and not (text.isupper() and text in ABBREVIATIONS):
        said = said[0].upper() + said[1:]  # (a shouted one keeps its own: "REQ'D" "required")
    ends = text in ENDINGS or text.lower() in ENDINGS
    return _counted(match, said) + ("." if ends and ends_sentence_after(match) else "")


_SEPARATE = re.compile(r"[ \t]+[a-z]{2,}")  # before the noun it describes
_IN_MONTH_BEFORE = re.compile(r"\b(?:in|by|since|until|till|through|thru|of|early|late|mid|next|last|this|from)[ \t]+\Z")


_PAY_BEFORE = re.compile(r"(?i:\$|\b(?:salary|pay|wages?|rate|compensation|comp)\b|/hr\b|/hour\b|per[ \t]hour\b)"
                         r"[^\n]{0,30}\Z")


_AMOUNT_BEFORE = re.compile(r"[$€£][\d,]*\d(?:\.\d\d)?[kK]?[ \t]\Z")


def _deductible(match: re.Match[str]) -> str | None:
    """"$250 ded", "$1,000 ded.": after an amount of money, an insurance deductible."""
    if not _AMOUNT_BEFORE.search(match.string, max(0, match.start() - 16), match.start()):
        return None
    return "deductible" + ("." if match.group().endswith(".") and ends_sentence_after(match) else "")


def _pay_depends(match: re.Match[str]) -> str | None:
    """"$65K–$75K DOE", "Pay: DOQ": after pay on its line, "depending on experience" (qualifications)."""
    if not _PAY_BEFORE.search(match.string, max(0, match.start() - 40), match.start()):
        return None
    return "depending on " + ("experience" if match.group().endswith("E") else "qualifications")


_NAME_BEFORE = re.compile(r"(?<![\w.])[A-Z][\w'’.&-]*[ \t]\Z")


def _case_versus(match: re.Match[str]) -> str | None:
    """"Brown v. Board": "v." after a capitalised name and before another is a court case's "versus"."""
    return "versus" if _NAME_BEFORE.search(match.string, max(0, match.start() - 40), match.start()) else None


_RESIDED_BEFORE = re.compile(r"(?i:\b(?:proof|place|country|state|county|city|address|certificate|length))[ \t]of[ \t]\Z")


def _residence(match: re.Match[str]) -> str | None:
    """"proof of res.", "place of res.": where one lives, "residence"."""
    if not _RESIDED_BEFORE.search(match.string, max(0, match.start() - 20), match.start()):
        return None
    return "residence" + ("." if ends_sentence_after(match) else "")


def _dotted(match: re.Match[str]) -> str:
    """"U.S." -> "U S" (and the full stop, where a sentence ends)."""
    letters = [c.upper() for c in match.group() if c.isalpha()]
    return " ".join(letters) + ("." if ends_sentence_after(match) else "")


def caps(token: str) -> str:
    """An ALL-CAPS token as it is said (see the module docstring)."""
    if "'" in token or "’" in token:  # a shouted contraction: "DON'T"
        said = token.lower()
        return "I" + said[1:] if said[:2] in ("i'", "i’") else said
    base, plural = (token[:-1], "s") if token.endswith("s") else (token, "")
    if base in SPOKEN_CAPS:
        return SPOKEN_CAPS[base] + plural
    if base in ROMAN and not plural:
        return ROMAN[base]
    if base in WORD_ACRONYMS:
        return base.capitalize() + plural
    if base not in SPELLED and base not in _ACRONYM_WORDS and base.lower() in COMMON_WORDS:
        return base.lower() + plural
    if len(token) > 3 and token.endswith("S") and token[:-1].lower() in COMMON_WORDS:  # shouted with its "S": "ENDS"
        return token.lower()
    if base in SPELLED or base in _ACRONYM_WORDS or (len(base) <= 4 and not (len(base) == 4 and one_syllable(base))) \
            or not _VOWELS & set(base) or (  # or "MMORPG": no word opens so
                len(base) >= 5 and not SAYABLE_START.match(base) and base[:2] not in ("PS", "PT", "PN", "TS", "GN", "MN")):
        # a plural's "s" run into its last letter ("PODs" "P O Ds"); after A, I, O or U, whose "s" would make a word
        # ("KPIs" "K P I's")
        return " ".join(base) + (("'s" if base[-1] in "AIOU" else "s") if plural else "")
    return base.lower() + plural


# One English syllable: an onset, one vowel (or a common vowel pair, or a vowel and its "w" or "y": "DOW", "KEY"), a coda, perhaps a silent "e" ("MILD", "POST",
# "HOPE", "GYM"). An acronym seldom has that shape ("CEO", "USB", "ETA", "HVAC", "UCLA" have not); a word does.
_ONSET = ("bl br ch cl cr dr dw fl fr gl gr kl kn kr ph pl pr qu sc sch scr sh shr sk sl sm sn sp spl spr squ st str "
          "sw th thr tr tw wh wr b c d f g h j k l m n p r s t v w z").split()
_CODA = ("ck ct ft ld lf lk lm lp lt mp nd ng nk nt pt rb rd rk rm rn rp rt sh sk sp st th ch ff ll ss "
         "b c d f g k l m n p r s t x z").split()
SAYABLE_START = re.compile(rf"(?:{'|'.join(sorted(_ONSET, key=len, reverse=True))})?(?:[aeiou]|y(?![aeiou]))", re.I)
_SYLLABLE = re.compile(rf"(?:{'|'.join(sorted(_ONSET, key=len, reverse=True))})"
                       rf"(?:ee|oo|ea|ai|oa|ou|ue(?![a-z])|[aeo][wy]|[aeiou]|y(?![a-z]e))"
                       rf"(?:(?:{'|'.join(sorted(_CODA + ['nc'], key=len, reverse=True))})e?)?", re.I)  # "sync", "zinc"


def one_syllable(token: str) -> bool:
    """Whether ``token`` reads as one English syllable (a word shouted, not an acronym to spell)."""
    return _SYLLABLE.fullmatch(token) is not None


_SHOUTED = re.compile(r"[A-Z][A-Z'’]+")
_ACRONYM_WORDS = frozenset({"IT", "WHO"})  # a word when shouted ("CALL IT A DAY", "WHO IS IT?"), the acronym in mixed
# text ("the IT dept.", "WHO declares a pandemic")


# A shouted "US" after one of these is the pronoun: "CONTACT US ANYTIME", "JOIN US", "WORK WITH US"
_US_OBJECT_BEFORE = re.compile(
    r"(?<![\w'’])(?:CONTACT|CALL|EMAIL|E-MAIL|TEXT|MESSAGE|JOIN|TELL|HELP|LET|GIVE|SEND|ASK|VISIT|FOLLOW|FIND|WRITE|"
    r"REACH|LIKE|TRUST|SHOW|WITH|ABOUT)[ \t]+\Z")
# "THANKS FOR CONTACTING US", "YOU'VE HELPED US!": after a verb in -ING or -ED, where its phrase ends ("SHIPPING US
# ONLY" is the country)
_US_DONE_BEFORE = re.compile(r"(?:(?<![\w'’])(?:FOR|BY)[ \t]+[A-Z]{3,}ING|(?:\b(?:YOU|THEY|HE|SHE|WHO|HAVE|HAS)|['’]VE)"
                             r"[ \t]+[A-Z]{3,}ED)[ \t]+\Z")
_US_END_AFTER = re.compile(r"[ \t]*(?:[.,;:!?)]|\Z)|[ \t]+(?:TODAY|AGAIN|ANYTIME|NOW|SO|WHEN|FOR|TODAY)\b")


def _sentence_around(match: re.Match[str]) -> tuple[str, str]:
    """The text of ``match``'s sentence before and after it (as far as open_caps holds a token while streaming)."""
    return (_SENTENCE_END.split(match.string[max(0, match.start() - 40):match.start()])[-1],
            _SENTENCE_END.split(match.string[match.end():match.end() + 40])[0])


def _caps(match: re.Match[str]) -> str:
    """A token in a shouted sentence (its neighbours capitals too) is a word unless it is a known acronym."""
    token = match.group()
    if token == "US" and (_US_OBJECT_BEFORE.search(match.string, max(0, match.start() - 10), match.start()) or (
            _US_DONE_BEFORE.search(match.string, max(0, match.start() - 32), match.start())
            and _US_END_AFTER.match(match.string, match.end()))):
        return "us"
    around = match.string[max(0, match.start() - 40):match.start()].split()[-4:] + \
        match.string[match.end():match.end() + 40].split()[:4]
    shouted = [word for word in (w.strip(".,;:!?") for w in around) if _SHOUTED.fullmatch(word)]
    common = [word for word in shouted if word.lower() in COMMON_WORDS]
    worded = [word for word in shouted if word.lower() in COMMON_WORDS or _worded(word)]  # "FUEL GAUGE READS"
    if token in _ACRONYM_WORDS and common and (
            len(shouted) >= 2 or not re.search(r"[a-z]", "".join(_sentence_around(match)))):
        return token.lower()  # "IS IT STILL UNDER WARRANTY?", "I DID IT!"
    if token == "WHO":
        before, after = _sentence_around(match)
        if re.match(r"\s*(?i:it|he|she|they|you|we|i|did|does|do|is|was|are|were|else|cares|knows)\b", after) or \
                match.string[match.end() + len(after):match.end() + len(after) + 1] == "?":
            return "who"  # "WHO did this?", "guess WHO it was": the word stressed, not the organisation
    # (not a short one that opens with three consonants no English syllable opens with: "REPLACE GFCI IN KITCHEN")
    if len(common) >= 2 and (token == "US" or (len(token) >= 4 and _VOWELS & set(token) and token not in WORD_ACRONYMS
                                               and not (len(token) <= 5 and re.match(r"[^AEIOUY]{3}", token)
                                                        and token[:3] not in ("CHR", "PHR")
                                                        and not SAYABLE_START.match(token)))
                             or (len(token) == 3 and token not in SPELLED and one_syllable(token))):  # "THE GYM"
        return token.lower()
    if len(token) >= 4 and token not in SPELLED | WORD_ACRONYMS and (
            token[0] not in _VOWELS and SAYABLE_START.match(token) or _ALTERNATING.fullmatch(token)) and (
            len(worded) >= 2 or worded and (_ALTERNATING.fullmatch(token) or one_syllable(token)
                                            or _CONSONANT_ALTERNATING.fullmatch(token))
            and not re.search(r"[a-z]", "".join(_sentence_around(match)))):
        # "FUEL" among words that read as words; "HVAC" is no word's start, and one opening with its vowel ("ESPN",
        # "USAA", "UCLA") is as often an acronym, unless its vowels and consonants alternate ("OVEN", "EDIT", "AREA":
        # a word of them one among words on a line all in capitals, "BAY AREA TRAFFIC"; so is one of one syllable,
        # "LONDON SYNC 16:30")
        return token.lower()
    if token in _SYLLABLE_ACRONYMS and re.search(r"[a-z]", "".join(_sentence_around(match))):
        return " ".join(token)  # "The SAT and ACT", "a PET scan": in mixed text the acronym, not "sat", "pet"
    if len(token) == 3 and token not in SPELLED and token not in _SYLLABLE_ACRONYMS and token not in WORD_ACRONYMS \
            and token.lower() not in COMMON_WORDS and (one_syllable(token) or _VOWEL_SYLLABLE.fullmatch(token)
                                                        or token in _SHOUTED_SHORT_WORDS):
        # "MAX LOAD PER SHELF", "LOG IN AGAIN": among shouted words of its own sentence (as far as open_caps holds a
        # token while streaming) that read as words, two of them or one on a line all in capitals ("MAX LOAD: 300
        # LBS."), a word of one syllable
        before, after = _sentence_around(match)
        worded = [word for word in (w.strip(".,;:!?") for w in before.split()[-4:] + after.split()[:4])
                  if _SHOUTED.fullmatch(word) and (word.lower() in COMMON_WORDS or _worded(word))]
        if len(worded) >= 2 or worded and not re.search(r"[a-z]", before + after):
            return token.lower()
    return caps(token)


# words of two syllables, three letters, that a shouted line means as words ("WORLD WAR II ERA HOMES", "2 DAYS AGO");
# in mixed text the acronym ("a 2.45 ERA")
_SHOUTED_SHORT_WORDS = frozenset("ERA AGO AHA".split())
_ALTERNATING = re.compile(r"[AEIOU](?:[B-DF-HJ-NP-TV-Z](?:EA|IA|[AEIOUY]))+[B-DF-HJ-NP-TV-Z]?")  # "IDEA", "AREA"
# "BODY", "CITY", "LADY": a consonant and a vowel by turns, a word's shape (an acronym of that shape, "NASA", is said as one)
_CONSONANT_ALTERNATING = re.compile(r"(?:[B-DF-HJ-NP-TV-XZ][AEIOU])+[B-DF-HJ-NP-TV-XZ][AEIOUY]?")
_SENTENCE_END = re.compile(r"[.!?](?:\s|\Z)|\n")
_SYLLABLE_ACRONYMS = frozenset("SAT MIT CAT PET LED VIN DOB POS BOT EST EDT CET ACT APT ACC ATT IDE ICE".split())  # spelled,
# though of one syllable's shape
# A shouted word of one syllable that opens with its vowel: a doubled consonant or a coda after it ("ADD", "APP", "ASK",
# "END"; acronyms seldom double a letter), or a consonant and a silent "E" ("OWE", "USE", "ATE")
_VOWEL_SYLLABLE = re.compile(r"[AEIOU](?:([B-DF-HJ-NP-TV-Z])\1|[B-DF-HJ-NP-TV-Z]E|%s)" % "|".join(
    coda.upper() for coda in _CODA if len(coda) == 2 and coda[0] != coda[1]))


def _worded(word: str) -> bool:
    """A shouted word of four letters or more that reads as a word ("LOAD", "SHELF", "AGAIN"), not an acronym."""
    base = word[:-1] if word.endswith("S") and len(word) > 4 else word
    return len(base) >= 4 and base not in SPELLED and base not in WORD_ACRONYMS and base not in SPOKEN_CAPS and (
        one_syllable(base) or base.lower() in COMMON_WORDS or (len(base) >= 5 and _VOWELS & set(base) and
                                                             SAYABLE_START.match(base) is not None))


_CAPS_TOKEN = re.compile(r"(?<![\w'’])[A-Z][A-Z'’]*[A-Z]s?(?![\w'’])")
_CONTEXT_CHARS = 40  # _caps reads up to four words within this much text after a token


def open_caps(text: str) -> int | None:
    """Where an ALL-CAPS word whose reading may still change starts at the end of ``text`` (``_caps`` judges it by
    the words after it: until they, or a sentence's end, have come, "JUNE" may be shouted or an acronym), or None."""
    for token in _CAPS_TOKEN.finditer(text, max(0, len(text) - 2 * _CONTEXT_CHARS)):
        after = text[token.end():]
        if len(after) < _CONTEXT_CHARS and not re.search(r"[.!?]\s|\n", after):  # a sentence's end, not "10.0.0.0"
            return token.start()
    return None


_BEFORE_NUMBER = {"p.": "page", "pp.": "pages", "ca.": "circa", "c.": "circa", "b.": "born", "d.": "died"}
# After "b." or "d." (born, died): a year or a date ("b. 1958", "d. 2 May 2001", "d. May 2, 2001")
_LIFE_DATE = (r"[ \t]?(?:\d{3,4}\b|(?:\d{1,2}[ \t]+)?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
              r"[ \t]+\d)")


def _before_number(match: re.Match[str]) -> str:
    """"p. 12" "page twelve", "pp. 45-60" "pages", "ca. 1850" / "c. 300 BC" "circa", "(b. 1958; d. 2 May 2001)" "born", "died":
    said so only before a number (born and died before a year or a date)."""
    said = _BEFORE_NUMBER[match.group().lower()]
    return said.capitalize() if match.group()[0].isupper() else said


def open_counted(text: str) -> int | None:
    """Where a word that numbers things starts at the end of ``text`` when the numbers after it may yet be a pair
    ("Fig. 2 and" before "3": "Figures"), or None."""
    tail = _OPEN_COUNTED.search(text, max(0, len(text) - 40))
    return tail.start() if tail else None


def _label(match: re.Match[str]) -> str:
    """"Ph:" -> "Phone:", "Ph. 604-555-0192" -> "Phone 604...": a contact label before its colon or its number."""
    return LABELS[match.group().rstrip(".")]


_DOSE_FORMS = {"tab": "tablet", "cap": "capsule"}


# A dose's context: a verb of taking or giving before the count, or how or how often after the form ("40 tabs open"
# are a browser's, "2 caps" on their own a hat's)
_DOSE_VERB_BEFORE = re.compile(r"(?i:\b(?:take|takes|taking|took|give|given|giving|chew|chewed|swallow|swallowed|dose|"
                               r"dosage|dispense|dispensed|sig|rx|prescribed|administer))\b[^.!?\n]{0,24}\Z")
_DOSE_AFTER = re.compile(r"\.?[ \t]+(?i:daily|twice|once|three|four|every|a[ \t]day|per[ \t]day|by[ \t]mouth|po|bid|"
                         r"tid|qid|qd|qhs|prn|q\d|at[ \t]bedtime|with[ \t](?:food|water|meals?)|as[ \t]needed|of)\b")


def _dose_form(match: re.Match[str]) -> str | None:
    """"1 tab. twice daily" -> "one tablet", "2 caps" -> "two capsules": a dose form after its count."""
    if not (_DOSE_VERB_BEFORE.search(match.string, max(0, match.start() - 40), match.start())
            or _DOSE_AFTER.match(match.string, match.end() - match.group().endswith("."))):
        return None
    word = match.group().rstrip(".")
    name = _DOSE_FORMS[word.rstrip("s")]
    return name if one_before(match) and not word.endswith("s") else name + "s"


# A prescription's sig codes after its dose ("Take 1 tab PO BID", "500 mg po q6h prn"): how and how often
SIG_CODES = {"po": "by mouth", "bid": "twice a day", "tid": "three times a day", "qid": "four times a day",
             "qd": "once a day", "prn": "as needed", "hs": "at bedtime", "ac": "before meals", "pc": "after meals"}
_SIG_CODE = r"(?i:%s|q\d{1,2}h)\.?" % "|".join(SIG_CODES)
_SIG = rf"(?<![\w.]){_SIG_CODE}(?:[ \t]+{_SIG_CODE})*(?![\w])"
_DOSE_BEFORE = re.compile(r"(?i:\b(?:tabs?|tablets?|caps?|capsules?|pills?|mg|mcg|ml|units?|drops?|puffs?|sprays?)\.?)"
                          r"[ \t]+\Z|(?<=\d)[ \t]?(?i:mg|mcg|ml|g)[ \t]+\Z"
                          r"|(?i:\btake)[ \t]+\d{1,2}[ \t]+\Z")  # "take 1 q4h"


def _sig(match: re.Match[str]) -> str | None:
    """"PO BID" "by mouth twice a day", "q6h" "every six hours": only after a dose ("PO box", "PO 7200" stay)."""
    if not _DOSE_BEFORE.search(match.string, max(0, match.start() - 16), match.start()):
        return None
    said = []
    for code in match.group().split():
        code = code.rstrip(".").lower()
        said.append(SIG_CODES.get(code) or f"every {w.cardinal(code[1:-1])} hours")
    return " ".join(said) + ("." if match.group().endswith(".") and ends_sentence_after(match) else "")


def _copied(match: re.Match[str]) -> str:
    """"cc agent@x.com", "bcc: me": the copy lines of an e-mail are spelled (a word they are not)."""
    return " ".join(match.group().upper())


def _pattern(words: dict[str, str]) -> str:
    """``words`` as one trie (numbers.trie): tried at every word, a flat list of hundreds would be tried one by one."""
    return trie(list(words))


# Said in any case ("ETC.", "Incl."), but for "est." and "pt." ("EST.", "PT." are time zones), "sep." ("Sep." is
# September) and "co." ("CO." is Colorado).
_LOWER_ABBREVIATIONS = {k: v for k, v in ABBREVIATIONS.items() if k.islower() and "." in k and k not in ("est.", "pt.", "sep.", "co.")}
# "serial no. on the unit": "no." after what is numbered is "number" whatever follows.
_NUMBERED_NO = "|".join(rf"(?<=\b{noun}[ \t])no\." for noun in (
    "serial model part account policy order item invoice case claim ticket flight room phone lot batch ref reference "
    "tracking confirmation patient member contract routing card acct\\. ref\\. inv\\. conf\\.").split())  # "ref. no." too
_COUNTER_WORDS = sorted((k for k, v in {**TITLES, **ABBREVIATIONS}.items() if v.lower() in _COUNTERS), key=len,
                        reverse=True)
_OPEN_COUNTED = re.compile(r"(?<![\w.])(?:%s)[ \t]*(?:%s(?:,[ \t]?%s)*,?(?:[ \t]+(?:and|&|to|through|thru)?)?)?[ \t]*\Z"
                           % ("|".join(re.escape(k) for k in _COUNTER_WORDS), _N, _N))


# A title in capitals before a name in capitals: "SGT. DAVIS", "DR. REYES" (not "ST.", nor "NO.": read elsewhere)
_SHOUTED_TITLE = "(?:%s)(?=[ \t]+[A-Z]{2})" % _pattern({k.upper(): v for k, v in TITLES.items() if k not in ("St.", "No.")})


# A shouted "NO." or "NO:" after a shouted word, before a number or a code: "CLAIM NO. WC-2024-0081" "CLAIM NUMBER
# ...", "POLICY NO: HO3-559210" "POLICY NUMBER: ..."
_SHOUTED_NO = r"(?<=[A-Z][ \t])NO(?:\.|(?=:))(?=:?[ \t]?(?:#?\d|[A-Z]{1,4}-?\d))"


# small-letter words with no vowel that are no acronym: interjections, a writer's shorthand for a word
_NO_VOWEL_WORDS = frozenset("tsk pfft hmph nth psst pst pls plz thx txt msg pkg hrs pts lbs tsp tbsp pcs wks mths blvd bldg "
                            "mgmt mfg ctrl cmd sth smth ppl cnt xmas nvm "
                            "tbh smh btw ttyl lmk ngl tbf".split())  # (chat shorthand left as written; "brb" is spelled)


# Chat shorthand in small letters that stands for a phrase, said as the phrase ("lmk" "let me know"); "asap" by its
# letters, as its capitals are
_CHAT = {"lmk": "let me know", "idk": "I don't know", "asap": "A S A P", "fyi": "F Y I", "btw": "by the way",
         "gg": "G G", "wp": "W P", "ggwp": "G G W P"}  # a game's end: "good game", "well played", by their letters
# (others, "tbh", "smh", stay as written)


_CHAT_BEFORE = re.compile(r"(?<![\w'’@/#.-])(?:pls|plz|Pls|Plz)(?![\w'’@/-])[^.!?\n]*\Z")


_PASSWORD_BEFORE = re.compile(r"(?<![\w'’])(?:temp|temporary|new|old|your|my|the|wifi|default|reset|his|her|our|their)"
                              r"[ \t]\Z")
_JOB_NEAR = re.compile(r"(?i:\b(?:job|jobs|position|positions|role|roles|schedule|employment|hiring|hire|shift|shifts|"
                       r"employees?|staff|openings?|status|benefits|hours|opportunity|work)\b)")


def _job_time(match: re.Match[str]) -> str | None:
    around = match.string[max(0, match.start() - 32):match.end() + 32]
    if not _JOB_NEAR.search(around):
        return None
    return "full-time" if match.group() == "FT" else "part-time"


def _small_initials(match: re.Match[str]) -> str | None:
    """"rsvp", "tbd": an acronym written in small letters, no vowel in it: spelled (not an interjection, "hmm",
    "shh", "brr", nor a shorthand, "pls", "hrs")."""
    text = match.group()
    if text in _NO_VOWEL_WORDS or re.search(r"([a-z])\1", text):
        return None
    return " ".join(text.upper())


# --- a court's citations: a statute's section, a reporter's volume and page, a circuit ---------------------------

# The states' abbreviations in a statute's or a code's citation that the AP's (addresses.py) do not shorten so:
# "Cal. Civ. Code", "Tex. Prop. Code", "Haw. Rev. Stat."
_LAW_STATES = {"Cal.": "California", "Tex.": "Texas", "Haw.": "Hawaii"}


def _law_state(match: re.Match[str]) -> str:
    return _LAW_STATES[match.group()]


def _statutes(match: re.Match[str]) -> str | None:
    """"Fla. Stat. § 83.56", "Nev. Rev. Stat.", "Stat. §": a state's statutes (after its abbreviation, before a
    section's sign)."""
    before = match.string[max(0, match.start() - 12):match.start()]
    if _STATUTE_BEFORE.search(before) or re.match(r"[ \t]*§", match.string[match.end():match.end() + 3]):
        return "Statutes"
    return None


_STATUTE_BEFORE = re.compile(r"(?<![\w.])(?:[A-Z][a-z]{1,4}|[A-Z]\.[A-Z])\.[ \t]+\Z")  # "Fla. ", "Rev. ", "N.Y. "


def _section_number(match: re.Match[str]) -> str:
    """"§ 3604" "section thirty-six oh four", "§ 1950.5" "section nineteen fifty point five": a code's section
    number of three or four digits as people say it, in pairs (one of two digits is a plain number)."""
    number = match.group().lstrip("§ \t")
    whole, dot, part = number.partition(".")
    return "section " + w.paired(whole) + (" point " + w.digits(part) if dot else "")


# A law report's citation: its volume, the reporter's name (its series), the first page: "412 F.3d 88" "four twelve F
# third eighty-eight", "347 U.S. 483" "three forty-seven U S four eighty-three", "550 F. Supp. 2d 100"
_SERIES = {"2d": "second", "3d": "third", "4th": "fourth"}
_REPORTER = (r"(?:U\.S\.|F\.(?:[ \t]?Supp\.)?(?:[ \t]?(?:2d|3d|4th))?"
             r"|(?:P|A|[NS]\.[ \t]?[EW])\.[ \t]?(?:2d|3d|4th))")


def _reporter(match: re.Match[str]) -> str:
    volume, *name, page = match.group().split()
    words = []
    for part in re.findall(r"Supp|2d|3d|4th|[A-Z]", " ".join(name)):
        words.append(_SERIES.get(part, part))
    return f"{w.paired(volume)} {' '.join(words)} {w.paired(page)}"


RULES: list[Rule] = [
    ("abbreviation", r"(?<![\w.])(?:Cal|Tex|Haw)\.(?=[ \t]+(?:Civ|Penal|Code|Stat|Gov|Bus|Fam|Evid|Veh|Lab|Health|Prop|"
                     r"Ins|Educ|Admin|Rev|Const|Fin|Pub|Prob|Water|Elec|Loc|Util|Crim|Transp)\b)", _law_state),
    ("abbreviation", r"(?<![\w.])Stat\.(?![\w])", _statutes),
    ("abbreviation", r"§[ \t]?\d{3,4}(?:\.\d{1,3})?(?![\w]|[.,]\d|[ \t]?[-–][ \t]?\d)", _section_number),
    ("abbreviation", rf"(?<![\w.,$#/-])\d{{1,4}}[ \t]+{_REPORTER}[ \t]+\d{{1,5}}(?![\w]|[.,]\d)", _reporter),
    # "(2d Cir. 2005)", "9th Cir.", "Fed. Cir.": a federal court of appeals by its circuit
    ("abbreviation", r"(?:(?<=\d[dD][ \t])|(?<=\d(?:st|nd|rd|th)[ \t])|(?<=\bD\.C\.[ \t]))Cir\.(?=[ \t]*(?:\d{4}\b|[),]))"
                     r"|(?<![\w.])Fed\.[ \t]Cir\.(?=[ \t]*(?:\d{4}\b|[),]))",
     lambda match: "Federal Circuit" if match.group().startswith("Fed") else "Circuit"),
    ("title", rf"(?<![\w.])(?:St\.|(?:{_pattern({k: v for k, v in TITLES.items() if k != 'No.'})})|{_SHOUTED_TITLE}|{_SMALL_TITLES}|No\.(?=:?[ \t]?(?:\d|[A-Z]{{1,4}}-?\d)|[ \t]of\b)|no\.(?=:?[ \t]?(?:\d|[A-Z][A-Z\d-]*\d))|{_NUMBERED_NO}|{_SHOUTED_NO})",
     _title),
    # "Ch. Rosewood Duke III": a show title before a registered name of two capitalised words (a chapter has a number)
    ("abbreviation", r"(?<![\w.])Ch\.(?=[ \t]+[A-Z][a-z]+[ \t]+[A-Z][a-z])", lambda match: "Champion"),
    # "Admin. Coord. II", "Admin. Assistant": a job title's "Admin." before the capitalised word it describes
    ("abbreviation", r"(?<![\w.])Admin\.(?=[ \t]+(?:Coord\.|[A-Z][a-z]{3,}))", lambda match: "Administrative"),
    # "Reg. price $42", "reg. rate": the regular price before what it prices
    ("abbreviation", r"(?<![\w.])(?:Reg|reg)\.(?=[ \t]+(?i:price|prices|rate|rates|fee|retail|cost)\b)",
     lambda match: _cased(match, "regular")),
    # "Spitfire Mk IX", "Mk. 2": a model's mark before its numeral
    ("abbreviation", r"(?<![\w.])Mk\.?(?=[ \t]?(?:[IVX]{1,5}|\d{1,2})(?![\w]))", lambda match: "Mark"),
    # "Dep. 10:15, Arr. 12:40": a flight's departure and arrival before their times
    ("abbreviation", r"(?<![\w.])(?:Dep|DEP|Arr|ARR)\.(?=:?[ \t]*\d{1,2}(?::\d\d|[ \t]?[AaPp]\.?[Mm]\b))",
     lambda match: _cased(match, "departure" if match.group()[0] == "D" else "arrival")),
    # "S/N 88C-2047", "s/n: 4471": a serial number before its code (not a signal-to-noise ratio, no digit after it)
    ("abbreviation", r"(?<![\w/])(?:S/N|s/n|SN#)(?=:?[ \t]*#?[A-Z]{0,4}\d)",
     lambda match: _cased(match, "serial number")),
    ("abbreviation",
     rf"(?<![\w.])(?:{_pattern(ABBREVIATIONS)}|(?i:{_pattern(_LOWER_ABBREVIATIONS)}))(?![\w])", _abbreviation),
    # "2BR apt available", "studio apt for rent": a listing's home after its rooms, "apartment" (not the word "apt")
    ("abbreviation", r"(?:(?<=\dBR[ \t])|(?<=\dbr[ \t])|(?<=\dbd[ \t])|(?<=(?i:studio)[ \t]))(?i:apt)(?![\w.])",
     lambda match: "apartment"),
    ("before_number", r"(?<![\w.])(?:[Pp]{1,2}|[Cc]a)\.(?=[ \t]?\d)|(?<![\w.])c\.(?=[ \t]?\d{3,4}\b)"
                      rf"|(?<![\w.])[bd]\.(?={_LIFE_DATE})", _before_number),
    # A book's edition: "ed.", "edn" after an ordinal or "rev.", or before its number ("4th ed.", "2nd edn", "rev. ed.",
    # "ed. 3")
    ("abbreviation", r"(?:(?<=\d(?:st|nd|rd|th)[ \t])|(?<![\w.])[Rr]ev\.[ \t])(?:ed\.|edn\b\.?)|(?<![\w.])ed\.(?=[ \t]?\d)",
     lambda match: ("revised " if match.group()[0] in "Rr" else "") + "edition" + (
         "." if match.group().endswith(".") and ends_sentence_after(match) else "")),
    ("label", rf"(?<![\w.])(?:{_pattern(LABELS)})(?:(?=:)|\.?(?=[ \t]*[+(]?\d))", _label),
    # "ph: 617 555 0143": a phone's label in small letters before a phone number's area code (not a pH value, "ph 7.2")
    ("label", r"(?<![\w.])ph(?=[.:]?[ \t]*(?:\+?1[ \t.-])?\(?\d{3}(?![\d.,]))",
     lambda match: "phone"),
    # "pls call when u can", "thx, lmk if u need": a chat's "u", you, before a verb it is the subject of, after a
    # chat word earlier in its sentence
    ("abbreviation", r"(?<=[a-z][ \t])u(?=[ \t]+(?:can|could|will|would|are|were|need|want|get|got|have|know|think|"
                     r"should|might|may|did|do|don't|see)\b)",
     lambda match: "you" if _CHAT_BEFORE.search(match.string, max(0, match.start() - 60), match.start()) else None),
    ("copied", r"(?<![\w.@'’])(?i:b?cc)(?=:|[ \t]+(?:me|us|them|him|her|[\w.+-]+@))", _copied),
    ("sig", _SIG, _sig),
    # "1 lg. pizza, 2 med. drinks": an order's size after its count, before the thing ordered
    ("abbreviation", r"(?<=\d[ \t])(?:lg|lrg|med|sm|reg)\.(?=[ \t]+[a-z])",
     lambda match: {"lg": "large", "lrg": "large", "med": "medium", "sm": "small", "reg": "regular"}[match.group()[:-1]]),
    ("dose_form", r"(?<=\d[ \t])(?:tab|cap)s?(?:\.(?=[ \t]+[a-z])|(?![\w]))", _dose_form),
    ("letters_word", r"(?<![\w'’-])[A-Z]-[A-Z]{1,2}[A-Z][a-z]{2,}(?![\w'’-])",  # "E-ZPass": its letters, then its word
     lambda match: " ".join(match.group()[:-len(re.search(r"[A-Z][a-z]+\Z", match.group())[0])].replace("-", ""))
     + " " + re.search(r"[A-Z][a-z]+\Z", match.group())[0]),
    ("initials_and", r"(?<![\w&])[A-Z]{1,3}&[A-Z]{1,3}(?![\w&])",  # "AT&T", "R&D", "Q&A": letters and letters
     lambda match: " and ".join(" ".join(part) for part in match.group().split("&"))),
    ("dotted", r"(?<![\w.])(?:(?:[A-Za-z]\.){2,}|(?:[A-Z]\.){1,3}[A-Z](?![\w.]))(?![\w])", _dotted),  # "A.D", "B.C": its last
    # full stop left out
    # A listing's shorthand where its context makes it sure: "FT/PT positions" (full time or part time), "W/D in unit"
    # (washer and dryer), "CDL req., clean record" (required, after what is required, ending its item), "$65K DOE"
    # (depending on experience, after pay)
    ("abbreviation", r"(?<![\w/])(?:FT/PT|PT/FT)(?![\w/])",
     lambda match: " or ".join({"FT": "full time", "PT": "part time"}[part] for part in match.group().split("/"))),
    # "Job type: FT, M–F": full-time or part-time where a job's words are near it (not feet after a number, nor
    # a physical therapist elsewhere), and "M–F" a week's working days, "Monday to Friday"
    ("abbreviation", r"(?<![\w/.-])(?<!\d[ \t])(?:FT|PT)(?![\w/'’-])", _job_time),
    ("abbreviation", r"(?<![\w/.-])M[ \t]?[–-][ \t]?F(?![\w/'’-])", lambda match: "Monday to Friday"),
    ("abbreviation", r"(?<![\w/])W/D(?=[ \t]+(?:in\b|hook|incl|included\b|on[ \t-]site\b|provided\b))", lambda match: "washer and dryer"),
    ("abbreviation", r"(?<=[\w).][ \t])(?:req\.|REQ\.)(?=[ \t]*(?:[,;)]|\n|\Z)|[ \t]+[A-Z])",
     lambda match: "required" + ("." if ends_sentence_after(match) else "")),
    ("abbreviation", r"(?<![\w'’])DO[EQ](?![\w'’])", _pay_depends),
    ("abbreviation", r"(?<![\w'’@/#.-])(?:%s)(?![\w'’@/-])" % "|".join(_CHAT), lambda match: _CHAT[match.group()]),
    # chat in small letters: "the temp pw" (a password, after a word that owns or describes it)
    ("abbreviation", r"(?<![\w'’@/#.-])pw(?![\w'’@/.-]|\.\w)",
     lambda match: "password" if _PASSWORD_BEFORE.search(match.string, max(0, match.start() - 16), match.start())
     else None),
    # "Exp: 11/2026", "EXP 03/27": a card's or a package's label before the date it expires
    ("abbreviation", r"(?<![\w.'’@/#-])(?:Exp|EXP|exp)(?:\.?:?)(?=[ \t]*\d{1,2}[/-](?:\d{4}|\d\d)(?![\w/]))",
     lambda match: "expires" if match.group()[0] == "e" else "Expires"),
    # "re: deposit returns", "RE: your lease": regarding, before what is written about
    ("abbreviation", r"(?<![\w.'’@/#-])(?:re|Re|RE):(?=[ \t]+[\w\"“'‘])",
     lambda match: "regarding" if match.group()[0] == "r" else "Regarding"),
    # "new eta 2:40pm", "what's the eta?": an estimated time of arrival in small letters, spelled as its capitals are
    # (not the Greek letter of a formula: "eta = 0.3")
    ("abbreviation", r"(?<![\w'’@/#.=\\-])(?<!=[ \t])eta(?![\w'’@/=-]|[ \t]*[=<>^_(])", lambda match: "E T A"),
    # "PvP", "QoL", "PvE": an initialism with its small middle word's letter (player versus player), spelled (not
    # one that reads as a syllable: "NaN")
    ("caps", r"(?<![\w'’@/#.-])[A-Z][a-z][A-Z]s?(?![\w'’@/-])",
     lambda match: None if one_syllable(match.group()[:3]) else " ".join(match.group()[:3].upper()) + match.group()[3:]),
    # "Ep. 12", "Pt. 2", "Lv. 60": an episode, a part, a level before its number
    ("abbreviation", r"(?<![\w.])(?:Ep|Pt|Lv|Lvl|ep|lv|lvl)\.(?=[ \t]?\d)",
     lambda match: _cased(match, {"ep": "episode", "pt": "part", "lv": "level", "lvl": "level"}[match.group()[:-1].lower()])),
    # "ft. Jay and Mo": a song's or a video's guest, "featuring", before a capitalised name (not after a count: feet)
    ("abbreviation", r"(?<![\w.\d])(?<!\d[ \t])(?:ft\.(?=[ \t]+[A-Z][a-z])|feat\.(?=[ \t]+[A-Z]))", lambda match: "featuring"),
    # "feat. MC Lark": "feat." before any capitalised name, initials too (no unit is "feat.")
    # "your pass id is", "user id": a small-letter "id" after a word it identifies, spelled (Freud's "id" stays)
    ("abbreviation", "(?:%s)id(?![\\w'’@.-])" % "|".join(rf"(?<=\b{noun}[ \t])" for noun in (
        "pass user card member guest login customer student employee traveler account device session").split()),
     lambda match: "I D"),
    # "EST. 1998", "EST MCMXXVI": a shouted "Est." before a year, established (not after a time: the time zone)
    ("abbreviation", r"(?<![\w.])(?<![\d.][ \t])(?<![mM][ \t])(?<![mM]\.[ \t])EST\.?"
                     r"(?=[ \t]+(?:in[ \t]+)?(?:(?:1[5-9]|20)\d\d\b|M{1,2}(?:CM|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})\b))",
     lambda match: "ESTABLISHED"),
    # "Kelly's Auto Body dba KAB Collision": doing business as, between two names
    ("abbreviation", r"(?<=[\w.'’][ \t])(?:dba|DBA|d/b/a|D/B/A)(?=[ \t]+[A-Z\d\"“])", lambda match: "doing business as"),
    # "comp w/ $250 ded": an insurance policy's deductible, after an amount of money
    ("abbreviation", r"(?<=\d[ \t])ded\.?(?![\w'’-])", _deductible),
    # "ext. paint", "int. doors": a finish's or a part's side of a building before what it names (not "ext. 214")
    ("abbreviation", r"(?<![\w.])(?:[Ee]xt|EXT|[Ii]nt|INT)\.(?=[ \t]+(?i:paint|primer|stain|walls?|doors?|siding|trim|"
                     r"finish|grade|latex|enamel|lighting|lights|outlets?|surfaces?|use|sheathing)\b)",
     lambda match: _cased(match, "exterior" if match.group()[0] in "Ee" else "interior")),
    # "ref no. A7-339-B", "Ref #: 4471": a reference's number (the label "ref" is "reference" before its number's name)
    ("abbreviation", r"(?<![\w.])(?:ref|Ref|REF)(?=[ \t]+(?:no\.|No\.|NO\.|#|number)(?![\w]))",
     lambda match: _cased(match, "reference")),
    # "PASSID", "USERID": a common word in capitals run into "ID", the word, then the letters
    ("caps", r"(?<![\w'’])[A-Z]{4,8}ID(?![\w'’])",
     lambda match: match.group()[:-2] + " I D" if match.group()[:-2].lower() in COMMON_WORDS else None),
    ("caps", r"(?<![\w'’])MAC(?=[ \t]+(?:address|addresses|ADDRESS)\b)", lambda match: "Mac"),  # a network card's
    # "MAC address", said as a word
    ("caps", r"(?<![\w'’])[A-Z][A-Z'’]*[A-Z]s?(?![\w'’]|[²³])|(?<![\w'’])[A-Z]{2,3}(?=[²³])"
             r"|(?<![\w'’])(?:[B-DF-HJ-NP-TV-Z]{2,5}|[AEIOU][A-Z]{1,2})(?=['’]s(?![\w'’]))", _caps),  # "MC²"; "the LLC's EIN": its possessive's
    # "'s" after it (capitals with no vowel, no word: spelled; "the ADA's", "EPA's": a vowel
    # opening two or three capitals, heard as a name, "Ada's", as the capitals are read alone)
    # "Brown v. Board", "Roe v. Wade": a case's "v." between two capitalised names, "versus"
    ("abbreviation", r"(?<=[A-Za-z.][ \t])v\.(?=[ \t]+[A-Z])", _case_versus),
    # "proof of res.", "place of res.": where one lives, "residence"
    ("abbreviation", r"(?<=[ \t]of[ \t])res\.", _residence),
    # "Pt. must fast": a clinical note's patient before a small word ("Pt. Reyes" is a point, "PT." a time zone)
    ("abbreviation", r"(?<![\w.])Pts?\.(?=[ \t]+[a-z])", lambda match: "Patients" if match.group() == "Pts." else "Patient"),
    # "NVMe", "PCIe": capitals spelled and a small letter after them, spelled with them (not a plural's "s")
    ("caps", r"(?<![\w'’.@/#:=&?~+-])[b-df-hj-np-tv-xz]{3,5}(?![\w'’@/=+]|[.:-]\w)", _small_initials),
    ("caps", r"(?<![\w'’])[A-Z]{2,5}[a-rt-y](?![\w'’])",
     lambda match: " ".join(match.group().upper()) if " " in caps(match.group()[:-1]) else None),
]
