"""A non-editable install: build the wheel, install it into a fresh virtual
environment, and run `ledger` from an unrelated folder. Migrations, schemas and
the shipped fixture must come from the installed package, never the checkout.
The install holds the runtime only (no test tools, under 120 MB), and the
README's walk-through and the demo's steps run from it.

Dependencies are resolved by pip from the configured package index; the whole
module takes some 40-120 seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from ledger.store.engine import SCHEMA_REVISION
from tests.conftest import ROOT, chunk, write_jsonl

# What a wheel is built from: the checkout minus tooling, caches and local state.
IGNORE = shutil.ignore_patterns(
    ".git",
    ".venv",
    ".ci",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
    "demo",
    "*.db",
    "*.db-wal",
    "*.db-shm",
)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    workdir: Path  # an unrelated folder to run from

    @property
    def ledger(self) -> str:
        return str(self.venv / "bin" / "ledger")

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")


def clean_env() -> dict[str, str]:
    drop = {"PYTHONPATH", "LEDGER_DB", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def run(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=timeout
    )


def must(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    proc = run(cmd, cwd, timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    # A copy, so that the build's own build/ and egg-info never land in the checkout.
    shutil.copytree(ROOT, src, ignore=IGNORE, symlinks=True)
    wheelhouse = base / "wheelhouse"
    must(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheelhouse), str(src)],
        base,
    )
    wheels = list(wheelhouse.glob("*.whl"))
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    must([sys.executable, "-m", "venv", str(venv)], base)
    must([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheels[0])], base)
    workdir = base / "elsewhere"
    workdir.mkdir()
    return Installed(wheels[0], venv, workdir)


def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_wheel_ships_renamed_packages_and_data(installed: Installed) -> None:
    names = wheel_names(installed.wheel)
    assert installed.wheel.name.startswith("context_ledger-")
    for required in (
        "ledger/__init__.py",
        "ledger_cli/__init__.py",
        "ledger_cli/main.py",
        "ledger_migrations/env.py",
        "ledger_migrations/script.py.mako",
        "ledger_migrations/versions/0001_initial.py",
        "ledger_fixtures/support-chunks.json",
    ):
        assert required in names, required
    assert any(n.startswith("ledger/schemas/") and n.endswith(".json") for n in names), (
        "no JSON Schema under ledger/schemas/ in the wheel"
    )
    top_level = {n.split("/", 1)[0] for n in names}
    assert "cli" not in top_level and "migrations" not in top_level and "fixtures" not in top_level
    assert "tests" not in top_level
    assert not any(n.startswith(("cli/", "migrations/", "tests/")) for n in names)


def test_console_script_points_at_ledger_cli(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as zf:
        entry_points = next(
            zf.read(n).decode() for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt")
        )
    assert "ledger = ledger_cli.main:main" in entry_points


def test_installed_code_is_not_the_checkout(installed: Installed) -> None:
    proc = must(
        [
            installed.python,
            "-c",
            "import ledger, ledger_cli, ledger_migrations, ledger_fixtures as f; "
            "print(ledger.__file__, ledger_cli.__file__, ledger_migrations.__file__, f.__file__)",
        ],
        installed.workdir,
    )
    for path in proc.stdout.split():
        assert Path(path).is_relative_to(installed.venv), path
        assert not Path(path).is_relative_to(ROOT), path
    proc = run([installed.python, "-c", "import cli"], installed.workdir)
    assert proc.returncode != 0  # no generic top-level `cli` package installed


def test_init_ingest_chunks_from_another_folder(installed: Installed) -> None:
    cwd = installed.workdir
    db = cwd / "team.db"
    init = must([installed.ledger, "--db", str(db), "init"], cwd)
    assert f"created schema {SCHEMA_REVISION}" in init.stderr
    assert db.stat().st_mode & 0o777 == 0o600
    data = write_jsonl(cwd / "chunks.jsonl", [chunk(), chunk(id="beta", dedupe_key="beta")])
    proc = must([installed.ledger, "--db", str(db), "ingest", "--json", str(data)], cwd)
    assert json.loads(proc.stdout) == {"batch": 1, "read": 2, "new": 2, "unchanged": 0}
    # The installed copy of the fixture `ledger pack` reads.
    fixture = must(
        [
            installed.python,
            "-c",
            "import pathlib, ledger_fixtures; "
            "print(pathlib.Path(ledger_fixtures.__file__).parent / 'support-chunks.json')",
        ],
        cwd,
    ).stdout.strip()
    proc = must([installed.ledger, "--db", str(db), "ingest", "--json", fixture], cwd)
    assert json.loads(proc.stdout)["new"] == 11
    listing = json.loads(must([installed.ledger, "--db", str(db), "chunks", "--json"], cwd).stdout)
    assert len(listing["chunks"]) == 13
    # `ledger init` on the current database, with the relative default path.
    must([installed.ledger, "init"], cwd)
    assert (cwd / "ledger.db").is_file()


def test_pack_uses_the_installed_fixture(installed: Installed) -> None:
    proc = run([installed.ledger, "pack"], installed.workdir)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("budget=")
    assert lines[1].startswith("selected: ") and lines[2].startswith("excluded: ")
    assert proc.stderr == ""


def test_help_lists_commands(installed: Installed) -> None:
    proc = must([installed.ledger, "--help"], installed.workdir)
    for command in ("init", "ingest", "chunks", "pack"):
        assert command in proc.stdout


def test_report_from_the_installed_templates(installed: Installed) -> None:
    """`ledger report` renders from the wheel's own templates and static files."""
    names = wheel_names(installed.wheel)
    for required in (
        "ledger/report/templates/page.html",
        "ledger/report/templates/macros.html",
        "ledger/report/static/report.css",
        "ledger/report/static/report.js",
    ):
        assert required in names, required
    cwd = installed.workdir
    db = str(cwd / "report.db")
    must([installed.ledger, "--db", db, "init"], cwd)
    data = write_jsonl(cwd / "report.jsonl", [chunk(), chunk(id="beta", dedupe_key="beta")])
    for args in (
        ["ingest", str(data)],
        ["subject", "grant", "default", "public-read"],
        ["policy", "set", "--allow-trust", "approved-source", "--budget", "100"],
        ["build", "--as-of", "2026-07-21"],
    ):
        must([installed.ledger, "--db", db, *args], cwd)
    must([installed.ledger, "--db", db, "report", "1", "-o", "pack.html"], cwd)
    page = (cwd / "pack.html").read_text(encoding="utf-8")
    css = must(
        [
            installed.python,
            "-c",
            "import importlib.resources as r; "
            "print(r.files('ledger.report').joinpath('static/report.css').read_text(), end='')",
        ],
        cwd,
    ).stdout
    assert f"<style>{css.strip()}</style>" in page
    assert '<script type="application/json" id="report-data">' in page


