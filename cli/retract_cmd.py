"""`ledger retract` and `ledger reinstate`: withdraw chunk ids from a date on, or
undo that, as one ledger entry each."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ledger_cli.common import echo_json, json_option, pass_ledger
from ledger_cli.main import RECORDED, command

if TYPE_CHECKING:
    from ledger.api import Ledger


@command("retract")
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@click.option(
    "--from",
    "from_date",
    required=True,
    metavar="DATE",
    help="First day (YYYY-MM-DD, valid time) on which the ids are withdrawn.",
)
@click.option(
    "--reason", metavar="TEXT", help="Why; recorded in the entry and shown by why-evicted."
)
@json_option
@pass_ledger
def retract_command(
    lg: Ledger, ids: tuple[str, ...], from_date: str, reason: str | None, as_json: bool
) -> None:
    """Withdraw chunk ids from DATE on: one `retract` entry in the chain.

    Builds whose ledger mark includes the entry evict every version of the ids
    ingested before it with `retracted {from, entry}`; a build as of an earlier
    date, or a replay of an older pack, still sees them. A version ingested
    after the retraction is not affected. An unknown id exits 3, nothing written.

    \b
    ledger retract old-faq --from 2026-08-01 --reason "superseded by the new FAQ"
    ledger retract a-1 a-2 --from 2026-08-01 --json
    """
    result = lg.retract(list(ids), from_date=from_date, reason=reason)
    RECORDED.append(f"entry {result.entry} (retract) was")
    if as_json:
        echo_json(result.to_json())
    else:
        click.echo(
            f"entry {result.entry}: retracted {len(result.ids)} id(s) from {result.from_date}"
        )


@command("reinstate")
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@click.option(
    "--from",
    "from_date",
    required=True,
    metavar="DATE",
    help="First day (YYYY-MM-DD, valid time) on which the ids are given again.",
)
@click.option("--reason", metavar="TEXT", help="Why; recorded in the entry.")
@json_option
@pass_ledger
def reinstate_command(
    lg: Ledger, ids: tuple[str, ...], from_date: str, reason: str | None, as_json: bool
) -> None:
    """Undo the retractions of chunk ids from DATE on: one `reinstate` entry.

    Builds whose ledger mark includes the entry, as of DATE or later, no longer
    evict the ids' versions by the retractions written before it; a later
    `ledger retract` withdraws them again, and packs built before keep their
    decisions (replay is unchanged). An unknown id exits 3; an id no retraction
    names exits 1; nothing is written then.

    \b
    ledger reinstate env-sslkeylogfile --from 2026-08-01 --reason "retracted by mistake"
    """
    result = lg.reinstate(list(ids), from_date=from_date, reason=reason)
    RECORDED.append(f"entry {result.entry} (reinstate) was")
    if as_json:
        echo_json(result.to_json())
    else:
        click.echo(
            f"entry {result.entry}: reinstated {len(result.ids)} id(s) from {result.from_date}"
        )
