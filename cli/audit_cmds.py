"""`ledger why-evicted`, `diff`, `verify`, `head`, `replay`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ledger.core.errors import EXIT_INTEGRITY
from ledger_cli.common import WholeNumber, echo_json, json_option, pass_ledger, say
from ledger_cli.main import command

if TYPE_CHECKING:
    from ledger.api import Ledger


@command("why-evicted")
@click.argument("ref")
@click.option(
    "--pack", "pack_ref", metavar="PACK", help="Only this pack (number or digest prefix)."
)
@click.option(
    "--hints",
    type=click.Choice(["newest", "all", "none"]),
    default="newest",
    show_default=True,
    help="Compute what would have admitted it for the newest eviction of each version, "
    "every eviction, or none.",
)
@json_option
@pass_ledger
def why_evicted_command(
    lg: Ledger, ref: str, pack_ref: str | None, hints: str, as_json: bool
) -> None:
    """Why did the agent not know X? Every pack that considered it, newest first.

    REF is a chunk id, a content or record digest, or a unique hex prefix (8+).
    For an eviction it also prints the smallest change that would have admitted
    it (grant, trust label, date, budget), computed by re-running the selector.

    \b
    ledger why-evicted shipping-note
    ledger why-evicted 3fa2c1d9 --pack 2 --json
    """
    from ledger.core.reasons import describe_hint, short_detail, why_evicted_sentence

    result = lg.why_evicted(ref, pack_ref, hints).to_json()
    if as_json:
        echo_json(result)
        return
    say(why_evicted_sentence(result))
    for v in result["versions"]:
        say("")
        say(
            f"{v['id']}@{v['source_version']}  record {v['record_digest'][:16]}  content "
            f"{v['content_digest'][:16]}  ingested at entry {v['ingested_at_entry']}"
        )
        if not v["decisions"]:
            say(f"  not considered: {v['not_considered']}")
        for d in v["decisions"]:
            if d["admitted"]:
                say(
                    f"  pack {d['pack']} ({d['as_of']}, {d['subject']}): admitted, {d['tokens']} "
                    f"{d['unit']}"
                )
                continue
            say(
                f"  pack {d['pack']} ({d['as_of']}, {d['subject']}): {d['reason']} "
                f"({short_detail(d['reason'], d['detail'])})"
            )
            if "would_admit" in d:
                say(f"    would admit it: {describe_hint(d['would_admit'])}")


@command("diff")
@click.argument("pack_a")
@click.argument("pack_b")
@json_option
@pass_ledger
def diff_command(lg: Ledger, pack_a: str, pack_b: str, as_json: bool) -> None:
    """What entered, left, changed version or reason between two packs, and why.

    Compared per chunk id (its admitted version, else its newest considered one).

    \b
    ledger diff 1 2
    ledger diff 1 2 --json
    """
    result = lg.diff(pack_a, pack_b).to_json()
    if as_json:
        echo_json(result)
        return
    click.echo(
        f"pack {result['from']} -> {result['to']}: used {result['used']['from']} -> "
        f"{result['used']['to']}, "
        f"budget {result['budget']['from']} -> {result['budget']['to']}, "
        f"as of {result['as_of']['from']} -> {result['as_of']['to']}; {len(result['changes'])} "
        "changes"
    )
    for c in result["changes"]:
        click.echo(f"  {c['id']}: {_state(c['from'])} -> {_state(c['to'])}  [{c['cause']}]")


def _state(s: dict[str, object]) -> str:
    if s["status"] == "absent":
        return "absent"
    extra = f" ({s['reason']})" if s["reason"] else ""
    return f"{s['status']} {s['source_version']}{extra}"


@command("verify")
@click.option(
    "--checkpoint",
    metavar="SEQ:HASH|FILE",
    help="Also prove the ledger still extends this `ledger head`, "
    "or this `ledger checkpoint` file.",
)
@click.option(
    "--since",
    metavar="FILE",
    help="Check only the entries after this checkpoint file, and that the tree extends it.",
)
@click.option(
    "--vkey", metavar="VKEY", help="The checkpoint file must be signed by this verifier key."
)
@json_option
@pass_ledger
def verify_command(
    lg: Ledger, checkpoint: str | None, since: str | None, vkey: str | None, as_json: bool
) -> None:
    """Recompute every digest and the hash chain; name the first bad entry (exit 4).

    \b
    ledger verify
    ledger verify --checkpoint "$(ledger head)"
    ledger verify --checkpoint cp.txt --vkey ledger.vkey
    ledger verify --since cp.txt
    """
    import time

    from ledger_cli.proof_cmds import check_verify_options

    check_verify_options(checkpoint, since, vkey)
    started = time.perf_counter()
    result = lg.verify(checkpoint, since=since, vkey=vkey)
    elapsed = time.perf_counter() - started
    if as_json:
        echo_json(result.to_json())
    elif result.ok and result.since is not None:
        click.echo(
            f"ok: {result.checked} entries after checkpoint {result.since} and the tree's "
            f"consistency with it verified in {elapsed:.2f}s; head {result.head}"
        )
    elif result.ok:
        click.echo(
            f"ok: {result.entries} entries, {result.decisions} decisions verified in "
            f"{elapsed:.2f}s; head {result.head}"
        )
    else:
        bad = result.first_bad
        assert bad is not None
        click.echo(f"FAILED at entry {bad['seq']} ({bad['kind']}): {bad['why']}")
    if not result.ok:
        sys.exit(EXIT_INTEGRITY)


@command("head")
@click.option(
    "--at",
    "at",
    type=WholeNumber(minimum=1),
    metavar="SEQ",
    help="Entry SEQ instead of the newest.",
)
@json_option
@pass_ledger
def head_command(lg: Ledger, at: int | None, as_json: bool) -> None:
    """Print the newest entry (or entry SEQ) as a checkpoint SEQ:HASH, to verify against later.

    \b
    ledger head > checkpoint.txt
    ledger verify --checkpoint "$(cat checkpoint.txt)"
    ledger head --at 120
    """
    head = lg.head(at=at)
    if as_json:
        echo_json(head.to_json())
    else:
        click.echo(head.checkpoint)


@command("replay")
@click.argument("pack")
@json_option
@pass_ledger
def replay_command(lg: Ledger, pack: str, as_json: bool) -> None:
    """Rebuild a pack from the ledger as it stood then; exit 0 if identical, 4 if not.

    Uses the pack's recorded grants, policy, budget, counter and ledger mark.

    \b
    ledger replay 1
    """
    result = lg.replay(pack)
    if as_json:
        echo_json(result.to_json())
    elif result.identical:
        click.echo(f"pack {result.pack} reproduces exactly: {result.replayed}")
    else:
        click.echo(f"pack {result.pack} does NOT reproduce: {result.difference}")
    if result.not_recounted:
        click.echo(
            f"note: {len(result.not_recounted)} candidates have erased bodies and could not be "
            "recounted; their recorded token counts were used",
            err=True,
        )
    if not result.identical:
        sys.exit(EXIT_INTEGRITY)
