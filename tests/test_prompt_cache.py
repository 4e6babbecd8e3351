"""The prompt cache's pure parts (gateway/prompt_cache/store.py, prompts_file.py) and its directory adapter."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from engine.protocol import Chunk, ChunkHeader, Done, Reading
from gateway.prompt_cache.disk import DirectoryStore
from gateway.prompt_cache.prompts_file import Prompt, PromptsFileError, parse_prompts
from gateway.prompt_cache.store import (SCOPE_OPEN, SCOPE_SHARED, CachedPrompt, LruBytes, PromptKey, respan,
                                        scope_for)


def key(text: str = "Please hold.", *, scope: str = SCOPE_OPEN, voice: str = "default",
        reading: Reading = Reading()) -> PromptKey:
    return PromptKey.of(scope, "espeak|embedded", voice, text, reading)


def entry(text: str = "Please hold.", pcm_bytes: int = 4800, **kw) -> CachedPrompt:
    header = ChunkHeader("u1", 0, text, 0.0, pcm_bytes / 48000, 0.01,
                         words=[{"word": "Please", "start": 0.0, "end": 0.05, "span": [0, 6]},
                                {"word": "hold", "start": 0.05, "end": 0.1, "span": [7, 11]}],
                         span=[0, len(text)], timing="exact")
    return CachedPrompt(key(text, **kw), text, (Chunk(header, b"\x01\x02" * (pcm_bytes // 2)),),
                        Done("u1", 1, pcm_bytes / 48000, 0.01))


def test_the_key_ignores_whitespace_but_not_voice_reading_scope_or_words() -> None:
    assert key("  Please   hold.\n") == key("Please hold.") and key().digest == key(" Please hold.").digest
    assert key(voice="Amy") == key(voice="amy")  # voice names are case-insensitive
    others = [key("Please hold!"), key(voice="amy"), key(scope="key:abc"), key(reading=Reading(speed=1.2)),
              key(reading=Reading(normalize="off")), key(reading=Reading(latency="fastest")),
              key(reading=Reading(lexicons=["brands"]))]
    assert len({k.digest for k in [key(), *others]}) == len(others) + 1


def test_the_scope_is_the_tenant_or_a_hash_of_the_api_key_none_when_unknown_shared_on_request() -> None:
    assert scope_for(None, None, guarded=False, shared=False) == SCOPE_OPEN
    assert scope_for(None, None, guarded=True, shared=False) is None  # keys on, the key not known: not cached
    one, two = scope_for("k1", None, True, shared=False), scope_for("k2", None, True, shared=False)
    assert one != two and "k1" not in one  # the key itself is never stored
    acme, other = scope_for("k1", "acme", True, False), scope_for("k2", "acme", True, False)
    assert acme == other != scope_for("k1", "globex", True, False)  # a tenant's keys share its entries, its own
    assert acme != one
    assert scope_for("k1", "acme", True, shared=True) == scope_for(None, None, True, shared=True) == SCOPE_SHARED


def test_the_store_is_bounded_by_bytes_least_recently_used_out() -> None:
    a, b, c = entry("A one."), entry("B two."), entry("C three.")
    store = LruBytes(limit=a.size * 2)
    assert store.put(a) == [] and store.put(b) == []
    assert store.get(a.key.digest) is a  # now the most recently used
    assert store.put(c) == [b.key.digest]  # b was the least recently used
    assert store.get(b.key.digest) is None and len(store) == 2 and store.bytes == a.size + c.size
    assert store.put(entry("Huge.", pcm_bytes=a.size * 3)) == [] and len(store) == 2  # never fits: not stored
    assert store.drop(lambda k: k.text == "A one.") == [a.key.digest] and store.bytes == c.size


def test_drops_by_voice_and_by_lexicon() -> None:
    amy = key(voice="amy", reading=Reading(lexicons=["brands"]))
    assert amy.uses("voices", "AMY") and not amy.uses("voices", "bob")
    assert amy.uses("lexicons", "brands") and amy.uses("lexicons", "default") and amy.uses("lexicons", "amy")
    assert not amy.uses("lexicons", "medical")


def test_spans_follow_the_same_characters_in_other_whitespace() -> None:
    moved = respan("Please hold.", "  Please   hold. ")
    assert moved([0, 6]) == [2, 8] and moved([7, 12]) == [11, 16] and moved([0, 12]) == [2, 16]
    cached = entry()
    [chunk] = cached.for_text(" Please  hold.")
    assert chunk.header.span == [1, 14] and [w["span"] for w in chunk.header.words] == [[1, 7], [9, 13]]
    assert cached.for_text("Please hold.") is cached.chunks


def test_the_directory_keeps_entries_across_instances_within_its_limit(tmp_path: Path) -> None:
    a, b = entry("A one."), entry("B two.")
    store = DirectoryStore(tmp_path / "cache", limit=10 * a.size)
    store.put(a)
    store.put(b)
    assert not list((tmp_path / "cache").glob(".*tmp"))  # written whole, then renamed
    again = DirectoryStore(tmp_path / "cache", limit=10 * a.size)  # a restart
    assert len(again) == 2 and again.get(a.key) == a and again.get(key("Unknown.")) is None
    small = DirectoryStore(tmp_path / "cache", limit=int(a.size * 1.5))
    small.put(entry("C three."))  # the least recently used go to make room
    assert len(small) == 1 and len(list((tmp_path / "cache").glob("*.prompt"))) == 1
    (tmp_path / "cache" / ("0" * 64 + ".prompt")).write_bytes(b"garbage")
    assert len(DirectoryStore(tmp_path / "cache", limit=10 * a.size)) == 1  # not an entry: deleted, not kept


def test_an_unusable_directory_is_a_warning_and_memory_only(tmp_path: Path, caplog) -> None:
    (tmp_path / "file").write_text("")
    store = DirectoryStore(tmp_path / "file" / "cache", limit=1 << 20)  # cannot be made
    assert not store.usable and "cannot use it" in store.problem and "memory only" in caplog.text
    store.put(entry())
    assert store.get(key()) is None
    broken = DirectoryStore(tmp_path / "gone", limit=1 << 20)
    shutil.rmtree(tmp_path / "gone")
    (tmp_path / "gone").write_text("")  # the directory is no longer one: a write fails
    broken.put(entry())
    assert not broken.usable and "cannot write" in broken.problem and len(broken) == 0


def test_a_prompts_file_of_text_and_json_lines() -> None:
    assert parse_prompts("# greetings\nThanks for calling.\n\n"
                         '{"text": "Please hold.", "voice": "amy", "speed": 1.1}\n', 100) == [
        Prompt("Thanks for calling."), Prompt("Please hold.", "amy", Reading(speed=1.1))]


@pytest.mark.parametrize("line, why", [
    ('{"text": "x"', "not a JSON object"),
    ('{"text": "x", "colour": "red"}', "unknown field(s) colour"),
    ('{"text": 3}', "must be strings"),
    ('{"text": "x", "speed": 9}', "speed"),
    ('{"text": "   "}', "empty"),
    ("x" * 101, "over 100 characters"),
])
def test_a_bad_line_refuses_the_prompts_file_with_its_number(line: str, why: str) -> None:
    with pytest.raises(PromptsFileError, match=rf"^line 3: .*{re.escape(why)}"):
        parse_prompts(f"Thanks for calling.\n# a comment\n{line}\n", 100)


def test_speak_and_config_take_a_cache_switch_and_the_core_passes_it_on() -> None:
    import json

    from engine.protocol import ProtocolError
    from gateway import messages
    from gateway.sessions.core import SessionCore, StartUtterance

    with pytest.raises(ProtocolError, match="'cache' must be true or false"):
        messages.parse_message(json.dumps({"type": "speak", "text": "hi", "cache": "no"}))
    core = SessionCore("s", "ws", 100, configurable=True)
    core.receive(json.dumps({"type": "config", "cache": False}))
    [start] = [a for a in core.receive(json.dumps({"type": "speak", "text": "Hi."})) if isinstance(a, StartUtterance)]
    assert start.whole == "Hi." and start.cache is False  # the session's switch
    [start] = [a for a in core.receive(json.dumps({"type": "speak", "text": "Yo.", "cache": True}))
               if isinstance(a, StartUtterance)]
    assert start.cache is True  # this speak's own
    [start] = [a for a in core.receive(json.dumps({"type": "text", "text": "streamed"}))
               if isinstance(a, StartUtterance)]
    assert start.whole is None  # streamed text: its whole is not known at its start


def test_processes_sharing_a_directory_tell_each_other_their_drops(tmp_path: Path) -> None:
    from gateway.prompt_cache.shared_drops import NAME, SharedDrops

    one, two = SharedDrops(tmp_path), SharedDrops(tmp_path)
    one.tell("voices", "Kiosk")
    assert two.news() == [("voices", "Kiosk")] and two.news() == []
    with (tmp_path / NAME).open("ab") as handle:
        handle.write(b'["lexicons", "bra')  # a line still being written waits for its end
    assert two.news() == []
    with (tmp_path / NAME).open("ab") as handle:
        handle.write(b'nds"]\n')
    assert two.news() == [("lexicons", "brands")]
    assert SharedDrops(tmp_path).news() == []  # a process started later: nothing of it was cached before


async def test_a_voice_dropped_in_one_process_is_dropped_in_its_siblings(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from engine.protocol import EngineReady
    from gateway.engine_link.client import EngineUnavailable
    from gateway.metrics import Metrics
    from gateway.prompt_cache.cache import PromptCache
    from gateway.prompt_cache.store import CacheSettings
    from gateway.prompt_cache.utterances import CachedUtterance

    async def no_engine(voice: str, reading: Reading, span: object = None) -> None:
        raise EngineUnavailable("no engine worker is connected")

    engine = SimpleNamespace(ready=EngineReady("espeak", "cpu", "float32", "embedded", True), start=no_engine)
    one, two = (PromptCache(CacheSettings(), engine, lambda: False, Metrics(), str(tmp_path))  # type: ignore[arg-type]
                for _ in range(2))
    two.memory.put(entry())
    assert isinstance(await two.start("default", Reading(), "Please hold.", api_key=None), CachedUtterance)
    one.drop("voices", "DEFAULT")  # uploaded again through the other process
    with pytest.raises(EngineUnavailable):  # a miss: the engine is asked, and none is up
        await two.start("default", Reading(), "Please hold.", api_key=None)
    assert two.health()["dropped"] == 1 and len(two.memory) == 0
