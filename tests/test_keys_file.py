"""The keys file and the tenants' counters (pure): what the file takes and refuses (with the line), constant-time
lookup by digest, each tenant's sessions, utterances in flight and characters a minute."""

from __future__ import annotations

import hashlib

import pytest

from gateway.guard.keys_file import KeysFileError, parse
from gateway.guard.tenants import ANYONE, TenantRefused, Tenants, TokenBucket

KEY_A = "alpha-key-0123456789"
KEY_B = "bravo-key-0123456789"
GOOD = f"""
# two clients
[keys.alpha]
key = "{KEY_A}"
max_sessions = 2
max_utterances_in_flight = 1
chars_per_minute = 600
voices = ["default", "alpha-*"]
routes = ["/v1/tts", "/v1/stream"]

[keys.bravo]
key_sha256 = "{hashlib.sha256(KEY_B.encode()).hexdigest()}"
admin = true
"""


def test_a_good_file_gives_its_clients_and_limits() -> None:
    alpha, bravo = parse(GOOD)
    assert (alpha.name, alpha.max_sessions, alpha.max_utterances_in_flight, alpha.chars_per_minute) == \
        ("alpha", 2, 1, 600)
    assert alpha.key_sha256 == hashlib.sha256(KEY_A.encode()).digest()
    assert alpha.may_use_voice("alpha-narrator") and alpha.may_use_voice("default") and not alpha.may_use_voice("x")
    assert alpha.may_reach("/v1/tts") and alpha.may_reach("/v1/stream") and not alpha.may_reach("/v1/tts-x")
    assert not alpha.may_reach("/v1/voices")
    assert bravo.admin and bravo.max_sessions is None and bravo.may_reach("/v1/anything") and bravo.may_use_voice("x")


@pytest.mark.parametrize("text, line, words", [
    ('[keys.a]\nkey = "k"\n', 2, "at least 16 characters"),
    (f'[keys.a]\nkey = "{KEY_A}"\nmax_sessions = "four"\n', 3, "max_sessions must be a whole number"),
    (f'[keys.a]\nkey = "{KEY_A}"\nmax_sessions = 0\n', 3, "at least 1"),
    (f'[keys.a]\nkey = "{KEY_A}"\nchars_per_minute = 1.5\n', 3, "chars_per_minute"),
    (f'[keys.a]\nkey = "{KEY_A}"\n\n[keys.b]\nkey = "{KEY_A}"\n', 4, "same key as [keys.a]"),
    (f'[keys.a]\nkey = "{KEY_A}"\nmax_session = 3\n', 3, "unknown field 'max_session'"),
    (f'[keys.a]\nkey = "{KEY_A}"\n[keys.a\n', 3, "not TOML"),
    (f'[keys.a]\nkey = "{KEY_A}"\nvoices = "default"\n', 3, "voices must be a list"),
    ('[keys.a]\nmax_sessions = 1\n', 1, "exactly one of key and key_sha256"),
    ('[keys.a]\nkey_sha256 = "abc"\n', 2, "64 hexadecimal digits"),
    (f'[clients.a]\nkey = "{KEY_A}"\n', 1, "unknown table or field 'clients'"),
    (f'[keys.a]\nkey = "{KEY_A}"\nadmin = "yes"\n', 3, "admin must be true or false"),
    (f'[keys."a b"]\nkey = "{KEY_A}"\n', 1, "a name is"),
])
def test_a_bad_file_is_refused_with_its_line(text: str, line: int, words: str) -> None:
    with pytest.raises(KeysFileError) as refused:
        parse(text)
    assert refused.value.line == line, str(refused.value)
    assert words in str(refused.value) and str(refused.value).startswith(f"line {line}: ")
    assert KEY_A not in str(refused.value)  # a key is never repeated in an error


def test_lookup_by_key_and_plain_keys() -> None:
    tenants = Tenants(parse(GOOD), plain_keys=("plain-operator-key-123",))
    assert tenants.identify(KEY_A).name == "alpha" and tenants.identify(KEY_B).client.admin
    assert tenants.identify("plain-operator-key-123") == ANYONE  # --api-key: no tenant, no limits
    assert tenants.identify("nobody's key at all") is None and tenants.identify(None) is None
    assert Tenants().identify(None) == ANYONE and not Tenants().guarded  # no keys: everyone, unnamed
    emptied = Tenants(parse(GOOD), keyed=True)
    emptied.replace(parse(""), now=1.0)  # every client removed from the file: nobody gets in, not everybody
    assert emptied.guarded and emptied.identify(KEY_A) is None and emptied.identify(None) is None


