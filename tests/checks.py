"""The checks the command-line tests share: "one line, the right exit code, no
traceback", `verify`'s answer, and raw tampering of a SQLite ledger through the
driver, as an attacker with the file would. (The seeded ledger they run on is
tests/seeded.py's, through the `seeded_file` fixture of tests/conftest.py.)
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.robust.helpers import Run, run


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


def iter_files(folder: Path) -> Iterator[Path]:
    yield from sorted(p for p in folder.rglob("*"))
