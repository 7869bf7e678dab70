"""Self-contained HTML reports: a pack, a diff of two packs, a chunk's history.

Each report is one HTML file that opens from disk in any browser with no network:
its CSS and its small script (`static/`) are inline and allowed by a strict
Content-Security-Policy (`default-src 'none'`, the style and the script by their
SHA-256 hash), its charts are inline SVG, and its text stays text (searchable,
copyable). The pages are Jinja2 templates (`templates/`) rendered with
autoescape, so a chunk whose content or version holds HTML or script is
displayed, never run; the policy is the second line of defence: even an
escaping bug could neither load nor run anything.

The page is complete without JavaScript: every row is in the HTML. The script
only adds sorting (click a column heading) and filtering (text, status, reason),
and it is cheap at load: it touches the rows only when asked.

`render_pack`, `render_diff` and `render_chunk` are pure: data in, HTML out.
`pack_report`, `diff_report` and `chunk_report` read that data from a ledger
connection (through the store's queries, `ledger.store.report_data`) and render it.
"""

from __future__ import annotations

from typing import Any

from ledger.report.chunk import render_chunk
from ledger.report.diff import change_kind, render_diff
from ledger.report.pack import render_pack
from ledger.report.page import CSP

__all__ = [
    "CSP",
    "DEFAULT_HINT_SECONDS",
    "DEFAULT_MAX_HINTS",
    "change_kind",
    "chunk_report",
    "diff_report",
    "pack_report",
    "render_chunk",
    "render_diff",
    "render_pack",
]

DEFAULT_MAX_HINTS = 200
DEFAULT_HINT_SECONDS = 3.0


def pack_report(
    conn: Any,
    pack_no: int,
    *,
    with_content: bool = False,
    max_hints: int = DEFAULT_MAX_HINTS,
    hint_seconds: float | None = DEFAULT_HINT_SECONDS,
) -> str:
    """The HTML report of one recorded pack.

    Hints are computed for the first `max_hints` evictions in table order
    (sorted by id, then version, as `show` lists them) until `hint_seconds`
    are spent (the clock is read between hints; None or 0: no limit); the page
    says how many were computed and why it stopped. Bodies of the admitted
    chunks only with `with_content`.

        with read_transaction(engine) as conn:
            html = pack_report(conn, 2, max_hints=50)
    """
    from ledger.store.report_data import pack_report_data

    return render_pack(
        **pack_report_data(
            conn, pack_no, with_content=with_content, max_hints=max_hints, hint_seconds=hint_seconds
        )
    )


def diff_report(conn: Any, a: int, b: int) -> str:
    """The HTML report of `ledger diff A B`: `diff_report(conn, 1, 2)`."""
    from ledger.store.report_data import diff_report_data

    return render_diff(**diff_report_data(conn, a, b))


def chunk_report(conn: Any, ref: str, *, with_content: bool = False) -> tuple[str, list[str]]:
    """The HTML history of the chunk(s) a REF names (an id, a digest or an 8+ hex
    prefix; a version's digest reports every version of its chunk), and their ids:
    `html, ids = chunk_report(conn, "refund-faq")`."""
    from ledger.store.report_data import chunk_report_data

    data = chunk_report_data(conn, ref, with_content=with_content)
    return render_chunk(**data), [h["id"] for h in data["histories"]]
