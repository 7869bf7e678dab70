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
from ledger.core.exports import FORMATS, read_transcript
from ledger.core.transcript import (
    Selection,
    Transcript,
    export_summary,
    parse_assignments,
    parse_sidecar,
    render_continuation,
    render_omissions,
    render_sidecar,
    select_exchanges,
)
from ledger_cli.main import group, protected_database_files

CONTINUATION = "continuation.md"
OMISSIONS = "omissions.json"
STDIN = Path("-")


def _read_source(source: Path, source_format: str | None) -> Transcript:
    data = safeio.read_input(source, what="transcript file")
    return read_transcript(data, source_format, name=str(source))


def from_option(command: click.decorators.FC) -> click.decorators.FC:
    """`--from claude-code|codex`: read a real export of that tool as it is."""
    return click.option(
        "--from",
        "source_format",
        type=click.Choice(FORMATS),
        default=None,
        help="Read SOURCE as a real export of that tool as it is: a Claude Code session "
        "(~/.claude/projects/.../SESSION.jsonl) or a Codex rollout "
        "(~/.codex/sessions/.../rollout-*.jsonl). Records without a message are skipped "
        "and counted, injected messages stay with their exchange, interrupted and "
        "unanswered exchanges are kept and marked. Without it, the strict contract.",
    )(command)


def annotation_json(
    transcript: Transcript, priorities: dict[str, str], sidecar: Path
) -> dict[str, object]:
    """`annotate --json`: every exchange with its priority, lines and marks."""
    document: dict[str, object] = {
        "sidecar": str(sidecar),
        "sourceSha256": transcript.sha256,
        "exchangeCount": len(transcript.exchanges),
        "exchanges": [
            {
                "id": e.id,
                "priority": priorities[e.id],
                "lines": [e.first_line, e.last_line],
                "marks": list(e.marks),
                "bytes": e.end - e.start,
            }
            for e in transcript.exchanges
        ],
    }
    if transcript.export is not None:
        document.update(export_summary(transcript.export))
    else:
        document["skipped"] = {}
    return document


