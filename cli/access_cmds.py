"""`ledger subject grant|revoke|show` and `ledger policy set|show`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import click

from ledger.core.errors import InputError
from ledger_cli.common import INTEGER, echo_json, json_option, pass_ledger
from ledger_cli.main import RECORDED, group

if TYPE_CHECKING:
    from ledger.api import Ledger


@group("subject")
def subject_group() -> None:
    """A subject's permissions, kept as history in the ledger.

    \b
    ledger subject grant default policy-read state-read
    ledger subject revoke default state-read
    ledger subject show default
    """


def _report(change: Any, subject: str, permissions: tuple[str, ...]) -> None:
    if change.entry is not None:
        RECORDED.append(f"entry {change.entry} ({change.data['action']}) was")
    if change.entry is None:
        click.echo(
            f"subject '{subject}' already holds {', '.join(sorted(set(permissions)))}; "
            "nothing recorded",
            err=True,
        )
    elif change.data["action"] == "grant":
        click.echo(f"entry {change.entry}: granted {', '.join(change.changed)} to '{subject}'")
    else:
        click.echo(f"entry {change.entry}: revoked {', '.join(change.changed)} from '{subject}'")


@subject_group.command("grant")
@click.argument("subject")
@click.argument("permissions", nargs=-1, required=True)
@pass_ledger
def grant_command(lg: Ledger, subject: str, permissions: tuple[str, ...]) -> None:
    """Grant permissions to a subject (one ledger entry).

    \b
    ledger subject grant default policy-read public-read
    """
    _report(lg.grant(subject, *permissions), subject, permissions)


@subject_group.command("revoke")
@click.argument("subject")
@click.argument("permissions", nargs=-1, required=True)
@pass_ledger
def revoke_command(lg: Ledger, subject: str, permissions: tuple[str, ...]) -> None:
    """Revoke permissions from a subject (one ledger entry); packs already built keep theirs.

    \b
    ledger subject revoke default legal-read
    """
    _report(lg.revoke(subject, *permissions), subject, permissions)


@subject_group.command("show")
@click.argument("subject")
@json_option
@pass_ledger
def subject_show_command(lg: Ledger, subject: str, as_json: bool) -> None:
    """The permissions a subject holds now, and every change with its entry.

    \b
    ledger subject show default --json
    """
    result = lg.subject(subject)
    if as_json:
        echo_json(result.to_json())
        return
    held = result.permissions
    click.echo(f"subject {subject}: {', '.join(held) if held else '(no permissions)'}")
    for h in result.data["history"]:
        click.echo(f"  entry {h['entry']}: {h['action']} {', '.join(h['permissions'])}")


@group("policy")
def policy_group() -> None:
    """The application policy: allowed trust labels and the default budget.

    \b
    ledger policy set --allow-trust approved-source --allow-trust user-input --budget 170
    ledger policy show
    """


@policy_group.command("set")
@click.option(
    "--allow-trust",
    "allow_trust",
    multiple=True,
    metavar="LABEL",
    help="A trust label to allow; repeat for several. Replaces the allowed set.",
)
@click.option("--budget", type=INTEGER, help="Default token budget of builds.")
@click.option(
    "--retain-bodies",
    "retain_bodies",
    metavar="DAYS|off",
    help="Keep a body DAYS days after its version ends; `ledger erase --retention` "
    "erases the older ones. `off` removes the retention.",
)
@pass_ledger
def policy_set_command(
    lg: Ledger, allow_trust: tuple[str, ...], budget: int | None, retain_bodies: str | None
) -> None:
    """Record a new policy (one ledger entry). A part not given keeps its current value.

    \b
    ledger policy set --allow-trust application-policy --allow-trust confirmed-state --budget 170
    ledger policy set --budget 200
    ledger policy set --retain-bodies 90
    """
    if not allow_trust and budget is None and retain_bodies is None:
        raise click.UsageError(
            "give --allow-trust LABEL (repeatable), --budget N and/or --retain-bodies DAYS"
        )
    from ledger.core.numbers import ascii_int

    retain: int | Literal["off"] | None = None
    if retain_bodies is not None:
        days = ascii_int(retain_bodies)  # the one parser: int() fails past 4,300 digits
        if retain_bodies.strip().lower() == "off":
            retain = "off"
        elif days is not None:
            retain = days
        else:
            raise InputError(
                f"--retain-bodies: {retain_bodies!r} is not a number of days; give DAYS "
                "(0 to 36600) or off"
            )
    change = lg.set_policy(list(allow_trust) if allow_trust else None, budget, retain_bodies=retain)
    shown = change.budget if change.budget is not None else "not set"
    desc = f"allowed trust {', '.join(change.allowed_trust)}; budget {shown}"
    kept = change.data["policy"].get("retain_bodies")
    if kept is not None:
        desc += f"; bodies kept {kept} days after their versions end"
    if change.entry is None:
        click.echo(f"policy unchanged ({desc}); nothing recorded", err=True)
    else:
        RECORDED.append(f"entry {change.entry} (policy) was")
        click.echo(f"entry {change.entry}: policy {desc}")


@policy_group.command("show")
@json_option
@pass_ledger
def policy_show_command(lg: Ledger, as_json: bool) -> None:
    """The policy in force and every change with its entry.

    \b
    ledger policy show --json
    """
    state = lg.policy()
    if as_json:
        echo_json(state.to_json())
        return
    current = state.policy
    if current is None:
        click.echo("no policy set; run `ledger policy set --allow-trust LABEL ...`")
        return
    click.echo(f"allowed trust: {', '.join(current['allowed_trust'])}")
    click.echo(f"budget: {current['budget'] if current['budget'] is not None else 'not set'}")
    if current.get("retain_bodies") is not None:
        click.echo(f"retain bodies: {current['retain_bodies']} days after a version ends")
    for h in state.data["history"]:
        retain = f"; retain {h['retain_bodies']} days" if "retain_bodies" in h else ""
        click.echo(
            f"  entry {h['entry']}: allow {', '.join(h['allowed_trust'])}; budget {h['budget']}"
            f"{retain}"
        )
