"""The one engine factory, the schema check, and write transactions.

SQLite: foreign keys on, WAL, a busy timeout and full sync through a connect
event; write transactions start with `BEGIN IMMEDIATE` so that concurrent
writers queue on the lock instead of failing on a lock upgrade. PostgreSQL: a
write transaction takes one transaction-scoped advisory lock, so the hash chain
is appended by one writer at a time on either backend.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, NoSuchModuleError

from ledger.core.errors import InputError, SchemaError

# The newest migration; `ledger init` upgrades to it and every other command
# checks for it (a test keeps it equal to Alembic's head).
SCHEMA_REVISION = "0008"
BUSY_TIMEOUT_MS = 60_000
_PG_LOCK_KEY = 0x1ED6E7  # advisory lock that serializes chain appends


def sqlite_path(url: str) -> str | None:
    """The file path of a SQLite URL, or None for other backends and memory."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    if parsed.database == ":memory:":
        return None
    return parsed.database


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy's begin event issue BEGIN itself (pysqlite's own implicit
    # transactions would defer the lock and break BEGIN IMMEDIATE).
    dbapi_connection.isolation_level = None
    cur = dbapi_connection.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys = ON")
    cur.execute("PRAGMA journal_mode = WAL")
    cur.execute("PRAGMA synchronous = FULL")
    cur.close()


def _on_sqlite_begin(conn: Connection) -> None:
    mode = "IMMEDIATE" if conn.get_execution_options().get("ledger_write") else "DEFERRED"
    conn.exec_driver_sql(f"BEGIN {mode}")


def make_engine(url: str, *, create: bool = False) -> Engine:
    """Create the engine for `url`; `create` allows a new SQLite file (owner-only).

    Any other command on a missing SQLite file is refused with the fix to apply.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise InputError(f"--db: not a database URL or path: {url!r} ({exc})") from None
    path = sqlite_path(url)
    if path is not None:
        if os.path.isdir(path):
            raise InputError(f"--db: {path} is a directory; name a database file")
        if not os.path.exists(path):
            if not create:
                raise SchemaError(f"no ledger database at {path}; run `ledger init` first")
            parent = os.path.dirname(path) or "."
            if not os.path.isdir(parent):
                raise InputError(f"--db: folder {parent} does not exist")
            # Created readable by its owner only: chunk bodies may be confidential.
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                pass  # a concurrent `ledger init` created it first: same outcome
            except OSError as exc:
                raise InputError(f"--db: cannot create {path} ({exc.strerror})") from None
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
            event.listen(engine, "connect", _on_sqlite_connect)
            event.listen(engine, "begin", _on_sqlite_begin)
        else:
            engine = create_engine(url, pool_pre_ping=False)
    except (NoSuchModuleError, ImportError) as exc:
        raise InputError(
            f"--db: no driver for {parsed.drivername} ({exc}); for PostgreSQL install "
            "context-ledger[postgres] and use postgresql+psycopg://"
        ) from None
    return engine


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """One all-or-nothing write transaction holding the ledger's write lock."""
    with engine.connect() as plain:
        conn = plain.execution_options(ledger_write=True)
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
            yield conn


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    """A read transaction: one consistent snapshot for everything a command reads."""
    with engine.connect() as conn:
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield conn


def current_revision(conn: Connection) -> str | None:
    """The schema revision stored in the database, or None when it has none."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
    return row[0] if row else None


def check_database(engine: Engine, url: str) -> str | None:
    """Connect once and return the stored schema revision (None: no schema yet).

    A file that is not a SQLite database, or a server that cannot be reached,
    is one clear line instead of a driver traceback.
    """
    try:
        with engine.connect() as conn:
            return current_revision(conn)
    except DatabaseError as exc:
        engine.dispose()
        reason = " ".join(str(exc.orig).split())  # drivers' messages may span lines
        raise SchemaError(f"cannot open the database {_where(url)}: {reason}") from None


def open_engine(url: str) -> Engine:
    """The engine of an initialized ledger whose schema is current; else one clear line."""
    engine = make_engine(url)
    rev = check_database(engine, url)
    if rev is None:
        engine.dispose()
        raise SchemaError(f"{_where(url)} is not an initialized ledger; run `ledger init`")
    if rev != SCHEMA_REVISION:
        engine.dispose()
        if rev > SCHEMA_REVISION:
            raise SchemaError(
                f"{_where(url)} has schema {rev}, newer than this ledger's "
                f"{SCHEMA_REVISION}; upgrade context-ledger"
            )
        raise SchemaError(
            f"{_where(url)} has schema {rev}, this ledger needs {SCHEMA_REVISION}; "
            "run `ledger init` to upgrade it"
        )
    return engine


def describe(url: str) -> str:
    """The database as messages name it: a SQLite path, or the URL without its password."""
    return _where(url)


def _where(url: str) -> str:
    path = sqlite_path(url)
    return path if path else make_url(url).render_as_string(hide_password=True)


def fetch_tuples(conn: Connection, statement: Any) -> list[tuple[Any, ...]]:
    """All rows of a SELECT as plain tuples from the driver's cursor.

    For the bulk reads of the audit commands (hundreds of thousands of rows):
    SQLAlchemy's per-row result processing would double their cost. Only for
    statements whose parameters and columns need no type processing (integers,
    text), which holds for the ledger's own schema.
    """
    # render_postcompile: IN lists (a retrieval build's ids) become plain parameters.
    compiled = statement.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    params = compiled.params
    args: Any = tuple(params[k] for k in compiled.positiontup or ()) if compiled.positional else params
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(str(compiled), args)
        return list(cursor.fetchall())
    finally:
        cursor.close()
