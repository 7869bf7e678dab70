"""The architecture, checked: the pure core imports nothing that can do I/O, SQL
lives only in the store and the migrations, no module imports a higher layer,
and no check of the core depends on `assert`."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "ledger"
CORE = sorted((LIBRARY / "core").glob("*.py"))

# Standard-library modules the core may import: none of them reads or writes a
# file, the network, a clock or a random source. Anything else (os, sys, io,
# pathlib, time, random, socket, subprocess, ...) and every third-party package
# (sqlalchemy, click, jinja2, ...) fails the test.
CORE_STDLIB = {
    "__future__",
    "array",
    "base64",
    "collections",
    "collections.abc",
    "contextlib",
    "copy",
    "dataclasses",
    "datetime",
    "enum",
    "fnmatch",
    "functools",
    "gc",
    "hashlib",
    "heapq",
    "itertools",
    "json",
    "json.encoder",
    "math",
    "operator",
    "re",
    "shlex",  # shell quoting of a hint's query (reasons.describe_step): pure string work
    "string",
    "tomllib",
    "types",
    "typing",
    "unicodedata",
    "xml.etree",  # ElementTree builds JUnit XML as text (core/checks.py); it reads no file here
}
FORBIDDEN_CALLS = {"open", "print", "input", "exec", "eval", "__import__", "breakpoint"}
CLOCK_CALLS = {"now", "today", "utcnow", "time", "perf_counter", "monotonic"}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def tree_of(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"))


def imported(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative imports hide what is imported"
            names.add(node.module or "")
    return names


def test_the_core_is_a_package_with_a_readme_saying_no_io() -> None:
    assert len(CORE) >= 10
    assert "no I/O" in (LIBRARY / "core" / "README.md").read_text("utf-8")


@pytest.mark.parametrize("path", CORE, ids=module_name)
def test_core_imports_only_core_and_pure_stdlib(path: Path) -> None:
    names = imported(tree_of(path))
    outside = {n for n in names if not n.startswith("ledger.core.") and n not in CORE_STDLIB}
    assert outside == set()


@pytest.mark.parametrize("path", CORE, ids=module_name)
def test_core_calls_no_io_builtins_and_reads_no_clock(path: Path) -> None:
    tree = tree_of(path)
    calls = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not calls & FORBIDDEN_CALLS
    methods = {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    assert not methods & CLOCK_CALLS


@pytest.mark.parametrize(
    "path", [*CORE, ROOT / "cli" / "pack_cmd.py"], ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_check_depends_on_assert(path: Path) -> None:
    asserts = [n for n in ast.walk(tree_of(path)) if isinstance(n, ast.Assert)]
    assert asserts == []


def test_select_module_says_it_cannot_do_io() -> None:
    docstring = ast.get_docstring(tree_of(LIBRARY / "core" / "select.py")) or ""
    assert "cannot do any I/O" in docstring


def test_importing_the_core_loads_no_io_heavy_modules() -> None:
    modules = ", ".join(module_name(p) for p in CORE)
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        f"import {modules}\n"
        "new = set(sys.modules) - before\n"
        "bad = sorted(m for m in new if m.split('.')[0] in "
        "('sqlalchemy', 'alembic', 'click', 'jinja2', 'subprocess', 'socket', 'random', "
        "'pathlib'))\n"
        "print(bad)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


# --------------------------------------------------------------------------
# SQL only in the store (and the migrations)
# --------------------------------------------------------------------------

SQL_TEXT = re.compile(
    r"\b(SELECT\b.+\bFROM|INSERT\s+INTO|UPDATE\b.+\bSET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX)"
    r"|PRAGMA\s+\w|ALTER\s+TABLE|DROP\s+TABLE)\b",
    re.DOTALL,
)
OUTSIDE_STORE = [
    p
    for p in sorted([*LIBRARY.rglob("*.py"), *(ROOT / "cli").rglob("*.py")])
    if "store" not in p.relative_to(ROOT).parts
]


@pytest.mark.parametrize("path", OUTSIDE_STORE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_sql_outside_the_store(path: Path) -> None:
    tree = tree_of(path)
    assert not {n for n in imported(tree) if n.split(".")[0] == "sqlalchemy"}
    literals = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and SQL_TEXT.search(n.value)
    ]
    assert literals == []


def test_the_sql_check_catches_sql() -> None:
    assert SQL_TEXT.search("select x FROM chunk_versions".upper())
    assert SQL_TEXT.search("INSERT INTO entries VALUES (1)")
    assert not SQL_TEXT.search("select the chunks that fit, then update the caller")


# --------------------------------------------------------------------------
# Layers: a module imports only its own layer's peers or lower layers
# --------------------------------------------------------------------------

# ledger.core < ledger.tokens, ledger.safeio < ledger.ingest, ledger.store <
# ledger.report, ledger.integrations.otel < ledger.api < ledger.integrations <
# ledger (the public face) < cli.
LAYERS = {
    "ledger.core": 0,
    "ledger.tokens": 1,
    "ledger.safeio": 1,
    "ledger.ingest": 2,
    "ledger.store": 2,
    "ledger.signing": 2,  # Ed25519 for checkpoints: core formats + a key file, no SQL
    "ledger.report": 3,
    # The OpenTelemetry hook is called by the API's builds (it needs only the core),
    # unlike the other integrations, which sit on top of the API.
    "ledger.integrations.otel": 3,
    "ledger.api": 4,
    "ledger.integrations": 5,
    "ledger": 6,
    "ledger_cli": 7,
}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return ".".join(parts[:n])
    return None


def own_modules() -> list[tuple[str, Path]]:
    out = [(module_name(p), p) for p in sorted(LIBRARY.rglob("*.py"))]
    out += [("ledger_cli." + p.stem, p) for p in sorted((ROOT / "cli").glob("*.py"))]
    return out


@pytest.mark.parametrize("name,path", own_modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_no_module_imports_a_higher_layer(name: str, path: Path) -> None:
    mine = layer_of(name)
    assert mine is not None
    for module in imported(tree_of(path)):
        theirs = layer_of(module)
        if theirs is None or theirs == mine:
            continue
        assert LAYERS[theirs] < LAYERS[mine], f"{name} imports {module}"
        # Two peers of one layer stay apart: the readers never write, the store never reads files.
        assert {theirs, mine} != {"ledger.ingest", "ledger.store"}, f"{name} imports {module}"


@pytest.mark.parametrize("path", sorted((ROOT / "cli").glob("*.py")), ids=lambda p: p.name)
def test_the_command_line_goes_through_the_library_face(path: Path) -> None:
    # A command parses, calls the Ledger (or the pure core), renders: it never
    # reaches into the store, the readers or the report internals.
    for module in imported(tree_of(path)):
        assert layer_of(module) not in {"ledger.store", "ledger.ingest", "ledger.report"}, module
