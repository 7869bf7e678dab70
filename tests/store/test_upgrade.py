"""Upgrading a ledger written by the first released schema (revision 0001).

`fixtures/ledger-schema-0001.db` was written by commit 979e3ea's own code (see
fixtures/README.md): the `make demo` history, 8 entries and 2 packs. `ledger
init` must upgrade it to the newest schema keeping every record and digest, and
first keep a copy of it, `<file>.bak-0001-<UTC timestamp>`, owner-only, made
with SQLite's online backup API (so rows still in the WAL are in the copy).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from ledger.store.engine import SCHEMA_REVISION
from tests.clitools import file_size_limit, one_error_line, run, sqlite_url, state, write_generated
from tests.conftest import ROOT

OLD = ROOT / "fixtures" / "ledger-schema-0001.db"
TABLES = (
    "entries",
    "batches",
    "chunk_versions",
    "token_counts",
    "grants",
    "policies",
    "packs",
    "decisions",
)
BACKUP = re.compile(r"^(?P<where>.+): backed up schema 0001 to (?P<path>.+)$")


# Columns later revisions add to the tables of 0001 (0002: scope; 0005: retrieval;
# 0006: trace; 0007: documents).
ADDED = (
    "scope",
    "retrieval",
    "trace_id",
    "span_id",
    "title",
    "path",
    "loc_kind",
    "loc_first",
    "loc_last",
    "retain_bodies",  # revision 0009: no old policy had a retention
)


def rows(path: Path, *, drop: tuple[str, ...] = ()) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every ledger table, in primary-key order, without `drop` columns."""
    con = sqlite3.connect(path)
    try:
        out = {}
        for table in TABLES:
            info = con.execute(f'PRAGMA table_info("{table}")')
            columns = [r[1] for r in info if r[1] not in drop]
            order = ", ".join(str(i + 1) for i in range(len(columns)))
            out[table] = con.execute(
                f'SELECT {", ".join(columns)} FROM "{table}" ORDER BY {order}'
            ).fetchall()
        return out
    finally:
        con.close()