def annotate_transcript(
    source: Path,
    sidecar: Path,
    assignments: Sequence[str],
    *,
    stdin: TextIO,
    stdout: TextIO,
    source_format: str | None = None,
    base: Path | None = None,
) -> tuple[Transcript, dict[str, str]]:
    """Write the priorities sidecar for `source`; return the transcript and mapping.

    `base` is a sidecar of the same source (`-`: standard input) whose priorities
    the assignments change, instead of starting from every exchange `normal`.
    """
    protected = [source] + ([base] if base is not None and base != STDIN else [])
    protected += protected_database_files()
    safeio.check_directory(sidecar.parent)
    existing = safeio.check_outputs([sidecar], protected=protected)
    safeio.refuse_without_terminal(existing, stdin=stdin, stdout=stdout)
    transcript = _read_source(source, source_format)
    priorities = parse_assignments(assignments, transcript)
    if base is not None:
        if base == STDIN:
            data, name = (
                stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode(),
                "<stdin>",
            )
        else:
            data, name = safeio.read_input(base, what="base sidecar file"), str(base)
        start = parse_sidecar(data, transcript, name=name)
        named = {arg.partition("=")[0] for arg in assignments}
        priorities = {
            e.id: priorities[e.id] if e.id in named else start[e.id] for e in transcript.exchanges
        }
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
    source_format: str | None = None,
) -> Selection:
    """Write OUTDIR/continuation.md and OUTDIR/omissions.json; return the selection."""
    protected = [source, sidecar, *protected_database_files()]
    targets = [outdir / CONTINUATION, outdir / OMISSIONS]
    # Cheap refusals first, before reading a large source.
    safeio.check_directory(outdir)
    existing = safeio.check_outputs(targets, protected=protected)
    safeio.refuse_without_terminal(existing, stdin=stdin, stdout=stdout)
    transcript = _read_source(source, source_format)
    priorities = parse_sidecar(
        safeio.read_input(sidecar, what="priorities sidecar file"), transcript, name=str(sidecar)
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


@group("transcript")
def transcript_group() -> None:
    """Keep critical transcript exchanges verbatim within a byte budget.

    A transcript is UTF-8 JSON Lines, one message a line: plain records
    ({"role": "user"|"assistant"|"tool", ...}, OpenAI tool_calls) or
    message-wrapped records ({"type": "user"|"assistant", "message": {...}} with
    tool_use/tool_result blocks). Exchanges (a user prompt up to the assistant's
    response before the next prompt) are numbered e001, e002, ... in source order.
    Anything outside that contract fails closed, naming the line. With
    --from claude-code|codex, a real Claude Code session or Codex rollout is
    read as it is instead (records without a message skipped and counted,
    interrupted and unanswered exchanges kept and marked; see docs/guides/transcripts.md).

    Existing outputs are replaced only after typing OVERWRITE at a terminal;
    without a terminal they are refused (there is no force flag). The source is
    only ever read.

    \b
    ledger transcript annotate chat.jsonl priorities.json e001=pinned e003=aside
    ledger transcript export chat.jsonl priorities.json 20000 ./out
    ledger transcript annotate --from claude-code SESSION.jsonl p.json --json
    """


@transcript_group.command("annotate", short_help="Write the priorities sidecar for a transcript.")
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("priorities", type=click.Path(path_type=Path))
@click.argument("assignments", nargs=-1, metavar="[ID=pinned|normal|aside]...")
@from_option
@click.option(
    "--base",
    type=click.Path(path_type=Path),
    metavar="SIDECAR|-",
    help="Start from this sidecar's priorities (of the same source; '-' reads it from "
    "standard input) and change only the exchanges named: re-annotation for scripts. "
    "PRIORITIES must still be a new file unless you confirm OVERWRITE at a terminal.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print every exchange (id, priority, lines, marks, bytes) and what was skipped.",
)
def annotate_command(
    source: Path,
    priorities: Path,
    assignments: tuple[str, ...],
    source_format: str | None,
    base: Path | None,
    as_json: bool,
) -> None:
    """Write the priorities sidecar for SOURCE; print the exchange count.

    Give the complete desired mapping each time: exchanges not named are
    `normal` (or, with --base, keep that sidecar's priority). The sidecar is JSON
    {"version": 1, "sourceSha256": ..., "priorities": {"e001": "pinned", ...}}
    listing every exchange; a changed source invalidates it. An existing
    PRIORITIES file is replaced only after typing OVERWRITE at a terminal, so a
    script re-annotates by writing a new sidecar from the old one:

    \b
    Examples:
      ledger transcript annotate chat.jsonl priorities.json e001=pinned e003=aside
      ledger transcript annotate --from claude-code SESSION.jsonl p.json --json
      ledger transcript annotate chat.jsonl p2.json --base p1.json e004=pinned
      jq '.priorities.e002="aside"' p1.json | ledger transcript annotate chat.jsonl p2.json --base -
    """
    transcript, mapping = annotate_transcript(
        source,
        priorities,
        assignments,
        stdin=sys.stdin,
        stdout=sys.stdout,
        source_format=source_format,
        base=base,
    )
    if as_json:
        from ledger_cli.common import echo_json

        echo_json(annotation_json(transcript, mapping, priorities))
        return
    counts = {p: 0 for p in ("pinned", "normal", "aside")}
    for priority in mapping.values():
        counts[priority] += 1
    click.echo(
        f"{len(transcript.exchanges)} exchanges ({counts['pinned']} pinned, "
        f"{counts['normal']} normal, {counts['aside']} aside): wrote {priorities}"
    )
    if transcript.export is not None:
        skipped = transcript.export.skipped
        shown = ", ".join(f"{k} {v}" for k, v in skipped.items()) or "none"
        marked = sum(1 for e in transcript.exchanges if e.marks)
        total = sum(skipped.values())
        click.echo(
            f"skipped {total} record{'' if total == 1 else 's'} without a message ({shown}); "
            f"{marked} exchange{'' if marked == 1 else 's'} marked (see --json)",
            err=True,
        )


@transcript_group.command("export", short_help="Write continuation.md and omissions.json.")
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("priorities", type=click.Path(path_type=Path))
@click.argument("budget", type=click.IntRange(min=0))
@click.argument("outdir", type=click.Path(path_type=Path))
@from_option
def export_command(
    source: Path, priorities: Path, budget: int, outdir: Path, source_format: str | None
) -> None:
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
    With --from, headings also name the exchange's marks (`## e004 (normal,
    lines 9-15, interrupted)`) and omissions.json adds per exchange `lines` and
    `marks`, and `skipped` (record type -> count), `session` and `dates`.

    \b
    Examples:
      ledger transcript export chat.jsonl priorities.json 20000 ./out
      ledger transcript export --from codex rollout.jsonl p.json 20000 ./out
    """
    selection = export_transcript(
        source,
        priorities,
        budget,
        outdir,
        stdin=sys.stdin,
        stdout=sys.stdout,
        source_format=source_format,
    )
    click.echo(
        f"selected {len(selection.selected)} of {len(selection.decisions)} exchanges, "
        f"{selection.used} of {selection.budget} bytes: wrote {outdir / CONTINUATION} "
        f"and {outdir / OMISSIONS}"
    )
