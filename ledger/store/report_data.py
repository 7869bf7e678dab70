"""What the HTML reports show, read from the ledger (the reports hold no SQL).

Each function returns the keyword arguments of one of `ledger.report`'s pure
renderers, read through the library's own queries (`show`, `diff` and
`why-evicted` answers), so every figure on a page is the one those commands
print. Hints for a pack report are bounded by plain counting and a clock read
between hints: no signal, no thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from ledger.core.transcript import budget_unit
from ledger.store.chain import read_head
from ledger.store.diff import diff
from ledger.store.packs import decision_rows, list_packs, pack_header, pack_json
from ledger.store.readers import resolve_ref
from ledger.store.schema import versions
from ledger.store.versions import list_versions
from ledger.store.why_evicted import hint_for, why_evicted

_IN_CHUNK = 500  # digests per IN (...) list: well under every backend's parameter limit


def bodies_by_digest(conn: Connection, record_digests: Sequence[str]) -> dict[str, str]:
    """The stored bodies of the versions with these record digests."""
    c = versions.c
    out: dict[str, str] = {}
    for start in range(0, len(record_digests), _IN_CHUNK):
        part = list(record_digests[start : start + _IN_CHUNK])
        query = select(c.record_digest, c.content).where(c.record_digest.in_(part))
        out.update(
            {
                row.record_digest: row.content
                for row in conn.execute(query)
                if row.content is not None
            }
        )
    return out


def compute_hints(
    conn: Connection, head: Any, digests: Sequence[str], max_hints: int, seconds: float | None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Hints (`ledger.store.why_evicted.hint_for`) for the first `max_hints` of `digests`, in order.

    With a time limit (`seconds`; None or 0: none) the first hint is always
    computed, and the clock is read before each further one: no hint starts
    that would, taking as long as the one before, end past the limit. A hint
    that has started runs to its end (a hint is a few re-runs of the selector;
    the budget step is simulated, not searched), so no signal or thread is
    needed to stop it. The pack's candidates are loaded once (hint_for's
    cache). Returns the hints by record digest and a note of what was done.
    """
    wanted = list(digests[: max(0, max_hints)])
    limit = seconds if seconds and seconds > 0 else None
    hints: dict[str, dict[str, Any]] = {}
    stopped = None
    cache: dict[Any, Any] = {}
    started = time.perf_counter()
    last = 0.0  # how long the latest hint took
    for digest in wanted:
        if limit is not None and hints and time.perf_counter() - started + last > limit:
            stopped = "time"
            break
        begun = time.perf_counter()
        hints[digest] = hint_for(conn, head, digest, cache)
        last = time.perf_counter() - begun
    if stopped is None and len(hints) < len(digests):
        stopped = "count"
    return hints, {
        "evictions": len(digests),
        "asked": len(wanted),
        "computed": len(hints),
        "max_hints": max_hints,
        "seconds": limit,
        "stopped": stopped,
        "elapsed": round(time.perf_counter() - started, 3),
    }


def pack_report_data(
    conn: Connection,
    pack_no: int,
    *,
    with_content: bool,
    max_hints: int,
    hint_seconds: float | None,
) -> dict[str, Any]:
    """`render_pack`'s arguments for a recorded pack: `show --json`, each version's
    section, priority, required flag and source, the hints, the admitted bodies
    (with `with_content`) and the ledger head."""
    data = pack_json(conn, pack_no)
    meta = {
        r.record_digest: {
            "section": r.section,
            "priority": r.priority,
            "required": bool(r.required),
            "source_uri": r.source_uri,
        }
        for r in decision_rows(conn, pack_no)
    }
    bodies = None
    if with_content:
        bodies = bodies_by_digest(conn, [a["record_digest"] for a in data["admitted"]])
    hints, hint_note = compute_hints(
        conn,
        pack_header(conn, pack_no),
        [e["record_digest"] for e in data["evicted"]],
        max_hints,
        hint_seconds,
    )
    return {
        "data": data,
        "meta": meta,
        "hints": hints,
        "hint_note": hint_note,
        "bodies": bodies,
        "ledger_head": read_head(conn),
    }


def diff_report_data(conn: Connection, a: int, b: int) -> dict[str, Any]:
    """`render_diff`'s arguments: `diff --json` of packs A and B, their headers
    (with the figures the diff reports) and the ledger head."""
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
                "unit": budget_unit(h.scope),
                **{k: result[k][side] for k in ("as_of", "subject", "budget", "used")},
            }
        )
    return {"result": result, "pa": sides[0], "pb": sides[1], "ledger_head": read_head(conn)}


def chunk_report_data(conn: Connection, ref: str, *, with_content: bool) -> dict[str, Any]:
    """`render_chunk`'s arguments for every chunk id a REF names (a REF naming one
    version reports every version of its chunk): per id its `why-evicted --json
    --hints none` answer and its versions' metadata, the packs, the bodies (with
    `with_content`) and the ledger head."""
    ids = sorted({r.chunk_id for r in resolve_ref(conn, ref)})
    histories = [
        {
            "id": cid,
            "why": why_evicted(conn, cid, None, "none"),
            "versions": list_versions(conn, cid),
        }
        for cid in ids
    ]
    bodies = None
    if with_content:
        digests = [v["record_digest"] for h in histories for v in h["versions"]]
        bodies = bodies_by_digest(conn, digests)
    return {
        "ref": ref,
        "histories": histories,
        "packs": {p["pack"]: p for p in list_packs(conn)},
        "bodies": bodies,
        "ledger_head": read_head(conn),
    }
