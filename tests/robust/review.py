"""What the tests of the hostile review (issue 14) share: a seeded ledger built
once per module and copied per test, raw tampering through the driver, and the
checks of "one line, the right exit code, nothing leaked".

The seeded ledger is the seed-001 fixture with its request as grants and
policy, one pack (entries 1 ingest, 2 grant, 3 policy, 4 pack 1). Its bodies
hold a known marker (`BODY_MARKER` is in `refund-faq`'s content after the
re-ingest below), so any message that prints a body is caught by a grep.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURE, chunk, write_jsonl
from tests.robust.helpers import Run, run, seed_ledger

# A body no message may ever show: in a chunk of the seeded ledger.
BODY_MARKER = "Confidential-body-7f3a9c: the secret refund code is 4417"
SECRET_CHUNK = chunk(
    id="secret-note",
    section="evidence",
    source_uri="doc://secret",
    dedupe_key="secret-note",
    required_permission="public-read",
    trust="approved-source",
    effective_from="2026-01-01",
    estimated_tokens=5,
    priority=10,
    content=BODY_MARKER,
)


def make_seeded(folder: Path) -> Path:
    """A seeded SQLite ledger in `folder` (entries 1-4 plus the secret chunk at 5)."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "ledger.db"
    seed_ledger(str(db))  # 1 ingest, 2 grant, 3 policy, 4 pack 1
    run("ingest", str(write_jsonl(folder / "secret.jsonl", [SECRET_CHUNK])), db=db, check=True)
    run("build", "--as-of", "2026-07-21", db=db, check=True)  # 6: pack 2 considers it
    return db


@pytest.fixture(scope="module")
def seeded_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_seeded(tmp_path_factory.mktemp("seeded"))


@pytest.fixture
def seeded(seeded_base: Path, tmp_path: Path) -> Path:
    """This test's own byte copy of the seeded ledger (tmp_path/ledger.db)."""
    dst = tmp_path / "ledger.db"
    shutil.copyfile(seeded_base, dst)
    return dst


def sqlite_exec(db: Path | str, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Tamper through sqlite3 itself, as an attacker with the file would."""
    con = sqlite3.connect(str(db))
    try:
        con.execute(sql, params)
        con.commit()
    finally:
        con.close()


def sqlite_rows(db: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(str(db))
    try:
        return [tuple(r) for r in con.execute(sql, params)]
    finally:
        con.close()


def no_traceback(result: Run) -> None:
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "Traceback" not in result.stdout, result.stdout[-3000:]


def one_line(result: Run, code: int, prefix: str = "error: ") -> str:
    """Exit `code`, nothing on stdout, one line on stderr starting with `prefix`."""
    no_traceback(result)
    assert result.returncode == code, (result.args, result.returncode, result.stderr[-2000:])
    assert result.stdout == "", result.stdout[:500]
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith(prefix), lines[0]
    return lines[0]


def verify_json(db: Path | str) -> dict[str, Any]:
    """`ledger verify --json` (exit 0 or 4, never a traceback): its parsed answer."""
    result = run("verify", "--json", db=db)
    no_traceback(result)
    assert result.returncode in (0, 4), (result.returncode, result.stderr[-2000:])
    data: dict[str, Any] = json.loads(result.stdout)
    assert (result.returncode == 0) == data["ok"], data
    return data


def assert_verify_names(db: Path | str, seq: int) -> dict[str, Any]:
    """verify fails (exit 4) and names entry `seq` as the first bad one."""
    data = verify_json(db)
    assert data["ok"] is False, data
    assert data["first_bad"]["seq"] == seq, data
    plain = run("verify", db=db)
    no_traceback(plain)
    assert plain.returncode == 4, plain.stderr
    assert f"entry {seq}" in plain.stdout, plain.stdout
    return data


def file_bytes(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


__all__ = ["BODY_MARKER", "FIXTURE", "SECRET_CHUNK", "make_seeded", "seeded", "seeded_base"]


def iter_files(folder: Path) -> Iterator[Path]:
    yield from sorted(p for p in folder.rglob("*"))
