"""One way for tests to make, copy, read and tamper with a ledger database on
either backend: a SQLite file or a database on the throwaway PostgreSQL server.

A ledger under test is named by the string the CLI takes for `--db`: a file path
for SQLite, a `postgresql+psycopg://` URL for PostgreSQL. Raw SQL goes through
the driver itself (`sqlite3` or `psycopg`), as an attacker with access to the
database would use it, never through the project's code. SQL is written with
`?` placeholders and rewritten to `%s` for psycopg.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import run_ledger

# Set by the `pg_server` fixture of tests/conftest.py for the whole session.
SERVER: Any = None
TABLES = ("entries", "chunk_versions", "batches", "grants", "policies", "packs", "decisions")


def is_pg(db: str | Path) -> bool:
    return str(db).startswith("postgresql")


def _server() -> Any:
    if SERVER is None:
        raise RuntimeError(
            "no PostgreSQL server: request the `pg_server` fixture (tests/conftest.py)"
        )
    return SERVER


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def _db_name(url: str) -> str:
    return url.rsplit("/", 1)[1]


def new_database(folder: Path, backend: str, name: str = "ledger") -> str:
    """A database with no schema yet: a path in `folder`, or a new PostgreSQL database."""
    if backend == "sqlite":
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder / f"{name}.db")
    from tests import pgserver

    return pgserver.create_database(_server(), f"{name}_{os.getpid()}_{uuid.uuid4().hex[:10]}")


def new_ledger(folder: Path, backend: str = "sqlite", name: str = "ledger") -> str:
    """A new ledger, as `ledger init` makes one: a copy of the ledger that `ledger
    init` made once in this process (see `init_template`), with a ledger id of its
    own. A name already taken in `folder` gets `ledger init` itself."""
    if backend == "sqlite" and (folder / f"{name}.db").exists():
        db = new_database(folder, backend, name)
        run_ledger("init", db=db, check=True)
        return db
    return fresh_copy(init_template(backend), folder, name)


# One ledger per backend made by `ledger init` (the real command, the real
# migrations) in this process; every new ledger of the tests is a copy of it:
# migrating a database costs a second, copying a file or a template database a
# few milliseconds. The tests of `init` and the migrations themselves still run
# them on databases of their own (`empty_db_url`, tests/store/test_migrations.py).
_TEMPLATES: dict[tuple[str, str], str] = {}


def init_template(backend: str) -> str:
    """The ledger `ledger init` made once in this process for `backend` (made now
    if not yet). Never handed to a test: only copied."""
    key = (backend, "" if backend == "sqlite" else _server().url)
    if key not in _TEMPLATES:
        if backend == "sqlite":
            folder = Path(tempfile.mkdtemp(prefix="ledger-init-template-"))
            atexit.register(shutil.rmtree, folder, True)
            db = new_database(folder, backend, "template")
        else:
            db = new_database(Path(), backend, "template")
        run_ledger("init", db=db, check=True)
        _TEMPLATES[key] = db
    return _TEMPLATES[key]


# PostgreSQL copies are made one ahead, in a background thread: CREATE DATABASE
# runs in the server while the test that took the previous copy runs.
_AHEAD: dict[str, Future[str]] = {}
_MAKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger-pg-copies")


def forget_templates() -> None:
    """Drop the PostgreSQL templates and unused copies (before the server stops)."""
    for template, pending in list(_AHEAD.items()):
        drop(pending.result())
        del _AHEAD[template]
    for (backend, _), db in list(_TEMPLATES.items()):
        if backend != "sqlite":
            drop(db)
            del _TEMPLATES[(backend, _)]


def fresh_copy(template: str, folder: Path, name: str = "ledger") -> str:
    """A new ledger that is a copy of `template` (an initialized, never used
    ledger) with a new random ledger id, as the migration draws one for every
    new ledger: `folder/<name>.db`, owner-only as `ledger init` creates it, or a
    new PostgreSQL database made from the template (by CREATE DATABASE ...
    TEMPLATE, the next one made ahead while this one is used)."""
    if is_pg(template):
        pending = _AHEAD.pop(template, None)
        db = (
            pending.result()
            if pending is not None
            else _new_ledger_id(copy_ledger(template, folder))
        )
        _AHEAD[template] = _MAKER.submit(lambda: _new_ledger_id(copy_ledger(template, folder)))
        return db
    folder.mkdir(parents=True, exist_ok=True)
    db = str(folder / f"{name}.db")
    fd = os.open(db, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "wb") as out, open(sqlite_file(template), "rb") as src:
        shutil.copyfileobj(src, out)
    return _new_ledger_id(db)


def _new_ledger_id(db: str) -> str:
    """Give the copy `db` a random ledger id of its own, as the migration does."""
    with connect(db) as con:
        changed = execute(
            con,
            db,
            "UPDATE ledger_meta SET value = ? WHERE key = 'ledger_id'",
            (secrets.token_hex(16),),
        )
        assert changed == 1, changed
    return db


def copy_ledger(src: str | Path, dst: Path) -> str:
    """An exact copy of a ledger: the SQLite file (and its WAL files, if a writer
    left any) copied to `dst`, or a new PostgreSQL database made from `src` as
    its template (nobody may be connected to `src` meanwhile)."""
    if not is_pg(src):
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{sqlite_file(src)}{suffix}").exists():
                shutil.copyfile(f"{sqlite_file(src)}{suffix}", f"{dst}{suffix}")
        return str(dst)
    from tests import pgserver

    name = f"copy_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    return pgserver.create_database(_server(), name, template=_db_name(str(src)))


def drop(db: str | Path) -> None:
    """Drop a PostgreSQL database made by these helpers (a SQLite file goes with
    its pytest temporary folder), so that a long run does not fill the disk."""
    if not is_pg(db):
        return
    import psycopg

    with psycopg.connect(_libpq(_server().url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{_db_name(str(db))}" WITH (FORCE)')


@contextmanager
def connect(db: str | Path) -> Iterator[Any]:
    """A raw driver connection; committed on success, rolled back on error."""
    if is_pg(db):
        import psycopg

        with psycopg.connect(_libpq(str(db))) as conn:  # commits on a clean exit
            yield conn
        return
    con = sqlite3.connect(sqlite_file(db))
    try:
        yield con
        con.commit()
    finally:
        con.close()


def sqlite_file(db: str | Path) -> str:
    """The file of a SQLite ledger named by a path or a `sqlite:///` URL."""
    text = str(db)
    return text[len("sqlite:///") :] if text.startswith("sqlite:///") else text


def _sql(db: str | Path, sql: str) -> str:
    return sql.replace("?", "%s") if is_pg(db) else sql


def query(db: str | Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with connect(db) as con:
        return [tuple(r) for r in con.execute(_sql(db, sql), params).fetchall()]


def execute(con: Any, db: str | Path, sql: str, params: tuple[Any, ...] = ()) -> int:
    """Run one statement on an open connection; return how many rows it changed."""
    cur = con.execute(_sql(db, sql), params)
    return int(cur.rowcount)


def tables(db: str | Path) -> list[str]:
    """The database's tables (the ledger's and Alembic's), sorted."""
    return sorted(r[0] for r in query(db, _PG_TABLES if is_pg(db) else _SQLITE_TABLES))


