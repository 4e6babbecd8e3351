"""A generated chunk cut into pieces at word starts (pure), so that what leaves the worker can be paced on its client.

The planner plans long chunks where the buffer allows (the ratchet: fewer joins, more context), and a fast engine
makes a 300-character chunk (~17 s of audio) in a moment. Sent whole, such a chunk lands in the gateway at once even
when its client has stopped taking audio, so a client that reads nothing held the lead *and* a whole chunk. The
worker instead sends a chunk that reaches past its client's lead as pieces (engine/worker.py ``Utterance``), each
sent once the client has taken enough that its start lies within the lead: the gateway then holds at most the lead
and one piece, while the chunk was still generated, and sounds, as one.

Each piece is a chunk of the protocol of its own: its own ``seq``, ``offset``, ``duration``, the words in it (their
times stay in seconds of the utterance), its part of the text and of the caller's characters (``span``); the first
carries the chunk's generation time. A cut falls only where a word starts a new piece of the caller's text (never
between the words of one reading, "one hundred" for 100), at least ``piece_s`` after the last cut and before the
end. A chunk whose words cannot be matched to its text, or that has no spans, stays whole.
"""

from __future__ import annotations

from dataclasses import replace

from engine.protocol import Chunk, ChunkHeader
from engine.word_timing import word_offsets

PIECE_S = 1.0  # the shortest piece: what the gateway may hold past the lead, and how many more chunk events it costs
WIDTH = 2  # bytes per sample: chunks are s16le


def cut(header: ChunkHeader, pcm: bytes, piece_s: float = PIECE_S) -> list[Chunk]:
    """``header``'s chunk as pieces numbered from ``header.seq`` (one piece, the chunk itself, where it is shorter
    than two pieces or cannot be cut)."""
    words = header.words or []
    offsets = word_offsets(header.text)
    samples = len(pcm) // WIDTH
    if (len(offsets) != len(words) or header.span is None or any(w.get("span") is None for w in words)
            or samples < 2 * piece_s * header.sample_rate):
        return [Chunk(header, pcm)]
    cuts = _cuts(header, words, offsets, samples, piece_s)
    if not cuts:
        return [Chunk(header, pcm)]
    pieces: list[Chunk] = []
    bounds = [(0, 0, 0)] + cuts + [(len(words), samples, len(header.text))]  # (first word, sample, text offset)
    for index, ((first, at, text_at), (after, end, text_end)) in enumerate(zip(bounds, bounds[1:])):
        span_start = header.span[0] if index == 0 else words[first]["span"][0]
        span_end = header.span[1] if after == len(words) else words[after]["span"][0]
        pieces.append(Chunk(replace(
            header, seq=header.seq + index, text=header.text[text_at:text_end].strip(),
            offset=round(header.offset + at / header.sample_rate, 4),
            duration=round((end - at) / header.sample_rate, 4), gen_time=header.gen_time if index == 0 else 0.0,
            words=words[first:after], span=[span_start, span_end]), pcm[at * WIDTH:end * WIDTH]))
    return pieces


def _cuts(header: ChunkHeader, words: list[dict], offsets: list[tuple[int, int]], samples: int,
          piece_s: float) -> list[tuple[int, int, int]]:
    """``(word, sample, text offset)`` of each cut: before word ``word``, at its start (``offsets``: each word's
    place in ``header.text``)."""
    rate, least = header.sample_rate, int(piece_s * header.sample_rate)
    cuts: list[tuple[int, int, int]] = []
    last = 0
    for index in range(1, len(words)):
        at = round((words[index]["start"] - header.offset) * rate)
        if words[index]["span"][0] < words[index - 1]["span"][1]:
            continue  # a word of the same reading as the one before it
        if at - last >= least and samples - at >= least:
            cuts.append((index, at, offsets[index][0]))
            last = at
    return cuts
