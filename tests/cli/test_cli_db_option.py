"""Issue 14: what `--db` names. A URL's secrets never reach a message (the
userinfo password and every password-like query key libpq honours); a URL that
cannot be parsed (port `:abc`, `[::1`) is one line; a file that is not a ledger
is refused untouched (no switch to WAL, a 0-byte file stays 0 bytes) and `init`
refuses a foreign non-empty database instead of adding its tables to it.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from tests.clitools import one_line, run

SECRET = "S3cr3t-pw-91"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://alice:{SECRET}@127.0.0.1:1/ledger",
        f"postgresql+psycopg://alice@127.0.0.1:1/ledger?password={SECRET}",
        f"postgresql+psycopg://alice@127.0.0.1:1/ledger?sslmode=disable&password={SECRET}",
        f"postgresql+psycopg://alice@127.0.0.1:1/ledger?sslpassword={SECRET}",
        f"postgresql+psycopg://alice@127.0.0.1:1/ledger?PassWord={SECRET}",
        f"postgresql+psycopg://alice@127.0.0.1:1/ledger?passfile=/tmp/{SECRET}",
        f"postgresql+psycopg://127.0.0.1:1/ledger?user=alice&password={SECRET}&connect_timeout=3",
    ],
    ids=["userinfo", "query", "second-key", "sslpassword", "case", "passfile", "libpq-style"],
)
@pytest.mark.parametrize("command", [("packs",), ("init",), ("verify",)], ids=lambda c: c[0])
def test_url_secrets_never_reach_a_message(url: str, command: tuple[str, ...]) -> None:
    """`?password=...` (libpq honours it) was printed in every error."""
    result = run(*command, db=url, timeout=60)
    line = one_line(result, 1)
    assert SECRET not in result.stderr, line
    assert "***" in line, line  # still says which database it could not open


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://alice@127.0.0.1:abc/ledger",
        "postgresql+psycopg://alice@[::1/ledger",
        "postgresql+psycopg://alice@127.0.0.1:99999/ledger",
        "sqlite:////no/such/folder/x.db?mode=bogus&uri=true",
    ],
    ids=["port-abc", "ipv6-unclosed", "port-range", "sqlite-bad-uri"],
)
def test_a_malformed_url_is_one_line(url: str) -> None:
    """A port `:abc` or `[::1` gave a ValueError traceback."""
    for command in (("packs",), ("init",)):
        one_line(run(*command, db=url, timeout=60), 1)


def _foreign(path: Path, *, journal: str = "delete") -> bytes:
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA journal_mode = {journal}")
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    con.execute("INSERT INTO notes (body) VALUES ('someone else''s data')")
    con.commit()
    con.close()
    return path.read_bytes()


def _journal_mode(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        return str(con.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        con.close()


@pytest.mark.parametrize("command", [("verify",), ("packs",), ("chunks",), ("head",)])
def test_a_foreign_sqlite_file_is_refused_untouched(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """`verify` on another application's file refused it, but had already switched
    its journal mode to WAL."""
    path = tmp_path / "other.db"
    before = _foreign(path)
    line = one_line(run(*command, db=path), 1)
    assert "not" in line and "ledger" in line, line
    assert path.read_bytes() == before
    assert _journal_mode(path) == "delete"
    assert not Path(f"{path}-wal").exists()


def test_init_refuses_a_foreign_database(tmp_path: Path) -> None:
    """`init` silently added its tables to another application's database."""
    path = tmp_path / "other.db"
    before = _foreign(path)
    line = one_line(run("init", db=path), 1)
    assert "not a ledger" in line or "other tables" in line, line
    assert path.read_bytes() == before
    assert _journal_mode(path) == "delete"
    # Nothing made beside it either (the write lock's file was, before).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


@pytest.mark.parametrize("command", [("verify",), ("packs",), ("head",)])
def test_an_empty_file_stays_empty(tmp_path: Path, command: tuple[str, ...]) -> None:
    """A 0-byte file became a 4 KB database (WAL switched on) before the check."""
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    line = one_line(run(*command, db=path), 1)
    assert "ledger init" in line, line
    assert path.read_bytes() == b""
    assert not Path(f"{path}-wal").exists()


def test_init_makes_a_ledger_of_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    result = run("init", db=path)
    assert result.returncode == 0, result.stderr
    assert run("verify", db=path).returncode == 0


def test_a_garbage_file_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"not a database at all\n" * 300)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    for command in (("verify",), ("init",)):
        one_line(run(*command, db=path), 1)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://alice:S3c@ret@127.0.0.1:1/ledger",
        "postgresql+psycopg://alice:S3c@r@et@127.0.0.1:1/ledger",
        "postgresql+psycopg://alice:S3c@ret@127.0.0.1:notaport/ledger",
        "postgresql+psycopg://alice:S3c?@ret@127.0.0.1:1/ledger",
    ],
    ids=["one-at", "two-ats", "bad-port", "question-mark"],
)
@pytest.mark.parametrize("command", [("head",), ("init",)], ids=lambda c: c[0])
def test_a_password_holding_an_unescaped_at_is_never_shown(
    url: str, command: tuple[str, ...]
) -> None:
    """`alice:S3c@ret@127.0.0.1` was shown as `alice:***@ret@127.0.0.1`, and the
    driver's `failed to resolve host 'ret@127.0.0.1'`: the tail of the password.
    Everything between `alice:` and the last `@` is masked, the driver's words
    are dropped, and the line says how to write the `@`."""
    result = run(*command, db=url, timeout=60)
    line = one_line(result, 1)
    assert "ret" not in line.replace("postgresql", ""), line
    assert "S3c" not in line, line
    assert "alice:***@127.0.0.1" in line, line
    assert "%40" in line, line
