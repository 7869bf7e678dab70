"""Which files belong to a database, for the command line's output checks."""

from __future__ import annotations

from ledger.store import engine


def database_file(url: str) -> str | None:
    """The SQLite file of a database URL (`sqlite:///ledger.db`), or None for a
    server or an in-memory database: what `Ledger.database_file` answers,
    without opening the ledger."""
    return engine.sqlite_path(url)
