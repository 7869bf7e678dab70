"""`ledger init`."""

from __future__ import annotations

import click

from ledger_cli.main import Settings, command, pass_settings


@command("init")
@pass_settings
def init_command(settings: Settings) -> None:
    """Create the database, or upgrade it to the newest schema.

    A new SQLite file is created readable by its owner only (0600).

    Before upgrading a SQLite file whose schema is behind, init writes a copy
    of it next to it, FILE.bak-REV-YYYYMMDDTHHMMSSZ (REV: the old schema
    revision; UTC time), readable by its owner only and made with SQLite's
    online backup API (so it includes what is still in the WAL), and prints its
    path on stderr. If the copy cannot be written, nothing is upgraded. Keep it
    until the upgraded ledger verifies; restore by copying it back. A PostgreSQL
    database is not copied: back it up with pg_dump first.

    \b
    ledger --db team.db init
    """
    from ledger.api import init

    result = init(settings.db)
    before, after = result.before, result.after
    where = result.database or "the database"
    if result.backup is not None:
        click.echo(f"{where}: backed up schema {before} to {result.backup}", err=True)
    if before == after:
        click.echo(f"{where}: schema {after} is current", err=True)
    elif before is None:
        click.echo(f"{where}: created schema {after}", err=True)
    else:
        click.echo(f"{where}: upgraded schema {before} -> {after}", err=True)