# The install brings the tool only: no test tools, under 120 MB, and the README's
# walk-through and the demo's steps run from it as written.

TEST_TOOLS = ("pytest", "pytest-xdist", "hypothesis", "ruff", "mypy", "jsonschema", "tiktoken")


def test_a_plain_install_brings_no_test_tools(installed: Installed) -> None:
    listing = must([installed.python, "-m", "pip", "list", "--format=freeze"], installed.workdir)
    names = {line.split("==")[0].lower() for line in listing.stdout.splitlines()}
    assert "context-ledger" in names
    assert not names & set(TEST_TOOLS), sorted(names & set(TEST_TOOLS))
    # Nor any framework of an extra.
    assert not names & {"langchain-core", "llama-index-core", "mcp", "pypdf", "psycopg"}


def test_a_plain_install_is_under_120_mb(installed: Installed) -> None:
    size = sum(p.lstat().st_size for p in installed.venv.rglob("*") if p.is_file())
    assert size < 120 * 1024 * 1024, f"{size / 1024 / 1024:.0f} MB"


def test_the_readme_walk_through_runs_from_the_wheel(installed: Installed) -> None:
    from tests.e2e.test_docs import check_walk_through, walk_through

    folder = installed.workdir / "walk-through"
    folder.mkdir()
    check_walk_through(folder, walk_through(folder, bindir=installed.venv / "bin"))


def test_the_demo_steps_run_from_the_wheel(installed: Installed) -> None:
    from tests.e2e.test_docs import blocks, page, shell

    folder = installed.workdir / "demo"
    shutil.copytree(ROOT / "fixtures", folder / "fixtures")
    (script,) = blocks(page("getting-started.md"), "What `make demo` does, by hand", "sh")
    result = shell(script, folder, bindir=installed.venv / "bin")
    assert result.returncode == 0, result.stderr
    assert "pack 1 reproduces exactly" in result.stdout
