"""Apply the Alembic migrations in code (`ledger init`). Imports Alembic lazily.

Before a SQLite file whose schema is behind is upgraded, a copy of it is written
next to it, `<file>.bak-<old revision>-<UTC timestamp>` (owner-only), with
SQLite's online backup API: the copy holds what a reader sees, WAL contents
included, and is taken under the ledger's write lock, so no write can land
between the copy and the upgrade.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine

if TYPE_CHECKING:
    from alembic.config import Config

from ledger.core.errors import SchemaError
from ledger.store.engine import (
    SCHEMA_REVISION,
    current_revision,
    display_url,
    foreign_tables,
    sqlite_path,
    use_wal,
    write_transaction,
)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True, slots=True)
class Upgrade:
    """What `upgrade_database` did: the revisions before and after, and the backup."""

    before: str | None
    after: str
    backup: str | None  # the copy of a SQLite file made before upgrading it


def alembic_config() -> Config:
    """An Alembic Config whose scripts come from the installed package, not the cwd."""
    from alembic.config import Config

    import ledger_migrations

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(ledger_migrations.__file__).parent))
    return cfg


def backup_name(path: str, revision: str, now: datetime) -> str:
    """`<path>.bak-<revision>-<YYYYMMDDTHHMMSSZ>` (UTC)."""
    return f"{path}.bak-{revision}-{now.astimezone(UTC):%Y%m%dT%H%M%SZ}"


def backup_sqlite(path: str, revision: str, *, now: datetime | None = None) -> str:
    """Copy the SQLite ledger at `path` to a new owner-only file; return its path.

    The copy is made with sqlite3's online backup API through a connection of
    its own, so it is a consistent snapshot that includes what is still in the
    WAL. A failure (a full disk) removes the partial copy and raises SchemaError.
    """
    import sqlite3

    base = backup_name(path, revision, now or datetime.now(UTC))
    target, n = base, 1
    while True:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
            break
        except FileExistsError:
            n += 1
            target = f"{base}-{n}"
        except OSError as exc:
            raise SchemaError(
                f"cannot create the backup {target} ({exc.strerror}); the database was not upgraded"
            ) from None
    os.close(fd)
    try:
        source = sqlite3.connect(path, timeout=60)
        try:
            copy = sqlite3.connect(target)
            try:
                source.backup(copy)
            finally:
                copy.close()
        finally:
            source.close()
        os.chmod(target, 0o600)
        fd = os.open(target, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except (sqlite3.Error, OSError) as exc:
        for leftover in (target, target + "-journal", target + "-wal", target + "-shm"):
            try:
                os.unlink(leftover)
            except OSError:
                pass
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SchemaError(
            f"cannot write the backup {target} ({reason}); the database was not upgraded"
        ) from None
    return target


def upgrade_database(engine: Engine, *, backup: bool = True) -> Upgrade:
    """Create or upgrade the schema to the newest revision (what `ledger init` does).

    With `backup`, a SQLite file whose schema is behind is first copied by
    `backup_sqlite`; the copy's path is returned.
    """
    from alembic import command
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    cfg = alembic_config()
    copy = None
    # Read first: another application's database is refused before the write
    # lock makes its `-writer` file beside it; checked again under the lock.
    with engine.connect() as probe:
        if current_revision(probe) is None:
            _refuse_foreign(probe, engine)
    with write_transaction(engine) as conn:
        before = current_revision(conn)
        if before is None:
            _refuse_foreign(conn, engine)
        if before is not None:
            try:
                ScriptDirectory.from_config(cfg).get_revision(before)
            except CommandError:
                # Written by a newer release: Alembic cannot place it, and
                # neither can this code read it.
                raise SchemaError(
                    f"the database has schema {before}, which this ledger "
                    f"({SCHEMA_REVISION}) does not know; upgrade context-ledger"
                ) from None
            path = sqlite_path(engine.url.render_as_string(hide_password=False))
            if backup and before != SCHEMA_REVISION and path is not None:
                copy = backup_sqlite(path, before)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
        after = current_revision(conn)
    use_wal(engine)
    return Upgrade(before, after or "", copy)


def _refuse_foreign(conn: Connection, engine: Engine) -> None:
    """Another application's database (tables, no ledger schema): adding the
    ledger's tables to it would mix two programs' data. Nothing is written."""
    others = foreign_tables(conn)
    if others:
        where = sqlite_path(engine.url.render_as_string(hide_password=False))
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise SchemaError(
            f"{where or display_url(engine.url.render_as_string(hide_password=False))} "
            f"is not a ledger: it holds other tables ({shown}); "
            "name a new file or an empty database"
        )


def upgrade_to_head(engine: Engine) -> tuple[str | None, str]:
    """Create or upgrade the schema; return (revision before, revision after).

    No backup is written (tests and fresh databases); `ledger init` uses
    `upgrade_database`.
    """
    result = upgrade_database(engine, backup=False)
    return result.before, result.after


def downgrade_to(engine: Engine, revision: str) -> None:
    """Downgrade the schema (for tests and for a user rolling back an upgrade)."""
    from alembic import command

    cfg = alembic_config()
    with write_transaction(engine) as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)
