"""Migrations against models, upgrade and downgrade on real databases, and the engine's pragmas.

The schema tests run on each backend, a SQLite file and a PostgreSQL database
(the `db_url` fixture). SQLite-only, because they are about the SQLite file or
connection itself: a missing file is not created, a file that is not a
database, a new file is owner-only, the pragmas on every connection, and BEGIN
IMMEDIATE taking the write lock at BEGIN (writers on PostgreSQL queue on an
advisory lock instead; tests/e2e/test_concurrency.py runs concurrent writers on
both backends).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, insert, inspect, text
from sqlalchemy.exc import IntegrityError

from ledger.api.ingest import ingest_files as ingest
from ledger.core.errors import SchemaError
from ledger.store.engine import (
    BUSY_TIMEOUT_MS,
    MMAP_BYTES,
    SCHEMA_REVISION,
    current_revision,
    make_engine,
    open_engine,
    write_transaction,
)
from ledger.store.fulltext import outside_models
from ledger.store.migrate import alembic_config, downgrade_to, upgrade_to_head
from ledger.store.schema import batches, metadata
from tests import dbtools
from tests.conftest import chunk, write_jsonl
from tests.dbtools import snapshot

TABLES = {
    "entries",
    "batches",
    "chunk_versions",
    "token_counts",
    "grants",
    "policies",
    "packs",
    "decisions",
}


def url(path: Path) -> str:
    return "sqlite:///" + str(path)


def test_exactly_one_head_and_it_is_the_code_revision() -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert script.get_heads() == [SCHEMA_REVISION]
    assert len(list(script.walk_revisions())) >= 1


def test_migration_scripts_come_from_the_package_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    location = Path(alembic_config().get_main_option("script_location") or "")
    assert location.is_absolute()
    assert (location / "versions" / "0001_initial.py").is_file()


def test_autogenerate_finds_no_difference_from_the_models(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn,
                opts={
                    "compare_type": True,
                    "render_as_batch": True,
                    "include_name": outside_models,
                },
            )
            diff = compare_metadata(context, metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_fresh_upgrade_creates_every_table(db_url: str) -> None:
    engine = open_engine(db_url)
    try:
        with engine.connect() as conn:
            assert TABLES <= set(inspect(conn).get_table_names())
            assert current_revision(conn) == SCHEMA_REVISION
    finally:
        engine.dispose()


def ingest_some(engine: Engine, tmp_path: Path, name: str = "a.jsonl") -> None:
    path = write_jsonl(tmp_path / name, [chunk(id=f"m-{i}", dedupe_key=f"m-{i}") for i in range(5)])
    ingest(engine, [str(path)])


def test_upgrade_ingest_downgrade_upgrade(db_url: str, tmp_path: Path) -> None:
    engine = make_engine(db_url)
    try:
        ingest_some(engine, tmp_path)
        downgrade_to(engine, "base")
        with engine.connect() as conn:
            assert current_revision(conn) is None
            assert not TABLES & set(inspect(conn).get_table_names())
        assert upgrade_to_head(engine) == (None, SCHEMA_REVISION)
        with engine.connect() as conn:
            assert TABLES <= set(inspect(conn).get_table_names())
        ingest_some(engine, tmp_path)  # the rebuilt schema works
        assert snapshot(db_url).counts["chunk_versions"] == 5
    finally:
        engine.dispose()


def test_upgrading_a_current_database_keeps_its_data(db_url: str, tmp_path: Path) -> None:
    engine = make_engine(db_url)
    try:
        ingest_some(engine, tmp_path)
        before = snapshot(db_url)
        assert before.counts["chunk_versions"] == 5
        assert upgrade_to_head(engine) == (SCHEMA_REVISION, SCHEMA_REVISION)
        assert snapshot(db_url) == before
    finally:
        engine.dispose()


def test_a_database_without_schema_says_run_ledger_init(empty_db_url: str) -> None:
    if not dbtools.is_pg(empty_db_url):
        sqlite3.connect(dbtools.sqlite_file(empty_db_url)).close()  # an empty SQLite file
    with pytest.raises(SchemaError) as info:
        open_engine(empty_db_url)
    assert "run `ledger init`" in str(info.value) and "\n" not in str(info.value)


def test_a_database_behind_the_code_says_run_ledger_init(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        downgrade_to(engine, "base")
        with write_transaction(engine) as conn:
            conn.execute(text("INSERT INTO alembic_version (version_num) VALUES ('0000')"))
    finally:
        engine.dispose()
    with pytest.raises(SchemaError, match="has schema 0000, .*run `ledger init`"):
        open_engine(db_url)


def test_a_database_ahead_of_the_code_is_refused(db_url: str) -> None:
    with dbtools.connect(db_url) as con:
        assert dbtools.execute(con, db_url, "UPDATE alembic_version SET version_num = '9999'") == 1
    with pytest.raises(SchemaError, match="upgrade context-ledger"):
        open_engine(db_url)
    engine = make_engine(db_url)
    try:
        with pytest.raises(SchemaError, match="does not know"):
            upgrade_to_head(engine)
    finally:
        engine.dispose()


def test_a_missing_database_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "missing.db"
    with pytest.raises(SchemaError, match="no ledger database at .*run `ledger init`"):
        open_engine(url(path))
    assert not path.exists()


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are not the pages you are looking for\n" * 100)
    with pytest.raises(SchemaError, match="cannot open the database .*not a database"):
        open_engine(url(path))


def test_new_database_file_is_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    engine = make_engine(url(path), create=True)
    try:
        assert path.stat().st_mode & 0o777 == 0o600
        upgrade_to_head(engine)
        ingest_some(engine, tmp_path)
    finally:
        engine.dispose()
    for p in tmp_path.glob("new.db*"):  # the WAL and shared-memory files too
        assert p.stat().st_mode & 0o777 == 0o600, p


@pytest.mark.parametrize(
    "pragma, expected",
    [
        ("foreign_keys", 1),
        ("journal_mode", "wal"),
        ("busy_timeout", BUSY_TIMEOUT_MS),
        ("synchronous", 2),
        ("mmap_size", MMAP_BYTES),
    ],
)
def test_pragmas_on_every_engine_connection(db_path: Path, pragma: str, expected: object) -> None:
    engine = open_engine(url(db_path))
    try:
        # Several pooled connections, in and outside write transactions.
        with engine.connect() as a, engine.connect() as b:
            for conn in (a, b):
                assert conn.exec_driver_sql(f"PRAGMA {pragma}").scalar() == expected
        with write_transaction(engine) as conn:
            assert conn.exec_driver_sql(f"PRAGMA {pragma}").scalar() == expected
    finally:
        engine.dispose()
    assert BUSY_TIMEOUT_MS >= 1000


def test_foreign_keys_are_enforced(db_url: str) -> None:
    engine = open_engine(db_url)
    try:
        with pytest.raises(IntegrityError):
            with write_transaction(engine) as conn:
                conn.execute(
                    insert(batches).values(
                        seq=42, read_count=0, new_count=0, unchanged_count=0, sources="[]"
                    )
                )
    finally:
        engine.dispose()


def test_write_transactions_take_the_write_lock_at_begin(db_path: Path) -> None:
    """BEGIN IMMEDIATE: a second writer cannot start while the first holds the lock."""
    engine = open_engine(url(db_path))
    try:
        with write_transaction(engine):
            other = sqlite3.connect(db_path, timeout=0, isolation_level=None)
            try:
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    other.execute("BEGIN IMMEDIATE")
            finally:
                other.close()
    finally:
        engine.dispose()


def table_rows(db: str, tables: tuple[str, ...]) -> dict[str, list[tuple[object, ...]]]:
    return {t: dbtools.query(db, f'SELECT * FROM "{t}" ORDER BY 1') for t in tables}


def test_every_older_revision_upgrades_with_its_data(db_url: str, tmp_path: Path) -> None:
    """Step down to each earlier revision and back up: the ledger's data survives."""
    script = ScriptDirectory.from_config(alembic_config())
    older = [r.revision for r in script.walk_revisions() if r.revision != SCHEMA_REVISION]
    kept = ("entries", "batches", "chunk_versions")
    engine = make_engine(db_url)
    try:
        ingest_some(engine, tmp_path)
        before = table_rows(db_url, kept)
        for revision in older:
            downgrade_to(engine, revision)
            with engine.connect() as conn:
                assert current_revision(conn) == revision
            # An older revision has fewer columns (added at the end): compare those.
            down = table_rows(db_url, kept)
            assert {
                t: [r[: len(rows[0])] for r in before[t]] if rows else []
                for t, rows in down.items()
            } == down
            assert all(len(down[t]) == len(before[t]) for t in kept)
            assert upgrade_to_head(engine) == (revision, SCHEMA_REVISION)
            assert table_rows(db_url, kept) == before
    finally:
        engine.dispose()
    assert older, "no older revision to upgrade from"
    open_engine(db_url).dispose()  # current again: commands accept it


def test_a_downgrade_that_would_drop_hashed_document_fields_refuses(
    db_url: str, tmp_path: Path
) -> None:
    """Issue 38, item 11: `alembic downgrade 0006` dropped `title` and `path`,
    which record digests cover; after upgrading again `verify` exited 4."""
    import ledger

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[source]\nname = "kb"\nuri = "https://example.org/{path}"\n\n[[rule]]\nmatch = "**"\n'
        'section = "evidence"\ntrust = "approved-source"\nrequired_permission = "kb-read"\n'
        "priority = 50\n",
        encoding="utf-8",
    )
    with ledger.open(db_url) as lg:
        lg.ingest_paths([str(docs)], rules=str(rules))
    before = snapshot(db_url)
    engine = make_engine(db_url)
    try:
        with pytest.raises(RuntimeError, match="record digests cover the title and path"):
            downgrade_to(engine, "0006")
    finally:
        engine.dispose()
    assert snapshot(db_url) == before
    with ledger.open(db_url) as lg:
        assert lg.verify().ok
