"""`ledger init`."""

from __future__ import annotations

import click

from ledger_cli.main import Settings, pass_settings


@click.command("init")
@pass_settings
def init_command(settings: Settings) -> None:
    """Create the database, or upgrade it to the newest schema.

    A new SQLite file is created readable by its owner only (0600).

    \b
    ledger --db team.db init
    """
    from ledger.db import check_database, make_engine, sqlite_path
    from ledger.migrate import upgrade_to_head

    engine = make_engine(settings.url, create=True)
    try:
        check_database(engine, settings.url)
        before, after = upgrade_to_head(engine)
    finally:
        engine.dispose()
    where = sqlite_path(settings.url) or "the database"
    if before == after:
        click.echo(f"{where}: schema {after} is current", err=True)
    elif before is None:
        click.echo(f"{where}: created schema {after}", err=True)
    else:
        click.echo(f"{where}: upgraded schema {before} -> {after}", err=True)
