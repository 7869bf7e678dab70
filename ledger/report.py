"""Self-contained HTML reports: a pack, a diff of two packs, a chunk's history.

Each report is one HTML file that opens from disk in any browser with no network:
its CSS and its small script are inline and allowed by a strict
Content-Security-Policy (`default-src 'none'`, the style and the script by their
SHA-256 hash), its charts are inline SVG, and its text stays text (searchable,
copyable). Everything it shows is escaped (`html.escape` for text and
attributes; the JSON copy of the figures in `<script type="application/json">`
has `<`, `>` and `&` written as `\\u003c` ...), so a chunk whose content or
version holds HTML or script is displayed, never run; the policy is the second
line of defence: even an escaping bug could neither load nor run anything.

The page is complete without JavaScript: every row is in the HTML. The script
only adds sorting (click a column heading) and filtering (text, status, reason),
and it is cheap at load: it touches the rows only when asked.

The collecting functions (`pack_report`, `diff_report`, `chunk_report`) read
the ledger through the library's own queries (`ledger.store.packs`, `ledger.store.audit`,
`ledger.store.versions`), so every figure is the one `show`, `diff` and `why-evicted`
print; the `render_*` functions are pure: data in, HTML out.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from typing import Any

from ledger.core.reasons import REASONS, SECTIONS, short_detail

__all__ = [
    "CSP",
    "DEFAULT_HINT_SECONDS",
    "DEFAULT_MAX_HINTS",
    "chunk_report",
    "diff_report",
    "json_for_html",
    "pack_report",
    "render_chunk",
    "render_diff",
    "render_pack",
]

DEFAULT_MAX_HINTS = 200
DEFAULT_HINT_SECONDS = 3.0
_DIGEST_SHOWN = 16  # a record-digest prefix: still a valid REF (8+ hex) for why-evicted

# --------------------------------------------------------------------------
# The page's style and script, allowed by hash.
# --------------------------------------------------------------------------

STYLE = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--card:#f6f8fa;
--accent:#0969da;--ok:#1a7f37;--bad:#cf222e;--free:#e8ecf0;--bar:#6e7781;
--k-policy:#8250df;--k-state:#0969da;--k-evidence:#1a7f37;--k-current-input:#bc4c00}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;
--card:#151b23;--accent:#4493f8;--ok:#3fb950;--bad:#f85149;--free:#262c36;--bar:#9198a1;
--k-policy:#ab7df8;--k-state:#4493f8;--k-evidence:#3fb950;--k-current-input:#f0883e}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans","DejaVu Sans",sans-serif}
header,main,footer{max-width:1400px;margin:0 auto;padding:0 16px}
header{padding-top:20px}
h1{font-size:1.6em;margin:.1em 0 .3em;line-height:1.25;overflow-wrap:anywhere}
h2{font-size:1.2em;margin:1.8em 0 .5em;padding-bottom:.2em;border-bottom:1px solid var(--line)}
h3{font-size:1em;margin:1.2em 0 .4em;overflow-wrap:anywhere}
p{margin:.4em 0 .8em}
.kicker{color:var(--muted);font-size:.85em;letter-spacing:.04em;text-transform:uppercase;margin:0}
.lede{font-size:1.05em;max-width:75ch}
.note{color:var(--muted);font-size:.9em;max-width:90ch}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",
"DejaVu Sans Mono",monospace;
font-size:.88em}
nav.toc{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.9em;margin:.5em 0 0}
a{color:var(--accent)}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:8px;margin:12px
0;padding:0}
.figures div{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:6px 10px}
.figures dt{color:var(--muted);font-size:.8em}
.figures dd{margin:0;font-size:1.25em;font-weight:600;font-variant-numeric:tabular-nums;
overflow-wrap:anywhere}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0;overflow-wrap:anywhere;min-width:0}
figure{margin:10px 0 16px}
figcaption{font-size:.9em;color:var(--muted);margin:2px 0 4px}
svg.chart{display:block;width:100%;height:auto;overflow:visible}
svg.bar{height:28px}svg.bar.small{height:14px;min-width:60px}
svg text{fill:var(--fg);font-family:inherit}
svg .axis{stroke:var(--line);stroke-width:1}
svg .tick{fill:var(--muted)}
.k-policy{fill:var(--k-policy)}.k-state{fill:var(--k-state)}.k-evidence{fill:var(--k-evidence)}
.k-current-input{fill:var(--k-current-input)}.k-free{fill:var(--free)}.k-other{fill:var(--bar)}
.k-used{fill:var(--accent)}
svg .seg{stroke:var(--bg);stroke-width:.6}
svg .valid{fill:var(--accent);opacity:.75}
svg .open{fill:var(--accent);opacity:.35}
svg .admit{fill:var(--ok)}
svg .evict{fill:var(--bg);stroke:var(--bad);stroke-width:2}
svg .ingest{fill:var(--fg)}
svg .packline{stroke:var(--muted);stroke-dasharray:3 3;stroke-width:1}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;list-style:none;padding:0;margin:4px 0;
font-size:.9em}
.legend li{display:flex;align-items:center;gap:6px}
.legend svg{width:12px;height:12px;flex:none}
.table-wrap{overflow-x:auto;border:1px solid var(--line);border-radius:6px;margin:6px 0 12px;
-webkit-overflow-scrolling:touch}
.table-wrap.tall{max-height:80vh;overflow:auto}
table{border-collapse:collapse;width:100%;font-size:.9em}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
tbody tr:last-child td{border-bottom:0}
th{background:var(--card);font-weight:600;white-space:nowrap}
.tall th{position:sticky;top:0;z-index:1}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td{overflow-wrap:break-word}
td.id,td.v{min-width:10ch;max-width:32ch}
td.w{min-width:24ch}
td code{word-break:break-all}
td.h{min-width:18ch}
td.r,td.a,td.e{white-space:nowrap}
.a{color:var(--ok);font-weight:600}.e{color:var(--bad);font-weight:600}
.muted{color:var(--muted)}
html[data-js] table[data-sortable] th{cursor:pointer;user-select:none}
html[data-js] table[data-sortable] th::after{content:" \\2195";color:var(--muted);font-weight:400}
html[data-js] table[data-sortable] th[aria-sort=ascending]::after{content:" \\2191"}
html[data-js] table[data-sortable] th[aria-sort=descending]::after{content:" \\2193"}
table.blocks{display:block;min-width:1100px}
table.blocks thead,table.blocks tbody{display:block}
table.blocks thead{position:sticky;top:0;z-index:1;background:var(--card)}
table.blocks tbody{content-visibility:auto;contain-intrinsic-size:auto 3600px}
table.blocks tr{display:grid;border-bottom:1px solid var(--line)}
table.blocks tbody tr:last-child td{border-bottom:0}
table.blocks th,table.blocks td{display:block;border-bottom:0;min-width:0;max-width:none}
table.blocks th{white-space:normal}
table.blocks tr[hidden]{display:none}
#candidate-table tr{grid-template-columns:6ch 9ch 17ch minmax(14ch,1.3fr) minmax(10ch,1fr) 13ch 7ch
8ch minmax(20ch,1.4fr) minmax(28ch,2.2fr) 18ch}
#admitted-table tr{grid-template-columns:6ch minmax(14ch,1.3fr) minmax(10ch,1fr) 13ch 7ch 10ch 8ch
minmax(20ch,1.5fr) 24ch 24ch}
#change-table tr{grid-template-columns:minmax(14ch,1.3fr) 15ch 9ch minmax(10ch,1fr) 17ch 9ch
minmax(10ch,1fr) 17ch 17ch}
#decision-table tr{grid-template-columns:6ch 11ch minmax(10ch,1fr) 7ch minmax(14ch,1.3fr)
minmax(10ch,1fr) 9ch 17ch minmax(20ch,1.4fr) 7ch}
.filters{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:center;margin:8px 0;font-size:.9em}
.filters[hidden]{display:none}html[data-js] .filters[hidden]{display:flex}
.filters input,.filters select{font:inherit;color:inherit;background:var(--bg);border:1px solid
var(--line);
border-radius:4px;padding:3px 6px;max-width:100%}
.filters .count{color:var(--muted)}
pre.body{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--card);border:1px solid
var(--line);
border-radius:6px;padding:8px 10px;margin:4px 0 12px;max-height:60vh;overflow:auto}
article.chunk{margin:0 0 8px}
footer{color:var(--muted);font-size:.85em;margin-top:32px;padding-bottom:24px;border-top:1px solid
var(--line)}
footer code,dd code{overflow-wrap:anywhere;word-break:break-all}
@media (max-width:640px){body{font-size:14px}header,main,footer{padding:0 10px}h1{font-size:1.35em}
dl.facts{grid-template-columns:1fr;gap:0}dl.facts dd{margin-bottom:6px}
.figures{grid-template-columns:repeat(2,minmax(0,1fr))}}
@media print{:root{--bg:#fff;--fg:#000;--muted:#444;--line:#999;--card:#fff;--accent:#000;
--free:#eee}
body{font-size:10pt;background:#fff;color:#000}
header,main,footer{max-width:none;padding:0}
nav.toc,.filters,html[data-js] .filters[hidden]{display:none}
.table-wrap,.table-wrap.tall{overflow:visible;max-height:none;border:0}
.tall th,table.blocks thead{position:static}
table.blocks{min-width:0}
table.blocks tbody{content-visibility:visible}
pre.body{max-height:none;overflow:visible}
tr,figure,article.chunk{break-inside:avoid}
h2{break-after:avoid}
a{color:inherit;text-decoration:none}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
""".strip()