# The catalog of a PostgreSQL database: every column with its type, default and
# nullability, every constraint and every index of the public schema. On SQLite
# `iterdump()` gives the same (and every row) as SQL text.
_PG_TABLES = "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
_PG_CATALOG = (
    "SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
    "pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
    "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 "
    "AND NOT a.attisdropped",
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE connamespace = 'public'::regnamespace",
    "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
)
_SQLITE_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"


@dataclass(frozen=True)
class Snapshot:
    """A ledger's content at one moment; equal snapshots: "the database is unchanged"."""

    counts: dict[str, int]  # rows of every table, the ledger's and Alembic's
    head: tuple[int, str] | None  # (seq, entry_hash) of the last entry
    dump: dict[str, list[tuple[Any, ...]]]  # every row of every table, in a stable order
    schema: tuple[Any, ...]  # SQLite: iterdump(), schema and rows; PostgreSQL: the catalog


def snapshot(db: str | Path) -> Snapshot:
    """Every row of every table (the ledger's, Alembic's and the token cache),
    the chain head and the schema, read through one connection."""
    pg = is_pg(db)
    with connect(db) as con:
        names = sorted(r[0] for r in con.execute(_PG_TABLES if pg else _SQLITE_TABLES))
        assert set(TABLES) <= set(names), names
        dump = {
            t: sorted((tuple(r) for r in con.execute(f'SELECT * FROM "{t}"')), key=repr)
            for t in names
        }
        last = "SELECT seq, entry_hash FROM entries ORDER BY seq DESC LIMIT 1"
        head = con.execute(last).fetchone()
        if pg:
            schema: tuple[Any, ...] = tuple(
                sorted((tuple(r) for r in con.execute(sql)), key=repr) for sql in _PG_CATALOG
            )
        else:
            schema = tuple(con.iterdump())
    counts = {t: len(rows) for t, rows in dump.items()}
    return Snapshot(counts, None if head is None else (int(head[0]), str(head[1])), dump, schema)


def rebuild_merkle_tree(db: str | Path) -> None:
    """What an attacker who rewrote the entries does next: recompute the whole
    Merkle tree from them, so the database is consistent in itself again."""
    from ledger.core.merkle import entry_leaf, levels_of

    hashes = [h for (h,) in query(db, "SELECT entry_hash FROM entries ORDER BY seq")]
    rows = [
        (level, idx, h.hex())
        for level, row in enumerate(levels_of([entry_leaf(x) for x in hashes]))
        for idx, h in enumerate(row)
    ]
    with connect(db) as con:
        execute(con, db, "DELETE FROM merkle_nodes")
        if is_pg(db):
            with con.cursor() as cur:
                cur.executemany(_sql(db, "INSERT INTO merkle_nodes VALUES (?, ?, ?)"), rows)
        else:
            con.executemany("INSERT INTO merkle_nodes VALUES (?, ?, ?)", rows)
