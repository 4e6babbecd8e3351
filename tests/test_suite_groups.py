"""The suite's own scheduling (tests/conftest.py): the files that use a shared session server are exactly the ones
listed in its group (a file left out would start the server again in another test process)."""

from __future__ import annotations

import pytest

from tests.conftest import GROUP_OF, SHARED_SERVER_FILES


def test_the_files_using_a_shared_server_are_its_group(request: pytest.FixtureRequest) -> None:
    collected: set[str] = set()
    used: set[tuple[str, str]] = set()
    for item in request.session.items:  # every collected test: each test process collects the whole run
        collected.add(item.path.name)
        used |= {(item.path.name, server) for server in SHARED_SERVER_FILES
                 if server in getattr(item, "fixturenames", ())}
    assert used == {(file, server) for file, server in GROUP_OF.items() if file in collected}