def revision(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        return str(con.execute("SELECT version_num FROM alembic_version").fetchone()[0])
    finally:
        con.close()


def pack_columns(path: Path) -> list[str]:
    con = sqlite3.connect(path)
    try:
        return [r[1] for r in con.execute('PRAGMA table_info("packs")')]
    finally:
        con.close()


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    """A private copy of the 0001 ledger (owner-only, as `ledger init` makes them)."""
    path = tmp_path / "ledger.db"
    shutil.copyfile(OLD, path)
    os.chmod(path, 0o600)
    return path


def backups(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if ".bak-" in p.name)


def test_the_fixture_is_a_small_schema_0001_ledger() -> None:
    assert OLD.stat().st_size < 200_000
    assert revision(OLD) == "0001"
    assert "scope" not in pack_columns(OLD)
    counts = {t: len(r) for t, r in rows(OLD).items()}
    assert counts == {
        "entries": 8,
        "batches": 2,
        "chunk_versions": 13,
        "token_counts": 0,
        "grants": 5,
        "policies": 2,
        "packs": 2,
        "decisions": 24,
    }
    assert not Path(str(OLD) + "-wal").exists()


def test_init_upgrades_keeping_every_record_and_a_backup(old_db: Path) -> None:
    before = rows(old_db)
    result = run("init", db=old_db, check=True)
    lines = result.stderr.splitlines()
    assert lines[-1] == f"{old_db}: upgraded schema 0001 -> {SCHEMA_REVISION}"
    match = BACKUP.match(lines[0])
    assert match is not None, result.stderr
    backup = Path(match["path"])
    # <file>.bak-<old revision>-<UTC timestamp>
    assert re.fullmatch(re.escape(str(old_db)) + r"\.bak-0001-\d{8}T\d{6}Z", str(backup)), backup
    assert backups(old_db.parent) == [backup]

    # Every record and digest kept; the new columns say what every old pack was
    # (a document pack, no retrieval).
    assert revision(old_db) == SCHEMA_REVISION
    assert rows(old_db, drop=ADDED) == before
    con = sqlite3.connect(old_db)
    try:
        assert con.execute("SELECT DISTINCT scope FROM packs").fetchall() == [("documents",)]
        assert con.execute("SELECT DISTINCT retrieval FROM packs").fetchall() == [(None,)]
    finally:
        con.close()
    # The backup: owner-only, the old schema, the same rows.
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert revision(backup) == "0001"
    assert "scope" not in pack_columns(backup)
    assert rows(backup) == before

    # The upgraded ledger answers the read commands.
    assert run("show", "1", "--json", db=old_db).returncode == 0
    assert run("why-evicted", "refund-faq", db=old_db).returncode == 0
    diff = json.loads(run("diff", "1", "2", "--json", db=old_db, check=True).stdout)
    assert len(diff["changes"]) == 5
    # A second init finds it current and writes no second backup.
    again = run("init", db=old_db, check=True)
    assert again.stderr.strip() == f"{old_db}: schema {SCHEMA_REVISION} is current"
    assert backups(old_db.parent) == [backup]


def test_upgraded_packs_verify_and_replay(old_db: Path) -> None:
    run("init", db=old_db, check=True)
    verified = json.loads(run("verify", "--json", db=old_db).stdout)
    assert verified["ok"] is True, verified
    assert verified["entries"] == 8
    for pack in ("1", "2"):
        replayed = run("replay", pack, db=old_db)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr


def test_upgraded_ledger_takes_new_entries(old_db: Path, tmp_path: Path) -> None:
    run("init", db=old_db, check=True)
    extra = write_generated(tmp_path / "extra.jsonl", 5, "extra-")
    ingested = run("ingest", "--json", str(extra), db=old_db, check=True)
    assert json.loads(ingested.stdout)["batch"] == 9
    built = json.loads(
        run("build", "--as-of", "2026-09-02", "--json", db=old_db, check=True).stdout
    )
    assert (built["pack"], built["entry"]) == (3, 10)
    assert run("replay", "3", db=old_db).returncode == 0


def test_backup_includes_what_is_still_in_the_wal(old_db: Path, tmp_path: Path) -> None:
    """Rows committed to the WAL but not yet checkpointed are in the backup."""
    holder = sqlite3.connect(old_db)  # while it is open, nothing checkpoints the WAL away
    try:
        holder.execute("SELECT count(*) FROM entries").fetchone()
        # A late write in schema 0001's own terms (today's code also writes the
        # Merkle tree of 0006): a grant entry and its row, committed to the WAL.
        late = sqlite3.connect(old_db)
        try:
            (prev,) = late.execute("SELECT entry_hash FROM entries WHERE seq = 8").fetchone()
            late.execute(
                "INSERT INTO entries (seq, kind, payload_digest, prev_hash, entry_hash,"
                " recorded_at) VALUES (9, 'grant', ?, ?, ?, '2026-12-01T00:00:00+00:00')",
                ("1" * 64, prev, "9" * 64),
            )
            late.execute(
                "INSERT INTO grants (entry_seq, subject, permission, action)"
                " VALUES (9, 'late', 'late-read', 'grant')"
            )
            late.commit()
        finally:
            late.close()
        wal = Path(str(old_db) + "-wal")
        assert wal.stat().st_size > 0
        main_only = tmp_path / "main-only.db"
        shutil.copyfile(old_db, main_only)  # the main file alone: the new rows are not there
        assert len(rows(main_only)["entries"]) == 8
        expected = rows(old_db)
        assert len(expected["entries"]) == 9

        result = run("init", db=old_db, check=True)
    finally:
        holder.close()
    match = BACKUP.match(result.stderr.splitlines()[0])
    assert match is not None, result.stderr
    backup = Path(match["path"])
    assert revision(backup) == "0001"
    assert rows(backup) == expected
    assert rows(old_db, drop=ADDED) == expected


def test_no_upgrade_without_a_backup(old_db: Path) -> None:
    """A disk that cannot hold the copy: one line, exit 1, the file left at 0001."""
    before = state(sqlite_url(old_db))
    size = old_db.stat().st_size
    result = run("init", db=old_db, preexec_fn=file_size_limit(size // 2))
    message = one_error_line(result)
    assert "cannot write the backup" in message and "not upgraded" in message, message
    assert revision(old_db) == "0001"
    assert state(sqlite_url(old_db)) == before
    assert backups(old_db.parent) == []


def test_init_help_documents_the_backup() -> None:
    text = " ".join(run("init", "--help", check=True).stdout.split())
    assert "FILE.bak-REV-YYYYMMDDTHHMMSSZ" in text
    assert "online backup API" in text and "owner only" in text


def test_upgrade_from_0001_on_both_backends(db_url: str) -> None:
    """Downgraded to 0001 and upgraded again; only a SQLite file gets a copy."""
    from ledger.store.engine import make_engine
    from ledger.store.migrate import downgrade_to

    engine = make_engine(db_url)
    try:
        downgrade_to(engine, "0001")
    finally:
        engine.dispose()
    result = run("init", db=db_url, check=True)
    lines = result.stderr.splitlines()
    assert lines[-1].endswith(f"upgraded schema 0001 -> {SCHEMA_REVISION}")
    if db_url.startswith("sqlite"):
        assert BACKUP.match(lines[0]) is not None
        assert len(lines) == 2
    else:
        assert len(lines) == 1  # PostgreSQL: pg_dump is the user's backup, as --help says