SCRIPT = """
(function () {
  "use strict";
  /* Runs in <head>, before the body is parsed: it marks the page (the style then
     shows the filters and sort arrows) and listens on the document. It touches
     no row until asked, so it adds nothing to the page's load. */
  var doc = document;
  doc.documentElement.setAttribute("data-js", "on");
  function rowsOf(table) {
    var out = [];
    for (var b = 0; b < table.tBodies.length; b++) {
      var rows = table.tBodies[b].rows;
      for (var k = 0; k < rows.length; k++) { out.push(rows[k]); }
    }
    return out;
  }
  function sortBy(th) {
    var table = th.closest("table");
    var i = th.cellIndex;
    var num = th.classList.contains("n");
    var asc = th.getAttribute("aria-sort") !== "ascending";
    var heads = th.parentNode.cells;
    for (var h = 0; h < heads.length; h++) { heads[h].removeAttribute("aria-sort"); }
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var keyed = rowsOf(table).map(function (row, k) {
      var text = row.cells[i] ? row.cells[i].textContent : "";
      var v = num ? parseFloat(text) : text.toLowerCase();
      if (num && isNaN(v)) { v = -Infinity; }
      return [v, k, row];
    });
    keyed.sort(function (x, y) {
      if (x[0] < y[0]) { return asc ? -1 : 1; }
      if (x[0] > y[0]) { return asc ? 1 : -1; }
      return x[1] - y[1];
    });
    /* Refill each block with as many rows as it had. */
    var bodies = Array.prototype.slice.call(table.tBodies);
    var sizes = bodies.map(function (b) { return b.rows.length; });
    var next = 0;
    bodies.forEach(function (body, j) {
      var frag = doc.createDocumentFragment();
      for (var m = 0; m < sizes[j]; m++) { frag.appendChild(keyed[next++][2]); }
      body.appendChild(frag);
    });
  }
  var texts = new WeakMap();
  function filter(box) {
    var table = doc.getElementById(box.getAttribute("data-for"));
    if (!table) { return; }
    var heads = table.tHead.rows[0].cells;
    var wants = [];
    Array.prototype.forEach.call(box.querySelectorAll("select[data-col]"), function (s) {
      for (var i = 0; i < heads.length; i++) {
        if (heads[i].getAttribute("data-key") === s.getAttribute("data-col") && s.value) {
          wants.push([i, s.value]);
        }
      }
    });
    var search = box.querySelector("input");
    var q = search ? search.value.trim().toLowerCase() : "";
    var rows = rowsOf(table);
    var shown = 0;
    rows.forEach(function (row) {
      var ok = true;
      for (var j = 0; j < wants.length && ok; j++) {
        var cell = row.cells[wants[j][0]];
        ok = !!cell && cell.textContent === wants[j][1];
      }
      if (ok && q) {
        var t = texts.get(row);
        if (t === undefined) { t = row.textContent.toLowerCase(); texts.set(row, t); }
        ok = t.indexOf(q) !== -1;
      }
      row.hidden = !ok;
      if (ok) { shown++; }
    });
    var count = box.querySelector(".count");
    if (count) { count.textContent = shown + " of " + rows.length + " rows shown"; }
  }
  function sortable(target) {
    return target && target.closest ? target.closest("table[data-sortable] > thead th") : null;
  }
  doc.addEventListener("click", function (ev) {
    var th = sortable(ev.target);
    if (th) { sortBy(th); }
  });
  doc.addEventListener("keydown", function (ev) {
    var th = sortable(ev.target);
    if (th && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); sortBy(th); }
  });
  function onFilter(ev) {
    var box = ev.target && ev.target.closest ? ev.target.closest(".filters[data-for]") : null;
    if (box) { filter(box); }
  }
  doc.addEventListener("input", onFilter);
  doc.addEventListener("change", onFilter);
})();
""".strip()


def _csp_hash(text: str) -> str:
    return (
        "'sha256-"
        + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
        + "'"
    )


