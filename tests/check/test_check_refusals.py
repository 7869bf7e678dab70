"""`ledger check` refuses what it cannot run before any case runs: a report
that would replace an input, and a tests file whose values a build refuses."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_ledger
from tests.seeded import seed_ledger

CASE = '[[case]]\nname = "policy"\nas_of = "2026-07-21"\nadmit = ["policy"]\n'
CANDIDATES_CASE = (
    '[[case]]\nname = "ranked"\nas_of = "2026-07-21"\ncandidates = "ranked.jsonl"\n'
    'admit = ["policy"]\n'
)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("check-refusals") / "ledger.db"
    seed_ledger(db, init=True, build=False)
    return db


@pytest.fixture
def db(base: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ledger.db"
    copy.write_bytes(base.read_bytes())
    return copy


def state(db: Path) -> list[Any]:
    """Every row of every table: what "the ledger is unchanged" compares."""
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [
            (t, sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"')))) for t in sorted(tables)
        ]


def refused(run: Any, code: int, *words: str) -> str:
    """The run's one error line, after checking that nothing ran."""
    assert run.returncode == code, run.stdout + run.stderr
    assert run.stdout == ""  # no case ran: no PASS/FAIL line, no summary
    assert "Traceback" not in run.stderr
    [line] = run.stderr.splitlines()
    assert line.startswith("error: "), line
    for word in words:
        assert word in line, line
    return line


# --------------------------------------------------------------------------
# --junit may not replace what the run reads.
# --------------------------------------------------------------------------


def test_junit_naming_the_tests_file_is_refused_before_any_case_runs(
    db: Path, tmp_path: Path
) -> None:
    tests = tmp_path / "t.toml"
    tests.write_text(CASE, encoding="utf-8")
    before = state(db)
    run = run_ledger("check", str(tests), "--junit", str(tests), db=db)
    refused(run, 1, f"{tests}: is the same path as the input {tests}", "name another output")
    assert tests.read_text(encoding="utf-8") == CASE
    assert state(db) == before


def test_junit_naming_the_tests_file_another_way_or_by_a_hard_link_is_refused(
    db: Path, tmp_path: Path
) -> None:
    tests = tmp_path / "t.toml"
    tests.write_text(CASE, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    other_way = tmp_path / "sub" / ".." / "t.toml"
    refused(run_ledger("check", str(tests), "--junit", str(other_way), db=db), 1, "same")
    link = tmp_path / "link.toml"
    os.link(tests, link)
    refused(run_ledger("check", str(link), "--junit", str(tests), db=db), 1, "same file")
    assert tests.read_text(encoding="utf-8") == CASE


def test_junit_naming_a_cases_candidates_file_is_refused(db: Path, tmp_path: Path) -> None:
    tests = tmp_path / "t.toml"
    tests.write_text(CASE + CANDIDATES_CASE, encoding="utf-8")
    ranked = tmp_path / "ranked.jsonl"
    ranked.write_text('{"id": "policy"}\n', encoding="utf-8")
    # From another folder: the case names the file relative to the tests file.
    run = run_ledger("check", str(tests), "--junit", "ranked.jsonl", db=db, cwd=tmp_path)
    refused(run, 1, "ranked.jsonl", "is the same path as the input")
    assert ranked.read_text(encoding="utf-8") == '{"id": "policy"}\n'


def test_junit_naming_the_database_is_refused_before_any_case_runs(
    db: Path, tmp_path: Path
) -> None:
    # The second case's candidates file names a chunk the ledger lacks: running
    # it would stop the run with that error instead.
    tests = tmp_path / "t.toml"
    tests.write_text(CASE + CANDIDATES_CASE, encoding="utf-8")
    (tmp_path / "ranked.jsonl").write_text('{"id": "no-such-chunk"}\n', encoding="utf-8")
    assert "no-such-chunk" in run_ledger("check", str(tests), db=db).stderr
    before = state(db)
    run = run_ledger("check", str(tests), "--junit", str(db), db=db)
    refused(run, 1, "is the same path as the input")
    assert state(db) == before


def test_junit_naming_another_file_is_written(db: Path, tmp_path: Path) -> None:
    tests = tmp_path / "t.toml"
    tests.write_text(CASE, encoding="utf-8")
    report = tmp_path / "report.xml"
    run = run_ledger("check", str(tests), "--junit", str(report), db=db)
    assert run.returncode == 0, run.stderr
    assert report.read_bytes().startswith(b"<?xml")
