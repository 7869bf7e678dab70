"""The one engine factory, the schema check, and write transactions.

SQLite: foreign keys on, WAL, a busy timeout and full sync through a connect
event; write transactions start with `BEGIN IMMEDIATE` so that concurrent
writers queue on the lock instead of failing on a lock upgrade. PostgreSQL: a
write transaction takes one transaction-scoped advisory lock, so the hash chain
is appended by one writer at a time on either backend.
"""

from __future__ import annotations

import itertools
import os
import re
from collections import namedtuple
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, DBAPIError, NoSuchModuleError

from ledger.core.errors import InputError, SchemaError

try:
    import fcntl as _fcntl
except ImportError:  # Windows: SQLite's own retry orders the writers
    _fcntl = None  # type: ignore[assignment]
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

# The newest migration; `ledger init` upgrades to it and every other command
# checks for it (a test keeps it equal to Alembic's head).
SCHEMA_REVISION = "0012"
BUSY_TIMEOUT_MS = 60_000
# SQLite reads the first MMAP_BYTES of a ledger file through a memory map (the
# operating system's page cache, shared by every connection) instead of copying
# each page with a read call into its own small cache. Address space only, no
# memory of its own; writes are unchanged (docs/architecture.md, "Speed").
MMAP_BYTES = 1 << 30
_PG_LOCK_KEY = 0x1ED6E7  # advisory lock that serializes chain appends


# Query keys whose values are secrets (libpq honours `?password=`), or point at
# them: masked in every message, as SQLAlchemy masks the userinfo password.
_SECRET_KEY = re.compile(r"pass|secret|token|sslkey|credential", re.IGNORECASE)
_QUERY_VALUE = re.compile(r"([?&]([^=&#]*)=)([^&#]*)")
_USERINFO_PASSWORD = re.compile(r"^([a-z][a-z0-9+.-]*://[^:/?#@]*:)[^@/?#]*@", re.IGNORECASE)
# `scheme://user:` and everything up to the LAST `@`: the password of a URL whose
# userinfo is ambiguous (an unescaped `@` in the password).
_AMBIGUOUS_PASSWORD = re.compile(r"^([a-z][a-z0-9+.-]*://[^:/?#@]*:).*@", re.IGNORECASE | re.DOTALL)
AMBIGUOUS_USERINFO = (
    "the URL holds more than one '@' (write an '@' in the user name or password as %40)"
)


def ambiguous_userinfo(url: str) -> bool:
    """True when a URL holds more than one `@` after `scheme://`: the password may
    hold an unescaped `@`, and no parser can tell where it ends. SQLAlchemy ends
    it at the first `@` and takes the rest for the host, so the rest of the
    password would be shown as the host, by `display_url` and in the driver's
    own errors (`failed to resolve host 'ret@127.0.0.1'`)."""
    return url.partition("://")[2].count("@") > 1


def display_url(url: str) -> str:
    """A database URL as messages show it: no password, in the userinfo or the query.

    Rendered through SQLAlchemy's password-hiding form when it parses; the
    query values of password-like keys (`password`, `sslpassword`, `passfile`,
    ...) are then replaced by `***` too. A URL that does not parse is masked
    the same way by pattern, so even a malformed URL never shows its secret.
    A URL with more than one `@` (`ambiguous_userinfo`) is masked from
    `scheme://user:` up to its last `@`, never parsed: no part of a password
    that holds an unescaped `@` is shown as the host.
    """
    if ambiguous_userinfo(url):
        return _QUERY_VALUE.sub(_mask_query, _AMBIGUOUS_PASSWORD.sub(r"\1***@", url))
    return _QUERY_VALUE.sub(_mask_query, _rendered_without_password(url))


def _mask_query(m: re.Match[str]) -> str:
    """A query `key=value` with the value of a password-like key as `***`."""
    return m.group(1) + "***" if _SECRET_KEY.search(m.group(2)) else m.group(0)