def test_sessions_and_utterances_in_flight_are_counted_per_tenant() -> None:
    refusals: list[tuple[str, str]] = []
    tenants = Tenants(parse(GOOD), on_refusal=lambda name, reason: refusals.append((name, reason)))
    tenants.open_session("alpha")
    tenants.open_session("alpha")
    with pytest.raises(TenantRefused) as refused:
        tenants.open_session("alpha")
    assert (refused.value.status, refused.value.close_code, refused.value.code) == (429, 4429, "tenant_session_limit")
    assert refused.value.retry_after > 0
    for _ in range(5):
        tenants.open_session("bravo")  # no limit: the other tenant is not held up
    tenants.close_session("alpha")
    tenants.open_session("alpha")
    tenants.start_utterance("alpha", "default")
    with pytest.raises(TenantRefused, match="1 utterances in flight"):
        tenants.start_utterance("alpha", "default")
    tenants.end_utterance("alpha")
    with pytest.raises(TenantRefused) as voice:
        tenants.start_utterance("alpha", "bravo-voice")
    assert (voice.value.status, voice.value.close_code) == (403, 4403)
    tenants.start_utterance("alpha", "alpha-narrator")
    tenants.start_utterance(None, "anything")  # an --api-key key: no limits
    assert refusals == [("alpha", "sessions"), ("alpha", "utterances"), ("alpha", "voice")]


def test_the_token_bucket_refuses_once_empty_and_refills() -> None:
    bucket = TokenBucket(600, now=0.0)  # 10 a second, 10 s worth (100) at once
    assert bucket.take(60, 0.0) == 0.0
    assert bucket.take(500, 0.0) == 0.0  # anything left: granted whole (one long text is never refused for length)
    wait = bucket.take(1, 0.0)
    assert wait == pytest.approx(46.0)  # 460 in debt at 10 a second
    assert bucket.take(1, 45.0) > 0 and bucket.take(1, 47.0) == 0.0
    idle = TokenBucket(600, now=0.0)
    assert idle.take(1, 1000.0) == 0.0 and idle.level == pytest.approx(99.0)  # never more than 10 s worth saved up


def test_chars_per_minute_and_a_reload() -> None:
    tenants = Tenants(parse(GOOD))
    tenants.take_chars("alpha", 700, now=0.0)
    with pytest.raises(TenantRefused) as refused:
        tenants.take_chars("alpha", 10, now=1.0)  # 600 a minute: 100 at once, 10 a second after
    assert refused.value.code == "rate_limited" and refused.value.status == 429 and refused.value.retry_after > 1
    tenants.take_chars("bravo", 10**6, now=1.0)  # no rate: never refused
    tenants.open_session("alpha")
    removed = tenants.replace(parse(GOOD.split("[keys.bravo]")[0]), now=2.0)
    assert removed == {"bravo"} and tenants.identify(KEY_B) is None
    assert tenants.state("alpha").sessions == 1  # a tenant that stays keeps its counters
    with pytest.raises(TenantRefused) as revoked:
        tenants.open_session("bravo")
    assert (revoked.value.status, revoked.value.close_code) == (401, 4401)


def test_a_tenants_voices_are_its_own_unless_shared() -> None:
    tenants = Tenants(parse(GOOD))
    assert tenants.upload_name("bravo", "narrator", shared=False) == "bravo--narrator"
    assert tenants.upload_name("bravo", "bravo--narrator", shared=False) == "bravo--narrator"
    assert tenants.upload_name("bravo", "house", shared=True) == "house"
    assert tenants.may_use_voice("bravo", "bravo--narrator") and tenants.may_use_voice("bravo", "house")
    assert not tenants.may_use_voice("bravo", "alpha--secret")  # another tenant's
    assert not tenants.may_use_voice("alpha", "bravo--narrator") and not tenants.may_use_voice("alpha", "house")
    assert tenants.may_use_voice("alpha", "alpha-narrator")  # within its voices = ["default", "alpha-*"]
    assert tenants.may_use_voice(None, "bravo--narrator")  # an operator's key sees every voice
    with pytest.raises(TenantRefused):
        tenants.upload_name("bravo", "alpha--mine", shared=True)  # no shared upload under another's prefix
    with pytest.raises(TenantRefused):
        tenants.upload_name("alpha", "house", shared=True)  # not in its voices = ["default", "alpha-*"]
    assert tenants.upload_name("alpha", "narrator", shared=False) == "alpha--narrator"  # alpha-* takes its own
    with pytest.raises(TenantRefused):
        tenants.start_utterance("bravo", "alpha--secret")