# Nothing may load: no fetch, font, frame, image (but data:), form target or base URL.
CSP = (
    f"default-src 'none'; style-src {_csp_hash(STYLE)}; script-src {_csp_hash(SCRIPT)}; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


# --------------------------------------------------------------------------
# Escaping and small builders
# --------------------------------------------------------------------------


def esc(value: Any) -> str:
    """Text or attribute value, HTML-escaped (quotes included)."""
    return html.escape("" if value is None else str(value), quote=True)


def json_for_html(data: Any) -> str:
    """JSON safe inside `<script type="application/json">`: no `<`, `>` or `&`
    (so no `</script>` or `<!--`), and no line separators."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def _page(
    title: str,
    kicker: str,
    heading: str,
    lede: str,
    toc: Sequence[tuple[str, str]],
    body: Iterable[str],
    data: Any,
    footer: str,
) -> str:
    nav = " ".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in toc)
    parts = [
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        '<meta name="color-scheme" content="light dark">\n',
        '<meta name="referrer" content="no-referrer">\n',
        '<meta name="generator" content="ledger report">\n',
        f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n<script>{SCRIPT}</script>\n</head>\n<body>\n",
        f'<header>\n<p class="kicker">{esc(kicker)}</p>\n<h1>{esc(heading)}</h1>\n'
        f'<p class="lede">{lede}</p>\n<nav class="toc" aria-label="Contents">{nav}</nav>\n'
        "</header>\n<main>\n",
    ]
    parts.extend(body)
    parts.append(f"</main>\n<footer>\n<p>{footer}</p>\n</footer>\n")
    parts.append(
        f'<script type="application/json" id="report-data">{json_for_html(data)}</script>\n'
    )
    parts.append("</body>\n</html>\n")
    return "".join(parts)


def _figures(items: Sequence[tuple[str, Any]]) -> str:
    cells = "".join(f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in items)
    return f'<dl class="figures">{cells}</dl>\n'


def _facts(items: Sequence[tuple[str, str]]) -> str:
    """A definition list; values are already-escaped HTML."""
    return (
        '<dl class="facts">'
        + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in items)
        + "</dl>\n"
    )


BLOCK_ROWS = 100  # rows per <tbody> of a big table
BLOCKS_OVER = 200  # a table with more rows than this is laid out in blocks


def _table(
    table_id: str,
    columns: Sequence[tuple[str, str, bool]],
    rows: Sequence[str],
    *,
    sortable: bool = True,
) -> str:
    """A table: columns are (key, heading, numeric); rows are ready `<tr>` HTML.

    A big table (more than BLOCKS_OVER rows) keeps its table markup but is laid
    out in blocks: one `<tbody>` per BLOCK_ROWS rows, each row a CSS grid with
    the table's column template, and `content-visibility: auto` on each block,
    so the browser lays out only the blocks on screen (10,000 rows of an
    ordinary table take seconds of layout before the first paint). The blocks
    sit in a frame that scrolls on its own (`tall`), with a sticky heading.
    """
    blocks = len(rows) > BLOCKS_OVER
    tab = ' tabindex="0"' if sortable else ""
    head = "".join(
        f'<th scope="col" data-key="{esc(k)}"{" class=n" if num else ""}{tab}>{esc(h)}</th>'
        for k, h, num in columns
    )
    attrs = (
        f' id="{esc(table_id)}"'
        + (' class="blocks"' if blocks else "")
        + (" data-sortable" if sortable else "")
    )
    if blocks:
        body = "".join(
            "<tbody>\n" + "".join(rows[i : i + BLOCK_ROWS]) + "</tbody>"
            for i in range(0, len(rows), BLOCK_ROWS)
        )
    else:
        body = "<tbody>\n" + "".join(rows) + "</tbody>"
    tall = " tall" if len(rows) > 40 else ""
    return (
        f'<div class="table-wrap{tall}"><table{attrs}><thead><tr>{head}</tr></thead>'
        f"{body}</table></div>\n"
    )


def _filters(table_id: str, selects: Sequence[tuple[str, str, Sequence[str]]], total: int) -> str:
    """Filter controls: `hidden`, and shown by the style once the script has marked
    the page (`html[data-js]`); with JS off they stay hidden and every row shows."""
    parts = [
        f'<div class="filters" role="search" data-for="{esc(table_id)}" hidden>',
        f'<label>Find <input type="search" placeholder="id, version, reason..." '
        f'aria-controls="{esc(table_id)}"></label>',
    ]
    for col, label, options in selects:
        opts = '<option value="">all</option>' + "".join(
            f"<option>{esc(o)}</option>" for o in options
        )
        parts.append(f'<label>{esc(label)} <select data-col="{esc(col)}">{opts}</select></label>')
    parts.append(
        f'<span class="count" aria-live="polite">{total} of {total} rows shown</span></div>\n'
    )
    return "".join(parts)


def _legend(items: Sequence[tuple[str, str]]) -> str:
    """(css class, label) swatches; the labels are text."""
    lis = "".join(
        f'<li><svg viewBox="0 0 12 12" aria-hidden="true">'
        f'<rect class="{esc(c)}" width="12" height="12" rx="2"/>'
        f"</svg>{esc(label)}</li>"
        for c, label in items
    )
    return f'<ul class="legend">{lis}</ul>'


def _num(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _stacked_bar(
    segments: Sequence[tuple[float, str, str]], total: float, label: str, height: int = 26
) -> str:
    """One horizontal bar of `total` units split into (units, css class, hover title)."""
    scale = 1000 / total if total > 0 else 0
    x = 0.0
    rects = []
    for units, cls, title in segments:
        w = units * scale
        if w <= 0:
            continue
        rects.append(
            f'<rect class="seg {esc(cls)}" x="{_num(x)}" y="0" width="{_num(w)}" height="{height}">'
            f"<title>{esc(title)}</title></rect>"
        )
        x += w
    return (
        f'<svg class="chart bar" viewBox="0 0 1000 {height}" preserveAspectRatio="none" role="img" '
        f'aria-label="{esc(label)}">{"".join(rects)}</svg>'
    )


def _footer(head: Any) -> str:
    try:
        from importlib.metadata import version

        ours = " " + version("context-ledger")
    except Exception:  # not installed as a distribution (a source checkout)
        ours = ""
    return (
        f"Written by ledger{esc(ours)} from the ledger as it stood at entry {esc(head.seq)} "
        f"(head <code>{esc(head.entry_hash)}</code>). One self-contained file: no network, "
        "no external scripts, fonts or styles."
    )


# --------------------------------------------------------------------------
# Admission hints, bounded in number and time
# --------------------------------------------------------------------------


class _OutOfTime(Exception):
    pass


_PURE_CORE = "ledger.core.select"  # the only code a timer may interrupt
_RETRY = 0.01


@contextmanager
def _time_limit(seconds: float | None) -> Iterator[bool]:
    """Interrupt the block after `seconds`, but only inside the pure selector.

    A hint re-runs the pure core; on a big pack one hint can take long, and
    Python cannot stop a computation from outside, so a real-time timer
    (SIGALRM) raises `_OutOfTime` in it. The handler raises only when the
    interrupted code is in `ledger.core.select`, which holds no outside state (no
    connection, no file); anywhere else, such as reading the pack's candidates
    from the database, it tries again a moment later. Only in the main thread
    and when no other timer is set; otherwise yields False and the caller checks
    the clock between hints only.
    """
    usable = (
        seconds is not None
        and seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )
    if seconds is None or not usable:
        yield False
        return
    done = False

    def on_alarm(_signum: int, frame: Any) -> None:
        if done:
            return
        while frame is not None:
            if frame.f_globals.get("__name__") == _PURE_CORE:
                raise _OutOfTime()
            frame = frame.f_back
        signal.setitimer(signal.ITIMER_REAL, _RETRY)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        yield True
    finally:
        done = True  # an alarm still on its way now does nothing
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)


def compute_hints(
    conn: Any, head: Any, digests: Sequence[str], max_hints: int, seconds: float | None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Hints (`ledger.store.audit.hint_for`) for the first `max_hints` of `digests`, in order.

    With a time limit (`seconds`; None or 0: none) no hint may take more than a
    quarter of it: a slower one is abandoned and marked skipped, so that one
    expensive hint (a budget step re-runs the selector once per chunk the extra
    budget lets in) does not cost every other row its hint; computing stops when
    the limit is spent. The pack's candidates are loaded once (hint_for's cache).
    Returns the hints by record digest and a note of what was done.
    """
    from ledger.store.audit import hint_for

    wanted = list(digests[: max(0, max_hints)])
    limit = seconds if seconds and seconds > 0 else None
    each = limit / 4 if limit is not None else None
    hints: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    stopped = None
    cache: dict[Any, Any] = {}
    started = time.perf_counter()
    for digest in wanted:
        left = None if limit is None else limit - (time.perf_counter() - started)
        if left is not None and left <= 0:
            stopped = "time"
            break
        try:
            with _time_limit(None if each is None or left is None else min(each, left)):
                hints[digest] = hint_for(conn, head, digest, cache)
        except _OutOfTime:
            skipped.append(digest)
    if stopped is None and len(hints) + len(skipped) < len(digests):
        stopped = "count"
    return hints, {
        "evictions": len(digests),
        "asked": len(wanted),
        "computed": len(hints),
        "skipped": skipped,
        "max_hints": max_hints,
        "seconds": limit,
        "seconds_each": each,
        "stopped": stopped,
        "elapsed": round(time.perf_counter() - started, 3),
    }


# --------------------------------------------------------------------------
# Pack
# --------------------------------------------------------------------------


def pack_report(
    conn: Any,
    pack_no: int,
    *,
    with_content: bool = False,
    max_hints: int = DEFAULT_MAX_HINTS,
    hint_seconds: float | None = DEFAULT_HINT_SECONDS,
) -> str:
    """The HTML report of one recorded pack (see `render_pack`).

    Hints are computed for the first `max_hints` evictions in table order
    (sorted by id, then version, as `show` lists them), for at most
    `hint_seconds` in all, a quarter of that at most for any one hint (see
    `compute_hints`); bodies of the admitted chunks only with `with_content`.
    """
    from sqlalchemy import select

    from ledger.store.chain import read_head
    from ledger.store.schema import ChunkVersion
    from ledger.store.packs import decision_rows, pack_header, pack_json

    data = pack_json(conn, pack_no)
    rows = {r.record_digest: r for r in decision_rows(conn, pack_no)}
    head = pack_header(conn, pack_no)
    ledger_head = read_head(conn)
    bodies: dict[str, str] = {}
    if with_content:
        v = ChunkVersion.__table__
        wanted = [a["record_digest"] for a in data["admitted"]]
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            query = select(v.c.record_digest, v.c.content).where(v.c.record_digest.in_(part))
            bodies.update((d, c) for d, c in conn.execute(query))
    hints, hint_note = compute_hints(
        conn, head, [e["record_digest"] for e in data["evicted"]], max_hints, hint_seconds
    )
    meta = {
        d: {
            "section": r.section,
            "priority": r.priority,
            "required": bool(r.required),
            "source_uri": r.source_uri,
        }
        for d, r in rows.items()
    }
    return render_pack(data, meta, hints, hint_note, bodies if with_content else None, ledger_head)


def render_pack(
    data: dict[str, Any],
    meta: dict[str, dict[str, Any]],
    hints: dict[str, dict[str, Any]],
    hint_note: dict[str, Any],
    bodies: dict[str, str] | None,
    ledger_head: Any,
) -> str:
    """Pure: `show --json` data, per-digest metadata, hints and bodies in; HTML out."""
    from ledger.core.reasons import describe_hint

    n = data["pack"]
    admitted, evicted = data["admitted"], data["evicted"]
    budget, used = data["budget"], data["used"]
    counts = Counter(e["reason"] for e in evicted)
    skipped = set(hint_note.get("skipped", ()))
    tokens_by_reason: Counter[str] = Counter()
    for e in evicted:
        tokens_by_reason[e["reason"]] += e["tokens"]
    total = len(admitted) + len(evicted)
    body: list[str] = []

    # -- summary
    body.append('<section id="summary" aria-label="Summary">\n')
    body.append(
        _figures(
            [
                ("budget", budget),
                ("used", used),
                ("remaining", data["remaining"]),
                ("candidates", total),
                ("admitted", len(admitted)),
                ("evicted", len(evicted)),
            ]
        )
    )
    body.append("</section>\n")

    # -- budget bars
    scale = max(budget, used, 1)
    by_section: Counter[str] = Counter()
    count_section: Counter[str] = Counter()
    for a in admitted:
        by_section[a["section"]] += a["tokens"]
        count_section[a["section"]] += 1
    sections = [s for s in SECTIONS if s in by_section] + sorted(set(by_section) - set(SECTIONS))
    free = max(budget - used, 0)
    seg_sections = [
        (by_section[s], _kind(s), f"{s}: {by_section[s]} tokens, {count_section[s]} chunks")
        for s in sections
    ]
    seg_sections.append((free, "k-free", f"remaining: {free} tokens"))
    seg_chunks = [
        (
            a["tokens"],
            _kind(a["section"]),
            f"{a['id']} @ {a['source_version']}: {a['tokens']} tokens ({a['section']})",
        )
        for a in admitted
    ]
    seg_chunks.append((free, "k-free", f"remaining: {free} tokens"))
    body.append('<section id="budget"><h2>Budget</h2>\n')
    body.append(
        f"<p>{used} of {budget} tokens used ({esc(data['counter'])}), "
        f"{data['remaining']} remaining.</p>\n"
    )
    legend = [(_kind(s), f"{s} {by_section[s]}") for s in sections]
    legend.append(("k-free", f"remaining {free}"))
    body.append(
        f"<figure><figcaption>By section</figcaption>"
        f"{_stacked_bar(seg_sections, scale, f'Budget {budget} tokens by section')}"
        f"{_legend(legend)}</figure>\n"
    )
    body.append(
        f"<figure><figcaption>By admitted chunk, in output order (hover a segment for its id, "
        f"version and tokens)</figcaption>"
        f"{_stacked_bar(seg_chunks, scale, f'Budget {budget} tokens by admitted chunk')}</figure>\n"
    )
    sec_rows = [
        f'<tr><td>{esc(s)}</td><td class="n">{count_section[s]}</td>'
        f'<td class="n">{by_section[s]}</td><td class="n">{_pct(by_section[s], budget)}</td></tr>\n'
        for s in sections
    ]
    sec_rows.append(
        f'<tr><td class="muted">remaining</td><td class="n"></td><td class="n">{free}</td>'
        f'<td class="n">{_pct(free, budget)}</td></tr>\n'
    )
    body.append(
        _table(
            "sections",
            [
                ("section", "section", False),
                ("chunks", "chunks", True),
                ("tokens", "tokens", True),
                ("share", "share of budget", True),
            ],
            sec_rows,
            sortable=False,
        )
    )
    body.append("</section>\n")

    # -- admitted, in output order
    body.append(f'<section id="admitted"><h2>Admitted, in output order ({len(admitted)})</h2>\n')
    arows = []
    for i, a in enumerate(admitted, 1):
        m = meta.get(a["record_digest"], {})
        arows.append(
            f'<tr><td class="n">{i}</td><td class="id">{esc(a["id"])}</td>'
            f'<td class="v">{esc(a["source_version"])}</td><td>{esc(a["section"])}</td>'
            f'<td class="n">{a["tokens"]}</td><td>{"yes" if a["required"] else "no"}</td>'
            f'<td class="n">{esc(m.get("priority", ""))}</td>'
            f"<td>{esc(m.get('source_uri', ''))}</td>"
            f'<td class="h"><code>{esc(a["record_digest"])}</code></td>'
            f'<td class="h"><code>{esc(a["content_digest"])}</code></td></tr>\n'
        )
    if arows:
        body.append(
            _table(
                "admitted-table",
                [
                    ("n", "#", True),
                    ("id", "id", False),
                    ("version", "version", False),
                    ("section", "section", False),
                    ("tokens", "tokens", True),
                    ("required", "required", False),
                    ("priority", "priority", True),
                    ("source", "source_uri", False),
                    ("record", "record digest", False),
                    ("content", "content digest", False),
                ],
                arows,
            )
        )
    else:
        body.append("<p>No chunk was admitted.</p>\n")
    body.append("</section>\n")

    # -- evictions by reason
    body.append(f'<section id="evictions"><h2>Evictions by reason ({len(evicted)})</h2>\n')
    if evicted:
        most = max(counts.values())
        erows = []
        for reason in [r for r in REASONS if r in counts] + sorted(set(counts) - set(REASONS)):
            bar = (
                '<svg class="chart bar small" viewBox="0 0 200 14" preserveAspectRatio="none" '
                f'role="img" aria-label="{counts[reason]} evictions"><rect class="k-other" '
                f'width="{_num(200 * counts[reason] / most)}" height="14" rx="2"/></svg>'
            )
            erows.append(
                f'<tr><td>{esc(reason)}</td><td class="n">{counts[reason]}</td>'
                f'<td class="n">{tokens_by_reason[reason]}</td><td class="w">{bar}</td></tr>\n'
            )
        body.append(
            _table(
                "reasons",
                [
                    ("reason", "reason", False),
                    ("count", "count", True),
                    ("tokens", "tokens", True),
                    ("bar", "share", False),
                ],
                erows,
                sortable=False,
            )
        )
        body.append(
            '<p class="note">Gates in order: permission_denied, trust_denied, not_yet_effective, '
            "expired, superseded, duplicate, budget; a candidate is evicted by the first gate it "
            "fails.</p>\n"
        )
    else:
        body.append("<p>Nothing was evicted: every candidate was admitted.</p>\n")
    body.append("</section>\n")

    # -- every candidate
    body.append(f'<section id="candidates"><h2>Every candidate ({total})</h2>\n')
    body.append(f'<p class="note">{_hint_sentence(hint_note, n)}</p>\n')
    body.append(
        _filters(
            "candidate-table",
            [
                ("status", "Status", ["admitted", "evicted"]),
                ("reason", "Reason", [r for r in REASONS if r in counts]),
            ],
            total,
        )
    )
    crows = []
    i = 0
    for a in admitted:
        i += 1
        m = meta.get(a["record_digest"], {})
        crows.append(
            f'<tr><td class="n">{i}</td><td class="a">admitted</td><td class="r"></td>'
            f'<td class="id">{esc(a["id"])}</td><td class="v">{esc(a["source_version"])}</td>'
            f'<td>{esc(a["section"])}</td><td class="n">{a["tokens"]}</td>'
            f'<td class="n">{esc(m.get("priority", ""))}</td><td>output position {i}</td><td></td>'
            f"<td><code>{esc(a['record_digest'][:_DIGEST_SHOWN])}</code></td></tr>\n"
        )
    for e in evicted:
        i += 1
        m = meta.get(e["record_digest"], {})
        hint = hints.get(e["record_digest"])
        if hint is not None:
            hint_td = f'<td class="w">{esc(describe_hint(hint))}</td>'
        elif e["record_digest"] in skipped:
            hint_td = '<td class="w muted">not computed: too slow here</td>'
        else:
            hint_td = '<td class="w muted">not computed</td>'
        crows.append(
            f'<tr><td class="n">{i}</td><td class="e">evicted</td>'
            f'<td class="r">{esc(e["reason"])}</td>'
            f'<td class="id">{esc(e["id"])}</td><td class="v">{esc(e["source_version"])}</td>'
            f'<td>{esc(m.get("section", ""))}</td><td class="n">{e["tokens"]}</td>'
            f'<td class="n">{esc(m.get("priority", ""))}</td>'
            f"<td>{esc(short_detail(e['reason'], e['detail']))}</td>{hint_td}"
            f"<td><code>{esc(e['record_digest'][:_DIGEST_SHOWN])}</code></td></tr>\n"
        )
    body.append(
        _table(
            "candidate-table",
            [
                ("n", "#", True),
                ("status", "status", False),
                ("reason", "reason", False),
                ("id", "id", False),
                ("version", "version", False),
                ("section", "section", False),
                ("tokens", "tokens", True),
                ("priority", "priority", True),
                ("details", "details", False),
                ("hint", "would admit it", False),
                ("record", "record digest", False),
            ],
            crows,
        )
    )
    body.append("</section>\n")

    # -- bodies
    toc = [
        ("budget", "Budget"),
        ("admitted", "Admitted"),
        ("evictions", "Evictions"),
        ("candidates", "Every candidate"),
    ]
    if bodies is not None:
        toc.append(("bodies", "Bodies"))
        body.append(
            f'<section id="bodies"><h2>Bodies of the admitted chunks ({len(admitted)})</h2>\n'
        )
        body.append('<p class="note">Exactly as stored, shown as text.</p>\n')
        for a in admitted:
            body.append(
                f'<article class="chunk"><h3>{esc(a["id"])} @ {esc(a["source_version"])}</h3>'
                f'<pre class="body">{esc(bodies.get(a["record_digest"], ""))}</pre></article>\n'
            )
        body.append("</section>\n")
    toc.append(("provenance", "Digests"))

    # -- provenance
    policy = data.get("policy") or {}
    facts = [
        ("pack", esc(n)),
        ("ledger entry", esc(data["entry"])),
        ("ledger mark", f"{esc(data['ledger_mark'])} (the last entry the build could see)"),
        ("pack digest", f"<code>{esc(data['pack_digest'])}</code>"),
        ("input digest", f"<code>{esc(data['input_digest'])}</code>"),
        ("as of", esc(data["as_of"])),
        ("subject", esc(data["subject"])),
        ("grants", esc(", ".join(data.get("grants") or []) or "none")),
        ("allowed trust", esc(", ".join(policy.get("allowed_trust") or []) or "none")),
        ("policy budget", esc(policy.get("budget"))),
        ("budget", esc(budget)),
        ("token counter", esc(data["counter"])),
        ("selector", esc(data["selector_version"])),
    ]
    if "scope" in data:
        facts.append(("scope", esc(data["scope"])))
    body.append('<section id="provenance"><h2>Digests and ledger entry</h2>\n')
    body.append(_facts(facts))
    body.append(
        '<p class="note">Check it with <code>ledger verify</code> and <code>ledger '
        f"replay {esc(n)}</code>; "
        f"the full pack is <code>ledger show {esc(n)} --json</code>.</p>\n</section>\n"
    )

    lede = (
        f"As of <b>{esc(data['as_of'])}</b> for subject <b>{esc(data['subject'])}</b>: "
        f"{used} of {budget} tokens used, {data['remaining']} remaining; {len(admitted)} admitted "
        "and "
        f"{len(evicted)} evicted of {total} candidates. Ledger entry {esc(data['entry'])}."
    )
    report_data = {
        "kind": "pack",
        "pack": n,
        "entry": data["entry"],
        "ledger_mark": data["ledger_mark"],
        "pack_digest": data["pack_digest"],
        "input_digest": data["input_digest"],
        "as_of": data["as_of"],
        "subject": data["subject"],
        "budget": budget,
        "used": used,
        "remaining": data["remaining"],
        "candidates": total,
        "evictions_by_reason": dict(sorted(counts.items())),
        "admitted": [
            {
                "id": a["id"],
                "source_version": a["source_version"],
                "section": a["section"],
                "tokens": a["tokens"],
            }
            for a in admitted
        ],
        "hints": {**hint_note, "by_record_digest": hints},
        "with_content": bodies is not None,
    }
    return _page(
        title=f"Pack {n} · as of {data['as_of']} · {data['subject']} — ledger report",
        kicker="ledger report · pack",
        heading=f"Context pack {n}",
        lede=lede,
        toc=toc,
        body=body,
        data=report_data,
        footer=_footer(ledger_head),
    )


def _kind(section: str) -> str:
    return f"k-{section}" if section in SECTIONS else "k-other"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _hint_sentence(note: dict[str, Any], pack_no: int) -> str:
    """Says which evictions have a 'would admit it' hint, and why not the others."""
    ev, computed, skipped = note["evictions"], note["computed"], len(note["skipped"])
    run = f"<code>ledger why-evicted ID --pack {esc(pack_no)}</code>"
    if ev == 0:
        return "Every candidate was admitted."
    how = (
        "Each hint is the smallest change that would have admitted the chunk, computed by "
        "re-running "
        "the selector on this pack's recorded inputs."
    )
    if computed == ev:
        return f"{how} Computed for all {ev} evictions."
    tried = computed + skipped
    if tried == 0 and note["max_hints"] <= 0:
        return f"Hints were not computed (a limit of 0 hints). For any eviction, run {run}."
    parts = [
        f"{how} Computed for {computed} of the first {tried} of {ev} evictions in table order "
        f"(by id, then version)"
    ]
    if skipped:
        parts.append(
            f"; {skipped} took longer than {note['seconds_each'] or 0:g} s each and were skipped"
        )
    if note["stopped"] == "time":
        parts.append(f"; the time limit of {note['seconds'] or 0:g} s was reached")
    elif note["stopped"] == "count":
        parts.append(f"; the limit is {note['max_hints']} hints per report")
    return "".join(parts) + f". For any other, run {run}."


# --------------------------------------------------------------------------
# Diff
# --------------------------------------------------------------------------

CHANGE_KINDS = (
    "entered",
    "left",
    "changed version",
    "changed reason",
    "new candidate, not admitted",
    "no longer a candidate",
)


def change_kind(change: dict[str, Any]) -> str:
    """What happened to a chunk id between the two packs, in one phrase."""
    a, b = change["from"], change["to"]
    if b["status"] == "admitted" and a["status"] != "admitted":
        return "entered"
    if a["status"] == "admitted" and b["status"] != "admitted":
        return "left"
    if a["status"] == "absent":
        return "new candidate, not admitted"
    if b["status"] == "absent":
        return "no longer a candidate"
    if a["source_version"] != b["source_version"]:
        return "changed version"
    return "changed reason"


def diff_report(conn: Any, a: int, b: int) -> str:
    """The HTML report of `ledger diff A B` (see `render_diff`)."""
    from ledger.store.audit import diff
    from ledger.store.chain import read_head
    from ledger.store.packs import pack_header

    result = diff(conn, a, b)
    sides = []
    for n, side in ((a, "from"), (b, "to")):
        h = pack_header(conn, n)
        sides.append(
            {
                "pack": n,
                "entry": h.entry_seq,
                "ledger_mark": h.ledger_mark,
                "pack_digest": h.pack_digest,
                "input_digest": h.input_digest,
                # The figures the diff itself reports.
                "as_of": result["as_of"][side],
                "subject": result["subject"][side],
                "budget": result["budget"][side],
                "used": result["used"][side],
            }
        )
    return render_diff(result, sides[0], sides[1], read_head(conn))


def render_diff(
    result: dict[str, Any], pa: dict[str, Any], pb: dict[str, Any], ledger_head: Any
) -> str:
    """Pure: `diff --json` data and the two packs' headers in; HTML out."""
    a, b = result["from"], result["to"]
    changes = result["changes"]
    kinds = Counter(change_kind(c) for c in changes)
    causes = Counter(c["cause"] for c in changes)
    body: list[str] = []
    body.append('<section id="summary" aria-label="Summary">\n')
    body.append(
        _figures(
            [
                (f"budget {a} → {b}", f"{pa['budget']} → {pb['budget']}"),
                (f"used {a} → {b}", f"{pa['used']} → {pb['used']}"),
                ("changes", len(changes)),
                ("entered", kinds["entered"]),
                ("left", kinds["left"]),
            ]
        )
    )
    body.append("</section>\n")

    # -- budget before and after, on one scale
    scale = max(pa["budget"], pb["budget"], pa["used"], pb["used"], 1)
    body.append('<section id="budget"><h2>Budget and use, before and after</h2>\n')
    for p in (pa, pb):
        free = max(p["budget"] - p["used"], 0)
        body.append(
            f"<figure><figcaption>Pack {esc(p['pack'])} (as of {esc(p['as_of'])}): {p['used']} of "
            f"{p['budget']} used</figcaption>"
            + _stacked_bar(
                [
                    (p["used"], "k-used", f"pack {p['pack']}: used {p['used']}"),
                    (free, "k-free", f"pack {p['pack']}: remaining {free}"),
                ],
                scale,
                f"Pack {p['pack']}: {p['used']} of {p['budget']} tokens used",
            )
            + "</figure>\n"
        )
    body.append(_legend([("k-used", "used"), ("k-free", "remaining (bars share one scale)")]))
    prow = [
        f'<tr><td class="n">{esc(p["pack"])}</td><td>{esc(p["as_of"])}</td>'
        f"<td>{esc(p['subject'])}</td>"
        f'<td class="n">{p["budget"]}</td><td class="n">{p["used"]}</td>'
        f'<td class="n">{p["budget"] - p["used"]}</td><td class="n">{esc(p["entry"])}</td>'
        f"<td><code>{esc(p['pack_digest'])}</code></td></tr>\n"
        for p in (pa, pb)
    ]
    body.append(
        _table(
            "packs",
            [
                ("pack", "pack", True),
                ("as_of", "as of", False),
                ("subject", "subject", False),
                ("budget", "budget", True),
                ("used", "used", True),
                ("remaining", "remaining", True),
                ("entry", "ledger entry", True),
                ("digest", "pack digest", False),
            ],
            prow,
            sortable=False,
        )
    )
    body.append("</section>\n")

    # -- counts
    body.append('<section id="kinds"><h2>What changed</h2>\n')
    if changes:
        krows = [
            f'<tr><td>{esc(k)}</td><td class="n">{kinds[k]}</td></tr>\n'
            for k in CHANGE_KINDS
            if kinds[k]
        ]
        body.append(
            _table(
                "kind-counts",
                [("kind", "change", False), ("count", "count", True)],
                krows,
                sortable=False,
            )
        )
        crow = [
            f'<tr><td>{esc(c)}</td><td class="n">{causes[c]}</td></tr>\n' for c in sorted(causes)
        ]
        body.append(
            _table(
                "cause-counts",
                [("cause", "cause", False), ("count", "count", True)],
                crow,
                sortable=False,
            )
        )
    else:
        body.append("<p>No differences: the two packs decide every chunk id the same way.</p>\n")
    body.append("</section>\n")

    # -- every change
    body.append(f'<section id="changes"><h2>Every change ({len(changes)})</h2>\n')
    body.append(
        '<p class="note">Compared per chunk id: its admitted version, else its newest considered '
        "version. The cause is the earliest gate that one side failed and the other passed.</p>\n"
    )
    if changes:
        body.append(
            _filters(
                "change-table",
                [
                    ("change", "Change", [k for k in CHANGE_KINDS if kinds[k]]),
                    ("cause", "Cause", sorted(causes)),
                ],
                len(changes),
            )
        )
        rows = []
        for c in changes:
            f, t = c["from"], c["to"]
            rows.append(
                f'<tr><td class="id">{esc(c["id"])}</td><td>{esc(change_kind(c))}</td>'
                f'<td class="{_status_class(f["status"])}">{esc(f["status"])}</td>'
                f'<td class="v">{esc(f["source_version"] or "")}</td>'
                f'<td class="r">{esc(f["reason"] or "")}</td>'
                f'<td class="{_status_class(t["status"])}">{esc(t["status"])}</td>'
                f'<td class="v">{esc(t["source_version"] or "")}</td>'
                f'<td class="r">{esc(t["reason"] or "")}</td><td>{esc(c["cause"])}</td></tr>\n'
            )
        body.append(
            _table(
                "change-table",
                [
                    ("id", "id", False),
                    ("change", "change", False),
                    ("from_status", f"pack {a}", False),
                    ("from_version", f"version in {a}", False),
                    ("from_reason", f"reason in {a}", False),
                    ("to_status", f"pack {b}", False),
                    ("to_version", f"version in {b}", False),
                    ("to_reason", f"reason in {b}", False),
                    ("cause", "cause", False),
                ],
                rows,
            )
        )
    body.append("</section>\n")

    # -- provenance
    body.append('<section id="provenance"><h2>Digests and ledger entries</h2>\n')
    for p in (pa, pb):
        body.append(f"<h3>Pack {esc(p['pack'])}</h3>\n")
        body.append(
            _facts(
                [
                    ("ledger entry", esc(p["entry"])),
                    ("ledger mark", esc(p["ledger_mark"])),
                    ("pack digest", f"<code>{esc(p['pack_digest'])}</code>"),
                    ("input digest", f"<code>{esc(p['input_digest'])}</code>"),
                ]
            )
        )
    body.append(
        f'<p class="note">The same comparison as text: <code>ledger diff {esc(a)} {esc(b)}</code>'
        ".</p>\n"
    )
    body.append("</section>\n")

    lede = (
        f"From pack {esc(a)} (as of {esc(pa['as_of'])}, subject {esc(pa['subject'])}) to "
        f"pack {esc(b)} "
        f"(as of {esc(pb['as_of'])}, subject {esc(pb['subject'])}): used {pa['used']} "
        f"of {pa['budget']} → "
        f"{pb['used']} of {pb['budget']}; {len(changes)} chunk ids changed."
    )
    data = {"kind": "diff", **result, "packs": {"from": pa, "to": pb}}
    return _page(
        title=f"Diff of packs {a} → {b} — ledger report",
        kicker="ledger report · diff",
        heading=f"Pack {a} → pack {b}",
        lede=lede,
        toc=[
            ("budget", "Budget"),
            ("kinds", "What changed"),
            ("changes", "Every change"),
            ("provenance", "Digests"),
        ],
        body=body,
        data=data,
        footer=_footer(ledger_head),
    )


def _status_class(status: str) -> str:
    return {"admitted": "a", "evicted": "e"}.get(status, "muted")


# --------------------------------------------------------------------------
# Chunk history
# --------------------------------------------------------------------------


def chunk_report(conn: Any, ref: str, *, with_content: bool = False) -> tuple[str, list[str]]:
    """The HTML history of the chunk(s) a REF names, and their ids.

    A REF that names a version (a digest) reports every version of that chunk id.
    """
    from sqlalchemy import select

    from ledger.store.audit import resolve_ref, why_evicted
    from ledger.store.chain import read_head
    from ledger.store.schema import ChunkVersion
    from ledger.store.packs import list_packs
    from ledger.store.versions import list_versions

    ids = sorted({r.chunk_id for r in resolve_ref(conn, ref)})
    histories = []
    for cid in ids:
        histories.append(
            {
                "id": cid,
                "why": why_evicted(conn, cid, None, "none"),
                "versions": list_versions(conn, cid),
            }
        )
    packs = {p["pack"]: p for p in list_packs(conn)}
    bodies = None
    if with_content:
        v = ChunkVersion.__table__
        query = select(v.c.record_digest, v.c.content).where(v.c.chunk_id.in_(ids))
        bodies = {d: c for d, c in conn.execute(query)}
    return render_chunk(ref, histories, packs, bodies, read_head(conn)), ids


def render_chunk(
    ref: str,
    histories: list[dict[str, Any]],
    packs: dict[int, dict[str, Any]],
    bodies: dict[str, str] | None,
    ledger_head: Any,
) -> str:
    """Pure: per chunk id its `why-evicted --json --hints none` answer and its
    versions' metadata (`ledger.store.versions.list_versions`), the packs; HTML out."""
    meta = {v["record_digest"]: v for h in histories for v in h["versions"]}
    versions = [v for h in histories for v in h["why"]["versions"]]
    decisions = [(v, d) for v in versions for d in v["decisions"]]
    decisions.sort(key=lambda vd: (-vd[1]["pack"], vd[0]["id"], vd[0]["source_version"]))
    admitted_in = sorted({d["pack"] for _, d in decisions if d["admitted"]})
    evicted_in = sorted({d["pack"] for _, d in decisions if not d["admitted"]})
    ids = [h["id"] for h in histories]
    body: list[str] = []

    body.append('<section id="summary" aria-label="Summary">\n')
    body.append(
        _figures(
            [
                ("versions", len(versions)),
                ("decisions", len(decisions)),
                ("admitted in packs", len(admitted_in)),
                ("evicted in packs", len(evicted_in)),
            ]
        )
    )
    body.append("</section>\n")

    # -- time lines
    body.append('<section id="timeline"><h2>Time lines</h2>\n')
    body.append(
        '<p class="note"><b>Valid time</b>: each version from its effective_from (inclusive) to '
        "its "
        "expires_on (exclusive; open-ended bars fade out), with every pack that considered it at "
        "the "
        "pack's as-of date. <b>Ledger time</b>: the entry that ingested each version and the entry "
        "of "
        "each pack that decided on it.</p>\n"
    )
    body.append(_valid_time_chart(versions, meta, packs))
    body.append(_ledger_time_chart(versions, meta, packs, ledger_head.seq))
    body.append(
        _legend(
            [
                ("valid", "valid"),
                ("admit", "admitted by a pack"),
                ("evict", "evicted by a pack"),
                ("ingest", "ingested"),
            ]
        )
    )
    body.append("</section>\n")

    # -- versions
    body.append(f'<section id="versions"><h2>Versions ({len(versions)})</h2>\n')
    vrows = []
    for v in versions:
        m = meta.get(v["record_digest"], {})
        vrows.append(
            f'<tr><td class="id">{esc(v["id"])}</td><td class="v">{esc(v["source_version"])}</td>'
            f"<td>{esc(m.get('effective_from', ''))}</td>"
            f"<td>{esc(m.get('expires_on') or 'open')}</td>"
            f'<td class="n">{esc(v.get("ingested_at_entry", m.get("batch", "")))}</td>'
            f"<td>{esc(m.get('section', ''))}</td><td>{esc(m.get('trust', ''))}</td>"
            f"<td>{esc(m.get('required_permission', ''))}</td>"
            f'<td class="n">{esc(m.get("estimated_tokens", ""))}</td>'
            f'<td class="n">{esc(m.get("priority", ""))}</td>'
            f"<td>{'yes' if m.get('required') else 'no'}</td>"
            f"<td>{esc(m.get('source_uri', ''))}</td>"
            f'<td class="h"><code>{esc(v["record_digest"])}</code></td>'
            f'<td class="h"><code>{esc(v["content_digest"])}</code></td></tr>\n'
        )
    body.append(
        _table(
            "version-table",
            [
                ("id", "id", False),
                ("version", "version", False),
                ("from", "effective_from", False),
                ("until", "expires_on", False),
                ("entry", "ingested at entry", True),
                ("section", "section", False),
                ("trust", "trust", False),
                ("permission", "permission", False),
                ("tokens", "estimated tokens", True),
                ("priority", "priority", True),
                ("required", "required", False),
                ("source", "source_uri", False),
                ("record", "record digest", False),
                ("content", "content digest", False),
            ],
            vrows,
        )
    )
    unseen = [v for v in versions if not v["decisions"]]
    for v in unseen:
        body.append(
            f'<p class="note">{esc(v["id"])} @ {esc(v["source_version"])} was never considered: '
            f"{esc(v.get('not_considered', ''))}.</p>\n"
        )
    body.append("</section>\n")

    # -- decisions
    body.append(
        f'<section id="decisions"><h2>Every decision ({len(decisions)}), newest pack first</h2>\n'
    )
    if decisions:
        body.append(
            _filters(
                "decision-table",
                [
                    ("status", "Status", ["admitted", "evicted"]),
                    (
                        "reason",
                        "Reason",
                        sorted({d["reason"] for _, d in decisions if d["reason"]}),
                    ),
                ],
                len(decisions),
            )
        )
        drows = []
        for v, d in decisions:
            p = packs.get(d["pack"], {})
            status = "admitted" if d["admitted"] else "evicted"
            drows.append(
                f'<tr><td class="n">{esc(d["pack"])}</td><td>{esc(d["as_of"])}</td>'
                f"<td>{esc(d['subject'])}</td>"
                f'<td class="n">{esc(p.get("entry", ""))}</td><td class="id">{esc(v["id"])}</td>'
                f'<td class="v">{esc(v["source_version"])}</td>'
                f'<td class="{_status_class(status)}">{status}</td>'
                f'<td class="r">{esc(d["reason"] or "")}</td>'
                f"<td>{esc(short_detail(d['reason'], d['detail']))}</td>"
                f'<td class="n">{esc(d.get("tokens", ""))}</td></tr>\n'
            )
        body.append(
            _table(
                "decision-table",
                [
                    ("pack", "pack", True),
                    ("as_of", "as of", False),
                    ("subject", "subject", False),
                    ("entry", "pack entry", True),
                    ("id", "id", False),
                    ("version", "version", False),
                    ("status", "status", False),
                    ("reason", "reason", False),
                    ("details", "details", False),
                    ("tokens", "tokens", True),
                ],
                drows,
            )
        )
        body.append(
            '<p class="note">What would have admitted an eviction: '
            f"<code>ledger why-evicted {esc(ids[0])} --pack N</code>.</p>\n"
        )
    else:
        body.append("<p>No pack has considered this chunk yet.</p>\n")
    body.append("</section>\n")

    toc = [("timeline", "Time lines"), ("versions", "Versions"), ("decisions", "Decisions")]
    if bodies is not None:
        toc.append(("bodies", "Bodies"))
        body.append(
            f'<section id="bodies"><h2>Bodies ({len(versions)})</h2>\n'
            '<p class="note">Exactly as stored, shown as text.</p>\n'
        )
        for v in versions:
            body.append(
                f'<article class="chunk"><h3>{esc(v["id"])} @ {esc(v["source_version"])}</h3>'
                f'<pre class="body">{esc(bodies.get(v["record_digest"], ""))}</pre></article>\n'
            )
        body.append("</section>\n")

    name = ", ".join(ids)
    lede = (
        f"{len(versions)} version{'s' if len(versions) != 1 else ''} of <b>{esc(name)}</b>; "
        f"admitted by {len(admitted_in)} pack{'s' if len(admitted_in) != 1 else ''}"
        f"{(' (' + ', '.join(map(str, admitted_in)) + ')') if admitted_in else ''}, evicted by "
        f"{len(evicted_in)}{(' (' + ', '.join(map(str, evicted_in)) + ')') if evicted_in else ''}."
    )
    data = {
        "kind": "chunk",
        "ref": ref,
        "ids": ids,
        "versions": versions,
        "metadata": [meta[v["record_digest"]] for v in versions if v["record_digest"] in meta],
    }
    return _page(
        title=f"Chunk history {name} — ledger report",
        kicker="ledger report · chunk history",
        heading=f"Chunk history: {name}",
        lede=lede,
        toc=toc,
        body=body,
        data=data,
        footer=_footer(ledger_head),
    )


_GUTTER = 190  # the left part of a time line chart holds the version labels
_ROW = 26


def _short(text: str, n: int = 26) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _ordinal(day: str) -> int:
    return date.fromisoformat(day).toordinal()


def _valid_time_chart(
    versions: list[dict[str, Any]],
    meta: dict[str, dict[str, Any]],
    packs: dict[int, dict[str, Any]],
) -> str:
    days = []
    for v in versions:
        m = meta.get(v["record_digest"], {})
        days += [m.get("effective_from"), m.get("expires_on")]
        days += [d["as_of"] for d in v["decisions"]]
    ords = [_ordinal(d) for d in days if d]
    if not ords:
        return ""
    lo, hi = min(ords), max(ords)
    span = max(hi - lo, 30)
    lo -= span // 20 + 1
    hi += span // 10 + 1
    width = 1000 - _GUTTER - 40
    height = 24 + _ROW * len(versions) + 6

    def x(day_ord: float) -> float:
        return _GUTTER + (day_ord - lo) / (hi - lo) * width

    parts = [
        f'<svg class="chart" viewBox="0 0 1000 {height}" role="img" '
        f'aria-label="Valid time of each version, and the packs that considered it">'
    ]
    for k in range(6):
        t = lo + (hi - lo) * k / 5
        label = date.fromordinal(int(t)).isoformat()
        parts.append(
            f'<line class="axis" x1="{_num(x(t))}" y1="16" x2="{_num(x(t))}" y2="{height - 4}"/>'
            f'<text class="tick" x="{_num(x(t))}" y="12" font-size="11" '
            f'text-anchor="middle">{label}</text>'
        )
    for i, v in enumerate(versions):
        m = meta.get(v["record_digest"], {})
        y = 24 + i * _ROW
        label = (
            f"{v['id']} @ {v['source_version']}"
            if len({w["id"] for w in versions}) > 1
            else v["source_version"]
        )
        parts.append(
            f'<text x="{_GUTTER - 8}" y="{y + 14}" font-size="12" text-anchor="end">'
            f"<title>{esc(v['id'])} @ {esc(v['source_version'])}</title>{esc(_short(label))}</text>"
        )
        start = m.get("effective_from")
        if start:
            end = m.get("expires_on")
            x0 = x(_ordinal(start))
            x1 = x(_ordinal(end)) if end else x(hi)
            cls = "valid" if end else "open"
            title = f"{v['source_version']}: valid from {start}" + (
                f" until {end} (exclusive)" if end else ", open-ended"
            )
            parts.append(
                f'<rect class="{cls}" x="{_num(x0)}" y="{y + 4}" width="{_num(max(x1 - x0, 1))}" '
                f'height="12" rx="2"><title>{esc(title)}</title></rect>'
            )
        for d in v["decisions"]:
            cx = x(_ordinal(d["as_of"]))
            parts.append(_decision_mark(cx, y + 10, d, v))
    parts.append("</svg>")
    return "<figure><figcaption>Valid time (dates)</figcaption>" + "".join(parts) + "</figure>\n"


def _ledger_time_chart(
    versions: list[dict[str, Any]],
    meta: dict[str, dict[str, Any]],
    packs: dict[int, dict[str, Any]],
    head_seq: int,
) -> str:
    if head_seq < 1:
        return ""
    lo, hi = 0.5, head_seq + 0.5
    width = 1000 - _GUTTER - 40
    height = 24 + _ROW * len(versions) + 6

    def x(seq: float) -> float:
        return _GUTTER + (seq - lo) / (hi - lo) * width

    parts = [
        f'<svg class="chart" viewBox="0 0 1000 {height}" role="img" '
        'aria-label="Ledger time: the entry that ingested each version and the packs that decided '
        'on it">'
    ]
    step = max(1, round(head_seq / 8))
    ticks = sorted(set(range(1, head_seq + 1, step)) | {head_seq})
    for t in ticks:
        parts.append(
            f'<line class="axis" x1="{_num(x(t))}" y1="16" x2="{_num(x(t))}" y2="{height - 4}"/>'
            f'<text class="tick" x="{_num(x(t))}" y="12" font-size="11" text-anchor="middle">'
            f"entry {t}</text>"
        )
    for i, v in enumerate(versions):
        y = 24 + i * _ROW
        label = (
            f"{v['id']} @ {v['source_version']}"
            if len({w["id"] for w in versions}) > 1
            else v["source_version"]
        )
        parts.append(
            f'<text x="{_GUTTER - 8}" y="{y + 14}" font-size="12" text-anchor="end">'
            f"<title>{esc(v['id'])} @ {esc(v['source_version'])}</title>{esc(_short(label))}</text>"
        )
        seq = v.get("ingested_at_entry") or meta.get(v["record_digest"], {}).get("batch")
        if seq:
            cx = x(seq)
            parts.append(
                f'<rect class="ingest" x="{_num(cx - 5)}" y="{y + 5}" width="10" height="10" '
                f'transform="rotate(45 {_num(cx)} {y + 10})"><title>{esc(v["source_version"])}: '
                "ingested "
                f"at entry {esc(seq)}</title></rect>"
            )
            last = max([packs.get(d["pack"], {}).get("entry", seq) for d in v["decisions"]] + [seq])
            parts.append(
                f'<line class="packline" x1="{_num(cx)}" y1="{y + 10}" x2="{_num(x(last))}" '
                f'y2="{y + 10}"/>'
            )
        for d in v["decisions"]:
            entry = packs.get(d["pack"], {}).get("entry")
            if entry:
                parts.append(_decision_mark(x(entry), y + 10, d, v))
    parts.append("</svg>")
    return "<figure><figcaption>Ledger time (entries)</figcaption>" + "".join(parts) + "</figure>\n"


def _decision_mark(cx: float, cy: float, d: dict[str, Any], v: dict[str, Any]) -> str:
    what = "admitted" if d["admitted"] else f"evicted ({d['reason']})"
    title = f"pack {d['pack']}, as of {d['as_of']}, {d['subject']}: {v['source_version']} {what}"
    cls = "admit" if d["admitted"] else "evict"
    return (
        f'<circle class="{cls}" cx="{_num(cx)}" cy="{_num(cy)}" r="6">'
        f"<title>{esc(title)}</title></circle>"
    )