def _rendered_without_password(url: str) -> str:
    """The URL with its userinfo password as `***` (SQLAlchemy's form, or by pattern)."""
    try:
        text = make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError, TypeError):
        text = _USERINFO_PASSWORD.sub(r"\1***@", url)
    return text


def parse_url(url: str) -> URL:
    """The SQLAlchemy URL of a database argument, or one line (InputError) naming
    it, secrets masked."""
    try:
        return make_url(url)
    except (ArgumentError, ValueError, TypeError) as exc:
        # A port `:abc` or an unclosed `[::1` raise ValueError from deep inside.
        reason = " ".join(str(exc).split())
        if ambiguous_userinfo(url):
            reason = AMBIGUOUS_USERINFO  # the parser's words may quote the password
        elif url in reason:
            reason = reason.replace(url, display_url(url))
        raise _db_error(
            f"not a database URL or path: {display_url(url)} ({reason}); "
            "give a file path or a URL such as postgresql+psycopg://user@host:5432/name"
        ) from None


def _db_error(message: str) -> InputError:
    """An error about the database a ledger is opened at (`ledger.open`'s argument)."""
    return InputError(f"path_or_url: {message}", param="path_or_url")


def sqlite_path(url: str) -> str | None:
    """The file path of a SQLite URL, or None for other backends and memory."""
    parsed = parse_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    if parsed.database == ":memory:":
        return None
    if parsed.query.get("uri") == "true" and parsed.database.startswith("file:"):
        # SQLite's URI form (`sqlite:///file:/path/ledger.db?mode=ro&uri=true`).
        return parsed.database[len("file:") :] or None
    return parsed.database


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy's begin event issue BEGIN itself (pysqlite's own implicit
    # transactions would defer the lock and break BEGIN IMMEDIATE).
    dbapi_connection.isolation_level = None
    cur = dbapi_connection.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys = ON")
    # No `journal_mode = WAL` here: it would rewrite any file it is pointed at
    # (another application's database, a 0-byte file) before the schema check
    # knows it is a ledger. WAL is persistent, so `use_wal` sets it once, when
    # `ledger init` has made or found a ledger.
    cur.execute("PRAGMA synchronous = FULL")
    cur.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    cur.close()


def _on_sqlite_begin(conn: Connection) -> None:
    mode = "IMMEDIATE" if conn.get_execution_options().get("ledger_write") else "DEFERRED"
    conn.exec_driver_sql(f"BEGIN {mode}")


def make_engine(url: str, *, create: bool = False) -> Engine:
    """Create the engine for `url`; `create` allows a new SQLite file (owner-only).

    Any other command on a missing SQLite file is refused with the fix to apply.
    """
    parsed = parse_url(url)
    path = sqlite_path(url)
    if path is not None:
        if os.path.isdir(path):
            raise _db_error(f"{path} is a directory; name a database file")
        if not os.path.exists(path):
            if not create:
                raise SchemaError(f"no ledger database at {path}; run `ledger init` first")
            parent = os.path.dirname(path) or "."
            if not os.path.isdir(parent):
                raise _db_error(f"folder {parent} does not exist")
            # Created readable by its owner only: chunk bodies may be confidential.
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                pass  # a concurrent `ledger init` created it first: same outcome
            except OSError as exc:
                raise _db_error(f"cannot create {path} ({exc.strerror})") from None
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
            event.listen(engine, "connect", _on_sqlite_connect)
            event.listen(engine, "begin", _on_sqlite_begin)
        else:
            engine = create_engine(url, pool_pre_ping=False)
    except (NoSuchModuleError, ImportError) as exc:
        raise _db_error(
            f"no driver for {parsed.drivername} ({exc}); for PostgreSQL install "
            "context-ledger[postgres] and use postgresql+psycopg://"
        ) from None
    except (ArgumentError, ValueError, TypeError) as exc:
        # Query arguments the dialect cannot take (`?port=x`, an unknown option).
        reason = AMBIGUOUS_USERINFO if ambiguous_userinfo(url) else " ".join(str(exc).split())
        raise _db_error(f"cannot use the database URL {display_url(url)}: {reason}") from None
    return engine


