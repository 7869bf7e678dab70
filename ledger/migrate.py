"""Apply the Alembic migrations in code (`ledger init`). Imports Alembic lazily."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from ledger.db import SCHEMA_REVISION, current_revision, write_transaction
from ledger.errors import SchemaError


def alembic_config():  # type: ignore[no-untyped-def]
    """An Alembic Config whose scripts come from the installed package, not the cwd."""
    import ledger_migrations
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(ledger_migrations.__file__).parent))
    return cfg


def upgrade_to_head(engine: Engine) -> tuple[str | None, str]:
    """Create or upgrade the schema; return (revision before, revision after)."""
    from alembic import command
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    cfg = alembic_config()
    with write_transaction(engine) as conn:
        before = current_revision(conn)
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
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
        after = current_revision(conn)
    return before, after or ""


def downgrade_to(engine: Engine, revision: str) -> None:
    """Downgrade the schema (for tests and for a user rolling back an upgrade)."""
    from alembic import command

    cfg = alembic_config()
    with write_transaction(engine) as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)
