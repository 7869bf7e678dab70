"""`ledger diff A B`: per chunk id, what entered, left, changed version or
reason, each tagged with its cause (docs/reference/commands.md,
docs/reference/json.md). The causes are decided by `ledger.core.diff`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from ledger.core.diff import ABSENT, Decided, PackFigures, State, cause, state_of
from ledger.core.reasons import ADMITTED
from ledger.store.engine import fetch_tuples
from ledger.store.packs import pack_header, reason_of, retrieval_of
from ledger.store.schema import decisions, versions

# A row of `_pack_decisions`: the fields of a decision and of its version.
_VID, _STATUS, _REF_VID, _CHUNK_ID, _SOURCE_VERSION = range(5)


def _pack_decisions(conn: Connection, pack_no: int) -> tuple[dict[str, tuple[Any, ...]], Decided]:
    """Per chunk id: the row (vid, status, ref_vid, id, version) of its admitted
    version, else of its newest considered version; and the status of every
    decision of the pack by version id. Plain tuples: a pack may hold 100,000
    decisions."""
    d, v = decisions.c, versions.c
    q = (
        select(d.vid, d.status, d.ref_vid, v.chunk_id, v.source_version)
        .select_from(decisions.join(versions, v.vid == d.vid))
        .where(d.pack_no == pack_no)
    )
    best: dict[str, tuple[Any, ...]] = {}
    by_vid: dict[int, int] = {}
    rows = fetch_tuples(conn, q)  # plain tuples from one fetchall: half the cost of Row objects
    for row in rows:
        vid, status, cid = row[_VID], row[_STATUS], row[_CHUNK_ID]
        by_vid[vid] = status
        prev = best.get(cid)
        # Admitted beats evicted; among evicted, the newest version (highest vid).
        if prev is None or (status == ADMITTED, vid) > (prev[_STATUS] == ADMITTED, prev[_VID]):
            best[cid] = row
    for status in {row[_STATUS] for row in rows}:
        reason_of(status, pack_no)  # an unknown status is an altered row: say so
    return best, by_vid


def _state(row: tuple[Any, ...] | None, pack_no: int) -> State:
    if row is None:
        return ABSENT
    vid, status, ref_vid, _cid, source_version = row
    return state_of(vid, status, ref_vid, source_version, reason_of(status, pack_no))


def _same(ra: tuple[Any, ...] | None, rb: tuple[Any, ...] | None) -> bool:
    """Same status (so same reason) and same version on both sides."""
    if ra is None or rb is None:
        return False
    return bool(ra[_STATUS] == rb[_STATUS] and ra[_SOURCE_VERSION] == rb[_SOURCE_VERSION])


def _held_evidence(conn: Connection, head: Any, ids: list[str]) -> set[str]:
    """Of `ids`, the evidence chunks a retrieval pack's ledger held at its mark
    (empty for a plain build: it took every chunk it held)."""
    if retrieval_of(head) is None or not ids:
        return set()
    v = versions.c
    held: set[str] = set()
    for start in range(0, len(ids), 500):
        query = select(v.chunk_id).where(
            v.chunk_id.in_(ids[start : start + 500]),
            v.batch_seq <= head.ledger_mark,
            v.section == "evidence",
            v.scope.is_(None),
        )
        held.update(conn.execute(query.distinct()).scalars())
    return held


def diff(conn: Connection, a: int, b: int) -> dict[str, Any]:
    """`diff --json`: only what differs, each change with its cause."""
    ha, hb = pack_header(conn, a), pack_header(conn, b)
    fa, fb = PackFigures(ha.budget, ha.as_of), PackFigures(hb.budget, hb.as_of)
    (sa, da), (sb, db) = _pack_decisions(conn, a), _pack_decisions(conn, b)
    # Ids on one side only: did the other side's query leave them out?
    held_a = _held_evidence(conn, ha, sorted(set(sb) - set(sa)))
    held_b = _held_evidence(conn, hb, sorted(set(sa) - set(sb)))
    changes = []
    for cid in sorted(set(sa) | set(sb)):
        ra, rb = sa.get(cid), sb.get(cid)
        if _same(ra, rb):
            continue
        x, y = _state(ra, a), _state(rb, b)
        unretrieved = (cid in held_a, cid in held_b)
        changes.append(
            {
                "id": cid,
                "from": x.to_json(),
                "to": y.to_json(),
                "cause": cause(x, y, fa, fb, da, db, unretrieved),
            }
        )
    return {
        "from": a,
        "to": b,
        "as_of": {"from": ha.as_of, "to": hb.as_of},
        "subject": {"from": ha.subject, "to": hb.subject},
        "used": {"from": ha.used, "to": hb.used},
        "budget": {"from": ha.budget, "to": hb.budget},
        "changes": changes,
    }