def use_wal(engine: Engine) -> None:
    """Switch a SQLite ledger to WAL (persistent in the file); nothing elsewhere.

    Called by `ledger init` once the file is known to be a ledger (or was empty).
    """
    if engine.dialect.name != "sqlite":
        return
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute("PRAGMA journal_mode = WAL")
        cur.close()
    finally:
        raw.close()


# Beside a SQLite ledger `ledger.db`: `ledger.db-writer`, the file whose lock
# the writers queue on (`writer_lock`).
WRITER_LOCK_SUFFIX = "-writer"


@contextmanager
def writer_lock(engine: Engine) -> Iterator[None]:
    """SQLite's writers wait for each other here, in the kernel, before BEGIN
    IMMEDIATE: an exclusive `flock` on `<database>-writer` (made owner-only on
    first use), released when the transaction has ended.

    Why: SQLite itself makes a writer that finds the lock taken sleep and retry
    (1, 2, 5, 10, 20 ... ms), so while one process appends, another sleeps
    longer than the append takes, and two building processes built fewer packs
    than one. A waiter on a `flock` wakes when it is released. It only orders
    this ledger's own writers (SQLite's locks still guard the file); without
    `fcntl` (Windows) or the file (a read-only folder), SQLite's retry is left.
    PostgreSQL's writers queue on an advisory lock instead (`write_transaction`).
    """
    path = None
    if engine.dialect.name == "sqlite":
        path = sqlite_path(engine.url.render_as_string(hide_password=False))
    fd = None
    if path is not None and _fcntl is not None:
        try:
            fd = os.open(path + WRITER_LOCK_SUFFIX, os.O_RDWR | os.O_CREAT | _CLOEXEC, 0o600)
        except OSError:
            fd = None
    try:
        if fd is not None:
            _fcntl.flock(fd, _fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing releases the lock


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """One all-or-nothing write transaction holding the ledger's write lock."""
    with _locked(engine, commit=True) as conn:
        yield conn


@contextmanager
def _locked(engine: Engine, *, commit: bool) -> Iterator[Connection]:
    """A transaction holding the write lock: committed at the end when `commit`
    (an exception rolls it back), else always rolled back."""
    with writer_lock(engine), engine.connect() as plain:
        conn = plain.execution_options(ledger_write=True)
        transaction = conn.begin()
        try:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
            yield conn
        except BaseException:
            transaction.rollback()
            raise
        if commit:
            transaction.commit()
        else:
            transaction.rollback()


@contextmanager
def rehearsal_transaction(engine: Engine) -> Iterator[Connection]:
    """A write transaction that is always rolled back: what a write would do,
    asked of the ledger and then undone (`ledger check` records a failing case's
    pack in one to ask `why` about it). The database ends exactly as it was."""
    with _locked(engine, commit=False) as conn:
        yield conn


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    """A read transaction: one consistent snapshot for everything a command reads."""
    with engine.connect() as conn:
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield conn


def sqlite_open_failure(reason: str) -> str:
    """SQLite's words for a ledger file it cannot open, with the advice that fits.

    A ledger file is in WAL mode: even a reader needs its -wal and -shm files,
    which SQLite makes beside it; in a folder this user may not write, the file
    is read as immutable (https://sqlite.org/uri.html#uriimmutable).

    >>> sqlite_open_failure("disk I/O error")
    'disk I/O error'
    """
    if "readonly" not in reason.replace("-", "").replace(" ", ""):
        return reason
    return (
        f"{reason} (a ledger's reader needs its -wal and -shm files beside it, and this "
        "user may not write there: run it where the folder may be written, or, while no "
        "one writes the ledger, open it through the URL "
        "'sqlite:///file:PATH?mode=ro&immutable=1&uri=true')"
    )


def current_revision(conn: Connection) -> str | None:
    """The schema revision stored in the database, or None when it has none."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    rows = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    if len(rows) > 1:
        # Alembic itself would stop with a traceback ("multiple heads").
        raise SchemaError(
            f"the database has {len(rows)} rows in alembic_version (one expected): it was "
            "altered; restore it from a backup"
        )
    return str(rows[0][0]) if rows else None


def foreign_tables(conn: Connection) -> list[str]:
    """Tables of a database without a ledger schema: a foreign database `init` refuses."""
    return sorted(t for t in inspect(conn).get_table_names() if t != "alembic_version")


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
        if ambiguous_userinfo(url):
            # The driver quotes what it took for the host: part of the password.
            reason = f"cannot connect, and {AMBIGUOUS_USERINFO}"
        elif engine.dialect.name == "sqlite":
            reason = sqlite_open_failure(reason)
        raise SchemaError(f"cannot open the database {_where(url)}: {reason}") from None
    except UnicodeError:
        # The driver resolves the host with the IDNA codec, which refuses some names.
        engine.dispose()
        raise SchemaError(
            f"cannot open the database {_where(url)}: its host is not a valid host name"
        ) from None


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
    return path if path else display_url(url)


def _driver_statement(conn: Connection, statement: Any) -> tuple[str, Any]:
    """A SQLAlchemy statement as the driver's SQL text and parameters."""
    # render_postcompile: IN lists (a retrieval build's ids) become plain parameters.
    compiled = statement.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    params = compiled.params
    args: Any = (
        tuple(params[k] for k in compiled.positiontup or ()) if compiled.positional else params
    )
    return str(compiled), args


@contextmanager
def _driver_errors(conn: Connection, statement: str) -> Iterator[None]:
    """A driver's failure on a raw cursor raised as SQLAlchemy's DBAPIError, as
    every other statement's (the CLI turns those into one line), without the
    parameters (they may hold chunk bodies)."""
    dbapi_error = conn.dialect.loaded_dbapi.Error
    try:
        yield
    except dbapi_error as exc:
        raise DBAPIError.instance(
            statement, None, exc, dbapi_error, hide_parameters=True, dialect=conn.dialect
        ) from exc


def fetch_tuples(
    conn: Connection, statement: Any, params: Mapping[str, Any] | None = None
) -> list[tuple[Any, ...]]:
    """All rows of a SELECT (with the values of its bound `params`) as plain
    tuples from the driver's cursor.

    For the bulk reads of the audit commands (hundreds of thousands of rows):
    SQLAlchemy's per-row result processing would double their cost. Only for
    statements whose parameters and columns need no type processing (integers,
    text), which holds for the ledger's own schema.
    """
    # Run through SQLAlchemy (its statement cache compiles each shape once),
    # the rows read from the driver's cursor beneath the result.
    result = conn.execute(statement, params)
    try:
        return list(result.cursor.fetchall())
    finally:
        result.close()


def fetch_tuples_fast(
    conn: Connection, statement: Any, params: Mapping[str, Any]
) -> list[tuple[Any, ...]]:
    """`fetch_tuples` of a statement run many times with new values, on the
    driver's cursor: compiled once per dialect, and none of SQLAlchemy's work
    per execution (its parameters processed, a result object made), which
    costs a quarter of what SQLite takes to answer the retriever's band read
    (bench row `check`). For statements with no IN list to expand and values
    that need no processing (text, numbers, None). A property test
    (tests/store/test_fetch_tuples_fast.py) holds it equal to `fetch_tuples`."""
    if not conn.in_transaction():  # SQLAlchemy begins the transaction (the BEGIN event)
        return fetch_tuples(conn, statement, params)
    sql, names, fixed = _compiled_once(statement, conn.dialect)
    given = {**fixed, **params}
    args: Any = given if names is None else tuple(given[name] for name in names)
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        with _driver_errors(conn, sql):
            cursor.execute(sql, args)
            return list(cursor.fetchall())
    finally:
        cursor.close()


@lru_cache(maxsize=256)
def _compiled_once(
    statement: Any, dialect: Any
) -> tuple[str, tuple[str, ...] | None, dict[str, Any]]:
    """The driver's SQL text of a statement, the names of its positional
    parameters in order (None: the driver takes them by name), and the values
    the statement holds itself (`section == "evidence"`)."""
    compiled = statement.compile(dialect=dialect)
    names = tuple(compiled.positiontup or ()) if compiled.positional else None
    fixed = {name: value for name, value in compiled.params.items() if value is not None}
    return str(compiled), names, fixed


def row_type(name: str, fields: Sequence[str]) -> Any:
    """A named tuple type of result columns: fields read by name at a plain
    tuple's cost (the bulk reads of verify)."""
    return namedtuple(name, fields)  # noqa: PYI024


_STREAMS = itertools.count(1)


def stream_tuples(conn: Connection, statement: Any, size: int) -> Iterator[tuple[Any, ...]]:
    """The rows of a SELECT as plain tuples, as `fetch_tuples`, read `size` rows
    at a time (a server-side cursor on PostgreSQL), so that a large result (the
    bodies of a million-line ingest) is never held in memory whole."""
    sql, args = _driver_statement(conn, statement)
    dbapi = conn.connection.dbapi_connection
    postgresql = conn.dialect.name == "postgresql"
    # A server-side cursor's name is unique per connection: streams may nest.
    name = f"ledger_stream_{next(_STREAMS)}"
    cursor = dbapi.cursor(name=name) if postgresql else dbapi.cursor()  # type: ignore[union-attr]
    try:
        with _driver_errors(conn, sql):
            cursor.execute(sql, args)
            while rows := cursor.fetchmany(size):
                yield from rows
    finally:
        cursor.close()


# The positional marker of each DBAPI parameter style the ledger's drivers use
# (sqlite3: qmark; psycopg: pyformat, which takes `%s` with tuples too).
_POSITIONAL_MARK = {"qmark": "?", "format": "%s", "pyformat": "%s"}


@contextmanager
def _copy(conn: Connection, statement: str) -> Iterator[Any]:
    """A COPY ... FROM STDIN on the connection's driver cursor (psycopg)."""
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        with _driver_errors(conn, statement), cursor.copy(statement) as copy:
            yield copy
    finally:
        cursor.close()


# COPY's binary format: signature, flags and header extension length; the end.
_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_BINARY_END = b"\xff\xff"


def copy_binary(conn: Connection, table: str, columns: str, chunks: Iterable[bytes]) -> None:
    """PostgreSQL's COPY in the binary format: `chunks` hold rows already encoded
    as COPY reads them (per row, the field count, then each field's length and
    bytes), for a value whose text form costs the server more to parse than its
    binary one (tsvector); the header and the end are written here."""
    with _copy(conn, f"COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(_BINARY_HEADER)
        for chunk in chunks:
            copy.write(chunk)
        copy.write(_BINARY_END)


def insert_tuples(
    conn: Connection, table: Any, columns: tuple[str, ...], rows: Iterable[tuple[Any, ...]]
) -> None:
    """The bulk-insert path, written once: one executemany of `rows` (tuples in
    `columns` order) into `table`.

    The tuples go to the driver as they are, with positional markers on both
    backends: SQLAlchemy's per-row parameter processing (a third of ingest's
    write time) and a dict per row for psycopg's named style would cost more
    than the insert. The values need no processing: str, int, bool and None
    bind as they are.
    """
    quote = conn.dialect.identifier_preparer.quote
    names = ", ".join(quote(c) for c in columns)
    table_name = conn.dialect.identifier_preparer.format_table(table)
    if conn.dialect.driver == "psycopg":
        # PostgreSQL's bulk path: COPY, a stream of rows in one statement.
        with _copy(conn, f"COPY {table_name} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    rows = list(rows)  # COPY streams an iterator; executemany takes a list
    mark = _POSITIONAL_MARK.get(conn.dialect.paramstyle)
    if mark is None:
        from sqlalchemy import insert

        conn.execute(insert(table), [dict(zip(columns, row, strict=True)) for row in rows])
        return
    marks = ", ".join([mark] * len(columns))
    conn.exec_driver_sql(f"INSERT INTO {table_name} ({names}) VALUES ({marks})", rows)
