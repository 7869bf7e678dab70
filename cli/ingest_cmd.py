"""`ledger ingest` and `ledger chunks`."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from ledger.core.reasons import RETRACTED, SUPERSEDED
from ledger_cli.common import byte_progress, echo_json, json_option, pass_ledger, render_table
from ledger_cli.main import RECORDED, command

if TYPE_CHECKING:
    from ledger.api import Ledger


@command("ingest")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "fixture", "json", "jsonl", "transcript"]),
    default="auto",
    show_default=True,
    help="auto: .jsonl/.ndjson are JSON Lines, .json an array or a pack fixture; "
    "json: an array of chunk records; fixture: a pack fixture (its request is not "
    "applied); jsonl: one record per line; transcript: a chat transcript's exchanges "
    "(see `ledger transcript`).",
)
@click.option(
    "--priorities",
    type=click.Path(dir_okay=False),
    metavar="SIDECAR.json",
    help="With --format transcript: the priorities sidecar of `ledger transcript annotate` "
    "(default: every exchange normal).",
)
@click.option(
    "--id-prefix",
    metavar="PREFIX",
    help="With --format transcript: chunk ids are PREFIX + e001, ... (default: the file's "
    "name, e.g. chat- for chat.jsonl).",
)
@click.option(
    "--from",
    "source_format",
    type=click.Choice(["claude-code", "codex"]),
    default=None,
    help="With --format transcript: read a real Claude Code session or Codex rollout "
    "as it is (see `ledger transcript annotate --help`); chunk ids are "
    "<session>-e001, ...",
)
@click.option(
    "--rules",
    "rules",
    type=click.Path(dir_okay=False),
    metavar="RULES.toml",
    help="Documents: FILES are Markdown, reStructuredText, HTML, text or PDF files and "
    "folders, chunked "
    "by heading; the rules file gives their metadata (docs/guides/docs-folder.md).",
)
@click.option(
    "--source-version",
    metavar="V",
    help="With --rules: this run's source_version instead of the rules file's `version`.",
)
@click.option(
    "--effective-from",
    metavar="DATE",
    help="With --rules: this run's effective_from instead of the rules file's.",
)
@json_option
@pass_ledger
def ingest_command(
    lg: Ledger,
    files: tuple[str, ...],
    fmt: str,
    priorities: str | None,
    id_prefix: str | None,
    source_format: str | None,
    rules: str | None,
    source_version: str | None,
    effective_from: str | None,
    as_json: bool,
) -> None:
    """Store chunk versions: all or nothing per run, one ingest entry in the chain.

    Re-ingesting an identical version counts as unchanged; the same id and
    source_version with any other difference is refused (versions are immutable).

    \b
    ledger ingest fixtures/support-chunks.json
    ledger ingest --json exports/*.jsonl
    ledger ingest --format transcript chat.jsonl --priorities chat.priorities.json
    ledger ingest --format transcript --from claude-code SESSION.jsonl --priorities p.json
    ledger ingest docs/ --rules ledger-rules.toml --json
    """
    if rules is not None:
        with _document_progress() as shown:
            docs = lg.ingest_paths(
                files,
                format=fmt,
                priorities=priorities,
                id_prefix=id_prefix,
                source_format=source_format,
                rules=rules,
                source_version=source_version,
                effective_from=effective_from,
                progress=shown,
            )
        _render_documents(docs, as_json)
        return
    if source_version is not None or effective_from is not None:
        lg.ingest_paths(files, source_version=source_version, effective_from=effective_from)
    total = sum(os.path.getsize(f) for f in files if os.path.isfile(f))
    with byte_progress(total, "ingest") as progress:
        summary = lg.ingest_paths(
            files,
            format=fmt,
            progress=progress,
            priorities=priorities,
            id_prefix=id_prefix,
            source_format=source_format,
        )
    from ledger import IngestSummary

    assert isinstance(summary, IngestSummary)  # without rules it reads chunk records
    _recorded(summary.batch)
    for note in summary.notes:
        click.echo(f"note: {note}", err=True)
    if as_json:
        echo_json(summary.to_json())
    else:
        stored = _stored_words(summary.batch)
        click.echo(f"{stored}read {summary.read}, new {summary.new}, unchanged {summary.unchanged}")


def _stored_words(batch: int | None) -> str:
    """The plain output's opening: the batch, or that nothing new was stored."""
    return f"batch {batch}: " if batch is not None else "nothing new stored (no entry): "


def _recorded(batch: int | None) -> None:
    """Tell main() the batch is committed: if printing fails, it says so (exit 0)."""
    if batch is not None:
        RECORDED.append(f"batch {batch} (entry {batch}) was")


def _render_documents(summary: Any, as_json: bool) -> None:
    _recorded(summary.batch)
    if as_json:
        echo_json(summary.to_json())
        return
    stored = _stored_words(summary.batch)
    if summary.batch is None and (summary.retract_entry or summary.reinstate_entry):
        stored = "nothing new stored: "
    line = (
        f"{stored}{summary.files} files ({summary.parsed_files} parsed), read {summary.read} "
        f"chunks, new {summary.new}, unchanged {summary.unchanged}"
    )
    if summary.unknown_markup:
        total = sum(n for _name, n in summary.unknown_markup)
        names = ", ".join(f"{name} {n}" for name, n in summary.unknown_markup)
        line += f"; {total} unknown markup rendered as text ({names})"
    click.echo(line)
    if summary.retracted:
        what = f"retracted {len(summary.retracted)} ids absent from the snapshot"
        click.echo(f"{what} (entry {summary.retract_entry}): {_first(summary.retracted)}")
    if summary.reinstated:
        what = f"reinstated {len(summary.reinstated)} retracted ids the snapshot holds"
        click.echo(f"{what} (entry {summary.reinstate_entry}): {_first(summary.reinstated)}")


def _first(ids: tuple[str, ...], shown: int = 20) -> str:
    """The first `shown` ids, and how many more."""
    more = f" and {len(ids) - shown} more (--json lists all)" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


@contextmanager
def _document_progress() -> Iterator[Callable[[int, int], None] | None]:
    """Files and chunks done on stderr, on a terminal only, at most ten times a second."""
    if not sys.stderr.isatty():
        yield None
        return
    last = [0.0]
    done = [0, 0]

    def show(files: int, chunks: int) -> None:
        done[:] = [files, chunks]
        now = time.monotonic()
        if now - last[0] >= 0.1:
            last[0] = now
            sys.stderr.write(f"\ringest: {files} files, {chunks} chunks")
            sys.stderr.flush()

    try:
        yield show
    finally:
        if last[0]:
            sys.stderr.write(f"\ringest: {done[0]} files, {done[1]} chunks\n")
            sys.stderr.flush()


@command("chunks")
@click.option("--id", "chunk_id", metavar="ID", help="Only the versions of this chunk id.")
@click.option(
    "--as-of",
    metavar="DATE",
    help="The date each version's state is given for (default today), at the ledger's head.",
)
@json_option
@pass_ledger
def chunks_command(lg: Ledger, chunk_id: str | None, as_of: str | None, as_json: bool) -> None:
    """List stored chunk versions with their digests (never their bodies) and
    each version's state on a date: current, superseded, retracted, expired,
    not_yet_effective or erased.

    \b
    ledger chunks
    ledger chunks --id refund-policy --as-of 2026-03-01 --json
    """
    listing = lg.chunks(chunk_id, as_of)
    if as_json:
        echo_json(listing.to_json())
        return
    rows = listing.chunks
    if not rows:
        which = f" for id '{chunk_id}'" if chunk_id else ""
        click.echo(f"no chunk versions stored{which}", err=True)
        return
    header = ("id", "version", "section", "valid", "state", "tokens", "batch", "record", "content")
    table = [
        (
            r["id"],
            r["source_version"],
            r["section"],
            f"{r['effective_from']}..{r['expires_on'] or ''}",
            _state_words(r["state"], r["state_detail"]),
            str(r["estimated_tokens"]),
            str(r["batch"]),
            r["record_digest"][:12],
            r["content_digest"][:12],
        )
        for r in rows
    ]
    click.echo(render_table(header, table))


def _state_words(state: str, detail: dict[str, Any]) -> str:
    """A version's state in a table cell: `superseded by v2`, `retracted from
    2026-03-01 (entry 7)`, `erased (entry 9)`, or the state's name."""
    if state == SUPERSEDED and "by" in detail:
        return f"superseded by {detail['by'].get('source_version')}"
    if state == RETRACTED:
        return f"retracted from {detail.get('from')} (entry {detail.get('entry')})"
    if state == "erased":
        return f"erased (entry {detail.get('entry')})"
    return state
