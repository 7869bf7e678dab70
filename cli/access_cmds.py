"""`ledger subject grant|revoke|show` and `ledger policy set|show`."""

from __future__ import annotations

import click

from ledger_cli.common import echo_json, json_option, open_ledger
from ledger_cli.main import Settings, pass_settings


@click.group("subject")
def subject_group() -> None:
    """A subject's permissions, kept as history in the ledger.

    \b
    ledger subject grant default policy-read state-read
    ledger subject revoke default state-read
    ledger subject show default
    """


def _change(settings: Settings, subject: str, permissions: tuple[str, ...], action: str) -> None:
    from ledger.store.access import change_grants

    engine = open_ledger(settings)
    try:
        seq, changed = change_grants(engine, subject, list(permissions), action)
    finally:
        engine.dispose()
    if seq is None:
        click.echo(f"subject '{subject}' already holds {', '.join(sorted(set(permissions)))}; nothing recorded", err=True)
    else:
        verb = "granted" if action == "grant" else "revoked"
        click.echo(f"entry {seq}: {verb} {', '.join(changed)} {'to' if action == 'grant' else 'from'} '{subject}'")


@subject_group.command("grant")
@click.argument("subject")
@click.argument("permissions", nargs=-1, required=True)
@pass_settings
def grant_command(settings: Settings, subject: str, permissions: tuple[str, ...]) -> None:
    """Grant permissions to a subject (one ledger entry).

    \b
    ledger subject grant default policy-read public-read
    """
    _change(settings, subject, permissions, "grant")


@subject_group.command("revoke")
@click.argument("subject")
@click.argument("permissions", nargs=-1, required=True)
@pass_settings
def revoke_command(settings: Settings, subject: str, permissions: tuple[str, ...]) -> None:
    """Revoke permissions from a subject (one ledger entry); packs already built keep theirs.

    \b
    ledger subject revoke default legal-read
    """
    _change(settings, subject, permissions, "revoke")


@subject_group.command("show")
@click.argument("subject")
@json_option
@pass_settings
def subject_show_command(settings: Settings, subject: str, as_json: bool) -> None:
    """The permissions a subject holds now, and every change with its entry.

    \b
    ledger subject show default --json
    """
    from ledger.store.access import check_subject, grant_history, grants_at
    from ledger.store.engine import read_transaction

    check_subject(subject)
    engine = open_ledger(settings)
    try:
        with read_transaction(engine) as conn:
            held = grants_at(conn, subject)
            history = grant_history(conn, subject)
    finally:
        engine.dispose()
    if as_json:
        echo_json({"subject": subject, "permissions": held, "history": history})
        return
    click.echo(f"subject {subject}: {', '.join(held) if held else '(no permissions)'}")
    for h in history:
        click.echo(f"  entry {h['entry']}: {h['action']} {', '.join(h['permissions'])}")


@click.group("policy")
def policy_group() -> None:
    """The application policy: allowed trust labels and the default budget.

    \b
    ledger policy set --allow-trust approved-source --allow-trust user-input --budget 170
    ledger policy show
    """


@policy_group.command("set")
@click.option("--allow-trust", "allow_trust", multiple=True, metavar="LABEL",
              help="A trust label to allow; repeat for several. Replaces the allowed set.")
@click.option("--budget", type=int, help="Default token budget of builds.")
@pass_settings
def policy_set_command(settings: Settings, allow_trust: tuple[str, ...], budget: int | None) -> None:
    """Record a new policy (one ledger entry). A part not given keeps its current value.

    \b
    ledger policy set --allow-trust application-policy --allow-trust confirmed-state --budget 170
    ledger policy set --budget 200
    """
    from ledger.store.access import set_policy

    if not allow_trust and budget is None:
        raise click.UsageError("give --allow-trust LABEL (repeatable) and/or --budget N")
    engine = open_ledger(settings)
    try:
        seq, policy = set_policy(engine, list(allow_trust) if allow_trust else None, budget)
    finally:
        engine.dispose()
    desc = f"allowed trust {', '.join(policy.allowed_trust)}; budget {policy.budget if policy.budget is not None else 'not set'}"
    if seq is None:
        click.echo(f"policy unchanged ({desc}); nothing recorded", err=True)
    else:
        click.echo(f"entry {seq}: policy {desc}")


@policy_group.command("show")
@json_option
@pass_settings
def policy_show_command(settings: Settings, as_json: bool) -> None:
    """The policy in force and every change with its entry.

    \b
    ledger policy show --json
    """
    from ledger.store.access import policy_at, policy_history
    from ledger.store.engine import read_transaction

    engine = open_ledger(settings)
    try:
        with read_transaction(engine) as conn:
            current = policy_at(conn)
            history = policy_history(conn)
    finally:
        engine.dispose()
    if as_json:
        echo_json({"policy": current.to_json() if current else None, "history": history})
        return
    if current is None:
        click.echo("no policy set; run `ledger policy set --allow-trust LABEL ...`")
        return
    click.echo(f"allowed trust: {', '.join(current.allowed_trust)}")
    click.echo(f"budget: {current.budget if current.budget is not None else 'not set'}")
    for h in history:
        click.echo(f"  entry {h['entry']}: allow {', '.join(h['allowed_trust'])}; budget {h['budget']}")
