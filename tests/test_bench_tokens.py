"""``chatterbox-fast bench tokens`` (cbf_tools/bench/tokens.py): its figures, and forgeries of every kind refused by
the gateway's own request check."""

from __future__ import annotations

import argparse
import json
import random
import time

import pytest

from cbf_tools.bench import tokens
from gateway.guard.tokens import current_grant
from gateway.guard.tenancy import Tenancy
from gateway.guard.tokens import TokenSigner
from gateway.metrics import Metrics


def test_the_bench_prints_its_costs_and_lets_no_forgery_through(capsys: pytest.CaptureFixture[str]) -> None:
    assert tokens.run(argparse.Namespace(iterations=200, seeds=2, forgeries=300)) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    figures = json.loads(lines[-1])
    assert figures["forgeries"] == {"seeds": 2, "tried": 600, "let_through": 0}
    assert all(cpu > 0 and wall > 0 for cpu, wall in (figures[k] for k in ("mint_us", "verify_us",
                                                                           "request_check_us")))
    assert "0 of 600 over 2 seeds" in lines[1]


def test_each_kind_of_forgery_is_made_and_refused_where_the_sound_token_is_let_through() -> None:
    tenancy = Tenancy(None, (tokens.KEY,), Metrics())
    mark = tenancy.key_mark(tokens.KEY)
    token, other = (tenancy.signer.mint(tokens.REQUEST, None, mark, time.time())[0] for _ in range(2))
    scope = {"type": "websocket", "path": "/v1/stream", "headers": []}
    assert tokens.check_apart(dict(scope), tenancy, token) is None
    rng, stranger = random.Random(7), TokenSigner(b"another secret, another server")
    forged = {tokens.forge(token, other, stranger, mark, rng) for _ in range(200)}
    assert token not in forged and len(forged) > 150  # changed, inserted, dropped, cut, re-claimed, re-signed
    assert any(f.rpartition(".")[2] == other.rpartition(".")[2] for f in forged)  # another's signature
    for fake in forged:
        refusal = tokens.check_apart(dict(scope), tenancy, fake)
        assert refusal is not None and refusal.status == 401, (fake, refusal)
    assert current_grant() is None  # no grant left in this test's own context: a later test's utterances unscoped
