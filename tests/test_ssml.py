"""engine/speech_text/ssml.py and say_as.py: SSML read into spoken segments that point into the SSML."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

import pytest
from hypothesis import given
from hypothesis import strategies as st
from num2words import num2words

from engine.speech_text import say_as, spans
from engine.speech_text.normalize import normalize
from engine.speech_text.spans import Piece, SpanMap
from engine.speech_text.ssml import (
    MAX_BREAK_S,
    MAX_DEPTH,
    MAX_ELEMENTS,
    MAX_INPUT_CHARS,
    MAX_TOTAL_BREAK_S,
    PARAGRAPH_PAUSE_S,
    Segment,
    SsmlError,
    is_ssml,
    parse,
)


def said_plain(text: str) -> str:
    """What the plain-text front end says for ``text``."""
    return spans.spoken(normalize(text)).strip()


def as_is(text: str) -> list[Piece]:
    return spans.verbatim(text)


def numbers_and_ampersands(text: str) -> list[Piece]:
    """A stand-in normaliser: digits as words, "&" as "and"."""
    return spans.substitute(re.compile(r"\d+|&"), text,
                            lambda m: " and " if m.group() == "&" else num2words(int(m.group())))


def said(segments: list[Segment]) -> list[str]:
    return [spans.spoken(s.pieces) for s in segments]


def one(doc: str, normalize=as_is) -> str:
    segments = parse(doc, normalize)
    assert len(segments) == 1, said(segments)
    return spans.spoken(segments[0].pieces)


def everything(segments: list[Segment]) -> SpanMap:
    return SpanMap([p for s in segments for p in s.pieces])


def source_of(doc: str, word: str, normalize=as_is) -> str:
    """The SSML that the spoken ``word`` (its first occurrence) speaks for."""
    back = everything(parse(doc, normalize))
    at = back.text.index(word)
    start, end = back.source(at, at + len(word))
    return doc[start:end]


def refused(doc: str) -> str:
    with pytest.raises(SsmlError) as caught:
        parse(doc, as_is)
    return str(caught.value)


# -- detection


def test_is_ssml_needs_speak_first() -> None:
    assert is_ssml("<speak>hi</speak>")
    assert is_ssml("  \n<speak version='1.1'>hi</speak>")
    assert is_ssml('<?xml version="1.0" encoding="UTF-8"?>\n<speak>hi</speak>')
    assert is_ssml("<speak/>")
    assert not is_ssml("<speaker> says hi")
    assert not is_ssml("Say <speak>hi</speak>")
    assert not is_ssml("plain text")


# -- elements


def test_plain_text_in_speak_is_normalised_and_maps_to_itself() -> None:
    doc = '<speak version="1.1" xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="en-US">I have 3 cats</speak>'
    assert one(doc, numbers_and_ampersands) == "I have three cats"
    assert source_of(doc, "cats", numbers_and_ampersands) == "cats"
    assert source_of(doc, "three", numbers_and_ampersands) == "3"


def test_entities_are_decoded_before_the_normaliser_reads_them() -> None:
    doc = "<speak>AT&amp;T &lt;3 &#65;&#x42; &quot;q&quot; &apos;a&apos;</speak>"
    assert one(doc) == "AT&T <3 AB \"q\" 'a'"
    assert one(doc, numbers_and_ampersands) == "AT and T <three AB \"q\" 'a'"
    assert source_of(doc, "and", numbers_and_ampersands) == "&amp;"
    assert source_of(doc, "AB") == "&#65;&#x42;"


def test_the_normaliser_reads_across_ignored_tags() -> None:
    calls: list[str] = []

    def spy(text: str) -> list[Piece]:
        calls.append(text)
        return as_is(text)

    assert one("<speak>$<emphasis level='strong'>5</emphasis> <lang xml:lang='fr'>ok</lang></speak>", spy) == "$5 ok"
    assert calls == ["$5 ok"]


def test_break_time_and_strength() -> None:
    def pause(attributes: str) -> float:
        segments = parse(f"<speak>a<break {attributes}/>b</speak>", as_is)
        assert said(segments) == ["a", "b"]
        return segments[0].break_after

    assert pause('time="500ms"') == 0.5
    assert pause("time='1.5s'") == 1.5
    assert pause('time=" 250 ms "') == 0.25
    assert pause('strength="x-weak"') == 0.1
    assert pause('strength="weak"') == 0.2
    assert pause('strength="medium"') == 0.4
    assert pause("") == 0.4  # a bare <break/> is medium
    assert pause('strength="strong"') == 0.7
    assert pause('strength="x-strong"') == 1.0
    assert pause('time="2s" strength="weak"') == 2.0  # time wins
    assert pause('time="30s"') == MAX_BREAK_S


def test_a_break_of_nothing_does_not_cut_but_keeps_words_apart() -> None:
    assert said(parse("<speak>a<break strength='none'/>b<break time='0ms'></break>c</speak>", as_is)) == ["a b c"]


def test_breaks_in_a_row_add_up_to_one_capped_pause() -> None:
    segments = parse("<speak>a<break time='1s'/> <break time='2s'/>b<break time='6s'/><break time='7s'/>c</speak>",
                     as_is)
    assert said(segments) == ["a ", "b", "c"]
    assert [s.break_after for s in segments] == [3.0, MAX_BREAK_S, 0.0]


def test_a_leading_break_is_a_silent_first_segment_and_a_trailing_one_is_kept() -> None:
    segments = parse("<speak> <break time='2s'/>Hello<break time='1s'/> </speak>", as_is)
    assert [spans.spoken(s.pieces).strip() for s in segments] == ["", "Hello"]
    assert [s.break_after for s in segments] == [2.0, 1.0]


def test_nothing_spoken_gives_no_segment() -> None:
    assert parse("<speak/>", as_is) == []
    assert parse("<speak>  <mark name='m'/> <!-- c --> <break strength='none'/></speak>", as_is) == []
    assert said(parse("<speak><break/></speak>", as_is)) == [""]


def test_sentences_and_paragraphs_end_with_a_full_stop_and_paragraphs_pause() -> None:
    doc = """<speak>
  <p>
    <s>First sentence</s>
    <s>Second one!</s>
    <s>"Quoted?"</s>
  </p>
  <p>Para two</p><p>Para three,</p>
  Tail
