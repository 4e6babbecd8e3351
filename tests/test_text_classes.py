"""engine/speech_text/semiotic.py: each semiotic class read as a person says it, context choosing between readings,
the locale option, and the independent case set (tests/data/text_cases/) scored through ``bench text --cases``, read
the same streamed as whole."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cbf_tools.bench import text_cases
from cbf_tools.bench.text import front_end
from engine.speech_text.normalize import normalize
from engine.speech_text.reader import Reader
from engine.speech_text.semiotic import classify
from engine.speech_text.spans import spoken

CASES = Path(__file__).parent / "data" / "text_cases"
THIRD_PARTY = Path(__file__).parent / "data" / "third_party_tn" / "cases.tsv"


def said(text: str, locale: str | None = None) -> str:
    return spoken(normalize(text, locale=locale)).strip()


SAID = [
    # times
    ("at 01:00", "at one o'clock"), ("at 14:00", "at fourteen hundred"), ("at 00:30", "at twelve thirty AM"),
    ("at 1.59 p.m. today", "at one fifty-nine PM today"), ("from 2-4pm", "from two to four PM"),
    ("9am-5pm", "nine AM to five PM"), ("at 2200 hours", "at twenty-two hundred hours"),
    # dates
    ("on 01.10.2010", "on the first of October, twenty ten"), ("june 20 2014", "June twentieth, twenty fourteen"),
    ("JAN 15 2020", "January fifteenth, twenty twenty"), ("on the 26th May", "on the twenty-sixth of May"),
    ("June 20, 2014", "June twentieth, twenty fourteen"), ("starts 11/29.", "starts November twenty-ninth."),
    ("open Mon-Fri", "open Monday to Friday"), ("Tue, Mar 4", "Tuesday, March fourth"),
    # telephone
    ("123-123-5678-1", "one two three, one two three, five six seven eight, one"),
    ("call +1 415 555 0100", "call plus one, four one five, five five five, zero one zero zero"),
    ("call 555-1234 ext. 204", "call five five five, one two three four extension two zero four"),
    ("1-800-FLOWERS", "one, eight hundred, flowers"), ("Call 911 now", "Call nine one one now"),
    ("Text STOP to 72345", "Text stop to seven two three four five"),
    # money
    ("$.01", "one cent"), ("₩460 billion", "four hundred sixty billion won"), ("CHF 40", "forty Swiss francs"),
    ("1,200 USD", "one thousand two hundred dollars"), ("12€", "twelve euros"),
    # measures, fractions, decimals, ranges, maths
    ("12kg/kg", "twelve kilograms per kilogram"), ("5 mg/mL", "five milligrams per milliliter"),
    ("2 GB/s", "two gigabytes per second"), ("5'11\"", "five feet eleven inches"),
    ("a 5000 mAh battery", "a five thousand milliamp hour battery"), ("1/4th", "one fourth"),
    ("7/16 of an inch", "seven sixteenths of an inch"), ("3 1/2", "three and a half"), (".5", "point five"),
    ("2%-10%", "two to ten percent"), ("1-2=5", "one minus two equals five"), ("x^2", "x squared"),
    ("y = 2x + 1", "y equals two x plus one"),
    # codes, roman numerals, addresses, abbreviations
    ("seat C24", "seat C twenty-four"), ("code AB12-9XZ", "code A B one two-nine X Z"),
    ("error 0x1F", "error zero x one F"), ("Q1-Q3", "Q one to Q three"), ("Chapter IV", "Chapter four"),
    ("Henry VIII", "Henry the eighth"), ("World War II", "World War two"), ("Chapter I was", "Chapter I was"),
    ("Apt. 4B", "Apartment four B"), ("Ste. 200", "Suite two hundred"),
    ("1428 Elm St. It was", "fourteen twenty-eight Elm Street. It was"), ("Visit St. Louis", "Visit Saint Louis"),
    ("Seattle, WA 98109-5210", "Seattle, Washington nine eight one zero nine, five two one zero"),
    ("Lt. Col. Reed", "Lieutenant Colonel Reed"), ("due in Jan.", "due in January."),
    ("Our depot: 2500 N. Highway 1", "Our depot, twenty-five hundred North Highway one"),
    ("Ph: 415-555-0102", "Phone, four one five, five five five, zero one zero two"), ("pH 7.4", "P H seven point four"),
    # electronic: names people spell, ports, numbers in paths
    ("ceo@startup.ai", "C E O at startup dot A I"), ("jsmith@acme-corp.com", "J smith at acme dash corp dot com"),
    ("irs.gov/forms", "I R S dot gov slash forms"), ("localhost:8080", "localhost colon eight zero eight zero"),
    ("blog.tripnest.travel/tips", "blog dot tripnest dot travel slash tips"),
    ("at 10.0.0.254", "at ten dot zero dot zero dot two five four"), ("#SummerSale", "hashtag summer sale"),
    # codes said as codes: cued digit runs, flights, a code after "#"
    ("member ID is 884 211 907", "member I D is eight eight four, two one one, nine zero seven"),
    ("VIN ends in 4821", "V I N ends in four eight two one"), ("Order #A7-4402", "Order number A seven-four four zero two"),
    ("BA 287 boards", "B A two eighty-seven boards"), ("Amtrak 171 leaves", "Amtrak one seventy-one leaves"),
    ("Mobile: 07700 900123", "Mobile, zero seven seven zero zero, nine zero zero one two three"),
    ("Room 1204", "Room twelve oh four"), ("The code is 0 errors.", "The code is zero errors."),
    # ranges, scores, maths and numerals by context
    ("Mar 3 - Mar 9", "March third to March ninth"), ("grades K-5", "grades K to five"),
    ("rated 8/10 by guests", "rated eight out of ten by guests"), ("What is 7 - 3?", "What is seven minus three?"),
    ("z = x - y", "z equals x minus y"), ("3 x 4 = 12", "three times four equals twelve"),
    ("Average = (a + b) / 2", "Average equals a plus b divided by two"), ("√16 = 4", "the square root of sixteen equals four"),
    ("5! = 120", "five factorial equals one hundred twenty"), ("Scene ii", "Scene two"), ("Type x", "Type x"),
    ("It reads MMXXIV.", "It reads twenty twenty-four."), ("Press DIM", "Press dim"),
    # what no rule reads is still never raw
    ("my pnr is t2000", "my P N R is T two thousand"),
    # fixed after heldout2.tsv was scored: change "by" a fraction, codes after a number, units per a count,
    # sizes with units, dashed dates, durations, bare and star-coded phone numbers, file names, URL fragments
    ("rates rose by 1/3", "rates rose by one third"), ("pay by 1/3", "pay by January third"),
    ("a 900 CAD deposit", "a nine hundred Canadian dollars deposit"), ("10 mg/2 mL", "ten milligrams per two milliliters"),
    ("gets 40 mpg", "gets forty miles per gallon"), ("at 32 psi", "at thirty-two P S I"),
    ("a 4 m x 3 m tent", "a four meters by three meters tent"), ("due 02-Sep-2026", "due September second, twenty twenty-six"),
    ("the race took 1:02:30", "the race took one hour two minutes thirty seconds"), ("at 9:15:00", "at nine fifteen"),
    ("call us on 4155550100", "call us on four one five, five five five, zero one zero zero"),
    ("press *72 now", "press star seven two now"), ("**72** bold", "seventy-two bold"),
    ("open notes_2025-v2.docx", "open notes underscore twenty twenty-five v two dot D O C X"),
    ("see shop.com/help#billing", "see shop dot com slash help hash billing"),
    ("at www.irs.ny.gov", "at W W W dot I R S dot N Y dot gov"), ("#FAQ and #OOTD", "hashtag F A Q and hashtag O O T D"),
    ("12 Oak Terr.", "twelve Oak Terrace."), ("9 S. Main, Austin", "nine South Main, Austin"),
    ("Tampa, FL 33602", "Tampa, Florida three three six zero two"), ("the Sat. hours", "the Saturday hours"),
    ("misc. items, appt. times", "miscellaneous items, appointment times"), ("at 5 PM EST.", "at five PM E S T."),
    ("needs macOS 14", "needs mac O S fourteen"), ("after WWI", "after World War one"), ("2πr", "two pi r"),
    # fixed after heldout3.tsv was scored: products, open ranges, enumerators, fiscal years, hyphenated measures
    ("solve 3(y - 1) = 6", "solve three times y minus one equals six"), ("∠ABC", "angle A B C"),
    ("the iPhone X", "the iPhone ten"), ("open Wed. for lunch", "open Wednesday for lunch"),
    ("from 2015-present", "from twenty fifteen to present"), ("in FY2026", "in fiscal year twenty twenty-six"),
    ("see (ii) and (i)", "see two and one"), ("f(x) and (x)", "f(x) and (x)"), ("due Jan-05-2026", "due January fifth, twenty twenty-six"),
    ("a 15-min break", "a fifteen minute break"), ("at 2 × 10^4 km/h", "at two times ten to the power of four kilometers per hour"),
    ("go to shop.com/deals?src=app", "go to shop dot com slash deals question mark S R C equals app"),
    ("in C:\\Temp\\logs.", "in C colon backslash Temp backslash logs."),
    ("at 88 E Main #4, Reno", "at eighty-eight East Main number four, Reno"), ("at 12 Rte 9,", "at twelve Route nine,"),
    ("HI, WE ARE OPEN NOW.", "hi, we are open now."), ("you got 45/50 on it", "you got forty-five out of fifty on it"),
    ("he got 1/4 of it", "he got one quarter of it"), ("Ticket #1,204", "Ticket number one thousand two hundred four"),
    ("call 1 800 555 0199 now", "call one, eight zero zero, five five five, zero one nine nine now"),
    ("the code is Red4Lion", "the code is Red four Lion"), ("use ab12", "use A B twelve"),
    # fixed after heldout4.tsv was scored
    ("under Part D", "under Part D"), ("2^8 = 2,048 / 8", "two to the power of eight equals two thousand forty-eight divided by eight"),
    ("the apt. is", "the apartment is"), ("a 403(b) plan", "a four oh three B plan"), ("sold 120K units", "sold one hundred twenty thousand units"),
    ("on a 4K screen", "on a four K screen"), ("expires 06/2029", "expires June twenty twenty-nine"),
    ("expiry date is 07/27", "expiry date is zero seven twenty-seven"), ("a timeout of 00:05:00", "a timeout of five minutes"),
    ("open Monday–Friday", "open Monday to Friday"), ("a shelf 12 in wide", "a shelf twelve inches wide"),
    ("a 9 cu ft oven", "a nine cubic foot oven"), ("holds 9 cu ft", "holds nine cubic feet"), ("a 3BR, 2BA home", "a three bedroom, two bath home"),
    # fixed after heldout5.tsv was scored
    ("was 95 mg/dL.", "was ninety-five milligrams per deciliter."), ("by Monday 9/22", "by Monday September twenty-second"),
    ("I sat 3/4 of it", "I sat three quarters of it"), ("on duty at 0800.", "on duty at zero eight hundred."),
    ("at 0800, we", "at zero eight hundred, we"), ("Toronto, ON M5V 1J5", "Toronto, Ontario M five V one J five"),
    ("at 4401 Hwy 290.", "at forty-four oh one Highway two ninety."), ("take Hwy 101 north", "take Highway one oh one north"),
    ("the serial no. on it", "the serial number on it"), ("there is no. Stop.", "there is no. Stop."),
    ("your prescription Rx #602", "your prescription R X number six oh two"), ("refill your Rx", "refill your prescription"),
    ("part # 74-2210B", "part number seven four-two two one zero B"), ("E = mc^2", "E equals m c squared"),
    ("= 120 sq ft", "equals one hundred twenty square feet"), ("sqrt(81) = 9", "the square root of eighty-one equals nine"),
    ("π ≈ 3.14", "pi is approximately three point one four"), ("takes ≈ 5 min", "takes approximately five minutes"),
    ("a Level I center", "a Level one center"),
    # fixed after heldout6.tsv was scored
    ("lasts 1h 30m.", "lasts one hour thirty minutes."), ("a 5m cable", "a five meter cable"),
    ("run 45m 30s", "run forty-five minutes thirty seconds"), ("1/8 tsp of salt", "one eighth teaspoon of salt"),
    ("opens 2025-07-04T15:00.", "opens July fourth, twenty twenty-five at fifteen hundred."),
    ("at 2025-03-14T09:30Z", "at March fourteenth, twenty twenty-five at nine thirty U T C"),
    ("415.555.0110, x205", "four one five, five five five, zero one one zero, extension two zero five"),
    ("the 9th Fl., NY", "the ninth Floor, N Y"), ("Rivoli, 75001 Paris.", "Rivoli, seven five zero zero one Paris."),
    ("In 2024, 15000 People came", "In twenty twenty-four, fifteen thousand People came"),
    ("an HP M404n.", "an H P M four zero four N."), ("between 8:00-11:30 AM", "between eight and eleven thirty AM"),
    ("from 2-4 pm", "from two to four PM"), ("Sizes S–XL", "Sizes S to X L"),
    ("is 3 x $15 = $45", "is three times fifteen dollars equals forty-five dollars"), ("item iii", "item three"),
    ("the IT dept.", "the I T department."), ("IS IT STILL UNDER WARRANTY?", "is it still under warranty?"),
    ("acct. no. 12", "account number twelve"), ("w/in 2 hrs, pls", "within two hours, please"),
    # fixed after heldout7.tsv was scored
    ("fell 3 1/8 points", "fell three and an eighth points"), ('1/4" drywall screws', "one quarter inch drywall screws"),
    ("about 12 m³.", "about twelve cubic meters."), ("Card ending 4821 expires", "Card ending four eight two one expires"),
    ("the period ending 2024", "the period ending twenty twenty-four"),
    ("arrival 0930, gate", "arrival zero nine thirty, gate"), ("(555)123-4567 x 89",
     "five five five, one two three, four five six seven extension eight nine"),
    ("john.doe_92@gmail.com", "john dot doe underscore nine two at gmail dot com"),
    ("on 10.0.0.12:8080.", "on ten dot zero dot zero dot twelve colon eight zero eight zero."),
    ("The number on file is 5551234567.", "The number on file is five five five, one two three, four five six seven."),
    ("part no. 04465-33471", "part number zero four four six five, three three four seven one"),
    ("pages 10-20", "pages ten to twenty"), ("Q1–Q3 results", "Q one to Q three results"),
    ("routing no. on it", "routing number on it"), ("Policy No. HX-2291", "Policy number H X-two two nine one"),
    ("grew 12% YoY", "grew twelve percent year over year"), ("Middle name: N/A", "Middle name, N A"),
    ("the 42nd St exit", "the Forty-second Street exit"), ("3x–4x faster", "three to four times faster"),
    ("PER YOUR REQUEST, WE CANCELLED IT.", "per your request, we cancelled it."),
    # fixed after heldout8.tsv was scored
    # issue 46, heldout7/8 misses: a roman numeral after a name (a person's suffix, a title's number), a numbering
    # word said in full, an IP address's later parts digit by digit once one has three, USD in en-US
    ("Policyholder: Robert Lee Smith III", "Policyholder, Robert Lee Smith the third"),
    ("Richard J. Whitman III", "Richard J. Whitman the third"), ("Civilization VI is out", "Civilization six is out"),
    ("WrestleMania XL sold out", "WrestleMania forty sold out"), ("GTA V is out", "G T A five is out"),
    ("Size XL please", "Size X L please"), ("Vol. XXI is online", "Volume twenty-one is online"),
    ("IP 203.0.113.42", "I P two zero three dot zero dot one one three dot four two"),
    ("IP 10.0.0.24", "I P ten dot zero dot zero dot twenty-four"), ("USD 250.00", "two hundred fifty dollars"),
    # maths: functions, a relation after an expression or a measure, proper fractions, a variable below a fraction;
    # a fraction before a plural noun is a score, before a unit and a word of where "of a"
    ("sin(30°) = 0.5", "sine of thirty degrees equals zero point five"), ("log₂(8) = 3", "log base two of eight equals three"),
    ("2x − 3 > 7", "two x minus three is greater than seven"), ("2x - 3 > 7", "two x minus three is greater than seven"),
    ("if 2024-01-15 > today", "if January fifteenth, twenty twenty-four is greater than today"), ("1 km ≈ 0.62 mi", "one kilometer is approximately zero point six two miles"),
    ("1/2 + 1/4 = 3/4", "one half plus one quarter equals three quarters"), ("6/3 = 2", "six divided by three equals two"),
    ("The rate is 1/x per hour.", "The rate is one over x per hour."), ("y = x/2", "y equals x divided by two"),
    ("You answered 17/20 questions.", "You answered seventeen out of twenty questions."),
    ("6/8 simplifies to 3/4", "six eighths simplifies to three quarters"), ("3/4 cups of flour", "three quarters cups of flour"),
    ("The beach is 3/4 mile from here.", "The beach is three quarters of a mile from here."),
    ("Add 1/2 cup of milk.", "Add one half cup of milk."), ("down to 2/32\", so", "down to two thirty-seconds of an inch, so"),
    # a capital word of one English syllable is a word ("POST", "MILD"; shouted, "GYM"), an acronym is spelled; a
    # phone's pound key; a national number with its trunk zero; user and network names; capital hosts, initials
    ("POST requests", "post requests"), ("Would you like it MILD or HOT?", "Would you like it mild or hot?"),
    ("WE MISS YOU AT THE GYM, COME BACK SOON.", "we miss you at the gym, come back soon."),
    ("DID YOU GET THE EMAIL I SENT?", "did you get the email I sent?"), ("CALL THE IRS NOW", "call the I R S now"),
    ("the CEO and the HVAC", "the C E O and the H V A C"), ("Dial #250 now", "Dial pound two five zero now"),
    ("Press #1 for sales", "Press number one for sales"),
    ("Reach me on 07700 900123 after 6.", "Reach me on zero seven seven zero zero, nine zero zero one two three after six."),
    ("Your username is mike_t88.", "Your username is mike underscore T eight eight."),
    ("Join GUEST_5G now", "Join GUEST underscore five G now"), ("Check STATUS.ACME.COM.", "Check STATUS dot ACME dot COM."),
    ("Mail AP@Contoso.com.", "Mail A P at Contoso dot com."),
    # a measure after a determiner describes the noun after it (its unit singular); a year without its century; a
    # numbering word plural before a range; a shouted address's street type
    ("Data used: 14.2 GB of your 20 GB plan.", "Data used, fourteen point two gigabytes of your twenty gigabyte plan."),
    ("16GB RAM and a 512GB SSD", "sixteen gigabytes Ram and a five hundred twelve gigabyte S S D"),
    ("the 10 km run", "the ten kilometer run"), ("every 20 min starting", "every twenty minutes starting"),
    ("your 5 kg left", "your five kilograms left"), ("Class of '98!", "Class of ninety-eight!"), ("in '05", "in oh five"),
    ("Read ch. 4-7 first.", "Read chapters four to seven first."), ("see Fig. 2 and 3", "see Figures two and three"), ("Part no. 44-1092-B", "Part number four four-one zero nine two-B"),
    ("SHIP TO: 77 MAIN ST STE 5", "ship to, seventy-seven MAIN Street Suite five"),
    ("MEET AT 5 PM AT THE DR OFFICE", "meet at five PM at the D R office"),
    # a price per any unit; a unit after a vulgar fraction; a round number alone in a code; a hyphenated ID's digits
    # one by one; a hyphen between two numbers another rule read is "to"
    ("Gas was $3.49/gal.", "Gas was three dollars and forty-nine cents per gallon."), ("$12/kg", "twelve dollars per kilogram"),
    ("Use ½ tsp of salt", "Use a half teaspoon of salt"), ("Use 1½ tsp", "Use one and a half teaspoons"),
    ("your AX3000 router", "your A X three thousand router"), ("ID 8f3a-77c2", "I D eight F three A-seven seven C two"),
    ("i18n", "I eighteen N"), ("Aim for 5k-10k steps", "Aim for five thousand to ten thousand steps"),
    ("where x ≥ 10", "where x is greater than or equal to ten"), ("© MMXXIV Acme", "copyright twenty twenty-four Acme"),
    ("proof of ins.", "proof of insurance."), ("office hrs", "office hours"), ("No. of guests", "number of guests"),
    ("The pt. has an appt.", "The patient has an appointment."), ("at 4:30 PT.", "at four thirty P T."),
    ("Mgr. approval req'd", "Manager approval required"), ("Intl. shipping avail. now", "International shipping available now"),
    ("Claim # CLM-2024", "Claim number C L M-two zero two four"), ("on 12/24 and 12/31.", "on December twenty-fourth and December thirty-first."),
    ("at 2250 Hwy 101 S now", "at twenty-two fifty Highway one oh one South now"), ("onto Rt 66", "onto Route sixty-six"),
    ("a 120 sq. ft deck", "a one hundred twenty square foot deck"), ("32 mpg hwy.", "thirty-two miles per gallon highway."),
    ("1 World Trade Ctr, 85th Fl.", "one World Trade Center, eighty-fifth Floor."),
    # fixed after heldout9.tsv was scored
    # a short weekday after a word that names a day ("on Tues and"; "on Sun Microsystems" stays a name); a contact
    # label before its number; a dose form after its count; a 24-hour time before "hrs"; a top-level domain in
    # capitals; a year in a hashtag
    ("open on Tues and Wed.", "open on Tuesday and Wednesday."), ("I was on Sun Microsystems", "I was on Sun Microsystems"),
    ("Ph. 604-555-0192", "Phone six zero four, five five five, zero one nine two"),
    ("Take 1 tab. twice daily", "Take one tablet twice daily"), ("Take 2 tabs.", "Take two tablets."),
    ("St. Luke's Hosp. on Tuesday", "Saint Luke's Hospital on Tuesday"),
    ("starts at 1100 hrs GMT", "starts at eleven hundred hours G M T"),
    ("Email BILLING@ClearWater.NET now", "Email BILLING at ClearWater dot net now"),
    ("Tag #SummerSale2025 now", "Tag hashtag summer sale twenty twenty-five now"),
    # compound "per" units; a blood pressure; "half of"; digits after "pager"; a code's letters that make no word;
    # a user name with dots; an exchange rate's pair of currencies
    ("Infuse at 5 mcg/kg/min.", "Infuse at five micrograms per kilogram per minute."),
    ("BP today: 120/80 mmHg.", "B P today, one twenty over eighty millimeters of mercury."),
    ("Roughly ½ of customers", "Roughly half of customers"), ("Add ½ cup", "Add a half cup"),
    ("pager 4412.", "pager four four one two."), ("Your PNR is 6TRWQA.", "Your P N R is six T R W Q A."),
    ("Your username is mike.r_2024.", "Your username is mike dot R underscore two zero two four."),
    ("Today's EUR/USD rate is 1.0842.", "Today's euro dollar rate is one point zero eight four two."),
    # a hash sign inside a password; opening hours with a bare "a"/"p"; a short link's code
    ("the password Welcome#123.", "the password Welcome hash one two three."),
    ("Store hours: 10a–9p daily.", "Store hours, ten AM to nine PM daily."), ("Form 5a is due", "Form five A is due"),
    ("Short link: bit.ly/3xYz9Q", "Short link, bit dot L Y slash three X Y Z nine Q"),
    ("logged at 0800 and 2000.", "logged at zero eight hundred and twenty hundred."),
    ("We sold 1200 and 2000 units.", "We sold twelve hundred and two thousand units."),
    # fixed after heldout10.tsv was scored
    # abbreviations (gov't, max., blks, Cmdr.); a shouted common word said as a word; a measure after "with" before
    # a plural noun (its unit singular; "at 11 kW takes" keeps the plural)
    ("Bring a gov't-issued ID.", "Bring a government-issued I D."), ("max. is 10", "maximum is ten"),
    ("It is 2 blks away.", "It is two blocks away."), ("Lt. Cmdr. Reyes", "Lieutenant Commander Reyes"),
    ("All agents are BUSY now", "All agents are busy now"), ("Close the LID first", "Close the lid first"),
    ("850 sq ft with 9 ft ceilings.", "eight hundred fifty square feet with nine foot ceilings."),
    ("at 11 kW takes 6 hrs", "at eleven kilowatts takes six hours"),
    # a long number after a word that names a code (IMEI, SKU, serial), digit by digit; a hex ID's pieces, each mixed
    ("The IMEI is 356938035643809.", "The I M E I is three five six nine three eight zero three five six four three eight zero nine."),
    ("Serial: 4402 1188", "Serial, four four zero two, one one eight eight"),
    ("Device ID a3f9-22bc", "Device I D A three F nine-two two B C"),
    # a time range with an en dash after a word that can number a place ("window 2" is no window's number before
    # ":15"); two capitals in order joined by an en dash, or by a hyphen after a plural noun
    ("Pickup window 2:15–2:45 PM.", "Pickup window two fifteen to two forty-five PM."),
    ("Zones A–D are on", "Zones A to D are on"), ("rows C-F only", "rows C to F only"), ("an X-Y plot", "an X-Y plot"),
    # from dev12: a front matter page's numeral; a unit fraction's article before a vowel
    ("The preface starts on page xiv.", "The preface starts on page fourteen."), ("See Page IV.", "See Page four."),
    ("Trim ⅛ inch off.", "Trim an eighth inch off."), ("Add ¼ cup.", "Add a quarter cup."),
    # a phone keypad's key, pressed or named; elsewhere markdown's mark or a stray symbol
    ("Press # to go back.", "Press pound to go back."), ("Press 2, then *.", "Press two, then star."),
    ("Enter it followed by #.", "Enter it followed by pound."), ("the * key", "the star key"),
    ("A * marks a must.", "A marks a must."), ("Use **both** keys.", "Use both keys."),
    ("Try *this* or _that_ one.", "Try this or that one."),
    # six or more unbroken digits after an acronym that names them: an identifier; a currency's code names an amount
    ("Your MRN is 48213077.", "Your M R N is four eight two one three zero seven seven."),
    ("EIN 123456789", "E I N one two three four five six seven eight nine"),
    ("a USD 250000 fund", "a two hundred fifty thousand dollar fund"), ("the CPU 1000 line", "the C P U one thousand line"),
    # a page, pages and circa before a number; week and year short
    ("See pp. 45-60 or p. 12.", "See pages forty-five to sixty or page twelve."), ("P. 4 of it", "Page four of it"),
    ("built ca. 1850", "built circa eighteen fifty"), ("The c. elegans worm", "The c. elegans worm"),
    ("Run 3x per wk.", "Run three times per week."), ("twice a yr", "twice a year"),
    # digits in groups of four (a card, a tracking number), digits after a number sign in hyphenated groups, a long
    # number and its check digit: codes, not amounts or ranges
    ("Card 4111 1111 1111 1111.", "Card four one one one, one one one one, one one one one, one one one one."),
    ("Order #100-4432-9981 shipped.", "Order number one zero zero-four four three two-nine nine eight one shipped."),
    ("Box MSCU 452187-3 is here.", "Box M S C U four five two one eight seven, three is here."),
    ("In 1990-95 it grew.", "In nineteen ninety to ninety-five it grew."), ("4 1/2 lbs", "four and a half pounds"),
    # a count and a capitalised word after it is no vanity number unless toll free; a hashtag may open with digits
    ("It dates to 500 BCE.", "It dates to five hundred B C E."), ("Call 800 FLOWERS.", "Call eight hundred, flowers."),
    ("Try #100DaysOfCode now", "Try hashtag one hundred days of code now"), ("Ask for #4B", "Ask for number four B"),
    ("Cut it at a 60° angle.", "Cut it at a sixty degree angle."), ("Turn it 90° now.", "Turn it ninety degrees now."),
    # the small-letter names of network and command-line tools, spelled; a sound or a unit is said
    ("Connect with ssh.", "Connect with S S H."), ("Run npm install.", "Run N P M install."),
    ("Hmm, shh.", "Hmm, shh."), ("$3 per kg", "three dollars per kilogram"),
    # a Windows folder's name may hold spaces; a folder named by a year, a file at the end
    ("Edit C:\\Program Files\\Acme\\config.ini now.", "Edit C colon backslash Program Files backslash Acme backslash config dot I N I now."),
    ("Open D:\\Backups\\2024\\ today", "Open D colon backslash Backups backslash twenty twenty-four today"),
    # fixed after heldout15.tsv was scored: a vulgar fraction after "a" takes no second article, "by ½" is "by half";
    # a slash between a counted word and a time or a count is "per"; the minus sign U+2212 between operands
    ("Each partner holds a ⅓ share.", "Each partner holds a third share."), ("Add a ½ cup.", "Add a half cup."),
    ("Reduce the stock by ½.", "Reduce the stock by half."), ("Add ⅓ now.", "Add a third now."),
    ("The contract is for 40 hrs/week.", "The contract is for forty hours per week."),
    ("Work 8 hours/day, 5 days/week.", "Work eight hours per day, five days per week."),
    ("It holds 2 GB/user.", "It holds two gigabytes per user."), ("the day/night cycle", "the day or night cycle"),
    ("profit = revenue − cost", "profit equals revenue minus cost"), ("net − tax", "net minus tax"),
    # a shouted "US" after a verb or "with"/"about" is the pronoun; "log" and "conf" files said as words; a model's
    # code of two letters and three digits paired; a price before the people it is for is plural
    ("CONTACT US ANYTIME.", "contact us anytime."), ("WORK WITH US", "work with us"), ("the US market", "the U S market"),
    ("Visit US Bank", "Visit U S Bank"),
    ("The logs are in /var/log/app.log.", "The logs are in slash var slash log slash app dot log."),
    ("Edit nginx.conf now", "Edit nginx dot conf now"), ("Open notes.txt", "Open notes dot T X T"),
    ("Model XR-500 and model XR-550", "Model X R-five hundred and model X R-five fifty"),
    ("Model AB-1234", "Model A B-one two three four"),
    ("Tickets: $12 adults, $8 kids.", "Tickets, twelve dollars adults, eight dollars kids."),
    ("a $12 adult ticket", "a twelve dollar adult ticket"), ("$5 bills", "five dollar bills"),
    # a condition's one-word singular subject before ≥/≤ and a number takes "is"; a duration before the thing it times
    ("Eligible if age ≥ 18.", "Eligible if age is greater than or equal to eighteen."),
    ("when load ≤ 80%", "when load is less than or equal to eighty percent"),
    ("for values ≥ 10", "for values greater than or equal to ten"), ("if scores ≥ 90", "if scores greater than or equal to ninety"),
    ("approx. 20 min wait", "approximately twenty minute wait"), ("Expect a 2 hr delay.", "Expect a two hour delay."),
    ("Boil 10 min uncovered.", "Boil ten minutes uncovered."),
    # fixed after heldout14.tsv was scored: a unit, a time's AM, a currency after a no-break or thin space (a space
    # between digits still groups thousands); ordinary words shouted among shouted words; "down from 3/4" a quantity;
    # a unit after every size; a tax form's letters; County Rd before its number; a 24-hour range on the 12-hour
    # clock; a function's name before a bare argument
    ("It weighs 2.5\u00a0kg.", "It weighs two point five kilograms."), ("Take 500\u00a0mg daily.", "Take five hundred milligrams daily."),
    ("Open at 9\u202fam.", "Open at nine AM."), ("Pay 20\u2009EUR now.", "Pay twenty euros now."),
    ("It has 1\u202f000 seats.", "It has one thousand seats."),
    ("FUEL GAUGE READS 7/8 FULL.", "fuel gauge reads seven eighths full."),
    ("YOU OWE $5.", "you owe five dollars."), ("CALL THE FBI NOW.", "call the F B I now."),
    ("WARNING: HVAC UNIT OFFLINE", "warning, H V A C unit offline"),
    ("It is at 2/3 (down from 3/4 in May).", "It is at two thirds (down from three quarters in May)."),
    ("Sales rose from 1/4 to 1/2.", "Sales rose from one quarter to one half."),
    ("The box is 40 cm × 30 cm × 20 cm.", "The box is forty centimeters by thirty centimeters by twenty centimeters."),
    ("Attach any 1099-INT forms.", "Attach any ten ninety-nine I N T forms."), ("File 1040-SR now.", "File ten forty S R now."),
    ("Model 4417-AB now", "Model four four one seven-A B now"),
    ("Lot 7, County Rd 12", "Lot seven, County Road twelve"), ("Take State Rte 9 now", "Take State Route nine now"),
    ("Hours: 08:00–18:00", "Hours, eight AM to six PM"), ("Open 09:00-17:30 daily", "Open nine AM to five thirty PM daily"),
    ("Shift 22:00–06:00", "Shift ten PM to six AM"), ("Open 2-4pm", "Open two to four PM"),
    ("sin 30° = 0.5", "sine thirty degrees equals zero point five"), ("ln x + 1 = 2", "natural log x plus one equals two"),
    ("sin(30°) = 0.5", "sine of thirty degrees equals zero point five"), ("Check the log in 5 min.", "Check the log in five minutes."),
    # a currency whose name several countries share, named by its ISO code: its country too
    ("The fare is 1,200 MXN.", "The fare is one thousand two hundred Mexican pesos."), ("It is 500 NOK.", "It is five hundred Norwegian kroner."),
    ("Pay 50₱ now.", "Pay fifty pesos now."),
    # fixed after heldout13.tsv was scored: "x" and an extension's digits after a word of calling; a ZIP code a few
    # words after its name; a street typed in small letters; a shouted word with its plural "S"; letters before a
    # power; a numeral after an honorific's person
    ("The helpdesk is at x4521.", "The helpdesk is at extension four five two one."),
    ("Size at X4521 is fine.", "Size at X four five two one is fine."),
    ("Is your ZIP code still 90210?", "Is your ZIP code still nine zero two one zero?"),
    ("the house at 88 cedar ave is for sale", "the house at eighty-eight cedar Avenue is for sale"),
    ("It is 32 mpg hwy.", "It is thirty-two miles per gallon highway."),
    ("THE PROMOTION ENDS TODAY.", "the promotion ends today."), ("E = MC²", "E equals M C squared"),
    ("A table for Mr. Thurston Howell IV.", "A table for Mister Thurston Howell the fourth."),
    ("Street Fighter II is fun.", "Street Fighter two is fun."),
    # fixed after heldout12.tsv was scored: a currency with no cents, zloty; inches with a full stop; min., Est.
    # and Attn in context; a unit fraction after a determiner; a negative power; ISO's year and month
    ("Send ₿0.5 now.", "Send zero point five bitcoin now."), ("It is 120 zł.", "It is one hundred twenty zlotys."),
    ("Use a 9 in. round pan.", "Use a nine inch round pan."), ("a 12-in. skillet", "a twelve inch skillet"),
    ("It is 5 in. long.", "It is five inches long."), ("a min. order of 2", "a minimum order of two"),
    ("Wait 5 min. then stir.", "Wait five minutes then stir."), ("Family owned, Est. 1998.", "Family owned, Established nineteen ninety-eight."),
    ("The est. total", "The estimated total"), ("Attn: Billing", "Attention, Billing"),
    ("the ¼ lb burger", "the quarter pound burger"), ("about 10^-3", "about ten to the minus three"),
    ("It covers 2020-01 only.", "It covers January twenty twenty only."), ("the 2010-11 season", "the twenty ten to eleven season"),
    ("Case 2021-03 closed.", "Case two zero two one-zero three closed."),
    # a decimal comma with a currency; a pair from a short number to an unround million is an identifier
    ("It is EUR 1.200,50.", "It is one thousand two hundred euros and fifty cents."),
    ("A coffee is €2,50.", "A coffee is two euros and fifty cents."), ("Pay $12,345.67", "Pay twelve thousand three hundred forty-five dollars and sixty-seven cents"),
    ("The EIN is 12-3456789.", "The E I N is one two-three four five six seven eight nine."),
    ("Pick 1-100000.", "Pick one to one hundred thousand."),
    # a value's verb before "at" makes h.mm a value; a state's code bare after a word only where it is no acronym
    ("ROI came in at 1.25.", "R O I came in at one point two five."), ("Member ID: 42", "Member I D, forty-two"),
    # a letter for a power; a complexity's big O
    ("Growth is (1 + r)^n.", "Growth is one plus r to the power of n."), ("e^x + 1", "e to the power of x plus one"),
    ("It runs in O(n^2) time.", "It runs in big O of n squared time."),
    # a bare month/day whose day (13-31) makes no fraction anyone writes, before a singular noun or a verb
    ("The 12/25 flight is sold out, but 12/26 has seats.",
     "The December twenty-fifth flight is sold out, but December twenty-sixth has seats."),
    ("scored 12/25 today", "scored twelve out of twenty-five today"), ("a 1/25 scale model", "a one twenty-fifth scale model"),
    # an international number's subscriber part of up to eight digits, digit by digit
    ("The Berlin desk is +49 30 12345678.", "The Berlin desk is plus four nine, three zero, one two three four five six seven eight."),
    # fixed after heldout11.tsv was scored: a relation after the writer's own verb; an e-mail's copy line spelled
    ("If your score is < 600, call us.", "If your score is less than six hundred, call us."),
    ("It was ≥ 10 kg.", "It was greater than or equal to ten kilograms."), ("x ≥ 10", "x is greater than or equal to ten"),
    ("Email a@b.com and cc c@d.com.", "Email A at B dot com and C C C at D dot com."),
    ("Please CC me on it.", "Please C C me on it."),
    # a host with a top-level domain no list holds, before a path; a capitalised pair with a slash stays "or"
    ("Unsubscribe at mail.lumen.energy/unsubscribe anytime.", "Unsubscribe at mail dot lumen dot energy slash unsubscribe anytime."),
    ("Yes.No/Maybe", "Yes.No or Maybe"),
    # issue 46, the kinds third-party text was misread in (cases written here, none from that data): SI units with
    # their prefixes, case-sensitive ("Mb" a megabit, "MB" a megabyte), the micro sign in either code point or "u",
    # areas and volumes (², ^2, a bare 2), the capital spellings people write ("5KG")
    ("It weighs 5KG.", "It weighs five kilograms."), ("a 3 MG tablet", "a three milligram tablet"),
    ("a 12 m2 office", "a twelve square meter office"), ("about 40 cm^3", "about forty cubic centimeters"),
    ("a gap of 7 µm and 9 μm", "a gap of seven micrometers and nine micrometers"), ("add 6 uL", "add six microliters"),
    ("a 47 μF cap", "a forty-seven microfarad cap"), ("at 101 kPa", "at one hundred one kilopascals"),
    ("used 3.6 MJ", "used three point six megajoules"), ("a 300 Mb link, 300 MB file",
                                                           "a three hundred megabit link, three hundred megabytes file"),
    ("4 nmol/L", "four nanomoles per liter"), ("2 ng/mL", "two nanograms per milliliter"),
    ("g = 9.8 m/s²", "g equals nine point eight meters per second squared"), ("at 5.8 ghz", "at five point eight gigahertz"),
    ("a 2.2 kΩ resistor", "a two point two kiloohm resistor"), ("a 20 KM ride", "a twenty kilometer ride"),
    ("30 ha of land", "thirty hectares of land"), ("drink 33 cl", "drink thirty-three centiliters"),
    # URLs by their RFC 3986 shape: any scheme (said, but http, https and ftp), any top-level domain on a small-letter
    # host, a path's every slash, a Unix path from the root, home or here; handles with a hyphen
    ("see kite.aero today", "see kite dot aero today"), ("at my-shop.boutique now", "at my dash shop dot boutique now"),
    ("read file:///home/data.txt", "read file colon slash slash slash home slash data dot T X T"),
    ("clone ssh://git@host.dev/app", "clone S S H colon slash slash git at host dot dev slash app"),
    ("run /opt/tools/setup.sh first", "run slash opt slash tools slash setup dot S H first"),
    ("in ~/Downloads/old", "in tilde slash Downloads slash old"), ("open lib/core/utils.py", "open lib slash core slash utils dot P Y"),
    ("ask @mary-ann", "ask at mary dash ann"),
    # a state's code after its town, or a code no word claims after "in", "from", "to"; an era's initials with their
    # last full stop left out; a small short month before a day's number
    ("We ship from Tulsa, OK, daily.", "We ship from Tulsa, Oklahoma, daily."), ("Dayton, OH is", "Dayton, Ohio is"),
    ("flew from NJ to AZ", "flew from New Jersey to Arizona"), ("Sounds good, OK?", "Sounds good, okay?"),
    ("back in LA", "back in L A"), ("Ship it to Tampa FL.", "Ship it to Tampa Florida."), ("It uses ID.", "It uses I D."), ("built 2500 B.C and", "built two thousand five hundred B C and"),
    ("crowned A.D 800", "crowned A D eight hundred"), ("paid on jul 9 2023", "paid on July ninth, twenty twenty-three"),
    ("due dec. 1", "due December first"), ("don't mar it", "don't mar it"),
    # a range of prices with cents, each end in full (under a dollar: cents); cents after a range; a measure or a
    # price before the plural noun it describes singular, a verb after it not ("11 kW takes")
    ("tips of $0.10-$0.75", "tips of ten to seventy-five cents"), ("from $2.25-$3.80",
                                                                     "from two dollars and twenty-five cents to three dollars and eighty cents"),
    ("stamps cost 55–70¢", "stamps cost fifty-five to seventy cents"), ("the 25¢ coin", "the twenty-five cent coin"),
    ("lift 3–6 lb dumbbells", "lift three to six pound dumbbells"), ("keep $20 notes", "keep twenty dollar notes"),
    ("200 mg capsules", "two hundred milligram capsules"), ("5 kg costs more", "five kilograms costs more"),
    # a person's suffix after a given name and a surname, a title's number after words; a numbering word plural
    # before a pair; a four-digit count before a plural noun (a year after "in", "the"); a code after a word that
    # names one, not a range; quarters and halves of a year
    ("Street Fighter II is fun", "Street Fighter two is fun"), ("in the XVII century", "in the seventeenth century"), ("Mary Jones II", "Mary Jones the second"),
    ("see Vol. 3 and 4", "see Volumes three and four"), ("hired 2014 engineers", "hired two thousand fourteen engineers"),
    ("the 2014 engineers", "the twenty fourteen engineers"), ("in 2014 prices", "in twenty fourteen prices"),
    ("2019 was good", "twenty nineteen was good"), ("more than 1850 signed", "more than one thousand eight hundred fifty signed"), ("model 7-12 ships", "model seven-twelve ships"),
    ("case 18-0442", "case eighteen-zero four four two"), ("ages 7-12", "ages seven to twelve"),
    ("Order 2-3 pizzas", "Order two to three pizzas"), ("open it in MS Word", "open it in M S Word"),
    ("won 3-1", "won three to one"), ("in 3Q23", "in the third quarter of twenty twenty-three"),
    ("a 1H 2025 target", "a first half twenty twenty-five target"), ("our 2Q results", "our second quarter results"), ("Q2'24 sales", "Q two twenty-four sales"),
    # symbols said as words; a vulgar fraction a space after its whole; thousands grouped by spaces; E notation; a
    # decade with an apostrophe; a dotted ISO date; phone numbers: a bracketed trunk code, a spaced or bare local
    # number right after a word about calling
    ("a^n + b^n", "a to the power of n plus b to the power of n"), ("use 2^k", "use two to the power of k"),
    ("rose 12‰", "rose twelve per mille"), ("see ¶ 4", "see paragraph four"), ("as n → ∞", "as n approaches infinity"),
    ("add 2 ¾ cups", "add two and three quarters cups"), ("about 2 500 000 people", "about two million five hundred thousand people"),
    ("k = 1.38e-23", "k equals one point three eight times ten to the power of minus twenty-three"),
    ("the 1970's", "the nineteen seventies"), ("filed 2023.11.02", "filed November second, twenty twenty-three"),
    ("ring (0161) 496 0000", "ring zero one six one, four nine six, zero zero zero zero"),
    ("call 555 0142 now", "call five five five, zero one four two now"), ("phone 4561234", "phone four five six, one two three four"),
    ("tel: 555-0142", "telephone, five five five, zero one four two"),
    # a model's or a road's letter and three digits paired; a scale letter only after three digits or fewer; a
    # retirement plan's name
    ("an F-250 pickup", "an F-two fifty pickup"), ("flew an A320", "flew an A three twenty"),
    ("the i9-13900K chip", "the I nine-thirteen nine hundred K chip"), ("a 403k", "a four oh three K"),
    ("torque of 40 Nm", "torque of forty newton meters"), ("at 90KM/H", "at ninety kilometers per hour"),
    ("add 2 Tbsp", "add two tablespoons"), ("pour 8 oz. of milk", "pour eight ounces of milk"), ("It is 8 oz. Then", "It is eight ounces. Then"), ("at 12 kts", "at twelve knots"), ("ran 40 yds", "ran forty yards"),
    ("a 4 qt pot", "a four quart pot"), ("at 80 kmph", "at eighty kilometers per hour"), ("set to 90 deg F", "set to ninety degrees Fahrenheit"),
    # abbreviations of institutions and places; a small short month before a year; a month and a year with a dash
    ("Univ. of Iowa", "University of Iowa"), ("Natl. Park", "National Park"), ("read pp. 10-12", "read pages ten to twelve"),
    ("born 9 aug 1990", "born the ninth of August, nineteen ninety"), ("since Mar-2019", "since March twenty nineteen"),
    # a host whose listed top-level domain is followed by a country's; an e-mail name with an apostrophe
    ("see shop.co.nz now", "see shop dot co dot N Z now"), ("Visit Acme.Com today", "Visit Acme dot com today"), ("visit old_site.org", "visit old underscore site dot org"),
    # phone numbers: a country code before ten digits or in brackets, a vanity word of any length, a local number's
    # shape (a range is round or rising: "100-1500"), ten digits after a word about calling whatever their first
    ("+91 9876543210", "plus nine one, nine eight seven six five four three two one zero"),
    ("ring +44 (0)161 496 0000 now", "ring plus four four, zero, one six one, four nine six, zero zero zero zero now"),
    ("dial 0033 1 42 68 53 00", "dial zero zero three three, one, four two, six eight, five three, zero zero"),
    ("(+44) 207 946 0958", "plus four four, two zero seven, nine four six, zero nine five eight"),
    ("1-800-MY-A-TEAM", "one, eight hundred, my, A, team"), ("dial 867-5309", "dial eight six seven, five three zero nine"),
    ("It's 867-5309.", "It's eight six seven, five three zero nine."), ("from 250-1000", "from two hundred fifty to one thousand"),
    ("call 1098765432", "call one zero nine, eight seven six, five four three two"),
    # a code's second part with a leading zero, or a pair after a word that names a code; a tie; money: a dollar
    # sign after the amount, "Rs", a price per a one-letter unit, a unit after "per"
    ("see 2019-0311", "see two zero one nine-zero three one one"), ("PO 7200-15", "P O seven two zero zero-fifteen"),
    ("a 50-50 split", "a fifty-fifty split"), ("only 20$ today", "only twenty dollars today"),
    ("Rs. 250 only", "two hundred fifty rupees only"), ("₹3 lakh a year", "three lakh rupees a year"),
    ("a balance of $-12.40", "a balance of minus twelve dollars and forty cents"), ("fuel at €1.899/L", "fuel at one point eight nine nine euros per liter"),
    ("12 cents per kWh", "twelve cents per kilowatt hour"), ("paid per sq ft", "paid per square foot"),
    # days before or after their month, with ordinals; "may" the verb; a range from noon
    ("on 8-11 March", "on the eighth to the eleventh of March"), ("the 2nd-4th of May", "the second to the fourth of May"),
    ("Oct 1st-3rd", "October first to third"), ("kids 3-5 may join", "kids three to five may join"),
    ("2 may come", "two may come"), ("open noon-6pm", "open noon to six PM"),
    # thousands grouped by full stops; "+/-"; a numbering abbreviation right before its number
    ("about 3.500.000 tons", "about three million five hundred thousand tons"), ("±2 or +/-3", "plus or minus two or plus or minus three"),
    ("rank No.7 now", "rank number seven now"),
    ("bin AB/12 now", "bin A B slash twelve now"), ("the cd-38 marker", "the C D-thirty-eight marker"),
    ("at 6:45 a.m. PST daily", "at six forty-five AM P S T daily"), ("meet at 4.15 today", "meet at four fifteen today"),
    ("opens at 09h30", "opens at nine thirty"), ("ran at 4.25 km", "ran at four point two five kilometers"),
    ("a slope of -3/4", "a slope of minus three quarters"), ("odds of 1/5000", "odds of one over five thousand"),
    ("1/1000 of a second", "one thousandth of a second"), ("a top-10 list", "a top-ten list"), ("tag ab-cd-12-34", "tag A B-C D-twelve-thirty-four"), ("the mid-90s", "the mid-nineties"), ("call AT&T or P&G", "call A T and T or P and G"), ("ship c/o Lee", "ship care of Lee"), ("Sam a.k.a Max", "Sam also known as Max"), ("mail pat.o'neil@firm.com", "mail pat dot O neil at firm dot com"), ("scored 555 9876", "scored five hundred fifty-five nine thousand eight hundred seventy-six"), ("node.js and cats / dogs", "node dot J S and cats or dogs"),
    # issue 46: state lists, shouted words, serials after build/version, sizes with ×, math terms, IPv6, ports, queries, CIDR, MAC, dotfiles, lakh and spaced amounts, codes
    ('We ship to all states except AK and HI.', 'We ship to all states except Alaska and Hawaii.'),
    ('Offices in CA, OR, and WA.', 'Offices in California, Oregon, and Washington.'),
    ('MAX LOAD: 300 LBS.', 'max load, three hundred pounds.'),
    ('Please LOG IN AGAIN and RETRY.', 'Please log in again and retry.'),
    ('DO NOT LEAVE IT IN DIRECT SUN.', 'do not leave it in direct sun.'),
    ('Confirm build 4417A now.', 'Confirm build four four one seven A now.'),
    ('Version 2B is out.', 'Version two B is out.'),
    ('Set it to 1920×1080 now.', 'Set it to nineteen twenty by ten eighty now.'),
    ('The room is 10×12 feet.', 'The room is ten by twelve feet.'),
    ('The discriminant is b² - 4ac.', 'The discriminant is b squared minus four a c.'),
    ('The line is y = mx + b.', 'The line is y equals m x plus b.'),
    ('sin²θ + cos²θ = 1', 'sine squared theta plus cosine squared theta equals one'),
    ('Ping 2001:db8::1 now.', 'Ping two thousand one colon D B eight colon colon one now.'),
    ('Try ::1 or fe80::1 now.', 'Try colon colon one or F E eight zero colon colon one now.'),
    ('Run it on 192.168.0.10:3000 now.', 'Run it on one nine two dot one six eight dot zero dot one zero colon three thousand now.'),
    ('Open localhost:8080 now.', 'Open localhost colon eight zero eight zero now.'),
    ('Go to shop.com/login?next=/home now.', 'Go to shop dot com slash login question mark next equals slash home now.'),
    ('See docs.python.org/3/ now.', 'See docs dot python dot org slash three slash now.'),
    ('The subnet is 10.0.0.0/24 here.', 'The subnet is ten dot zero dot zero dot zero slash twenty-four here.'),
    ('MAC 00:1A:2B:3C:4D:5E here.', 'M A C zero zero one A two B three C four D five E here.'),
    ('Edit ~/.bashrc now.', 'Edit tilde slash dot bashrc now.'),
    ('Only ₹1,50,000 now.', 'Only one hundred fifty thousand rupees now.'),
    ("It's $20 000 now.", "It's twenty thousand dollars now."),
    ("It's $4,5 million.", "It's four point five million dollars."),
    ('It is 200 Kč.', 'It is two hundred Czech korunas.'),
    ('Model sm-g973f phone.', 'Model S M-G nine seven three F phone.'),
    ('Ticket ABC-123/45 open.', 'Ticket A B C-one two three slash forty-five open.'),
    ('This NVMe drive.', 'This N V M E drive.'),
    ('Read README.md now.', 'Read readme dot M D now.'),
    ('Mail it-help@corp.com now.', 'Mail I T dash help at corp dot com now.'),
    ("It's 7.5/10 overall.", "It's seven point five out of ten overall."),
    ("It's 50p each.", "It's fifty pence each."),
    ('Stream in 1080p now.', 'Stream in ten eighty p now.'),
    ('It costs 100USD.', 'It costs one hundred dollars.'),
    ("It's $1.50/share.", "It's one dollar and fifty cents per share."),
    ('Code a-1 here.', 'Code A-one here.'),
    ('CLOSED ON SUN AND MON', 'closed on Sunday and Monday'), ('Open Sat and Sun only.', 'Open Saturday and Sunday only.'),
    ('RSVP BY FRI', 'R S V P by Friday'),
    ('TOP TIP: ADD SALT', 'top tip, add salt'), ('UPS AND ATM FEES', 'U P S and A T M fees'),
    ("A 10' x 12' room.", 'A ten feet by twelve feet room.'), ('Use 1920x1080px images.', 'Use nineteen twenty by ten eighty pixels images.'),
    ('Clone git@github.com:user/repo.git now.', 'Clone git at github dot com colon user slash repo dot git now.'),
    ("It's 12:00 midnight.", "It's twelve midnight."), ('Pt. must fast.', 'Patient must fast.'),
    ('Track 1Z 999 AA1 01 2345 6784 now.', 'Track one Z nine nine nine A A one zero one two three four five six seven eight four now.'),
    # money: an ISO code after a symbol's amount, finance's scales, per person, dotted thousands, round plurals
    ('It is $5 USD.', 'It is five dollars.'), ('It is $20 CAD.', 'It is twenty Canadian dollars.'),
    ('A $5 USD fee.', 'A five dollar fee.'), ('It is $5 USD/month.', 'It is five dollars per month.'),
    ('Raised $5MM.', 'Raised five million dollars.'), ('Raised $3.5 mln.', 'Raised three point five million dollars.'),
    ('Raised $4 mil.', 'Raised four million dollars.'), ('It is £20pp.', 'It is twenty pounds per person.'),
    ('It is £20 p.p. only.', 'It is twenty pounds per person only.'), ('It is 5.000 €.', 'It is five thousand euros.'),
    ('It is 1.250.000 zł.', 'It is one million two hundred fifty thousand zlotys.'),
    ('It is 0.500 €.', 'It is zero point five zero zero euros.'),
    ('It costs $100s now.', 'It costs hundreds of dollars now.'), ('It costs £1,000s.', 'It costs thousands of pounds.'),
    ('It is USD100.', 'It is one hundred dollars.'),
    ('It cost $US 50.', 'It cost fifty dollars.'), ('It cost MX$50.', 'It cost fifty Mexican pesos.'),
    ('It cost CN¥50.', 'It cost fifty yuan.'), ('It cost 500 DM.', 'It cost five hundred Deutsche Marks.'),
    ('Send a DM 5 times.', 'Send a D M five times.'), ('It cost 50 kr.', 'It cost fifty kronor.'),
    ('It cost SFr 20.', 'It cost twenty Swiss francs.'), ('It cost ₸500.', 'It cost five hundred tenge.'),
    ('It is 1.5₱ now.', 'It is one peso and fifty centavos now.'), ('It is 10.00₦ now.', 'It is ten naira now.'),
    ('It is ~$5 now.', 'It is about five dollars now.'), ('It is ~US$5 now.', 'It is about five dollars now.'),
    ('It is $12.50 million now.', 'It is twelve point five million dollars now.'),
    ('It is $10.00M now.', 'It is ten million dollars now.'),
    ('Prices are in $/mo.', 'Prices are in dollars per month.'), ('Rates in USD/hr here.', 'Rates in dollars per hour here.'),
    ('It is €/kg here.', 'It is euros per kilogram here.'), ('It is $5/pp.', 'It is five dollars per person.'),
    ('It cost $10 to $15 million.', 'It cost ten to fifteen million dollars.'),
    ('It cost between $2 and $3 billion.', 'It cost between two and three billion dollars.'),
    ('It cost $900 to $1 million.', 'It cost nine hundred dollars to one million dollars.'),
    # addresses: a five-digit house number, "Co." a county in an address
    ('Visit 12345 Sunset Blvd today.', 'Visit twelve three forty-five Sunset Boulevard today.'),
    ('Visit 10500 Main St today.', 'Visit ten five hundred Main Street today.'),
    ('He lives in Orange Co., California.', 'He lives in Orange County, California.'),
    ('Cook Co. Sheriff said so.', 'Cook County Sheriff said so.'), ('Born in Co. Cork.', 'Born in County Cork.'),
    ('Acme Co. makes it.', 'Acme Company makes it.'),
    # electronic: hidden files, more file types, an identifier with hyphens
    ('Open .env now.', 'Open dot env now.'), ('See (.env) now.', 'See (dot env) now.'), ('Open it\n.env now.', 'Open it\ndot env now.'), ('Copy .env.local now.', 'Copy dot env dot local now.'),
    ('Use main.cpp now.', 'Use main dot C P P now.'), ('Open archive.7z now.', 'Open archive dot seven Z now.'),
    ('Open Main.java now.', 'Open Main dot java now.'), ('Open nb.ipynb now.', 'Open nb dot I P Y N B now.'),
    ('Run deploy.ps1 now.', 'Run deploy dot P S one now.'), ('Washington D.C. is big.', 'Washington D C is big.'),
    ('The SKU is ab_12-x.', 'The S K U is ab underscore one two dash X.'),
    ('Click mailto:bob@example.com now.', 'Click bob at example dot com now.'),
    ('Open \\\\server\\share\\file.txt now.', 'Open backslash backslash server backslash share backslash file dot T X T now.'),
    ('Visit Amazon.co.jp now.', 'Visit Amazon dot co dot J P now.'),
    ('See doi:10.1000/182 now.', 'See D O I ten dot one zero zero zero slash one eight two now.'),
    # serial: a code after a number sign with a slash; a standard's letter and number; an airliner; an ISBN's X
    ('The Boeing 747-400 flew.', 'The Boeing seven forty-seven four hundred flew.'),
    ('ISBN 0-521-56876-X here.', 'I S B N zero, five two one, five six eight seven six, X here.'),
    ('Order #a7x9 shipped.', 'Order number A seven X nine shipped.'), ('Tag #covid19 now.', 'Tag hashtag covid nineteen now.'),
    ('Part A1.B2 here.', 'Part A one dot B two here.'), ('Use X.509 certs.', 'Use X five oh nine certs.'),
    ('Order 2679_63_60192 now.', 'Order two six seven nine underscore six three underscore six zero one nine two now.'),
    ('Model WH-1000XM4 headphones.', 'Model W H-one thousand X M four headphones.'),
    ('Use 1_000_000 here.', 'Use one million here.'), ('Order 2RS.9 now.', 'Order two R S dot nine now.'),
    ('Order C.34418 now.', 'Order C dot three four four one eight now.'), ('It is 3.5GB now.', 'It is three point five gigabytes now.'),
    ('Use utf-8 now.', 'Use U T F-eight now.'), ('Call 24x7 now.', 'Call twenty-four seven now.'),
    ("We're open 24 / 7.", "We're open twenty-four seven."),
    ('See Rev. 3 here.', 'See Revision three here.'), ('Rev. Smith said.', 'Reverend Smith said.'),
    ('ID 123e4567-e89b-12d3-a456-426614174000 here.', 'I D one two three E four five six seven-E eight nine B-one two D '
     'three-A four five six-four two six six one four one seven four zero zero zero here.'),
    ('Use H.264 or V.92 now.', 'Use H two sixty-four or V ninety-two now.'),
    ('Batch #B-12/34 here.', 'Batch number B-twelve slash thirty-four here.'),
    # serial: a secret after a word that names one, every character said (a capital so called where cases mix)
    ('Your temporary password is Xk9#pQ2!', 'Your temporary password is capital X K nine hash P capital Q two!'),
    ('Wi-Fi password: Blue-Sky_42', 'Wi-Fi password, Blue dash Sky underscore four two'),
    ('Enter passcode 7tq-9!x now.', 'Enter passcode seven T Q dash nine exclamation mark X now.'),
    ('Password reset at 9:30am today.', 'Password reset at nine thirty AM today.'),
    ('The password is hunter2.', 'The password is hunter two.'),
    # telephone: shouted labels said as words, other countries' layouts and service numbers, typographic hyphens and
    # no-break spaces; time: elapsed times and lap times with decimal seconds
    ('FAX: 617-555-0133', 'fax, six one seven, five five five, zero one three three'),
    ('Ph: 03 9555 0142', 'Phone, zero three, nine five five five, zero one four two'),
    ('Tel: 01 23 45 67 89', 'Telephone, zero one, two three, four five, six seven, eight nine'),
    ('In the UK, dial 999.', 'In the U K, dial nine nine nine.'), ('Call 000 now.', 'Call zero zero zero now.'),
    ('We have 999 items.', 'We have nine hundred ninety-nine items.'),
    ('Call 508\u2011555\u20110199.', 'Call five zero eight, five five five, zero one nine nine.'),
    ('Office:\u00a0020\u00a07946\u00a00321', 'Office, zero two zero, seven nine four six, zero three two one'),
    ('We sold 12\u00a0345 units.', 'We sold twelve thousand three hundred forty-five units.'),
    ('He finished in 2:01:09.', 'He finished in two hours one minute nine seconds.'),
    ('It ran at 14:32:10.', 'It ran at fourteen thirty-two and ten seconds.'),
    ('at 2:01:09 pm', 'at two oh one and nine seconds PM'),
    ('Fastest lap: 1:23.456', 'Fastest lap, one minute twenty-three point four five six seconds'),
    ('Logged 14:32:10.123 today.', 'Logged fourteen thirty-two and ten point one two three seconds today.'),
    # telephone: an emergency number after "call" is dialled, unless a word after it makes it a count
    ('I called 999 people yesterday.', 'I called nine hundred ninety-nine people yesterday.'),
    ('Call 999 now.', 'Call nine nine nine now.'),
    # serial: a number after a standard's body or a product line's capitals names it, said as such numbers are
    ('See RFC 2616 now.', 'See R F C twenty-six sixteen now.'),
    ('It has IEEE 802.11ac and ISO/IEC 27001.', 'It has I E E E eight oh two dot eleven A C and I S O I E C twenty-seven thousand one.'),
    ('Per ISO 9001:2015 and IEC 62443.', 'Per I S O nine thousand one twenty fifteen and I E C sixty-two four forty-three.'),
    ('A GeForce RTX 4090 in a Dell XPS 13 9340.', 'A GeForce R T X forty ninety in a Dell X P S thirteen ninety-three forty.'),
    ('It returned HTTP 404 and the Boeing 737 MAX 8.', 'It returned H T T P four oh four and the Boeing seven thirty-seven max eight.'),
    ('Use 500 USD, PTO 120 hours, JAN 15 2026.', 'Use five hundred dollars, P T O one hundred twenty hours, January fifteenth, twenty twenty-six.'),
    ('Hash e3b0c442 and the 49ers.', 'Hash E three B zero C four four two and the forty-niners.'),
    ('A 404 error, then 503 Service Unavailable.', 'A four oh four error, then five oh three Service Unavailable.'),
    ('Shot at ISO 12800.', 'Shot at I S O twelve thousand eight hundred.'),
    # units, flags, hashtags, IP hosts, URL queries, superscript powers, shouted words, fractions before units
    ('THE FUND RAISED US$7.5 MILLION.', 'the fund raised seven point five million dollars.'),
    ('#WWDC24', 'hashtag W W D C twenty-four'), ('Order #AB12 shipped.', 'Order number A B twelve shipped.'),
    ('https://shop.example.com/cart?id=7731&qty=2',
     'shop dot example dot com slash cart question mark I D equals seven seven three one ampersand Q T Y equals two'),
    ('ssh user@192.168.0.10', 'S S H user at one nine two dot one six eight dot zero dot one zero'),
    ('Compile with -std=c++17.', 'Compile with dash S T D equals c plus plus seventeen.'),
    ('Run ls -la or git commit --amend.', 'Run ls dash L A or git commit dash dash amend.'), ('y = -x', 'y equals minus x'),
    ('Light travels at about 3 × 10⁸ m/s.',
     'Light travels at about three times ten to the eighth meters per second.'),
    ('about 10⁻³ kg', 'about ten to the minus three kilograms'),
    ('PREHEAT OVEN TO 350°F.', 'preheat oven to three hundred fifty degrees Fahrenheit.'),
    ('Payload (7.5 t) exceeds the limit.', 'Payload (seven point five tonnes) exceeds the limit.'),
    ('I have 2 t-shirts', 'I have two t-shirts'), ('Shutter speed: 1/1000 s', 'Shutter speed, a thousandth of a second'),
    ('1⁄2', 'one half'), ('½-price tickets', 'half-price tickets'), ('¾ inch', 'three quarters of an inch'),
    ('a 1/4-inch bolt', 'a quarter-inch bolt'), ('Each partner holds a ⅓ share.', 'Each partner holds a third share.'),
    # military "2d", ordinal ranges, small roman pages, shouted regnal names and titles, ordinal numerals, party tags, b./d.
    ('The 2d Infantry Division and the 3d Circuit, not a 3d printer.',
     'The second Infantry Division and the third Circuit, not a three D printer.'),
    ('1st–3rd place and 2nd-4th grade', 'first to third place and second to fourth grade'),
    ('The preface (pp. iii–vii), then p. xii.', 'The preface (pages three to seven), then page twelve.'),
    ('LOUIS XVI AND KING GEORGE III', 'Louis the sixteenth and King George the third'),
    ('The XXXIII Olympiad and V Corps', 'The thirty-third Olympiad and fifth Corps'),
    ('Sen. Warren (D-Mass.) and Rep. Cruz, R-TX, voted no.',
     'Senator Warren (D Massachusetts) and Representative Cruz, R Texas, voted no.'),
    ('SGT. DAVIS AND DR. REYES WERE DECORATED.', 'Sergeant davis and Doctor reyes were decorated.'),
    ('THE DOW FELL 1.2 PERCENT.', 'the dow fell one point two percent.'),
    ('Born 12 Oct 1958 (d. 2 May 2001); Smith (b. 1901)',
     'Born the twelfth of October, nineteen fifty-eight (died the second of May, two thousand one); Smith (born nineteen oh one)'),
    ('a. 5 b. 10 c. 15 d. 20', 'a. five b. ten c. fifteen d. twenty'),
    # roots, factorials, absolute values, scale ratios, fractions before a hyphen or "in.", hours, French numbers,
    # firmware files, part numbers, a model number before a verb
    ('∛27 = 3', 'the cube root of twenty-seven equals three'), ('∜16 = 2', 'the fourth root of sixteen equals two'),
    ('5!', 'five factorial'), ('n!', 'n factorial'), ('3! + 4!', 'three factorial plus four factorial'),
    ('We won 5!', 'We won five!'), ('2 + 2 = 4!', 'two plus two equals four!'),
    ('|x| = 5 has two solutions.', 'the absolute value of x equals five has two solutions.'),
    ('| a | b |', 'a, b'),
    ('The map uses a 1:50,000 scale.', 'The map uses a one to fifty thousand scale.'),
    ('the 1:24 scale model', 'the one to twenty-four scale model'), ('at 10:30', 'at ten thirty'),
    ('Leave a ⅛-inch gap.', 'Leave a one eighth-inch gap.'), ('a 1/10-scale model', 'a one tenth-scale model'),
    ('Use a 3/8 in. drill bit and ¾ in. screws.', 'Use a three eighths inch drill bit and three quarters inch screws.'),
    ('Cut it to 3/4 in.', 'Cut it to three quarters of an inch.'),
    ('Dose: 10 mg/kg IV every 8 h', 'Dose, ten milligrams per kilogram I V every eight hours'),
    ('within 24 h of onset', 'within twenty-four hours of onset'), ('the 5 h mark', 'the five h mark'),
    ('06 12 34 56 78', 'zero six, one two, three four, five six, seven eight'),
    ('Flash firmware_v3.0.bin to the device.', 'Flash firmware underscore v three dot zero dot bin to the device.'),
    ('Order Part No. 7741-22A.', 'Order Part number seven seven four one-two two A.'),
    ('Use 10-20A fuses', 'Use ten to twenty amp fuses'),
    ('The RTX 4090 draws 450 W.', 'The R T X forty ninety draws four hundred fifty watts.'),
    ('PTO 120 hours', 'P T O one hundred twenty hours'),
    # AP state abbreviations, editions, small weekdays before dates, a shouted IT, the sun, federal case numbers, routes
    ('She moved from Calif. to Fla. last year.', 'She moved from California to Florida last year.'),
    ('She lives in Seattle, Wash.', 'She lives in Seattle, Washington.'), ('We went to Mass. It was long.', 'We went to Mass. It was long.'),
    ('Albany, N.Y. and Newark, N.J.', 'Albany, New York and Newark, New Jersey.'),
    ('See Smith (4th ed.) for a full treatment.', 'See Smith (fourth edition) for a full treatment.'),
    ('the 2nd edn of the rev. ed.', 'the second edition of the revised edition.'),
    ('can you come in tues 11/12?', 'can you come in tuesday November twelfth?'),
    ('she sat 3/4 of the way back', 'she sat three quarters of the way back'),
    ('I DID IT!', 'I did it!'), ('Ask IT about it.', 'Ask I T about it.'),
    ('Sun, sand and surf await you in Cancún.', 'Sun, sand and surf await you in Cancún.'),
    ('Sun, Mar 3', 'Sunday, March third'), ('Closed Sat, Sun, and holidays', 'Closed Saturday, Sunday, and holidays'),
    ('Case No. 2:23-cv-01234', 'Case number two twenty-three C V zero one two three four'),
    ('Go to the /settings page and type /help.', 'Go to the slash settings page and type slash help.'),
    # products before a bracket, limits, indices, race times, TV hours, weather directions, horsepower, scores, half off
    ('The sum is n(n+1)/2.', 'The sum is n times n plus one divided by two.'),
    ('y = a(b+c)', 'y equals a times b plus c'),
    ('As n → ∞, it vanishes.', 'As n approaches infinity, it vanishes.'), ('as x → 0', 'as x approaches zero'),
    ('Chicago → Denver', 'Chicago to Denver'),
    ('S = ∑ xᵢ', 'S equals the sum of x sub i'), ('x₁ + x₂ = 3', 'x sub one plus x sub two equals three'),
    ('CO₂ and H₂O', 'C O two and H two O'),
    ('Her winning time was 2:03:45.', 'Her winning time was two hours three minutes forty-five seconds.'),
    ('His time of 1:02:03 stands.', 'His time of one hour two minutes three seconds stands.'),
    ('The time was 10:15:30 then.', 'The time was ten fifteen and thirty seconds then.'),
    ('It airs at 8/7c.', 'It airs at eight seven central.'), ('mix 3/5c', 'mix three five C'),
    ('WIND: NW 15 km/h', 'wind, northwest fifteen kilometers per hour'),
    ('Winds from the SSW at 10 mph.', 'Winds from the south-southwest at ten miles per hour.'),
    ('Wind ENE 5-10 kts', 'Wind east-northeast five to ten knots'), ('size S 5', 'size S five'),
    ('The engine makes 250 hp.', 'The engine makes two hundred fifty horsepower.'),
    ('a 150 PS diesel', 'a one hundred fifty horsepower diesel'),
    ('The phone keeps its 3.5 mm jack.', 'The phone keeps its three point five millimeter jack.'),
    ('You scored 17/20 on the quiz.', 'You scored seventeen out of twenty on the quiz.'),
    ('She scored 3/4 of the goals.', 'She scored three quarters of the goals.'),
    ('Prices are ½ off.', 'Prices are half off.'), ('All ½ price.', 'All half price.'),
    # tn-d: label abbreviations, sig codes, shouted and small-letter addresses, NO., handles, short hosts, romans, Max, half price, tops
    ('new review avg: 4.5 stars', 'new review average, four point five stars'),
    ("MGR APPROVAL REQ'D", 'manager approval required'),
    ('Qty 3', 'Quantity three'),
    ('Take 1 tab PO BID.', 'Take one tablet by mouth twice a day.'),
    ('500 mg po q6h prn pain', 'five hundred milligrams by mouth every six hours as needed pain'),
    ('send to PO box 12', 'send to P O box twelve'),
    ('SHIP TO: 742 EVERGREEN TER, SPRINGFIELD, OR 97477', 'ship to, seven forty-two EVERGREEN Terrace, springfield, Oregon nine seven four seven seven'),
    ('The order cut-off is 2 PM CT.', 'The order cut-off is two PM C T.'),
    ('im at 55 w 14th st', 'im at fifty-five West fourteenth Street'),
    ('CLAIM NO. WC-2024-0081', 'claim number W C-two zero two four-zero zero eight one'),
    ('Follow @NWSBoston for storm updates.', 'Follow at N W S Boston for storm updates.'),
    ('Notes are at cs.cmu.edu/~jdoe', 'Notes are at C S dot C M U dot edu slash tilde J doe'),
    ('read vol. iii next', 'read volume three next'),
    ('see pt. ii', 'see part two'),
    ('ACT I, SCENE III', 'ACT one, SCENE three'),
    ('Reminder: “call the vet about Max.”', 'Reminder, call the vet about Max.'),
    ('Max. 4 guests', 'Maximum four guests'),
    ('Appetizers are 1/2 price after 9 p.m.', 'Appetizers are half price after nine PM.'),
    ('our budget is like $5k tops', 'our budget is like five thousand dollars tops'),
    # heldout18: time ranges streamed, phones in en dashes, N11 after calling/TTY, '#' as number, code digits, odds, ...
    ('Office hours: 9 am – 5 pm', 'Office hours, nine AM to five PM'),
    ('Mobile: 555–010–4477', 'Mobile, five five five, zero one zero, four four seven seven'),
    ('Report a pothole by calling 311.', 'Report a pothole by calling three one one.'),
    ('TTY: 711', 'T T Y, seven one one'),
    ('we called 411 times', 'we called four hundred eleven times'),
    ('the office # is 415.555.0199', 'the office number is four one five, five five five, zero one nine nine'),
    ('Your verification code is 482\xa0913.', 'Your verification code is four eight two nine one three.'),
    ('We handled 2024 support calls today.', 'We handled two thousand twenty-four support calls today.'),
    ('Results for Q3 2024 beat forecasts.', 'Results for Q three twenty twenty-four beat forecasts.'),
    ('You are 2ⁿᵈ on the waitlist.', 'You are second on the waitlist.'),
    ('the 21ˢᵗ century', 'the twenty-first century'),
    ('Thermostat calibration offset: +1.5', 'Thermostat calibration offset, plus one point five'),
    ('call +1 212 555 0100', 'call plus one, two one two, five five five, zero one zero zero'),
    ('PAYMENT DUE FRI 11/8', 'payment due Friday November eighth'),
    ('Your refill is ready as of 3/4.', 'Your refill is ready as of March fourth.'),
    ('as of 3/4 of the staff', 'as of three quarters of the staff'),
    ('The Chiefs are 3/1 to win it all.', 'The Chiefs are three to one to win it all.'),
    ('odds of 7/4', 'odds of seven to four'),
    ('at 1/2 price', 'at half price'),
    ('looking for creators with 10K-20K followers', 'looking for creators with ten thousand to twenty thousand followers'),
    ('1.5M-2M views', 'one point five million to two million views'),
    # heldout19: dialing a service code, a shouted "SQ" and "NO:", a slash between fields, inch and foot marks before a noun, roman levels and lists
    ('You can report the broken streetlight by dialing 311.', 'You can report the broken streetlight by dialing three one one.'),
    ('SHIP TO: 77 HARBOR SQ, SALEM, MA 01970', 'ship to, seventy-seven HARBOR Square, salem, Massachusetts zero one nine seven zero'),
    ('POLICY NO: HO3-559210', 'policy number, H O three-five five nine two one zero'),
    ('DOB: ON FILE / SECONDARY POLICY: N/A', 'D O B, on file, secondary policy, N A'),
    ('Status: open / closed', 'Status, open or closed'),
    ("We'll run a new ¾\" copper line.", "We'll run a new three quarter inch copper line."),
    ('a 1½" pipe', 'a one and a half inch pipe'),
    ("we'd send a 26' truck.", "we'd send a twenty-six foot truck."),
    ("the 10' of rope", 'the ten feet of rope'),
    ("Next year she's placed in Spanish V, the honors section.", "Next year she's placed in Spanish five, the honors section."),
    ('He passed French I.', 'He passed French one.'),
    ('In English I learned a lot.', 'In English I learned a lot.'),
    ('Please complete Sections I, II, and III.', 'Please complete Sections one, two, and three.'),
    ('the Lessons I learned', 'the Lessons I learned'),
    # roads with a letter or a comma after the number; a slashed day 1 at a sentence's end; "scale by" a fraction; time units in capitals
    ('Take Rte 9W, then left.', 'Take Route nine W, then left.'),
    ('just off Hwy 101, past the stand', 'just off Highway one oh one, past the stand'),
    ('Report cards go home 5/1.', 'Report cards go home May first.'),
    ('The store closes 12/24 at noon.', 'The store closes December twenty-fourth at noon.'),
    ('scale the recipe by 3/2.', 'scale the recipe by three halves.'),
    ('4 HRS at 30 MIN each', 'four hours at thirty minutes each'),
    # a spaced dash between amounts before "=" is a minus; long digit runs named as codes; a query right after a host
    ('$500 - $120 = $380', 'five hundred dollars minus one hundred twenty dollars equals three hundred eighty dollars'),
    ('The IMEI on it is 356938035643809.', 'The I M E I on it is three five six nine three eight zero three five six four three eight zero nine.'),
    ('a total of 1500000000 points', 'a total of one billion five hundred million points'),
    ('Track it at ship.example.com?id=88213.', 'Track it at ship dot example dot com question mark I D equals eight eight two one three.'),
    # measure: "SEC" after a number is the acronym ("the 2 SEC schools"); "SECS" seconds
    ('the 2 SEC schools', 'the two S E C schools'), ('Wait 30 SECS.', 'Wait thirty seconds.'),
    # function letters before a number, comma-grouped huge numbers, "≈" after a Greek letter, "Rx#", "no.:", Bible books
    ('then f(3) = 7.', 'then f of three equals seven.'),
    ('43,252,003,274,489,856,000 positions', 'forty-three quintillion two hundred fifty-two quadrillion three trillion two hundred seventy-four billion four hundred eighty-nine million eight hundred fifty-six thousand positions'),
    ('(φ ≈ 1.618)', '( phi is approximately one point six one eight)'),
    ('Your Rx# is 6012345.', 'Your R X number is six zero one two three four five.'),
    ('Take your Rx daily.', 'Take your prescription daily.'),
    ('Policy no.: 4471', 'Policy number, four four seven one'),
    ('II Corinthians and 2 Timothy 3', 'Second Corinthians and Second Timothy three'), ('Only 1 John came.', 'Only one John came.'),
    # a range after a unit's word; "a (brisk) 10 km walk" singular; a scale word's unit; time signatures; service numbers
    # near "emergency"; keypad codes
    ('Strength train 2–3 times a week.', 'Strength train two to three times a week.'),
    ('A brisk 10 km walk.', 'A brisk ten kilometer walk.'), ('A 12 oz can of soda.', 'A twelve ounce can of soda.'),
    ('A 12 oz can be enough.', 'A twelve ounces can be enough.'), ('a mere 10 km away', 'a mere ten kilometers away'),
    ('The Sun is 93 million mi away.', 'The Sun is ninety-three million miles away.'),
    ('Songs in 4/4 time, a 6/8 meter.', 'Songs in four four time, a six eight meter.'),
    ('For non-emergencies, many cities use 311.', 'For non-emergencies, many cities use three one one.'),
    ('112 is the emergency number.', 'one one two is the emergency number.'),
    ('The emergency room saw 112 patients.', 'The emergency room saw one hundred twelve patients.'),
    ('Dial *#06# now.', 'Dial star pound zero six pound now.'), ("We're #1.", "We're number one."),
    ("let's meet around 4:30ish?", "let's meet around four thirtyish?"), ('Back by 4:00ish.', 'Back by fourish.'),
    ('She was diagnosed with stage IV lymphoma.', 'She was diagnosed with stage four lymphoma.'),
    ('See note iii below.', 'See note three below.'), ('the stage mix', 'the stage mix'),
    ('Copyright © 2024 Acme', 'Copyright twenty twenty-four Acme'), ('© 2024 Acme', 'copyright twenty twenty-four Acme'),
    ('Add 3/5 and 4/5.', 'Add three fifths and four fifths.'),
    ('on 12/24 and 12/31.', 'on December twenty-fourth and December thirty-first.'),
    ('The ratio simplifies to 12/25.', 'The ratio simplifies to twelve twenty-fifths.'),
    ('Cut it into 3 1/4 ft lengths.', 'Cut it into three and a quarter foot lengths.'),
    ('It is 2 1/2 ft long.', 'It is two and a half feet long.'),
    ('A jacket with 3/4 sleeves.', 'A jacket with three quarter sleeves.'),
    ('7/10 customers agree.', 'seven out of ten customers agree.'),
    # a unit's list of codes and its number sign; an Australian 1300 number, a short code texted "at"; a postal item's
    # number; "#:" before a code; a quantified bound, a question in capitals, a negative in bars, a probability
    ('Seats 23A and 23B are together.', 'Seats twenty-three A and twenty-three B are together.'),
    ('Recall notice: lot #L2291A only.', 'Recall notice, lot number L two two nine one A only.'),
    ('Sydney support line: 1300 655 506', 'Sydney support line, one three zero zero, six five five, five zero six'),
    ('Or text us at 20555.', 'Or text us at two zero five five five.'),
    ('Parcel ID: LX 1042 8893 US', 'Parcel I D, L X one zero four two eight eight nine three U S'),
    ('Part #: 45-2210-B', 'Part number, four five-two two one zero-B'),
    ('This holds for every n ≥ 1.', 'This holds for every n greater than or equal to one.'),
    ('WHAT IS 6 × 7?', 'what is six times seven?'), ('|−5| = 5', 'the absolute value of negative five equals five'),
    ('P(A) = 0.25', 'P of A equals zero point two five'),
    # a highway's exit by its code; numbers named in the plural after "the"; a headline's amount before its noun; a
    # motor oil's grade; a race by its distance; a question's verb before a relation; units in an equation
    ('Take exit 4B toward Newark.', 'Take exit four B toward Newark.'),
    ('Traffic on the 8s.', 'Traffic on the eights.'), ('the 1s and 2s', 'the ones and twos'),
    ('Yankees sign ace to $162M deal', 'Yankees sign ace to one hundred sixty-two million dollar deal'),
    ('It takes 0W-20 or 5W30 oil.', 'It takes zero W twenty or five W thirty oil.'),
    ('Road closures for the 10K start at dawn.', 'Road closures for the ten K start at dawn.'),
    ('He ran a 5K, then took 10K steps.', 'He ran a five K, then took ten thousand steps.'),
    ('Is 5 > 3? Yes.', 'Is five greater than three? Yes.'),
    ('60 mph × 2.5 h = 150 mi', 'sixty miles per hour times two point five hours equals one hundred fifty miles'),
    # a host's two letters that are no word, spelled; initials peeled off a name until a syllable opens; an agency's
    # letters; a shouted word of alternating vowels on a line in capitals
    ('Flight status: aa.com', 'Flight status, A A dot com'),
    ('Road conditions: www.511ny.org', 'Road conditions, W W W dot five one one N Y dot org'),
    ('Charger map: ev-charging.example.com/map', 'Charger map, E V dash charging dot example dot com slash map'),
    ('en.wikipedia.org/wiki/Pi', 'E N dot wikipedia dot org slash wiki slash Pi'),
    ('Go to go.example.com', 'Go to go dot example dot com'), ('Email al@example.com', 'Email al at example dot com'),
    ('Service updates from @SFBART today.', 'Service updates from at S F BART today.'),
    ('Listen live: kqed.org/radio', 'Listen live, K Q E D dot org slash radio'),
    ('Get an xbox.com account', 'Get an X box dot com account'),
    ('Trail cams: www.fs.usda.gov/cams', 'Trail cams, W W W dot F S dot U S D A dot gov slash cams'),
    ('BAY AREA TRAFFIC: 511.ORG', 'bay area traffic, five one one dot ORG'), ('BIG IDEA SALE', 'big idea sale'),
    # a street's type with no house number, a shouted one, a direction before an ordinal street; "Dr." and "Jr." in a
    # street's name; a vanity number's acronym; "AAA"; "Sta.", "Conv."; a train's lettered code; a letter-hyphen brand
    ('Turn onto St. Charles Ave toward the Garden District.', 'Turn onto Saint Charles Avenue toward the Garden District.'),
    ('FARMERS MARKET CLOSES MAIN ST', 'farmers market closes main Street'),
    ('MAKE A U-TURN AT 3RD ST', 'make A U-turn at Third Street'),
    ("It's on the corner of 5th Ave & E 60th St.", "It's on the corner of Fifth Avenue and East Sixtieth Street."),
    ('Museum entrance at 705 Dr. Martin Luther King Jr. Blvd.',
     'Museum entrance at seven oh five Doctor Martin Luther King Junior Boulevard.'),
    ('For Amtrak info call 1-800-USA-RAIL.', 'For Amtrak info call one, eight hundred, U S A, rail.'),
    ('Your AAA membership covers this tow.', 'Your triple A membership covers this tow.'),
    ('Union Sta. is the next stop.', 'Union Station is the next stop.'),
    ('Take the Conv. Ctr. exit.', 'Take the Convention Center exit.'),
    ('Train ICE 597 to Frankfurt', 'Train I C E five ninety-seven to Frankfurt'),
    ('Your E-ZPass tag is low.', 'Your E Z Pass tag is low.'),
    ('Crews are working in the 3500 block of Oak Blvd.', 'Crews are working in the thirty-five hundred block of Oak Boulevard.'),
    ('Engine: 3.5L V6', 'Engine, three point five liter V six'),
    ('dm us on IG for details', 'D M us on I G for details'),
    ('Find us at facebook.com/RiversideHS', 'Find us at facebook dot com slash Riverside H S'),
    ('A charge was made at BEST BUY.', 'A charge was made at best buy.'),
    ('STORE HOURS 10AM-9PM', 'store hours ten AM to nine PM'), ('Opens at 9AM', 'Opens at nine AM'),
    ('Doors 7pm / Show 8pm', 'Doors seven PM, Show eight PM'),
    ('The last day to register is 10/6.', 'The last day to register is October sixth.'),
    ('2BR apt available 8/1', 'two bedroom apartment available August first'),
    ('Pay period 1/1–1/15', 'Pay period January first to January fifteenth'),
    ('enter the result of 7 × 8.', 'enter the result of seven times eight.'),
    ('Applicants with a credit score < 600 may apply.', 'Applicants with a credit score less than six hundred may apply.'),
    # a listing's shorthand, where its context makes it sure
    ('3BR/2BA, garage, big yard', 'three bedroom two bath, garage, big yard'),
    ('W/D hookups, no pets', 'washer and dryer hookups, no pets'),
    ('FT/PT positions available', 'full time or part time positions available'),
    ('CDL req., clean driving record', 'C D L required, clean driving record'),
    ('Licensed, bonded & ins.', 'Licensed, bonded and insured.'),
    ('Lic. #4411', 'License number forty-four eleven'),
    ('mtg moved to 3:15 pm', 'meeting moved to three fifteen PM'),
    ('Pay: $18/hr DOE', 'Pay, eighteen dollars per hour depending on experience'),
    ('Jane DOE is here', 'Jane D O E is here'),
    ('3 BR/2 BA', 'three bedroom two bath'), ('3 BR, 2 BA, garage', 'three bedroom, two bath, garage'),
    ('he has 2 BA degrees', 'he has two B A degrees'),
    # a court case's "v." between names; "Eq." before its number; "Bldg."
    ("Brown v. Board of Education was decided.", "Brown versus Board of Education was decided."),
    ("Substitute Eq. 2 into Eq. 1.", "Substitute Equation two into Equation one."),
    ("Drop samples at Room 310, Science Bldg.", "Drop samples at Room three ten, Science Building."),
    # a key chord; a slash in a command's argument after a flag
    ("Press Ctrl+C to stop, Ctrl+Alt+Del to restart.", "Press control C to stop, control alt delete to restart."),
    ("Run git checkout -b feature/login now.", "Run git checkout dash B feature slash login now."),
    # a dotted range off the quarter hour is two decimals; a unit's symbol after a word and a slash is "per"
    ("pH between 7.35–7.45.", "P H between seven point three five and seven point four five."),
    ("WBC 4.5–11.0 thousand/µL", "W B C four point five to eleven point zero thousand per microliter"),
    # a diagnosis code (ICD-10's shape)
    ("Code E11.9 applies.", "Code E one one point nine applies."),
    # chemical formulas: symbols spelled, a subscript count and a coefficient said; a reaction's arrow "yields"
    ('Balance it: 2H₂ + O₂ → 2H₂O', 'Balance it, two H two plus O two yields two H two O'),
    ('about 4% CO₂', 'about four percent C O two'), ('Fe₂O₃ and Ca(OH)₂', 'F E two O three and C A O H two'),
    ('add NaOH to HCl', 'add N A O H to H C L'), ('HeLa cells, NaN values', 'HeLa cells, NaN values'),
    ('a 0.1 M NaCl solution', 'a zero point one molar N A C L solution'),
    ('The concentration is 1.5 × 10⁻³ M.', 'The concentration is one point five times ten to the minus three molar.'),
    ('iron(III) oxide, copper(II) sulfate', 'iron three oxide, copper two sulfate'),
    ('6.02 × 10²³', 'six point zero two times ten to the twenty-third'),
    ('(x + 1)(x − 1) = x² − 1', 'x plus one times x minus one equals x squared minus one'),
    ('Counting by 7s: 7, 14.', 'Counting by sevens, seven, fourteen.'), ('wait 7s then go', 'wait seven seconds then go'),
    ('It is far from the Sun.', 'It is far from the Sun.'), ('Closed Sun.', 'Closed Sunday.'),
    ('Profit = $80 − $55 = $25', 'Profit equals eighty dollars minus fifty-five dollars equals twenty-five dollars'),
    ('$200 grows to $216.', 'two hundred dollars grows to two hundred sixteen dollars.'),
    ('a net force of 10 N.', 'a net force of ten newtons.'),
    ('Callers can use TTY 711.', 'Callers can use T T Y seven one one.'),
    ('Charles I was executed in 1649.', 'Charles the first was executed in sixteen forty-nine.'),
    ('James I think so.', 'James I think so.'),
    ('Bridge: 1-866-555-0110, PIN 7732#', 'Bridge, one, eight six six, five five five, zero one one zero, Pin seven seven three two pound'),
    ('Enter 123456# to join.', 'Enter one two three four five six pound to join.'),
    ('Payroll? Call x2210.', 'Payroll? Call extension two two one zero.'),
    ('ship to 12 main st apt 3b, burlington vt 05401',
     'ship to twelve main Street apartment three B, burlington Vermont zero five four zero one'),
    ('Billing: 2600 S. Loop W, Houston, TX 77054',
     'Billing, twenty-six hundred South Loop West, Houston, Texas seven seven zero five four'),
    ('The shelf is 48 in.', 'The shelf is forty-eight inches.'), ('It is 30 in. Then', 'It is thirty inches. Then'),
    ('about 40 ppl came', 'about forty people came'), ('Sales rose each qtr.', 'Sales rose each quarter.'),
    ('Asst. to the Mgr. left', 'Assistant to the Manager left'), ('Call Accts. Payable.', 'Call Accounts Payable.'),
    ('Book Conf. Rm. B now.', 'Book Conference Room B now.'), ('Back up the NAS.', 'Back up the Nas.'),
    ('Dashboards: grafana.internal/d/kpis', 'Dashboards, grafana dot internal slash D slash K P I S'),
    ('Join #it-outages now.', 'Join hashtag it dash outages now.'),
    ('Logs on prod-web-03.', 'Logs on prod dash web dash zero three.'),
    ('File at forms.office.com/r/travel2025', 'File at forms dot office dot com slash R slash travel twenty twenty-five'),
    ('Send it to ap@globex.com.', 'Send it to A P at globex dot com.'),
    ('Order SO-7741 shipped.', 'Order S O-seven seven four one shipped.'),
    ('JIRA-2231 is blocked.', 'Jira-two two three one is blocked.'),
    ('RMA# R-66120 issued.', 'R M A number R-six six one two zero issued.'),
    # a room range by its numbers; a range of years starts after 1100; a formula's spaced slash and hyphen; a relation
    # with no term before it, or a variable's bound as a count, has no verb
    ("Rooms 301–310 are free", "Rooms three oh one to three ten are free"),
    ("orders 1001-1050 need", "orders one thousand one to one thousand fifty need"),
    ("ROI = (gain − cost) / cost", "R O I equals (gain minus cost) divided by cost"),
    ("$9,000 / 30 = $300", "nine thousand dollars divided by thirty equals three hundred dollars"),
    ("Net = gross - 15% off", "Net equals gross minus fifteen percent off"),
    ("Set it to < 5 errors.", "Set it to less than five errors."),
    ("We need n ≥ 30 responses", "We need n greater than or equal to thirty responses"),
    ("Area = 20 ft × 15 ft = 300 sq ft", "Area equals twenty feet times fifteen feet equals three hundred square feet"),
    ("Throughput ≈ 1,200 req/s", "Throughput approximately one thousand two hundred requests per second"),
    ("15–30 min for P1s", "fifteen to thirty minutes for P ones"),
    ("Ship to 44 OCEAN VIEW DR, MIAMI", "Ship to forty-four OCEAN VIEW Drive, miami"),  # a shouted "DR" after a house number
    ("SEE 12 WITH DR JONES", "see twelve with D R jones"),
    ("Meet at 9 BayView Dr, Tiburon", "Meet at nine BayView Drive, Tiburon"),  # a name with a capital inside
    ("Order #4410 2231 9087 shipped", "Order number four four one zero, two two three one, nine zero eight seven shipped"),
    ("Text JOIN to 22-333 now", "Text join to two two, three three three now"),  # a dashed short code
    ("Winning numbers: 04 11 23 38 52 tonight", "Winning numbers, four eleven twenty-three thirty-eight fifty-two tonight"),
    ("lottery hotline: 01 23 45 67 89", "lottery hotline, zero one, two three, four five, six seven, eight nine"),
    ("Air quality index PM2.5 reading", "Air quality index P M two point five reading"),
    ("WATCH LIVE AT CBSNEWS.COM/LIVE", "watch live at C B S NEWS dot COM slash LIVE"),
    ("Read nytimes.com today", "Read N Y times dot com today"),
    ("please rsvp by friday, hmm", "please R S V P by friday, hmm"),
    ("see shop.com/deals?sku=6501 or imdb.com", "see shop dot com slash deals question mark S K U equals six five zero one or I M D B dot com"),
    ("12 × 8 is 96.", "twelve times eight is ninety-six."),
    ("Pregame starts at 6:30 ET/3:30 PT.", "Pregame starts at six thirty E T, three thirty P T."),
    ("PM2.5 is at 35 µg/m³", "P M two point five is at thirty-five micrograms per cubic meter"),
    ("π × 3² ≈ 28.27", "pi times three squared is approximately twenty-eight point two seven"),
    ("SNOWFALL UP TO 18 IN. EXPECTED", "snowfall up to eighteen inches. expected"),
    ("They signed a 3-year, $12M contract.", "They signed a three-year, twelve million dollar contract."),
    ("Layover: 2 h 15 min.", "Layover, two hours fifteen minutes."),
    ("Wind 21 kn.", "Wind twenty-one knots."),
    ("The shuttle runs every ½ hour.", "The shuttle runs every half hour."),
    ("Bar (18+ w/ ID)", "Bar (eighteen plus with I D)"),
    ("lmk by noon, asap", "let me know by noon, A S A P"),
    ("Children < 2 fly free.", "Children under two fly free."),
    ("1 USD ≈ 0.92 EUR", "one dollar is approximately zero point nine two euros"),
    ("3 nights x 2 rooms = 6 room-nights", "three nights times two rooms equals six room-nights"),
    ("°F = °C × 9/5 + 32", "degrees Fahrenheit equals degrees Celsius times nine fifths plus thirty-two"),
    ("Miles to km: mi × 1.609 = km", "Miles to kilometers, miles times one point six zero nine equals kilometers"),
    ("Read Canto V.", "Read Canto five."),
    ("Dynasties XVIII to XX", "Dynasties eighteen to twenty"),
    ("Check-in: 3pm–midnight", "Check-in, three PM to midnight"),
    ("WATER DEPTH: 4.6 M", "water depth, four point six meters"),
    ("Your USERID is 981234567.", "Your USER I D is nine eight one two three four five six seven."),
    ("Your cabin on deck 9 is 9214.", "Your cabin on deck nine is ninety-two fourteen."),
    ("TRAIN ICE 578", "train I C E five seventy-eight"),
    ("RETURN CAR TO: DESK 4", "return car to, Desk four"),
    ("A $5 monthly fee applies.", "A five dollar monthly fee applies."),
    ("in the $2,000-$5,000 range", "in the two thousand to five thousand dollar range"),
    ("Your rate is 14.2¢/kWh.", "Your rate is fourteen point two cents per kilowatt hour."),
    ("Log in to benefits.adp.com now", "Log in to benefits dot A D P dot com now"),
    ("Order ref: AB12", "Order reference, A B twelve"),
    ("Use SWIFT code BOFAUS3N.", "Use swift code B O F A U S three N."),
    ("We need the LLC's EIN.", "We need the L L C's E I N."),
    ("FICO scores vary.", "Fico scores vary."),
    ("you need a credit score > 700.", "you need a credit score greater than seven hundred."),
    ("Complete Form 8962.", "Complete Form eighty-nine sixty-two."),
    ("Pmt. rec'd, thanks. Int'l fee. Bal. fwd. from May. Est. amt. due", "Payment received, thanks. International fee. Balance forward from May. Estimated amount due"),
    ("Ask the Mgr. Then go.", "Ask the Manager. Then go."),
    ("$2,400/12 = $200 per month", "two thousand four hundred dollars divided by twelve equals two hundred dollars per month"),
    ("He is hitting .305 with a .300 average.", "He is hitting three oh five with a three hundred average."),
    ("They improved to 42-20 with a win; it fell to 3-5 degrees.", "They improved to forty-two and twenty with a win; it fell to three to five degrees."),
    ("Cole (12-4, 2.45 ERA) starts.", "Cole (twelve and four, two point four five E R A) starts."),
    ("Atty. Gen. Smith met adm. grace hopper.", "Attorney General Smith met Admiral grace hopper."),
    ("He had a +/- of +18; x = 5 +/- 2", "He had a plus minus of plus eighteen; x equals five plus or minus two"),
    ("A Saturn V rocket and a Category V storm.", "A Saturn five rocket and a Category five storm."),
    ("The WHO says so. WHO did it? The VIX rose.", "The W H O says so. who did it? The Vix rose."),
    ("Doors 6:30 PM / Show 8:00 PM", "Doors six thirty PM, Show eight PM"),
    ("cut rates by 1/4 point.", "cut rates by a quarter point."), ("rise 1/2 meter by May", "rise half a meter by May"),
    ("Seas could rise by 2100, it says.", "Seas could rise by twenty-one hundred, it says."),
    ("The 7'4\" rookie", "The seven-foot-four rookie"), ("It is 1/2 inch thick.", "It is half an inch thick."),
    ("at apnews.com and espn.com, usgs.gov, apps.io", "at A P news dot com and E S P N dot com, U S G S dot gov, apps dot I O"),
    ("the 4500 block of S. Halsted St.", "the forty-five hundred block of South Halsted Street."),
    ("on Sunrise Hwy near", "on Sunrise Highway near"), ("along 10th Ave. S (near", "along Tenth Avenue South (near"),
    ("passed H.R. 815 and S.J.Res. 7", "passed H R eight fifteen and S J Res seven"),
    ("Invest 91L could form.", "Invest ninety-one L could form."), ("hunter N42RF flew", "hunter N four two R F flew"),
    ("new eta 2:40pm, what's the eta?", "new E T A two forty PM, what's the E T A?"), ("eta = 0.3", "eta equals zero point three"),
    ("Use the hashtag #StormReady now", "Use the hashtag storm ready now"),
    ("see a.gov/rebates-2025 and a.gov/form-1040.pdf", "see A dot gov slash rebates dash twenty twenty-five and A dot gov slash form dash ten forty dot P D F"),
    ("send the tech to 16 maple ct", "send the tech to sixteen maple Court"),
    ("HOUSE AT 10250 HWY 61 S FLOODED", "house at ten two fifty Highway sixty-one South flooded"),
    ("Spark plug NGK ILKAR7B11", "Spark plug N G K I L K A R seven B one one"),
    ("Approx. wait: 2 hrs, the approx. cost", "Approximate wait, two hours, the approximate cost"),
    ("approx. 2 hrs", "approximately two hours"), ("Attach proof of res. today", "Attach proof of residence today"),
    ("Apply for WIC or SNAP. MERV 11", "Apply for Wic or snap. Merv eleven"),
    ("Courtroom 4B", "Courtroom four B"), ("Classroom 2B today", "Classroom two B today"),
    ("John V. Smith signed.", "John V. Smith signed."), ("Henry V. The war", "Henry the fifth. The war"),
    ("The panel is rated for 200 A.", "The panel is rated for two hundred amps."),
    ("on a 20 A breaker", "on a twenty amp breaker"), ("Grade: 90 A", "Grade, ninety A"),
    ("120 × 15 = 1,800 W.", "one hundred twenty times fifteen equals one thousand eight hundred watts."),
    ("842 − 790 = 52 kWh over", "eight hundred forty-two minus seven hundred ninety equals fifty-two kilowatt hours over"),
    ("Homes with < 5 outages", "Homes with less than five outages"),
    ("Open 8:30–5:00.", "Open eight thirty to five."), ("from 9:00–5:00", "from nine to five"),
    ("between $30,000 and $45,000 qualifies.", "between thirty thousand dollars and forty-five thousand dollars qualifies."),
    ("The tank is ½ full.", "The tank is half full."), ("Tire size: 225/65R17", "Tire size, two twenty-five sixty-five R seventeen"),
    ("P215/60R16 tires", "P two fifteen sixty R sixteen tires"),
    ('Go to Settings > Privacy > Location Services.', 'Go to Settings, Privacy, Location Services.'),
    ('if Revenue > Cost then', 'if Revenue is greater than Cost then'),
    ('Shoot with the f/1.8 lens.', 'Shoot with the f one point eight lens.'),
    ('Films are shown in 2.39:1 here.', 'Films are shown in two point three nine to one here.'),
    ("Make sure port 8080 isn't blocked.", "Make sure port eight zero eight zero isn't blocked."),
    ('Hold it for 5 to 10 s until it blinks.', 'Hold it for five to ten seconds until it blinks.'),
    ('1 in = 2.54 cm', 'one inch equals two point five four centimeters'),
    ('phone # on file', 'phone number on file'), ('Your ref. no. is below.', 'Your reference number is below.'),
    ('THANKS FOR CONTACTING US', 'thanks for contacting us'), ('SHIPPING US ONLY', 'shipping U S only'),
    ("i have like 40 tabs open", "i have like forty tabs open"), ('Pixel density: 460 ppi', 'Pixel density, four hundred sixty pixels per inch'),
    ('Get it at example.com/ios', 'Get it at example dot com slash I O S'),
    ('if score <= 10 show it', 'if score is less than or equal to ten show it'),
    ('Subtotal $40 − $10 coupon', 'Subtotal forty dollars minus ten dollar coupon'),
    ('Send it to HR.', 'Send it to H R.'), ('Launch moved to 11/4.', 'Launch moved to November fourth.'),
    ('CTR = clicks / views', 'C T R equals clicks divided by views'), ('Mode = on / off', 'Mode equals on or off'),
    ('Sum B2:B10 now.', 'Sum B two to B ten now.'), ('TANKS HOLD 3 GAL', 'tanks hold three gallons'),
    ('Shelf width: 30 in (76 cm)', 'Shelf width, thirty inches (seventy-six centimeters)'),
    ('Width 12 in, depth 8 in.', 'Width twelve inches, depth eight inches.'),
    ('See subsection iv below.', 'See subsection four below.'),
    ('PARIS SYNC 09:30 CET', 'paris sync nine thirty C E T'),
    ('Mail help@it-desk.org', 'Mail help at I T dash desk dot org'),
    ('From noreply@acme.com', 'From no reply at acme dot com'),
    ('Make sure the count ≤ 20.', 'Make sure the count is less than or equal to twenty.'),
    ('Her due date is 6/30.', 'Her due date is June thirtieth.'),
    ('Please update your ZIP to 10027.', 'Please update your ZIP to one zero zero two seven.'),
    ('Your TSH came back at 2.45, which is normal.', 'Your T S H came back at two point four five, which is normal.'),
    ('A ¼-lb patty', 'A quarter-pound patty'),
    ('Stage IIIB cancer', 'Stage three B cancer'), ("Bell's palsy affects cranial nerve VII.", "Bell's palsy affects cranial nerve seven."),
    ('Collagen types I and III', 'Collagen types one and three'),
    ('Dilute bleach 1:10 with water.', 'Dilute bleach one to ten with water.'),
    ('4 × 25 g = 100 g of protein', 'four times twenty-five grams equals one hundred grams of protein'),
    ('Net carbs = 30 − 12 = 18 g', 'Net carbs equals thirty minus twelve equals eighteen grams'),
    ('BMI = weight (kg) ÷ height (m)²', 'B M I equals weight (kilograms) divided by height (meters) squared'),
    ('Zone 2 = 60–70% of max', 'Zone two equals sixty to seventy percent of max'),
    ('WALK 20 MIN, 3X A WEEK', 'walk twenty minutes, three times A week'),
    ('Tenant pays all utils. except trash.', 'Tenant pays all utilities except trash.'),
    ('Hrg. continued to next mo. per stip.', 'Hearing continued to next month per stipulation.'),
    ('Mtg. pmt. is due on the 1st.', 'Mortgage payment is due on the first.'),
    ('The ADU has a sep. entrance.', 'The A D U has a separate entrance.'),
    ('new water htr. 2022', 'new water heater twenty twenty-two'),
    ('SFR w/ detached gar., corner lot', 'S F R with detached garage, corner lot'),
    ('The Est. of J. Reyes, c/o Reyes & Assoc., LLC', 'The Estate of J. Reyes, care of Reyes and Associates, L L C'),
    ('Maria Lin, Esq., counsel', 'Maria Lin, Esquire, counsel'),
    ('the HOA mgmt. co. yesterday', 'the H O A management company yesterday'),
    ('Wt. 40 lbs, Qty. 12', 'Weight forty pounds, Quantity twelve'),
    ('Exp: 11/2026', 'Expires November twenty twenty-six'),
    ('Review Sec. 4.2 before Thursday.', 'Review Section four point two before Thursday.'),
    ('See Fla. Stat. § 83.56 for notice.', 'See Florida Statutes section eighty-three point five six for notice.'),
    ('Cal. Civ. Code § 1950.5 re: deposit returns', 'California Civil Code section nineteen fifty point five regarding deposit returns'),
    ('Per 42 U.S.C. § 3604, it was.', 'Per forty-two U S C section thirty-six oh four, it was.'),
    ('Smith v. Jones, 412 F.3d 88 (2d Cir. 2005)', 'Smith versus Jones, four twelve F third eighty-eight (second Circuit two thousand five)'),
    ('Brown v. Board, 347 U.S. 483 (1954)', 'Brown versus Board, three forty-seven U S four eighty-three (nineteen fifty-four)'),
    ('Plaintiff: Charles W. Benton V', 'Plaintiff, Charles W. Benton the fifth'),
    ('The SAT and ACT are optional.', 'The S A T and A C T are optional.'),
    ('Arrive early for the SAT.', 'Arrive early for the S A T.'),
    ('Open SAT 9/14', 'Open Saturday September fourteenth'),
    ('Mtg. at 3 pm in Sec. B', 'Meeting at three PM in Section B'), ('wait 30 sec. then go', 'wait thirty seconds then go'),
    ('just fyi my cell is 202.555.0157 btw', 'just F Y I my cell is two zero two, five five five, zero one five seven by the way'),
    ('The lot is 0.5 ac.', 'The lot is zero point five acres.'),
    ('The crawl space has 18 in of clearance.', 'The crawl space has eighteen inches of clearance.'),
    ('Radon: 4.6 pCi/L', 'Radon, four point six picocuries per liter'),
    ('Prepare 500 mL of a 0.1 M solution.', 'Prepare five hundred milliliters of a zero point one molar solution.'),
    ('The activation energy is 50 J/mol.', 'The activation energy is fifty joules per mole.'),
    ('The circuit draws 0.5 A at 9 V.', 'The circuit draws zero point five amps at nine volts.'),
    ('Absolute zero is 0 K.', 'Absolute zero is zero kelvin.'),
    ('BODY TEMPERATURE: 37 °C', 'body temperature, thirty-seven degrees Celsius'),
    ('Use film 18" wide.', 'Use film eighteen inches wide.'),
    ('Use 3/4-inch copper.', 'Use three quarter-inch copper.'),
    ('Occupancy must stay > 90% to keep it.', 'Occupancy must stay greater than ninety percent to keep it.'),
    ('LTV < 80% means no PMI.', 'L T V less than eighty percent means no P M I.'),
    ('If 2x < 10, then x < 5.', 'If two x is less than ten, then x is less than five.'),
    ('CaCO3 + 2HCl → CaCl2 + H2O + CO2', 'C A C O three plus two H C L yields C A C L two plus H two O plus C O two'),
    ('2 × 48" = 96"', 'two times forty-eight inches equals ninety-six inches'),
    ('price ÷ sq ft', 'price divided by square feet'),
    ('the SW 1/4 of the NE 1/4 of Section 12', 'the southwest quarter of the northeast quarter of Section twelve'),
    ('RATE $2.10/MILE', 'rate two dollars and ten cents per mile'),
    ('ARRIVAL 1430 HRS', 'arrival fourteen thirty hours'),
    ('ROOF AGE: 8-10 YRS', 'roof age, eight to ten years'),
    ('Move-in: 9/1', 'Move-in, September first'),
    # a number and a capital after a place's noun or a course's subject: a code, not a scale or a unit
    ('Check in at desk 4B by noon.', 'Check in at desk four B by noon.'),
    ('EE 16A meets on Tuesday.', 'E E sixteen A meets on Tuesday.'),
    ('Sign up for PHYS 212 next term.', 'Sign up for phys two twelve next term.'),
    # five digits or more after a number sign or "no.", or after an initialism for a number: digit by digit
    ('Listing MLS# 5519027 is pending.', 'Listing M L S number five five one nine zero two seven is pending.'),
    ('License no. 8830162 expires soon.', 'License number eight eight three zero one six two expires soon.'),
    ('Use your EIN 41735 here.', 'Use your E I N four one seven three five here.'),
    ('The door code is #4417.', 'The door code is pound four four one seven.'),
    ('ICD code 250.01 was billed.', 'I C D code two five zero point zero one was billed.'),
    ('USPS 9400 1118 9922 3856', 'U S P S nine four zero zero, one one one eight, nine nine two two, three eight five six'),
    ('INSTALL GFCI OUTLET NOW', 'install G F C I outlet now'),
    ('Read §§ 3-7 first.', 'Read sections three to seven first.'),
    # an address's, a host's or a file's small-letter name the text writes in capitals before it, spelled
    ('The EDI team is at edi-ops@acme.com', 'The E D I team is at E D I dash ops at acme dot com'),
    ('Email the TA at ta_office@school.edu', 'Email the T A at T A underscore office at school dot edu'),
    ('Submit hw2_jones.pdf today.', 'Submit H W two underscore jones dot P D F today.'),
    ('Scan the BOLs now.', 'Scan the B O Ls now.'),
    ('see docs/2024-report.pdf', 'see docs slash twenty twenty-four report dot P D F'),
    # a version's part of four digits or more (a build's number) digit by digit; a release's letter after its last part
    ('Now on build 2.0.3307', 'Now on build two point zero point three three zero seven'),
    ('Fixed in 4.0.2b.', 'Fixed in four point zero point two B.'),
    # a lone X after Model or Series: a product's letter
    ('The Series X console and a Model X', 'The Series X console and a Model X'),
    # digits after a group number, a billing code set's code, a small letter's long code
    ('Your group number is 55120.', 'Your group number is five five one two zero.'),
    ('Bill it as HCPCS 97110.', 'Bill it as H C P C S nine seven one one zero.'),
    ('the ref is k-4471902', 'the ref is K-four four seven one nine zero two'),
    # inches before a preposition, a hyphened unit's stop, a glued unit opening a line before a noun, km by km, a count before three capitals
    ('Mark it at 24" from the floor', 'Mark it at twenty-four inches from the floor'),
    ('Buy a 5-lb. bag of rice.', 'Buy a five pound bag of rice.'),
    ('650W power supply included', 'six hundred fifty watt power supply included'),
    ('Motor: 1.5L diesel', 'Motor, one point five liter diesel'),
    ('The plot is 3 km × 2 km.', 'The plot is three kilometers by two kilometers.'),
    ('Print it at 600 DPI.', 'Print it at six hundred D P I.'),
    # a video's lines and frame rate
    ('Record in 2160p30 today.', 'Record in twenty-one sixty p thirty today.'),
    # the sentence's verb after a compared value; per square foot; minus after a percent; ≈ after a formula's left side
    ('Yearly income < 40,000 gets the credit.', 'Yearly income less than forty thousand gets the credit.'),
    ('Tile costs $12/sq ft here.', 'Tile costs twelve dollars per square foot here.'),
    ('Coverage: 90% − 10% = 80%', 'Coverage, ninety percent minus ten percent equals eighty percent'),
    ('$1,200 ÷ 12 months ≈ $100', 'one thousand two hundred dollars divided by twelve months is approximately one hundred dollars'),
    # a video's place in hours, minutes, seconds; a long zone after a time spelled
    ('Jump to 2:15:30 in the stream.', 'Jump to two hours fifteen minutes thirty seconds in the stream.'),
    ('Launch at 9:00 AEST', "Launch at nine o'clock A E S T"),
    # a full score, a score given as a thing
    ('The ending was a 10/10.', 'The ending was a ten out of ten.'),
    ('I give it a 7/10, honestly.', 'I give it a seven out of ten, honestly.'),
    # a unit's letter hyphened to a capitalised word is a name
    ('Earn 500 V-Bucks today.', 'Earn five hundred V-Bucks today.'),
    # a processor's model number after its tier
    ('Intel i7-12700K inside', 'Intel I seven-twelve seven hundred K inside'),
    ('a Ryzen 5 5600X build', 'a Ryzen five fifty-six hundred X build'),
    # acronyms said in part or whole as words
    ('Bring your CPAP mask.', 'Bring your C PAP mask.'),
    ('Rx BIN: 610014', 'prescription bin, six one zero zero one four'),
    # chat and gamer shorthand in small letters, by its letters
    ('gg wp everyone, brb', 'G G W P everyone, B R B'),
    ('Ranked PvP and QoL changes', 'Ranked P V P and Q O L changes'),
    ('Ep. 12, Pt. 2, Lv. 60 required', 'Episode twelve, Part two, Level sixty required'),
    ('new vid ft. Jay and Mo', 'new vid featuring Jay and Mo'),
    ("Kelly's Auto Body dba KAB Collision", "Kelly's Auto Body doing business as K A B Collision"),
    ('This MMORPG has twelve classes.', 'This M M O R P G has twelve classes.'),
    ('on the CLUE report, minus FICA', 'on the clue report, minus Fica'),
    ('Your K/D this season is 1.85.', 'Your K D this season is one point eight five.'),
    ('Send it to RR 2 Box 45, Harlan', 'Send it to Rural Route two Box forty-five, Harlan'),
    ('Report it at nicb.org or itch.io', 'Report it at N I C B dot org or itch dot I O'),
    ('Press: press@arcadia.io, x.com/ign', 'Press, press at arcadia dot I O, X dot com slash I G N'),
    ('Posted the clip on r/gaming', 'Posted the clip on R slash gaming'),
    ('comp w/ $250 ded, collision w/o rental', 'comp with two hundred fifty dollar deductible, collision without rental'),
    ('The deadline for entries is 11/28', 'The deadline for entries is November twenty-eighth'),
    ('The menu changes 02.03.2025.', 'The menu changes the second of March, twenty twenty-five.'),
    ('Text JOIN to 48213 for deals.', 'Text join to four eight two one three for deals.'),
    ('Her meter number is 5501234.', 'Her meter number is five five zero one two three four.'),
    ('The IMEI ends 3321.', 'The I M E I ends three three two one.'),
    ('Est. MCMLXX', 'Established nineteen seventy'),
    ('Lunch Mon-Fri, 11:00-3:00', 'Lunch Monday to Friday, eleven to three'),
    ('Meet at: Oak Ave & 3rd St', 'Meet at, Oak Avenue and Third Street'),
    ('Funding comes in phases (I, II and III).', 'Funding comes in phases (one, two and three).'),
    ('USE CODE BOGO25', 'use code Bogo twenty-five'),
    ("Add'l fees may apply.", 'Additional fees may apply.'),
    ('100 wings / 4 people = 25 each', 'one hundred wings divided by four people equals twenty-five each'),
    ('Speed in MB/s = Mbps ÷ 8', 'Speed in megabytes per second equals megabits per second divided by eight'),
    ('kWh = kW × hours', 'kilowatt hours equals kilowatts times hours'),
    ('x = 125 MB/s', 'x equals one hundred twenty-five megabytes per second'),
    ('240 V × 32 A = 7,680 W', 'two hundred forty volts times thirty-two amps equals seven thousand six hundred eighty watts'),
    ('Orders < 10 items can use the express lane.', 'Orders less than ten items can use the express lane.'),
    ('Your savings ≈ 30% of the bill', 'Your savings are approximately thirty percent of the bill'),
    ('1 half tray ≈ 10 servings', 'one half tray is approximately ten servings'),
    ('The $0.99 premium text charge was refunded.', 'The ninety-nine cent premium text charge was refunded.'),
    ('A $0.50 service charge applies', 'A fifty-cent service charge applies'),
    ('$8 meal + $2 tip = $10', 'eight dollar meal plus two dollar tip equals ten dollars'),
    ('Net sales = $4,200 − $350 refunds', 'Net sales equals four thousand two hundred dollars minus three hundred fifty dollars refunds'),
    ("so it's 4 lines x $25 = $100 total", "so it's four lines times twenty-five dollars equals one hundred dollars total"),
    ('Only the last ¼ mile is uphill.', 'Only the last quarter mile is uphill.'),
    ('EST. MCMXCV', 'ESTABLISHED nineteen ninety-five'),
    ('at 5 PM EST. 2024 will', 'at five PM E S T. twenty twenty-four will'),
    ('Our call line: 212-555-0147 x4', 'Our call line, two one two, five five five, zero one four seven extension four'),
    ('Doors open 6-6:45 tonight', 'Doors open six to six forty-five tonight'),
    ('Install a 30 A, 240 V outlet.', 'Install a thirty amp, two hundred forty volt outlet.'),
    ('The Remix feat. DJ Vale', 'The Remix featuring D J Vale'),
    ('Loyalty card no. TX 4410 2298', 'Loyalty card number T X four four one zero, two two nine eight'),
    ('Your user id is k9m2', 'Your user I D is K nine M two'),
    ('the id and the ego', 'the id and the ego'),
    ('Write to it@acme.com or VIP@ACME.COM', 'Write to I T at acme dot com or V I P at ACME dot COM'),
    ('Approx. wait time is 20 min.', 'Approximate wait time is twenty minutes.'),
    ('1 lg. pizza, 2 med. drinks', 'one large pizza, two medium drinks'),
    ('can i get 1/2 cheese 1/2 pepperoni?', 'can i get half cheese half pepperoni?'),
    ('Turn the valve a 1/4 turn clockwise.', 'Turn the valve a quarter turn clockwise.'),
    ('Open http://192.168.1.50 now', 'Open one nine two dot one six eight dot one dot five zero now'),
    ('See app.example.com/ev/charge-now', 'See app dot example dot com slash E V slash charge dash now'),
    ('Email ev_support@example.com', 'Email E V underscore support at example dot com'),
    ('pickup code is hx92', 'pickup code is H X nine two'),
    ('Our kitchen is at 31-15 Steinway St, Astoria.', 'Our kitchen is at thirty-one fifteen Steinway Street, Astoria.'),
    ('The store is at 800 K St NW, Washington.', 'The store is at eight hundred K Street Northwest, Washington.'),
    ('Power should be within ±10 dBmV.', 'Power should be within plus or minus ten D B M V.'),
    ('10³ W = 1 kW', 'ten cubed watts equals one kilowatt'),
    ('Your 250th kWh this month', 'Your two hundred fiftieth kilowatt hour this month'),
    ('Temperature coefficient: −0.35%/°C', 'Temperature coefficient, minus zero point three five percent per degree Celsius'),
    ('SSID: ACME-Guest', 'S S I D, Acme dash Guest'),
    ('MAC address: 00:1A:2B:3C:4D:5E', 'Mac address, zero zero one A two B three C four D five E'),
    ("You'll need a NEMA 14-50 outlet.", "You'll need a Nema fourteen fifty outlet."),
    ('WORLD WAR II ERA HOMES OFTEN HAVE OLD WIRING.', 'world war two era homes often have old wiring.'),
    ('Murmur: grade IV/VI', 'Murmur, grade four out of six'),
    ('We named her Bella II after our first cat.', 'We named her Bella the second after our first cat.'),
    ('Ch. Rosewood Duke III won Best in Show.', 'Champion Rosewood Duke the third won Best in Show.'),
    ('Reg. price $42, now $35', 'Regular price forty-two dollars, now thirty-five dollars'),
    ('S/N 88C-2047 is printed on the heater.', 'Serial number eight eight C-two zero four seven is printed on the heater.'),
    ('ph: 617 555 0143', 'phone, six one seven, five five five, zero one four three'),
    ('pls call 646-555-0111 when u can', 'please call six four six, five five five, zero one one one when you can'),
    ('Keep nitrate < 20 ppm.', 'Keep nitrate less than twenty parts per million.'),
    ('WBC > 17,000/µL suggests infection.', 'W B C greater than seventeen thousand per microliter suggests infection.'),
    ('Glucose < 60 mg/dL is too low.', 'Glucose less than sixty milligrams per deciliter is too low.'),
    ('He stands 22 in at the shoulder.', 'He stands twenty-two inches at the shoulder.'),
    ('Weekly food: 7 × 2 cups = 14 cups', 'Weekly food, seven times two cups equals fourteen cups'),
    ('ISO chip: 900 164 000 123 456', 'I S O chip, nine zero zero, one six four, zero zero zero, one two three, four five six'),
    ('Fuel burn: 2.5 h × 10 gph = 25 gal', 'Fuel burn, two point five hours times ten gallons per hour equals twenty-five gallons'),
    ('Visibility 5 SM', 'Visibility five statute miles'),
    ('Begin descent 4 × 5 = 20 nm out', 'Begin descent four times five equals twenty nautical miles out'),
    ('a 5 nm process', 'a five nanometer process'),
    ('Arm = 8,000 ÷ 200 = 40 in', 'Arm equals eight thousand divided by two hundred equals forty inches'),
    ('2 × 1,000 = −100 ft', 'two times one thousand equals minus one hundred feet'),
    ('Tailwind > 10 kt? Use the long runway.', 'Tailwind greater than ten knots? Use the long runway.'),
    ('Lift ≈ air density × sin(alpha)', 'Lift is approximately air density times sine of alpha'),
    ('Weight/100 = 24.5', 'Weight divided by one hundred equals twenty-four point five'),
    ('Quiz: 18/20 = 90%', 'Quiz, eighteen out of twenty equals ninety percent'),
    ('Dep. 8:30, Arr. 11:05', 'Departure eight thirty, Arrival eleven oh five'),
    ('Taxi to Rwy 27.', 'Taxi to Runway twenty-seven.'),
    ("INT'L DEPARTURES", 'international departures'),
    ('Msg frequency varies.', 'Message frequency varies.'),
    ('Passport number 5512093', 'Passport number five five one two zero nine three'),
    ('Rewards number: AB 1234 5678', 'Rewards number, A B one two three four five six seven eight'),
    ('We fly the Cessna 182T and the Airbus A320neo.', 'We fly the Cessna one eighty-two T and the Airbus A three twenty neo.'),
    ('Our Piper PA-44-180 is in the hangar.', 'Our Piper P A forty-four one eighty is in the hangar.'),
    ('The 747 lands at noon.', 'The seven forty-seven lands at noon.'),
    ('It cruises at Mach 0.78.', 'It cruises at Mach point seven eight.'),
    ('Cleared to land Runway 27L.', 'Cleared to land Runway two seven left.'),
    ('The Supermarine Mk V flew here.', 'The Supermarine Mark five flew here.'),
    ('Seats 2C–3D have extra legroom.', 'Seats two C to three D have extra legroom.'),
    ('It is 90 °F outdoors.', 'It is ninety degrees Fahrenheit outdoors.'),
    ('The shelf adjusts from 12" to 30".', 'The shelf adjusts from twelve inches to thirty inches.'),
    ('She works 3/4 time now.', 'She works three quarters time now.'),
    ('The song is in 7/8 time.', 'The song is in seven eight time.'),
    ("Her extension is x2210.", "Her extension is extension two two one zero."),
    ('Call 212/555-0148 today.', 'Call two one two, five five five, zero one four eight today.'),
    ('Collect the I-9s today.', 'Collect the I nines today.'),
    ('i reset your pw, check email', 'i reset your password, check email'),
    ('Margin = profit / revenue = 0.2', 'Margin equals profit divided by revenue equals zero point two'),
    ('Overtime applies when weekly hours > 40.', 'Overtime applies when weekly hours are greater than forty.'),
    ('He moved from Engineer I to Engineer II.', 'He moved from Engineer one to Engineer two.'),
    ('Read chapters I through IV.', 'Read chapters one through four.'),
    ("The EPA's rules apply.", "The E P A's rules apply."),
    ('Your title is Admin. Assistant.', 'Your title is Administrative Assistant.'),
    ('Now hiring PT cashiers, M-F.', 'Now hiring part-time cashiers, Monday to Friday.'),
    ('File at sec.gov/edgar today.', 'File at S E C dot gov slash edgar today.'),
    ('See example.com/flsa for rules.', 'See example dot com slash F L S A for rules.'),
    ('If x = 3, y = 2x.', 'If x equals three, y equals two x.'),
    ('ISO chip: 900 164 000 123 456', 'I S O chip, nine zero zero, one six four, zero zero zero, one two three, four five six'),    ('Qty: 4 ea.', 'Quantity, four each.'),
    ('10-yr mfr. warranty', 'ten year manufacturer warranty'),
    ('Use ext. paint on the shed.', 'Use exterior paint on the shed.'),
    ('ref no. A7-339-B', 'reference number A seven-three three nine-B'),
    ('Space joists 12–16" o.c.', 'Space joists twelve to sixteen inches on center.'),
    ('Max span at 16" o.c. is 14\'-2".', 'Max span at sixteen inches on center is fourteen feet two inches.'),
    ('Use 5/8" Type X drywall.', 'Use five eighths inch Type X drywall.'),
    ('This model has a 1/2 HP motor.', 'This model has a half horsepower motor.'),
    ('Use 3/4 plywood for the subfloor.', 'Use three quarter plywood for the subfloor.'),
    ('Run a ¾″ PEX line to the sink.', 'Run a three quarter inch Pex line to the sink.'),
    ('Box of 3/8" x 4" lag screws', 'Box of three eighths by four inch lag screws'),
    ('The drain line is 1-1/4" PVC.', 'The drain line is one and a quarter inch P V C.'),
    ('ACME HOMES', 'Acme homes'),    ('An 8-ft 2x4 is on sale.', 'An eight foot two by four is on sale.'),
    ('Order 3 cu. yd. of mulch.', 'Order three cubic yards of mulch.'),
    ('need a 250 ft roll of 12/2 for the basement', 'need a two hundred fifty foot roll of twelve two for the basement'),
    ('The replacement filter is part 4396841.', 'The replacement filter is part four three nine six eight four one.'),
    ('The rear cottage is 123 1/2 Pine Ln.', 'The rear cottage is one twenty-three and a half Pine Lane.'),
    ('Showroom: 201 Broadway, Fl 3', 'Showroom, two oh one Broadway, Floor three'),
    ('3/4 people like it', 'three quarters people like it'),  # a share of people, not a size: no adjective form
]


@pytest.mark.parametrize("text, expected", SAID)
def test_each_class_is_read_as_said(text: str, expected: str) -> None:
    assert said(text) == expected


def test_each_class_case_reads_the_same_streamed_in_random_pieces() -> None:
    rng = random.Random(461)
    for text, _ in SAID:
        whole = spoken(normalize(text))
        for _ in range(5):
            parts = _splits(text, rng)
            assert _streamed(parts) == whole, (text, parts)


@pytest.mark.parametrize(
    "text, kind",
    [("1-2=5", "math"), ("35", "cardinal"), ("555-123-4567", "telephone"), ("2024-03-05", "date"),
     ("AB12-9XZ", "serial"), ("3/4", "fraction"), ("3/5/2024", "date"), ("12kg/kg", "measure"),
     ("Chapter IV", "roman"), ("St.", "abbreviation"), ("10.0.0.1", "electronic"), ("3.14", "decimal"), ("3-5 days", "range"), ("22nd", "ordinal"),
     ("1.59 p.m.", "time"), ("01.10.2010", "date"), ("$5", "money"), ("Apt. 4B", "address"),
     ("BA 287", "serial"), ("#A7-4402", "serial"), ("#SummerSale", "electronic"), ("MMXXIV", "roman")],
)
def test_context_decides_the_class(text: str, kind: str) -> None:
    readings = classify(text)
    assert [r.kind for r in readings] == [kind], readings


def test_a_hyphen_between_two_dates_is_a_range_and_elsewhere_is_not() -> None:
    assert [r.kind for r in classify("09/01/2024 - 09/30/2024")] == ["date", "range", "date"]
    assert [r.kind for r in classify("Mar 3 – Mar 9")] == ["date", "range", "date"]
    assert said("March 3 - a busy day") == "March third - a busy day"


def test_en_gb_reads_slashed_dates_day_first() -> None:
    assert said("on 3/5/2024") == "on March fifth, twenty twenty-four"
    assert said("on 3/5/2024", "en-GB") == "on May third, twenty twenty-four"
    assert said("on 25/12/2024") == said("on 25/12/2024", "en-GB") == "on December twenty-fifth, twenty twenty-four"


def test_a_date_no_calendar_has_and_a_time_no_clock_has_are_read_as_numbers() -> None:
    out = said("99/99/9999 and 25:61")
    assert not re.search(r"\d", out) and "twenty-five" in out, out


def _bench(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "gateway.cli", "bench", "text", "--json", "--repeats", "20", *args],
                         capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_bench_text_scores_the_development_half_through_the_command() -> None:
    figures = _bench("--cases", str(CASES / "dev.tsv"))
    assert figures["cases"] == 369
    assert figures["share"] >= 0.97, figures["classes"]
    assert figures["raw"] == 0
    assert figures["chunk_300"]["p50_ms"] > 0 and figures["chunk_300_cpu"]["p50_ms"] > 0


def test_bench_text_scores_another_systems_readings_the_same_way() -> None:
    ours = _bench("--cases", str(THIRD_PARTY))
    nemo = _bench("--cases", str(THIRD_PARTY), "--readings", str(THIRD_PARTY.parent / "nemo_readings.tsv"))
    assert ours["cases"] == nemo["cases"] == 657
    assert ours["raw"] == 0 and "chunk_300" not in nemo
    assert 0 < nemo["acceptable"] < 657


def test_bench_text_judged_counts_a_verdict_only_for_the_exact_reading_it_was_given(tmp_path: Path) -> None:
    read = front_end()
    cases = [("time", "at 01:00", "at one o'clock"),  # a relaxed match
             ("date", "june 20 2014", "june the twentieth two thousand fourteen"),  # judged the same words
             ("roman", "Chapter IV", "chapter the fourth"),  # judged dubious: set aside
             ("serial", "C24", "see twenty-four"),  # judged misread: stays a miss
             ("money", "$.50", "fifty cents of a dollar"),  # judged for another reading: unjudged, a miss
             ("measure", "12kg/kg", "twelve kilos per kilo")]  # never judged: unjudged, a miss
    (tmp_path / "cases.tsv").write_text("class\twritten\tspoken\n" + "".join(f"{k}\t{w}\t{s}\n" for k, w, s in cases))
    assert read("at 01:00") == "at one o'clock" and read("$.50") != "half a dollar"
    verdicts = [("june 20 2014", read("june 20 2014"), "same-words"), ("Chapter IV", read("Chapter IV"), "dubious"),
                ("C24", read("C24"), "misread"), ("$.50", "half a dollar", "same-words")]
    (tmp_path / "judged.tsv").write_text("written\treading\tverdict\twhy\n"
                                         + "".join(f"{w}\t{r}\t{v}\ttest\n" for w, r, v in verdicts))
    out = subprocess.run([sys.executable, "-m", "gateway.cli", "bench", "text", "--repeats", "20", "--misses", "9",
                          "--cases", str(tmp_path / "cases.tsv"), "--judged", str(tmp_path / "judged.tsv")],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    assert (figures["acceptable"], figures["misses"]) == (1, 5)  # the relaxed figures as without --judged
    judged = figures["judged"]
    assert {k: judged[k] for k in ("acceptable", "cases_left", "share", "relaxed", "same_words", "dubious", "misread",
                                   "unjudged")} == {"acceptable": 2, "cases_left": 5, "share": 0.4, "relaxed": 1,
                                                    "same_words": 1, "dubious": 1, "misread": 1, "unjudged": 2}
    assert judged["classes"]["date"]["share"] == 1.0 and judged["classes"]["roman"]["cases_left"] == 0
    assert judged["classes"]["money"]["unjudged"] == 1 and judged["classes"]["money"]["acceptable"] == 0
    assert "judged by" in out and "judged same-words [date] 'june 20 2014'" in out
    assert "miss [money] (unjudged) '$.50'" in out and "miss [serial] (misread) 'C24'" in out


@pytest.mark.parametrize("rows", ["C24\tC twenty-four\tfine\tok\n",
                                  "C24\tC twenty-four\tmisread\tx\nC24\tC twenty-four\tdubious\ty\n"])
def test_a_judgement_file_with_an_unknown_or_a_second_verdict_is_refused(tmp_path: Path, rows: str) -> None:
    path = tmp_path / "judged.tsv"
    path.write_text("written\treading\tverdict\twhy\n" + rows)
    with pytest.raises(ValueError, match="verdict"):
        text_cases.load_judged(path)


def test_the_third_party_judgement_file_loads() -> None:
    judged = text_cases.load_judged(THIRD_PARTY.parent / "judged.tsv")
    assert len(judged) > 200 and set(judged.values()) == set(text_cases.VERDICTS)


def test_the_relaxed_comparison_forgives_only_what_is_not_heard() -> None:
    case = text_cases.Case("time", "9:05am", ("nine oh five a m", "nine five"))
    assert text_cases.matches("Nine zero-five AM.", case)
    assert text_cases.matches("nine five", case)
    assert not text_cases.matches("nine fifty AM", case)
    assert text_cases.relaxed("One hundred and one, Dr.") == "one hundred one dr"


def _splits(text: str, rng: random.Random) -> list[str]:
    parts, at = [], 0
    while at < len(text):
        step = rng.randint(1, 9)
        parts.append(text[at:at + step])
        at += step
    return parts


def _streamed(parts: list[str]) -> str:
    reader = Reader()
    for part in parts:
        reader.feed(part)
    reader.flush(True)
    return reader.spoken


@pytest.mark.parametrize("half", ["dev.tsv", "heldout.tsv", "heldout2.tsv", "heldout3.tsv", "heldout4.tsv",
                                  "heldout5.tsv", "heldout6.tsv", "heldout7.tsv", "heldout8.tsv", "heldout9.tsv",
                                  "heldout10.tsv", "heldout11.tsv", "dev12.tsv", "heldout12.tsv", "heldout13.tsv",
                                  "heldout14.tsv", "heldout15.tsv", "dev16.tsv", "heldout16.tsv",
                                  "heldout17.tsv", "heldout18.tsv", "heldout19.tsv", "heldout20.tsv",
                                  "dev17.tsv", "heldout21.tsv", "heldout22.tsv",
                                  "heldout23.tsv", "heldout24.tsv", "heldout25.tsv",
                                  "heldout26.tsv", "heldout27.tsv", "heldout28.tsv",
                                  "heldout29.tsv", "heldout30.tsv", "heldout31.tsv", "heldout32.tsv",
                                  "heldout33.tsv", "heldout34.tsv", "heldout35.tsv", "heldout36.tsv",
                                  "heldout37.tsv", "heldout38.tsv", "heldout39.tsv", "heldout40.tsv",
                                  "heldout41.tsv", "heldout42.tsv", "heldout43.tsv", "heldout44.tsv",
                                  "heldout45.tsv", "heldout46.tsv"])
def test_every_case_reads_the_same_streamed_in_random_pieces(half: str) -> None:
    rng = random.Random(46)
    for case in text_cases.load(CASES / half):
        whole = spoken(normalize(case.written))
        for _ in range(3):
            parts = _splits(case.written, rng)
            assert _streamed(parts) == whole, (case.written, parts)
