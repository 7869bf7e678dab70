"""`ledger erase`: remove bodies, keep the audit (digests, metadata, decisions)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ledger.core.errors import EXIT_USAGE, ContextError
from ledger_cli.common import echo_json, json_option, pass_ledger
from ledger_cli.main import RECORDED, command

if TYPE_CHECKING:
    from ledger.api import Ledger


@command("erase")
@click.argument("refs", nargs=-1, metavar="[REF]...")
@click.option(
    "--ended-before",
    "ended_before",
    metavar="DATE",
    help="Every version that ended for good by DATE (expired, retracted, or superseded "
    "for good), whatever its permission and trust.",
)
@click.option(
    "--retention",
    is_flag=True,
    help="Apply the policy's retention: --ended-before today minus `--retain-bodies` DAYS.",
)
@click.option("--reason", metavar="TEXT", help="Why (required); recorded in the erase entry.")
@json_option
@pass_ledger
def erase_command(
    lg: Ledger,
    refs: tuple[str, ...],
    ended_before: str | None,
    retention: bool,
    reason: str | None,
    as_json: bool,
) -> None:
    """Erase bodies for good; keep their digests, metadata and every decision.

    One `erase` entry in the chain names the erased record digests and the
    reason. `verify` and `replay` still pass; `show`, `export --with-content`,
    reports and `why` print `erased {entry, reason}` instead of the body.
    Erasing is idempotent (bodies erased before are listed, and nothing new
    writes no entry) and cannot be undone. REF is a chunk id (every version),
    a content or record digest, or an 8+ hex prefix.

    \b
    ledger erase refund-faq --reason "GDPR art. 17 request #4521"
    ledger erase --ended-before 2026-01-01 --reason "bodies older than the audit period"
    ledger erase --retention --reason "retention policy" --json
    """
    given = sum((bool(refs), ended_before is not None, retention))
    if given != 1:
        raise ContextError(
            "name what to erase one way: REF..., --ended-before DATE or --retention"
            if given
            else "nothing to erase: give REF..., --ended-before DATE or --retention",
            EXIT_USAGE,
        )
    if reason is None:
        raise ContextError("--reason TEXT is required: say why the bodies are erased", EXIT_USAGE)
    result = lg.erase(list(refs), reason=reason, ended_before=ended_before, retention=retention)
    if result.entry is not None:
        RECORDED.append(f"entry {result.entry} (erase) was")
    if as_json:
        echo_json(result.to_json())
    already = len(result.already_erased)
    if result.entry is None:
        click.echo(
            f"nothing erased: {already} named bodies were already erased; no entry recorded"
            if already
            else f"nothing erased: no version ended by {result.ended_before}; no entry recorded",
            err=True,
        )
    elif not as_json:
        note = f" ({already} already erased)" if already else ""
        when = f", ended by {result.ended_before}" if result.ended_before else ""
        click.echo(f"entry {result.entry}: erased {len(result.erased)} bodies{when}{note}")
    scrub = result.data.get("scrubbed")
    if scrub is not None and not scrub["complete"]:
        why = scrub.get("error") or "another connection holds an old snapshot"
        click.echo(
            f"warning: the bodies are erased, but {scrub['method']} did not finish ({why}); "
            "close the other connections and run the same `ledger erase` again to finish it",
            err=True,
        )
