"""`ledger report`: one self-contained HTML file for a pack, a diff or a chunk's history."""

from __future__ import annotations

import math
import os
import re
from typing import TYPE_CHECKING

import click

from ledger_cli.common import WholeNumber, pass_ledger
from ledger_cli.main import command

if TYPE_CHECKING:
    from ledger.api import Ledger

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,79}")


@command("report")
@click.argument("pack", required=False)
@click.option(
    "--diff",
    "diff_packs",
    nargs=2,
    metavar="A B",
    help="Report what changed from pack A to pack B.",
)
@click.option(
    "--chunk",
    "chunk_ref",
    metavar="REF",
    help="Report the history of a chunk (id, digest or 8+ hex prefix).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="The HTML file to write (owner-only, replaced atomically). "
    "Default: pack-N.html, diff-A-B.html or chunk-REF.html in the current folder.",
)
@click.option(
    "--with-content",
    is_flag=True,
    help="Include bodies: of the admitted chunks (PACK) or of every version (--chunk).",
)
@click.option(
    "--max-hints",
    type=WholeNumber(minimum=0),
    default=200,
    show_default=True,
    help="PACK: compute 'would admit it' for at most this many evictions, in table order.",
)
@click.option(
    "--hint-seconds",
    type=click.FloatRange(min=0),
    callback=lambda _ctx, _param, value: _finite(value),
    default=3.0,
    show_default=True,
    help="PACK: compute no further hint once this many seconds are spent (the clock is read "
    "between hints, the first is always computed; 0: no limit).",
)
@pass_ledger
def report_command(
    lg: Ledger,
    pack: str | None,
    diff_packs: tuple[str, str] | None,
    chunk_ref: str | None,
    output: str | None,
    with_content: bool,
    max_hints: int,
    hint_seconds: float,
) -> None:
    """Write a self-contained HTML report of a pack, a diff or a chunk's history.

    One file that opens from disk in any browser with no network: inline style,
    a small inline script (sorting, filtering; everything is readable without
    it), charts as inline SVG, and a strict Content-Security-Policy. Light and
    dark colour schemes, print and phone widths. Bodies only with --with-content.

    \b
    PACK report: the budget split by section and by admitted chunk, evictions
    by reason, every candidate with its reason, details and the change that
    would have admitted it (computed for the first --max-hints evictions in
    table order, within --hint-seconds), the digests and the ledger entry.
    --diff A B: what entered, left, changed version or reason, each with its
    cause, and the budget and use before and after.
    --chunk REF: every version of the chunk on a time line of validity and of
    ingest, and every pack that admitted or evicted it.

    PACK is a pack number or a unique pack-digest prefix. The file is written
    owner-only (0600), atomically; default name pack-N.html, diff-A-B.html or
    chunk-REF.html in the current folder.

    \b
    ledger report 2
    ledger report --diff 1 2 -o changes.html
    ledger report --chunk refund-faq --with-content
    """
    from ledger_cli.packs_cmd import write_private

    if sum(x is not None for x in (pack, diff_packs, chunk_ref)) != 1:
        raise click.UsageError("give exactly one of PACK, --diff A B or --chunk REF")
    if with_content and diff_packs is not None:
        raise click.UsageError("--with-content applies to a PACK or --chunk report, not to --diff")
    if pack is not None:
        n, text = lg.report_pack(
            pack, with_content=with_content, max_hints=max_hints, hint_seconds=hint_seconds
        )
        name = f"pack-{n}.html"
    elif diff_packs is not None:
        a, b, text = lg.report_diff(*diff_packs)
        name = f"diff-{a}-{b}.html"
    else:
        ids, text = lg.report_chunk(chunk_ref or "", with_content=with_content)
        name = f"chunk-{chunk_ref if _SAFE_NAME.fullmatch(chunk_ref or '') else ids[0]}.html"
    path = output if output is not None else name
    write_private(path, text, lg)
    click.echo(f"wrote {os.path.abspath(path)}", err=True)


def _finite(seconds: float) -> float:
    """--hint-seconds: a number of seconds (`nan` and `inf` are not; 0: no limit)."""
    if not math.isfinite(seconds):
        raise click.BadParameter(f"{seconds} is not a number of seconds (0: no limit)")
    return seconds