</speak>"""
    segments = parse(doc, as_is)
    assert [" ".join(t.split()) for t in said(segments)] == [
        'First sentence. Second one! "Quoted?"', "Para two.", "Para three,", "Tail"]
    assert [s.break_after for s in segments] == [PARAGRAPH_PAUSE_S] * 3 + [0.0]
    assert "sentence.\n" in said(segments)[0]  # the full stop goes after the word, not after its newline


def test_adjacent_sentences_get_a_space_and_the_full_stop_maps_to_the_end_tag() -> None:
    doc = "<speak><s>A</s><s>B</s>C<p>D</p></speak>"
    segments = parse(doc, as_is)
    assert said(segments) == ["A. B. C.", "D."]
    assert [s.break_after for s in segments] == [PARAGRAPH_PAUSE_S, 0.0]  # none at the very end


def test_a_break_replaces_a_paragraphs_pause() -> None:
    segments = parse("<speak><p>A</p><break time='2s'/><p>B</p><p>C</p><break strength='none'/><p>D</p></speak>",
                     as_is)
    assert said(segments) == ["A.", "B.", "C. D."]
    assert [s.break_after for s in segments] == [2.0, PARAGRAPH_PAUSE_S, 0.0]


def test_full_stop_after_a_rewritten_word() -> None:
    assert one("<speak><s>I am 42 </s></speak>", numbers_and_ampersands) == "I am forty-two. "


def test_sub_speaks_its_alias_for_the_whole_element() -> None:
    doc = "<speak>The <sub alias='World Wide Web Consortium'>W3C</sub> says</speak>"
    assert one(doc) == "The World Wide Web Consortium says"
    assert source_of(doc, "Wide") == "<sub alias='World Wide Web Consortium'>W3C</sub>"
    assert source_of(doc, "says") == "says"
    assert one("<speak><sub alias='Bed &amp; 2 breakfasts'>B&amp;B</sub></speak>",
               numbers_and_ampersands) == "Bed  and  two breakfasts"


def test_say_as_speaks_for_the_whole_element() -> None:
    doc = "<speak>Agent <say-as interpret-as='characters'>FBI</say-as> at 9</speak>"
    assert one(doc, numbers_and_ampersands) == "Agent F B I at nine"
    assert source_of(doc, "B", numbers_and_ampersands) == "<say-as interpret-as='characters'>FBI</say-as>"
    assert source_of(doc, "Agent", numbers_and_ampersands) == "Agent"
    assert source_of(doc, "nine", numbers_and_ampersands) == "9"


@pytest.mark.parametrize("kind, fmt, text, words", [
    ("characters", None, "FBI", "F B I"),
    ("spell-out", None, "ab-1", "A B dash one"),
    ("cardinal", None, "1,234", "one thousand two hundred thirty-four"),  # as plain text says it
    ("number", None, "-3.05", "minus three point zero five"),
    ("ordinal", None, "3", "third"),
    ("ordinal", None, "21st", "twenty-first"),
    ("digits", None, "1234", "one two three four"),
    ("telephone", None, "+1 (555) 123-4567", "plus one, five five five, one two three, four five six seven"),
    ("telephone", None, "5551234567", "five five five, one two three, four five six seven"),
    ("telephone", None, "15551234567", "one, five five five, one two three, four five six seven"),
    ("date", None, "2024-03-05", "March fifth, twenty twenty-four"),
    ("date", None, "03/05/2024", "March fifth, twenty twenty-four"),
    ("date", "dmy", "05/03/2024", "the fifth of March, twenty twenty-four"),
    ("date", "ymd", "1999.12.31", "December thirty-first, nineteen ninety-nine"),
    ("date", "md", "12-25", "December twenty-fifth"),
    ("date", "dm", "25 Dec", "the twenty-fifth of December"),
    ("date", "my", "03/2024", "March twenty twenty-four"),
    ("date", "ym", "2024-03", "March twenty twenty-four"),
    ("date", "y", "1905", "nineteen oh five"),
    ("time", None, "3:30pm", "three thirty PM"), ("time", None, "3:30 p m", "three thirty PM"),
    ("time", None, "3:05 a.m.", "three oh five AM"),
    ("time", None, "3pm", "three PM"),
    ("time", None, "15:00", "fifteen hundred"),
    ("time", None, "3:00", "three o'clock"),
    ("time", "hms24", "12:30:01", "twelve thirty and one second"),
])
def test_say_as_kinds(kind: str, fmt: str | None, text: str, words: str) -> None:
    plain_alike = kind in ("cardinal", "number") or kind == "date" and fmt is None
    if plain_alike or kind == "time" and re.fullmatch(r"[\d:]+(?:[ap]m)?", text):
        assert said_plain(text) == words  # one reader of numbers, dates and times: plain text says it alike
    assert say_as.interpret(kind, fmt, text) == words
    attributes = f'interpret-as="{kind}"' + (f' format="{fmt}"' if fmt else "")
    assert one(f"<speak><say-as {attributes}>{text}</say-as></speak>") == words


@pytest.mark.parametrize("kind, fmt, text", [
    ("bogus", None, "plain 5"),  # an interpret-as nobody knows
    ("cardinal", None, "many"),
    ("cardinal", None, "1" * 40),  # past MAX_DIGITS
    ("ordinal", None, "3x"),
    ("digits", None, "none"),
    ("telephone", None, "1-800-FLOWERS"),
    ("date", None, "2024-02-30"),
    ("date", "dmy", "31/13/2024"),
    ("date", "qq", "1/2"),
    ("time", None, "25:00"),
    ("time", None, "3"),
    ("characters", None, "  "),
])
def test_say_as_that_does_not_fit_is_spoken_as_ordinary_text(kind: str, fmt: str | None, text: str) -> None:
    assert say_as.interpret(kind, fmt, text) is None
    attributes = f'interpret-as="{kind}"' + (f' format="{fmt}"' if fmt else "")
    doc = f"<speak>x <say-as {attributes}>{text}</say-as> y</speak>"
    assert one(doc) == f"x {text} y"
    if text.strip():
        assert source_of(doc, text) == text  # ...and maps to itself, normalised with its neighbours


def test_prosody_rates_nest_and_clamp() -> None:
    doc = ("<speak>a <prosody rate='slow' pitch='+10%' volume='loud'>b <prosody rate='50%'>c</prosody> d "
           "<prosody rate='x-fast'>e</prosody></prosody> f <prosody rate='+20%'>g</prosody>"
           "<prosody rate='1.8'>h<prosody rate='150%'>i</prosody></prosody><prosody rate='10%'>j</prosody>"
           "<prosody rate='-25%'>k</prosody><prosody rate='medium'>l</prosody> <prosody pitch='high'>m</prosody>"
           "</speak>")
    segments = parse(doc, as_is)
    assert [(t.strip(), s.rate) for t, s in zip(said(segments), segments)] == [
        ("a", 1.0), ("b", 0.75), ("c", 0.5), ("d", 0.75), ("e", 1.5), ("f", 1.0), ("g", 1.2), ("h", 1.8),
        ("i", 2.0), ("j", 0.5), ("k", 0.75), ("l m", 1.0)]
    assert all(s.break_after == 0 for s in segments)


def test_audio_speaks_its_fallback_and_desc_metadata_are_silent() -> None:
    doc = ("<speak><metadata><dc:title xmlns:dc='x'>T</dc:title></metadata>Hi <audio src='https://x/b.wav'>"
           "ding<desc>a bell</desc></audio> <voice name='x'><mark name='m1'/>there</voice> <foo:bar>z</foo:bar>"
           "<audio src='y.wav'/></speak>")
    assert one(doc) == "Hi ding there z"
    assert source_of(doc, "ding") == "ding"


def test_cdata_and_comments() -> None:
    doc = "<speak>a <![CDATA[<b> & c]]> <!-- not spoken --> d</speak>"
    assert one(doc) == "a <b> & c  d"
    assert source_of(doc, "& c") == "& c"


def test_the_pieces_of_all_segments_cover_the_ssml_in_order() -> None:
    doc = ("<?xml version='1.0'?>\n<speak>\n<p><s>Call <say-as interpret-as='telephone'>555-1234</say-as></s>"
           "<s>AT&amp;T, 4 &#x263A;</s></p><break time='1s'/><prosody rate='fast'>fast 7<sub alias='x'>y</sub>"
           "</prosody><desc>d</desc><!-- c --></speak>\n")
    pieces = [p for s in parse(doc, numbers_and_ampersands) for p in s.pieces]
    at = 0
    for piece in pieces:
        assert piece.start == at or piece.start == piece.end == at, (piece, at)
        if piece.verbatim:
            assert doc[piece.start:piece.end] == piece.text
        at = piece.end
    assert at == len(doc)


# -- malformed and refused


@pytest.mark.parametrize("doc, problem", [
    ("<speak>hi", "<speak> is never closed"),
    ("<speak><p>hi</speak>", "</speak> where </p> was due"),
    ("<speak><p>hi</s></p></speak>", "</s> where </p> was due (<p> opened at line 1, column 8"),
    ("<speak>hi</speak> more", "text after </speak>"),
    ("<speak>hi</speak><speak/>", "one root element only"),
    ("hello <speak>hi</speak>", "text before <speak>"),
    ("<p>hi</p>", "the root element must be <speak>"),
    ("<speak><speak/></speak>", "<speak> inside <speak>"),
    ("<speak></p></speak>", "</p> where </speak> was due"),
    ("</speak>", "</speak> closes nothing"),
    ("<speak><break time=500ms/></speak>", "attribute time of <break> is not in quotes"),
    ("<speak><break time/></speak>", "attribute time of <break> has no value"),
    ("<speak><break time='1s/></speak><p a='x'/>", "'<' in the value of attribute time"),
    ("<speak><break time='1s", "never closed"),
    ("<speak><break time='1s'strength='weak'/></speak>", "unexpected 's' in the tag <break>"),
    ("<speak><break time='1s' time='2s'/></speak>", "attribute time given twice"),
    ('<speak><break time="abc"/></speak>', '<break time="abc">: not a time'),
    ('<speak><break time="-1s"/></speak>', "not a time"),
    ('<speak><break strength="huge"/></speak>', '<break strength="huge">: not one of none, x-weak'),
    ("<speak><break>words</break></speak>", "<break> takes no content"),
    ('<speak><prosody rate="zippy">a</prosody></speak>', '<prosody rate="zippy">: not a rate'),
    ("<speak><sub>W3C</sub></speak>", "<sub> without its alias"),
    ("<speak><say-as interpret-as='digits'>1<break/>2</say-as></speak>", "<say-as> may hold only text, not <break>"),
    ("<speak>a < b</speak>", "a '<' that starts no tag"),
    ("<speak>AT&T</speak>", "an '&' that starts no entity"),
    ("<speak>&nbsp;</speak>", "the entity &nbsp; is refused"),
    ("<speak>&#0;</speak>", "&#0; is not a character XML allows"),
    ("<speak>&#xD800;</speak>", "not a character XML allows"),
    ("<speak>&#99999999;</speak>", "an '&' that starts no entity"),
    ("<speak>\x01</speak>", "U+0001 is not allowed"),
    ("<speak>]]></speak>", "']]>' in text"),
    ("<speak><!-- a -- b --></speak>", "'--' inside a comment"),
    ("<speak><!-- open</speak>", "a comment is never closed"),
    ("<speak><![CDATA[x</speak>", "a CDATA section is never closed"),
    ("<speak>hi</speak><![CDATA[x]]>", "a CDATA section outside <speak>"),
    ("<speak><?php echo 1 ?></speak>", "a processing instruction is refused"),
    ("<speak>hi</speak><?xml version='1.0'?>", "the XML declaration must come first"),
    ("<speak></ speak>", "a malformed end tag"),
    ('<!DOCTYPE speak [<!ENTITY lol "lol">]><speak>&lol;</speak>', "a DOCTYPE is refused"),
    ('<speak><!ENTITY lol "lol"></speak>', "an ENTITY declaration is refused"),
    ('<!DOCTYPE speak SYSTEM "http://example.com/evil.dtd"><speak/>', "a DOCTYPE is refused"),
    ("<speak><!ELEMENT x ANY></speak>", "a markup declaration is refused"),
    ("", "no <speak> element"),
])
def test_malformed_ssml_is_refused_with_the_problem_and_where(doc: str, problem: str) -> None:
    message = refused(doc)
    assert problem in message
    assert re.search(r"\(line \d+, column \d+, character \d+\)$", message), message


def test_error_positions_count_lines_and_columns() -> None:
    assert refused("<speak>\n  <p>\n    <break time='x'/>\n</speak>").endswith("(line 3, column 5, character 18)")


def test_verdicts_agree_with_expat() -> None:
    """The scanner's well-formedness against expat's, on documents where both apply their rules (expat also reads
    declarations and processing instructions, which this reader refuses, and checks namespace prefixes, which it
    leaves alone: Polly's <amazon:effect> comes undeclared)."""
    good = ["<speak/>", "<speak a='1' b=\"2\" >x</speak >", "<?xml version='1.0'?><speak>&amp;&#10;</speak>",
            "<speak><![CDATA[<]]><!----></speak><!-- after -->\n", "<speak><x.y-z>t</x.y-z></speak>"]
    bad = ["<speak>", "<speak a='1'b='2'/>", "<speak a=1/>", "<speak a='<'/>", "<speak>&bogus;</speak>",
           "<speak>a&b</speak>", "<speak></x></speak>", "<speak/><speak/>", "<speak/>x", "<speak>]]></speak>",
           "<speak><!-- -- --></speak>", "<speak><!-- --->", "<speak>&#1;</speak>", "<speak a='1' a='2'/>",
           "<speak><1a/></speak>", "<speak>< a/></speak>"]
    for doc in good:
        ElementTree.fromstring(doc)
        parse(doc, as_is)
    for doc in bad:
        with pytest.raises(ElementTree.ParseError):
            ElementTree.fromstring(doc)
        with pytest.raises(SsmlError):
            parse(doc, as_is)


# -- limits and bombs


def test_limits_are_refused_by_name() -> None:
    assert "over the limit of 100000" in refused("<speak>" + "a" * MAX_INPUT_CHARS + "</speak>")
    assert f"nested deeper than {MAX_DEPTH}" in refused("<speak>" + "<p>" * (MAX_DEPTH - 1) + "</p>" * (MAX_DEPTH - 1)
                                                        + "<emphasis>" * MAX_DEPTH + "</speak>")
    parse("<speak>" + "<p>" * (MAX_DEPTH - 1) + "x" + "</p>" * (MAX_DEPTH - 1) + "</speak>", as_is)
    assert f"more than {MAX_ELEMENTS} elements" in refused("<speak>" + "<mark/>" * MAX_ELEMENTS + "</speak>")
    assert len(parse("<speak>" + "<mark/>" * (MAX_ELEMENTS - 1) + "x</speak>", as_is)) == 1
    assert f"breaks over {MAX_TOTAL_BREAK_S:g} s" in refused("<speak>" + "<break time='10s'/>" * 7 + "</speak>")
    assert len(parse("<speak>" + "a<break time='10s'/>" * 6 + "</speak>", as_is)) == 6


def test_bombs_are_refused_or_bounded() -> None:
    assert "nested deeper" in refused("<speak>" + "<p>" * 10_000 + "x" + "</p>" * 10_000 + "</speak>")
    assert "over the limit" in refused("<speak>" + "<break/>" * 1_000_000 + "</speak>")
    assert "more than" in refused("<speak>" + "<break time='0ms'/>" * 5_000 + "</speak>")
    assert "over the limit" in refused("<speak><sub alias='" + "a" * 100_000 + "'>x</sub></speak>")
    assert one("<speak><sub alias='" + "a " * 49_000 + "'>x</sub></speak>").count("a") == 49_000
    assert "not a time" in refused("<speak><break time='" + "9" * 99_000 + "s'/></speak>")
    billion_laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
                      + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">'
                                for i in range(1, 10)) + ']><speak>&lol9;</speak>')
    assert "DOCTYPE is refused" in refused(billion_laughs)
    assert "the entity &lol9; is refused" in refused("<speak>&lol9;</speak>")
    assert "never closed" in refused("<speak><p a='" + "x" * 90_000)
    assert "never closed" in refused("<speak>" + "<!--" * 20_000)


@given(st.text(alphabet="<>/&;'\"=!?-[] abspeak:#x1", max_size=60))
def test_any_input_is_segments_or_an_ssml_error(tail: str) -> None:
    try:
        parse("<speak" + tail, numbers_and_ampersands)
    except SsmlError:
        pass
