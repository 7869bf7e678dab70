"""The pools of candidates a recorded pack's admission hint is computed on.

`ledger.core.hints.recorded_hint` asks for the pools it needs (`HintPool`);
this module writes each as a condition on chunk versions, so that a hint on a
20,000-candidate pack reads only the versions it can depend on. The reachable
pool's condition is `HintPool.holds` in SQL (`reachable_where`): a property test
holds the two equal.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, or_, select

from ledger.core.hints import HintPool
from ledger.core.reasons import ADMITTED, BUDGET, REASON_CODES
from ledger.store.packs import reason_of
from ledger.store.schema import decisions, versions

# The decisions of the budget gate's survivors: the admitted (0) and its evictions.
_SURVIVORS = (ADMITTED, REASON_CODES[BUDGET])


def recorded_eviction(conn: Connection, pack_no: int, record_digest: str) -> tuple[str | None, Any]:
    """The recorded reason for the version of `record_digest` in pack `pack_no`
    (None: admitted, or not decided there), and `where(pool)`: the condition on
    chunk versions that selects that pool of the pack's candidates."""
    d = decisions.c
    v = versions.c
    row = conn.execute(
        select(d.status, d.ref_vid, v.chunk_id)
        .select_from(decisions.join(versions, v.vid == d.vid))
        .where(d.pack_no == pack_no, v.record_digest == record_digest)
    ).first()
    reason = None if row is None else reason_of(row.status, pack_no)
    rivals = v.record_digest == record_digest
    if row is not None:
        rivals = or_(rivals, v.chunk_id == row.chunk_id)
        if row.ref_vid is not None:
            rivals = or_(rivals, v.vid == row.ref_vid)

    def where(pool: HintPool) -> Any:
        if pool.kind == "rivals":
            return rivals
        if pool.kind == "survivors":
            decided = select(d.vid).where(d.pack_no == pack_no, d.status.in_(_SURVIVORS))
            return v.vid.in_(decided.scalar_subquery())
        return or_(rivals, reachable_where(pool))

    return reason, where


def reachable_where(pool: HintPool) -> Any:
    """`HintPool.holds` as a condition on chunk versions, so that the database
    reads only the reachable ones of a pack (a hint on a 20,000-candidate pack)."""
    v = versions.c
    passes = and_(
        v.required_permission.in_(sorted(pool.granted)),
        v.trust.in_(sorted(pool.allowed_trust)),
        v.effective_from <= pool.last_day,
        or_(v.expires_on.is_(None), v.expires_on > pool.first_day),
    )
    return or_(v.required.is_(True), passes)
