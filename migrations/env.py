"""Alembic environment for the ledger schema.

`ledger init` passes its own connection in `config.attributes["connection"]`;
the `alembic` command line (alembic.ini at the repository top) builds one from
`sqlalchemy.url` or LEDGER_DB.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import Connection

from ledger.store.engine import make_engine
from ledger.store.fulltext import outside_models
from ledger.store.schema import metadata

config = context.config
target_metadata = metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        transaction_per_migration=True,
        compare_type=True,
        include_name=outside_models,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = os.environ.get("LEDGER_DB") or config.get_main_option("sqlalchemy.url")
    if url and "://" not in url:
        url = "sqlite:///" + os.path.abspath(url)
    engine = make_engine(url, create=True)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run `ledger init`")
run_migrations_online()
