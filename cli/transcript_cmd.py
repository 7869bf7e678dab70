"""`ledger transcript`: keep critical exchanges verbatim within a byte budget.

No database: these commands read a JSON Lines transcript and a priorities sidecar
and write files. Parsing, framing and selection live in `ledger.core.transcript`, the
careful writing in `ledger.safeio`; the two functions below only wire them to
paths and streams (so tests can drive them with their own streams).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import click

from ledger import safeio
from ledger.core.transcript import (
    Selection,
    Transcript,
    parse_assignments,
    parse_sidecar,
    parse_transcript,
    render_continuation,
    render_omissions,
    render_sidecar,
    select_exchanges,
)

CONTINUATION = "continuation.md"
OMISSIONS = "omissions.json"


def annotate_transcript(
    source: Path,
    sidecar: Path,
    assignments: Sequence[str],
    *,
    stdin: TextIO,
    stdout: TextIO,
) -> tuple[Transcript, dict[str, str]]:
    """Write the priorities sidecar for `source`; return the transcript and mapping."""
    protected = [source]
    safeio.check_directory(sidecar.parent)
    existing = safeio.check_outputs([sidecar], protected=protected)
    safeio.refuse_without_terminal(existing, stdin=stdin, stdout=stdout)
    transcript = parse_transcript(safeio.read_input(source, what="transcript"), name=str(source))
    priorities = parse_assignments(assignments, transcript)
    safeio.confirm_overwrite(existing, stdin=stdin, stdout=stdout)
    parent = sidecar.parent
    safeio.ensure_directory(parent)
    safeio.publish(
        parent,
        [(sidecar.name, [render_sidecar(transcript, priorities)])],
        confirmed=existing,
        protected=protected,
    )
    return transcript, priorities


def export_transcript(
    source: Path,
    sidecar: Path,
    budget: int,
    outdir: Path,
    *,
    stdin: TextIO,
    stdout: TextIO,
) -> Selection:
    """Write OUTDIR/continuation.md and OUTDIR/omissions.json; return the selection."""
    protected = [source, sidecar]
    targets = [outdir / CONTINUATION, outdir / OMISSIONS]
    # Cheap refusals first, before reading a large source.
    safeio.check_directory(outdir)
    existing = safeio.check_outputs(targets, protected=protected)
    safeio.refuse_without_terminal(existing, stdin=stdin, stdout=stdout)
    transcript = parse_transcript(safeio.read_input(source, what="transcript"), name=str(source))
    priorities = parse_sidecar(
        safeio.read_input(sidecar, what="priorities sidecar"), transcript, name=str(sidecar)
    )
    selection = select_exchanges(transcript, priorities, budget)
    safeio.confirm_overwrite(existing, stdin=stdin, stdout=stdout)
    safeio.ensure_directory(outdir)
    safeio.publish(
        outdir,
        [
            (CONTINUATION, render_continuation(selection)),
            (OMISSIONS, [render_omissions(selection)]),
        ],
        confirmed=existing,
        protected=protected,
    )
    return selection


@click.group("transcript")
def transcript_group() -> None:
    """Keep critical transcript exchanges verbatim within a byte budget.

    A transcript is UTF-8 JSON Lines, one message a line: plain records
    ({"role": "user"|"assistant"|"tool", ...}, OpenAI tool_calls) or
    message-wrapped records ({"type": "user"|"assistant", "message": {...}} with
    tool_use/tool_result blocks). Exchanges (a user prompt up to the assistant's
    response before the next prompt) are numbered e001, e002, ... in source order.
    Anything outside that contract fails closed, naming the line.

    Existing outputs are replaced only after typing OVERWRITE at a terminal;
    without a terminal they are refused (there is no force flag). The source is
    only ever read.

    \b
    ledger transcript annotate chat.jsonl priorities.json e001=pinned e003=aside
    ledger transcript export chat.jsonl priorities.json 20000 ./out
    """


@transcript_group.command("annotate", short_help="Write the priorities sidecar for a transcript.")
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("priorities", type=click.Path(path_type=Path))
@click.argument("assignments", nargs=-1, metavar="[ID=pinned|normal|aside]...")
def annotate_command(source: Path, priorities: Path, assignments: tuple[str, ...]) -> None:
    """Write the priorities sidecar for SOURCE; print the exchange count.

    Give the complete desired mapping each time: exchanges not named are
    `normal`. The sidecar is JSON {"version": 1, "sourceSha256": ...,
    "priorities": {"e001": "pinned", ...}} listing every exchange; a changed
    source invalidates it.

    \b
    Example:
      ledger transcript annotate chat.jsonl priorities.json e001=pinned e003=aside
    """
    transcript, mapping = annotate_transcript(
        source, priorities, assignments, stdin=sys.stdin, stdout=sys.stdout
    )
    counts = {p: 0 for p in ("pinned", "normal", "aside")}
    for priority in mapping.values():
        counts[priority] += 1
    click.echo(
        f"{len(transcript.exchanges)} exchanges ({counts['pinned']} pinned, "
        f"{counts['normal']} normal, {counts['aside']} aside): wrote {priorities}"
    )


@transcript_group.command("export", short_help="Write continuation.md and omissions.json.")
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("priorities", type=click.Path(path_type=Path))
@click.argument("budget", type=click.IntRange(min=0))
@click.argument("outdir", type=click.Path(path_type=Path))
def export_command(source: Path, priorities: Path, budget: int, outdir: Path) -> None:
    """Write continuation.md within BUDGET bytes, and omissions.json, into OUTDIR.

    BUDGET counts every UTF-8 byte of continuation.md (not omissions.json). All
    pinned exchanges are taken first (a budget below them plus the Markdown
    framing is refused), then normal exchanges oldest first, then asides oldest
    first, each whole exchange only if it fits. continuation.md holds the chosen
    exchanges in source order, each under a heading `## e003 (pinned, lines
    7-9)` in a ```jsonl fence (longer when the payload holds backticks) with its
    source lines byte for byte. omissions.json lists every exchange: priority,
    framed byte cost, selected or omitted, reason, and the source's SHA-256.
    Both are owner-only (0600), staged in OUTDIR/.ledger-transcript-* and then
    renamed into place; a sidecar written for other source bytes is refused.

    \b
    Example:
      ledger transcript export chat.jsonl priorities.json 20000 ./out
    """
    selection = export_transcript(
        source, priorities, budget, outdir, stdin=sys.stdin, stdout=sys.stdout
    )
    click.echo(
        f"selected {len(selection.selected)} of {len(selection.decisions)} exchanges, "
        f"{selection.used} of {selection.budget} bytes: wrote {outdir / CONTINUATION} "
        f"and {outdir / OMISSIONS}"
    )
