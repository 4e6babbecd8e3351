"""Every third-party module the Turbo worker and the GPU kit import is on the GPU measurement host, or carried to it.

The host's Python has only its own packages and the wheels of scripts/gpu-wheels (no network there); both lists, and
the imports the Turbo path runs without, are scripts/gpu-host-packages.txt. This walks, with ``ast``, every module
under engine/ (the worker loads its engines by name at run time, so all of them count) and the module scripts/gpu-bench
runs, following the project's own imports wherever they lead (imports inside functions included; only ``if
TYPE_CHECKING:`` blocks, which never run, are left out), and maps each third-party top-level name to its distribution
in this venv. The kit once died on the host before its first phase on a ``num2words`` no list named."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES_FILE = ROOT / "scripts" / "gpu-host-packages.txt"
# The host's Python is 3.12: modules this (3.11) Python still counts as its own but 3.12 removed (PEP 594, 632).
GONE_IN_312 = {"asynchat", "asyncore", "distutils", "imp", "smtpd"}
STDLIB = set(sys.stdlib_module_names) - GONE_IN_312


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503: PyYAML, pyyaml, py_yaml are one distribution


def read_packages() -> dict[str, dict[str, tuple[str, str]]]:
    """Each [section] of scripts/gpu-host-packages.txt: name (the part before '==') -> (the requirement, its comment).
    The scripts read it with sed (a line's text before '#', without spaces); this reads it the same way."""
    sections: dict[str, dict[str, tuple[str, str]]] = {}
    section = None
    for line in PACKAGES_FILE.read_text().splitlines():
        text, _, comment = line.partition("#")
        text = "".join(text.split())
        if re.fullmatch(r"\[[\w-]+\]", text):
            section = sections.setdefault(text[1:-1], {})
        elif text:
            assert section is not None, f"{PACKAGES_FILE}: {line!r} before any [section]"
            section[text.split("==")[0]] = (text, comment.strip())
    return sections


def module_file(name: str) -> Path | None:
    """The project's own file for a dotted module name, or None when it is not the project's."""
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_names(path: Path, module: str) -> list[tuple[str, int]]:
    """(dotted name, line) of each import in the file, anywhere in it, relative ones made absolute; ``from a import
    b`` gives ``a`` and ``a.b`` (b may be a submodule)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[:len(parts) - node.level + 1], *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            found.append((base, node.lineno))
            found.extend((f"{base}.{alias.name}", node.lineno) for alias in node.names if alias.name != "*")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return found


def kit_roots() -> list[str]:
    """Every module under engine/, and each of the project's modules scripts/gpu-bench runs with ``python -m``."""
    roots = [".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
             for p in sorted((ROOT / "engine").rglob("*.py"))]
    run = [name for name in re.findall(r"-m\s+([\w.]+)", (ROOT / "scripts" / "gpu-bench").read_text())
           if module_file(name.split(".")[0])]  # not pip's
    assert "engine.gpu_kit.turbo_bench" in run, "scripts/gpu-bench no longer runs engine.gpu_kit.turbo_bench"
    return [*roots, *run]


def third_party_imports() -> dict[str, list[str]]:
    """Each third-party top-level name the kit's modules import -> where ("engine/x.py:12"), following the project's
    own imports transitively."""
    seen: set[str] = set()
    todo = kit_roots()
    imports: dict[str, list[str]] = {}
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = module_file(module)
        assert path is not None, f"{module}: no such module in the project"
        for name, line in imported_names(path, module):
            top = name.split(".")[0]
            if module_file(top) is not None:  # the project's own: follow it (and each package on the way)
                parts = name.split(".")
                todo.extend(".".join(parts[:i]) for i in range(1, len(parts) + 1) if module_file(".".join(parts[:i])))
            elif top not in STDLIB and top != "__future__":
                where = f"{path.relative_to(ROOT)}:{line}"
                if where not in imports.setdefault(top, []):
                    imports[top].append(where)
    return imports


def test_every_third_party_import_of_the_kit_is_on_the_host_or_in_its_wheels() -> None:
    sections = read_packages()
    provided = {normalized(name) for part in ("host", "wheels", "sdists") for name in sections.get(part, {})}
    not_needed = sections.get("not-needed", {})
    distributions = packages_distributions()
    problems = []
    for top, where in sorted(third_party_imports().items()):
        if top in not_needed:
            continue
        names = distributions.get(top)
        if not names:
            problems.append(f"'{top}' (imported by {', '.join(where)}) is not installed in this venv either: add its "
                            f"distribution to pyproject.toml and to [wheels] in {PACKAGES_FILE.relative_to(ROOT)}")
        elif not any(normalized(name) in provided for name in names):
            dist = names[0]
            problems.append(
                f"'{top}' (distribution {dist}), imported by {', '.join(where)}, is neither on the GPU host nor among "
                f"scripts/gpu-wheels' packages, so the kit would die there with ModuleNotFoundError: add "
                f"{dist}=={version(dist)} (and what it needs) to [wheels] in {PACKAGES_FILE.relative_to(ROOT)} "
                f"([sdists] if it has no wheel; the wheels must stay under 64 MiB), or, if the Turbo path runs "
                f"without it, import it only where it is used and name '{top}' in [not-needed] with the reason")
    assert not problems, "\n".join(problems)


def test_the_not_needed_imports_are_imported_commented_and_not_also_carried() -> None:
    sections = read_packages()
    imports = third_party_imports()
    provided = {normalized(name) for part in ("host", "wheels", "sdists") for name in sections.get(part, {})}
    distributions = packages_distributions()
    for top, (_, why) in sections["not-needed"].items():
        assert top in imports, f"[not-needed] names '{top}', which nothing under engine/ imports: remove it"
        assert why, f"[not-needed] '{top}' needs a comment: why the Turbo path runs without it"
        assert not {normalized(d) for d in distributions.get(top, [])} & provided, f"'{top}' is carried after all"


def test_the_lists_are_one_file_read_by_the_kit_scripts() -> None:
    sections = read_packages()
    assert set(sections) == {"host", "wheels", "sdists", "not-needed"}
    host = {normalized(name) for name in sections["host"]}
    carried = {normalized(name) for part in ("wheels", "sdists") for name in sections[part]}
    assert not host & carried, f"on the host and carried as well: {host & carried}"
    unpinned = [spec for part in ("wheels", "sdists") for spec, _ in sections[part].values() if "==" not in spec]
    assert not unpinned, f"carried but not pinned (what the host runs must be what was chosen): {unpinned}"
    for script in ("gpu-wheels", "gpu-host-dryrun"):  # read from the file, not repeated inline
        body = (ROOT / "scripts" / script).read_text()
        assert "scripts/gpu-host-packages.txt" in body, script
        assert "torch==" not in body and "num2words" not in body, f"scripts/{script} lists packages inline again"
