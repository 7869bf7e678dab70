"""`ledger packs`, `ledger show`, `ledger export`."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from ledger.core.reasons import short_detail
from ledger.core.transcript import counted_by
from ledger_cli.common import echo_json, json_option, json_text, pass_ledger, render_table
from ledger_cli.main import command

if TYPE_CHECKING:
    from ledger.api import Ledger


def render_pack(data: dict[str, Any]) -> str:
    """The readable form of a pack: header, one table, evictions by reason."""
    lines = [
        f"pack {data['pack']} (entry {data['entry']}): subject {data['subject']}, as of "
        f"{data['as_of']}, "
        f"ledger mark {data['ledger_mark']}",
        f"used {data['used']} of {data['budget']} {data['unit']} "
        f"({counted_by(data['scope'], data['counter'])}), "
        f"remaining {data['remaining']}; "
        f"{len(data['admitted'])} admitted, {len(data['evicted'])} evicted of "
        f"{data['candidates']} candidates",
        f"pack digest {data['pack_digest']}",
        "",
    ]
    r = data.get("retrieval")
    if r is not None:
        asked = (
            f'query "{r["query"]}", top {r["top"]}'
            if r["query"] is not None
            else (f"candidates file {r['candidates_digest'][:16]}")
        )
        ranked = ", ".join(f"{x['rank']}. {x['id']}" for x in r["ranked"][:10])
        more = f" (+{len(r['ranked']) - 10} more)" if len(r["ranked"]) > 10 else ""
        lines[-1:-1] = [f"retrieval: {asked}: {ranked or 'nothing matched'}{more}"]
    t = data.get("trace")
    if t is not None:
        span = f" span {t['span_id']}" if t["span_id"] else ""
        lines[-1:-1] = [f"trace {t['trace_id']}{span}"]
    rows = [
        (a["section"], a["id"], a["source_version"], str(a["tokens"]), "admitted")
        for a in data["admitted"]
    ]
    rows += [
        (
            "-",
            e["id"],
            e["source_version"],
            str(e["tokens"]),
            f"{e['reason']} ({short_detail(e['reason'], e['detail'])})",
        )
        for e in data["evicted"]
    ]
    lines.append(render_table(("section", "id", "version", data["unit"], "reason"), rows))
    counts = Counter(e["reason"] for e in data["evicted"])
    lines.append("")
    lines.append(
        "evictions: "
        + (", ".join(f"{r} {n}" for r, n in sorted(counts.items())) if counts else "none")
    )
    erased = [i for i in data["admitted"] + data["evicted"] if "erased" in i]
    if erased:
        by_entry = Counter(i["erased"]["entry"] for i in erased)
        lines.append(
            f"erased bodies: {len(erased)} ("
            + ", ".join(f"entry {n}: {k}" for n, k in sorted(by_entry.items()))
            + "; digests and decisions kept)"
        )
    return "\n".join(lines)


@command("packs")
@click.option(
    "--trace-id",
    "trace_id",
    metavar="HEX32",
    help="Only the packs built in this OpenTelemetry trace (32 hex digits).",
)
@json_option
@pass_ledger
def packs_command(lg: Ledger, trace_id: str | None, as_json: bool) -> None:
    """List recorded packs, oldest first.

    \b
    ledger packs --json
    ledger packs --trace-id 4bf92f3577b34da6a3ce929d0e0e4736
    """
    listing = lg.packs(trace_id)
    if as_json:
        echo_json(listing.to_json())
        return
    items = listing.packs
    if not items:
        if trace_id is not None:
            click.echo(f"no pack recorded in trace {trace_id}", err=True)
            return
        click.echo("no packs recorded; run `ledger build --as-of DATE`", err=True)
        return
    click.echo(
        render_table(
            ("pack", "entry", "subject", "as_of", "used", "budget", "digest"),
            [
                (
                    str(p["pack"]),
                    str(p["entry"]),
                    p["subject"],
                    p["as_of"],
                    str(p["used"]),
                    str(p["budget"]),
                    p["pack_digest"][:12],
                )
                for p in items
            ],
        )
    )


@command("show")
@click.argument("pack")
@json_option
@pass_ledger
def show_command(lg: Ledger, pack: str, as_json: bool) -> None:
    """One pack: its admissions in output order and every eviction with its reason.

    PACK is a pack number or a unique prefix (6+ hex) of a pack digest.

    \b
    ledger show 1
    ledger show 3fa2c1 --json
    """
    data = lg.show(pack).to_json()
    if as_json:
        echo_json(data)
    else:
        click.echo(render_pack(data))


@command("export")
@click.argument("pack")
@click.option(
    "--format", "fmt", type=click.Choice(["json", "markdown"]), default="json", show_default=True
)
@click.option(
    "--with-content", is_flag=True, help="Include chunk bodies (they are left out by default)."
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write to FILE (owner-only) instead of stdout.",
)
@pass_ledger
def export_command(lg: Ledger, pack: str, fmt: str, with_content: bool, output: str | None) -> None:
    """The pack for a model or a file: a JSON manifest with provenance, or Markdown.

    Bodies are exported only with --with-content.

    \b
    ledger export 1 --format markdown --with-content -o context.md
    ledger export 1 --format json
    """
    if fmt == "json":
        manifest = lg.export(pack, "json", with_content).to_json()
        text = json_text(manifest) + "\n"
    else:
        text = lg.export(pack, "markdown", with_content)
    if output is None:
        click.echo(text, nl=False)
        return
    write_private(output, text, lg)
    click.echo(f"wrote {os.path.abspath(output)}", err=True)


def write_private(path: str, text: str, lg: Ledger, inputs: Sequence[str] = ()) -> None:
    """Write a file readable by its owner only, replacing it atomically.

    Refused (exit 1): the ledger's own database or its -wal/-shm/-journal files,
    or one of the command's input files (`inputs`), by path after resolving or
    by inode; a symbolic or hard link; anything that is not a regular file (a
    device, a named pipe, a directory).
    """
    from pathlib import Path

    from ledger import safeio

    protected = safeio.database_files(lg.database_file) + [Path(p) for p in inputs]
    safeio.write_output(Path(path), text.encode("utf-8"), protected=protected)
