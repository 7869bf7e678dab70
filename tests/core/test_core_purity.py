"""The pure core imports nothing that can do I/O, and no check depends on `assert`."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

# What each pure module may import: standard-library modules without I/O, and
# ledger's own pure modules. Anything else (os, sys, io, pathlib, time, random,
# sqlalchemy, click, ...) fails the test.
PURE_LEDGER = {
    "ledger.errors",
    "ledger.canonical",
    "ledger.context",
    "ledger.select",
    "ledger.records",
    "ledger.strictjson",
}
ALLOWED: dict[str, set[str]] = {
    "ledger.select": {
        "__future__",
        "dataclasses",
        "typing",
        "datetime",
        "collections.abc",
        "functools",
        "operator",
        "types",
        "contextlib",
        "gc",
        "ledger.errors",
        "ledger.context",
    },
    "ledger.context": {
        "__future__",
        "collections.abc",
        "dataclasses",
        "types",
        "typing",
        "ledger.errors",
    },
    "ledger.records": {
        "__future__",
        "re",
        "collections.abc",
        "dataclasses",
        "datetime",
        "typing",
        "ledger.canonical",
        "ledger.errors",
    },
    "ledger.strictjson": {
        "__future__",
        "json",
        "math",
        "re",
        "array",
        "itertools",
        "typing",
        "ledger.errors",
    },
    "ledger.fixture": {"__future__", "collections.abc", "dataclasses", "typing"} | PURE_LEDGER,
    "ledger.budgeted": {"__future__", "collections.abc", "typing"} | PURE_LEDGER,
}
FORBIDDEN_CALLS = {"open", "print", "input", "exec", "eval", "__import__", "breakpoint"}


def module_tree(name: str) -> ast.Module:
    spec = find_spec(name)
    assert spec is not None and spec.origin is not None
    return ast.parse(Path(spec.origin).read_text("utf-8"))


def imported(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative imports hide what is imported"
            names.add(node.module or "")
    return names


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_pure_modules_import_only_the_allowed(name: str) -> None:
    names = imported(module_tree(name))
    assert names <= ALLOWED[name], names - ALLOWED[name]
    for module in names:
        top = module.split(".")[0]
        assert top == "ledger" or top in sys.stdlib_module_names


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_pure_modules_call_no_io_builtins(name: str) -> None:
    calls = {
        node.func.id
        for node in ast.walk(module_tree(name))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not calls & FORBIDDEN_CALLS


@pytest.mark.parametrize(
    "name",
    sorted(ALLOWED) + ["ledger.canonical", "ledger.errors", "ledger_cli.pack_cmd"],
)
def test_no_check_depends_on_assert(name: str) -> None:
    asserts = [n for n in ast.walk(module_tree(name)) if isinstance(n, ast.Assert)]
    assert asserts == []


def test_select_module_says_it_cannot_do_io() -> None:
    docstring = ast.get_docstring(module_tree("ledger.select")) or ""
    assert "cannot do any I/O" in docstring


def test_importing_the_core_loads_no_io_heavy_modules() -> None:
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import ledger.select, ledger.records, ledger.fixture, ledger.budgeted\n"
        "new = set(sys.modules) - before\n"
        "bad = sorted(m for m in new if m.split('.')[0] in "
        "('sqlalchemy', 'alembic', 'click', 'subprocess', 'socket', 'random', 'pathlib'))\n"
        "print(bad)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"
