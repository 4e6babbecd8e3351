"""The documentation: README.md as a short front door, docs/ as a MkDocs site (mkdocs.yml) that builds strictly and
offline. The real mkdocs builds it (its Python API, as `make docs` runs its CLI) into a temporary directory; strict mode
turns every warning into a failure: a broken link or anchor, a nav entry whose page is missing, a page left out of the
nav. A second case proves that on copies of the site with one such fault each."""

from __future__ import annotations

import re
import shutil
import socket
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*```")


@pytest.fixture
def offline(monkeypatch):
    """Any attempt to reach the network fails the build (and so the test)."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"the docs build tried to reach the network: {args}")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def build_site(config_file: Path, site: Path) -> None:
    build(load_config(str(config_file), site_dir=str(site), strict=True))


def copy_of_the_site(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", root / "docs")
    return root


def test_the_site_builds_strictly_and_offline(tmp_path, offline):
    site = tmp_path / "site"
    build_site(ROOT / "mkdocs.yml", site)
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    for page in ("index.html", "getting-started.html", "configuration.html", "protocols/phone.html",
                 "gpu-host/kit.html", "deploying/gate.html", "architecture.html", "engine-protocol.html"):
        assert page in pages, pages
    # Nothing loads from the network when it is read: no web fonts, no scripts or stylesheets from elsewhere.
    for page in site.rglob("*.html"):
        html = page.read_text()
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, page
        assert not re.search(r"<script[^>]*\ssrc=\"(https?:)?//", html), page
        assert not re.search(r"<link[^>]*\shref=\"(https?:)?//", html), page


FAULTS = {  # the fault, and what the build's one warning must name
    "broken link": ("voices.md", "\nSee [the missing page](no-such-page.md).\n", "no-such-page.md"),
    "broken anchor": ("voices.md", "\nSee [a missing section](limits.md#no-such-section).\n", "#no-such-section"),
    "nav page missing": ("limits.md", None, "limits.md"),
    "page not in nav": ("stray.md", "# A page nobody links to\n", "stray.md"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_broken_site_fails_the_strict_build(tmp_path, offline, caplog, fault):
    root = copy_of_the_site(tmp_path)
    page, text, named = FAULTS[fault]
    if text is None:
        (root / "docs" / page).unlink()
    else:
        with (root / "docs" / page).open("a") as f:
            f.write(text)
    with caplog.at_level("WARNING", logger="mkdocs"), pytest.raises(Abort, match="strict mode"):
        build_site(root / "mkdocs.yml", tmp_path / "site")
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings and all(named in w for w in warnings), warnings  # that fault, and nothing else, failed it


def test_readme_is_a_short_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move the detail to docs/"
    head = "\n".join(lines[:15])  # the two set-up commands stay at the very top
    assert "make run " in head and "make test " in head


def anchors(markdown: Path) -> set[str]:
    found, in_fence = set(), False
    for line in markdown.read_text().splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            found.add(slugify(m[1], "-"))
    return found


def test_every_relative_link_in_the_readme_points_to_a_file_that_exists():
    text, in_fence, links = README.read_text(), False, []
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            links += LINK.findall(line)
    relative = [link for link in links if not re.match(r"[a-z][a-z+.-]*:", link)]
    assert len(relative) > 20, relative
    for link in relative:
        path, _, anchor = link.partition("#")
        target = (README.parent / path).resolve() if path else README
        assert target.exists(), f"README.md links to {link}: no such file"
        assert target.is_relative_to(ROOT), link
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target), f"README.md links to {link}: no such section in {path}"


@pytest.mark.parametrize("what, link, shown_there", [
    ("Twilio set-up", "docs/protocols/phone.md#twilio-media-streams", '<Stream url="wss://gateway.example.com/v1/twilio">'),
    ("reading the GPU kit", "docs/gpu-host/kit.md", "Reading gpu-bench.json"),
    ("the deploy gate", "docs/deploying/gate.md", "chatterbox-fast gate --url"),
    ("the latency setting", "docs/how-it-works.md#the-latency-setting", "--first-audio-target"),
    ("every setting", "docs/configuration.md", "CBF_PORT"),
])
def test_a_new_user_finds_it_one_click_from_the_readme(what, link, shown_there):
    readme = README.read_text()
    assert f"]({link})" in readme, what
    assert shown_there in (ROOT / link.partition("#")[0]).read_text(), what


def test_the_readme_itself_says_how_to_change_the_port():
    readme = README.read_text()
    assert 'make run ARGS="--port 9000"' in readme and "CBF_PORT=9000 make run" in readme
