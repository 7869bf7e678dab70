"""Apply the Alembic migrations in code (`ledger init`). Imports Alembic lazily."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from ledger.db import current_revision, write_transaction


def alembic_config():  # type: ignore[no-untyped-def]
    """An Alembic Config whose scripts come from the installed package, not the cwd."""
    from alembic.config import Config

    import ledger_migrations

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(ledger_migrations.__file__).parent))
    return cfg


def upgrade_to_head(engine: Engine) -> tuple[str | None, str]:
    """Create or upgrade the schema; return (revision before, revision after)."""
    from alembic import command

    cfg = alembic_config()
    with write_transaction(engine) as conn:
        before = current_revision(conn)
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
