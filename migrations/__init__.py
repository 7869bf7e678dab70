"""Alembic migrations of the ledger schema (installed as `ledger_migrations`)."""
