"""`ledger build`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from ledger.core.errors import EXIT_INVALID
from ledger_cli.common import INTEGER, echo_json, json_option, pass_ledger
from ledger_cli.main import RECORDED, command

if TYPE_CHECKING:
    from ledger.api import Ledger


@command("build")
@click.option(
    "--as-of", "as_of", metavar="DATE", help="Valid-time date YYYY-MM-DD the pack is for."
)
@click.option("--subject", default="default", show_default=True, help="Who the pack is built for.")
@click.option("--budget", type=INTEGER, help="Token budget; default: the policy's budget.")
@click.option(
    "--counter",
    default="estimated_tokens",
    show_default=True,
    type=click.Choice(["estimated_tokens", "utf8-bytes", "cl100k_base", "o200k_base"]),
    help="How chunks are costed: the records' estimate, UTF-8 bytes, "
    "or a real BPE tokenizer (offline).",
)
@click.option(
    "--ledger-at",
    "ledger_at",
    type=INTEGER,
    metavar="SEQ",
    help="Build against the ledger as it stood at entry SEQ.",
)
@click.option(
    "--batch",
    "batch",
    type=click.Path(dir_okay=False),
    metavar="FILE.jsonl",
    help='Many packs: lines of {"subject", "as_of", "budget"?, "query"?, "top"?, '
    '"candidates"?}, all against the same ledger state.',
)
@click.option(
    "--keep-going",
    is_flag=True,
    help="With --batch: record the good lines, report each failed one.",
)
@click.option(
    "--transcript",
    "transcript",
    type=click.Path(dir_okay=False),
    metavar="SOURCE.jsonl",
    help="Record a transcript continuation instead: the exchanges of SOURCE ingested with "
    "--format transcript; --budget counts the bytes of the whole continuation.md.",
)
@click.option(
    "--priorities",
    type=click.Path(dir_okay=False),
    metavar="SIDECAR.json",
    help="With --transcript: the priorities sidecar it was ingested with.",
)
@click.option(
    "--from",
    "source_format",
    type=click.Choice(["claude-code", "codex"]),
    default=None,
    help="With --transcript: SOURCE is a real Claude Code session or Codex rollout (as "
    "ingested with --from); the pack is as of its last day, subject its session.",
)
@click.option(
    "--query",
    metavar="TEXT",
    help="A retrieval build: the evidence candidates are every version of the "
    '--top K best-matching evidence chunk ids (words and "quoted phrases").',
)
@click.option(
    "--top",
    type=INTEGER,
    metavar="K",
    help="With --query: how many chunk ids to retrieve (default 20).",
)
@click.option(
    "--candidates",
    "candidates_file",
    type=click.Path(dir_okay=False),
    metavar="FILE.jsonl",
    help='A retrieval build from your own retriever: lines {"id", '
    '"source_version"?, "score"?} in rank order.',
)
@click.option(
    "--trace-id",
    "trace_id",
    metavar="HEX32",
    help="Record the pack under this OpenTelemetry trace id (32 hex digits); "
    "`ledger packs --trace-id` finds it.",
)
@click.option(
    "--span-id", "span_id", metavar="HEX16", help="With --trace-id: the span (16 hex digits)."
)
@json_option
@pass_ledger
def build_command(
    lg: Ledger,
    as_of: str | None,
    subject: str,
    budget: int | None,
    counter: str,
    ledger_at: int | None,
    batch: str | None,
    keep_going: bool,
    transcript: str | None,
    priorities: str | None,
    source_format: str | None,
    query: str | None,
    top: int | None,
    candidates_file: str | None,
    trace_id: str | None,
    span_id: str | None,
    as_json: bool,
) -> None:
    """Select for a subject on a date, record the pack with every decision, print it.

    One transaction: the pack, its decisions and its ledger entry are written whole
    or not at all. A required chunk that fails a gate, or required chunks over
    the budget, exit 1 and record nothing.

    \b
    ledger build --as-of 2026-07-21
    ledger build --as-of 2026-07-21 --subject alice --budget 4000 --json
    ledger build --batch nightly.jsonl --keep-going
    ledger build --transcript chat.jsonl --priorities chat.priorities.json --budget 20000
    ledger build --transcript --from codex rollout.jsonl --priorities p.json --budget 20000
    ledger build --as-of 2026-07-21 --query "refund window for damaged items" --top 20
    ledger build --as-of 2026-07-21 --candidates retrieved.jsonl
    ledger build --as-of 2026-07-21 --trace-id 4bf92f3577b34da6a3ce929d0e0e4736
    """
    traced = trace_id is not None or span_id is not None
    if traced and (transcript is not None or batch is not None):
        raise click.UsageError("--trace-id/--span-id go with a single document build")
    given = (("--query", query), ("--top", top), ("--candidates", candidates_file))
    retrieval = [flag for flag, value in given if value is not None]
    if retrieval and (transcript is not None or batch is not None):
        raise click.UsageError(
            f"{'/'.join(retrieval)} go with a single document build "
            "(--batch lines take query, top and candidates)"
        )
    if transcript is not None:
        _build_transcript(
            lg,
            transcript,
            priorities,
            budget,
            subject,
            ledger_at,
            as_of,
            batch,
            as_json,
            source_format,
        )
        return
    if priorities is not None or source_format is not None:
        raise click.UsageError("--priorities and --from go with --transcript")

    if batch is not None:
        ctx = click.get_current_context()
        ignored = [
            flag
            for flag, name in (
                ("--as-of", "as_of"),
                ("--ledger-at", "ledger_at"),
                ("--subject", "subject"),
                ("--budget", "budget"),
            )
            if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
        ]
        if ignored:
            # Silently ignoring them would build other packs than the user asked for.
            raise click.UsageError(
                f"--batch takes subject, as_of and budget from its lines; drop {'/'.join(ignored)}"
            )
        _run_batch(lg, batch, counter, keep_going, as_json)
        return
    if keep_going:
        raise click.UsageError("--keep-going goes with --batch")
    if as_of is None:
        raise click.UsageError("missing --as-of DATE (or --batch FILE.jsonl)")
    pack = lg.build(
        as_of, subject, budget, counter=counter, ledger_at=ledger_at,
        query=query, top=top, candidates=candidates_file, trace_id=trace_id, span_id=span_id,
    )  # fmt: skip
    _print_pack(pack, as_json)


def _print_pack(pack: Any, as_json: bool) -> None:
    from ledger_cli.packs_cmd import render_pack

    data = pack.to_json()
    RECORDED.append(f"pack {data['pack']} (entry {data['entry']}) was")

    if as_json:
        echo_json(data)
    else:
        click.echo(render_pack(data))


def _build_transcript(
    lg: Ledger,
    source: str,
    priorities: str | None,
    budget: int | None,
    subject: str,
    ledger_at: int | None,
    as_of: str | None,
    batch: str | None,
    as_json: bool,
    source_format: str | None = None,
) -> None:
    if as_of is not None or batch is not None:
        raise click.UsageError("--transcript builds one continuation: drop --as-of/--batch")
    if budget is None:
        raise click.UsageError(
            "--transcript needs --budget BYTES (the size of the whole continuation.md)"
        )
    ctx = click.get_current_context()
    chosen: str | None = subject
    if ctx.get_parameter_source("subject") == click.core.ParameterSource.DEFAULT:
        # An export's pack is named after its session; a strict transcript's "transcript".
        chosen = None if source_format else "transcript"
    pack = lg.build_transcript(
        source,
        priorities,
        budget=budget,
        subject=chosen,
        ledger_at=ledger_at,
        source_format=source_format,
    )
    _print_pack(pack, as_json)


def _run_batch(lg: Ledger, path: str, counter: str, keep_going: bool, as_json: bool) -> None:
    from ledger.api import read_batch_lines

    lines = read_batch_lines(path)
    if sys.stderr.isatty() and len(lines) > 1:
        with click.progressbar(length=len(lines), label="build", file=sys.stderr) as bar:
            result = lg.build_batch(
                path, counter=counter, keep_going=keep_going, progress=bar.update, lines=lines
            )
    else:
        result = lg.build_batch(path, counter=counter, keep_going=keep_going, lines=lines)
    if result.packs:
        numbers = [p["pack"] for p in result.packs]
        RECORDED.append(
            f"packs {numbers[0]}-{numbers[-1]} were"
            if len(numbers) > 1
            else f"pack {numbers[0]} was"
        )
    for failure in result.failed:
        click.echo(f"error: {failure['line']}: {failure['error']}", err=True)
    if as_json:
        echo_json(result.to_json())
    else:
        for p in result.packs:
            click.echo(
                f"pack {p['pack']}: {p['subject']} as of {p['as_of']}: used {p['used']} of "
                f"{p['budget']}"
            )
        click.echo(
            f"{len(result.packs)} packs recorded, {len(result.failed)} lines failed", err=True
        )
    if result.failed:
        sys.exit(EXIT_INVALID)
