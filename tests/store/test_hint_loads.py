"""A hint reads only the candidates it depends on (`recorded_hint`'s pools);
many hints on one pack (a report) read the whole pack once, and share it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

import ledger
from ledger.store.engine import make_engine, read_transaction
from ledger.store.schema import decisions, packs, versions
from ledger.store.why_evicted import hint_for
from tests.conftest import chunk


def _records() -> list[dict[str, Any]]:
    def rec(i: str, **fields: Any) -> dict[str, Any]:
        return chunk(id=i, dedupe_key=i, source_uri=f"doc://{i}", content=f"{i} body", **fields)

    out = [rec(f"n{i:02d}", priority=60 + i, estimated_tokens=10) for i in range(20)]
    # Effective after the target's winner: not in its hint's pool from the first step.
    out += [rec(f"late{i:02d}", priority=90, effective_from="2026-06-15") for i in range(20)]
    # A permission never granted: in no pool.
    out += [rec(f"legal{i:02d}", required_permission="legal-read") for i in range(20)]
    out += [
        rec("tt", source_version="v1", priority=10, effective_from="2026-01-01"),
        rec("tt", source_version="v2", priority=10, effective_from="2026-06-01"),
    ]
    return out


def _evicted(conn: Any) -> dict[str, str]:
    """The newest pack's evictions: record digest -> status code."""
    d, v = decisions.c, versions.c
    rows = conn.execute(
        select(v.record_digest, v.chunk_id, v.source_version)
        .select_from(decisions.join(versions, v.vid == d.vid))
        .where(d.pack_no == 1, d.status != 0)
        .order_by(v.chunk_id, v.source_version)
    ).all()
    return {f"{r.chunk_id}@{r.source_version}": r.record_digest for r in rows}


def test_a_few_hints_read_their_pools_and_many_share_the_whole_pack(db_url: str) -> None:
    with ledger.open(db_url) as lg:
        lg.ingest_records(_records())
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=100)
        pack = lg.build(as_of="2026-07-01")
    reasons = {f"{e.id}@{e.source_version}": e.reason for e in pack.evicted}
    assert reasons["tt@v1"] == "superseded" and reasons["tt@v2"] == "budget"
    engine = make_engine(db_url)
    try:
        with read_transaction(engine) as conn:
            head = conn.execute(select(packs).where(packs.c.pack_no == 1)).one()
            evicted = _evicted(conn)
            assert head.candidate_count == 62
            # why-evicted's two hints (one per version of tt): each on its pools.
            cache: dict[Any, Any] = {}
            few = {ref: hint_for(conn, head, evicted[ref], cache) for ref in ("tt@v1", "tt@v2")}
            assert not [v for v in cache.values() if isinstance(v, list)]
            assert few["tt@v1"]["admits"] and few["tt@v2"]["admits"]
            # A report's hints: once the pools read as many rows as the pack has
            # candidates, the whole pack is read once and every later hint uses it.
            shared: dict[Any, Any] = {}
            many = {ref: hint_for(conn, head, digest, shared) for ref, digest in evicted.items()}
            (whole,) = [v for v in shared.values() if isinstance(v, list)]
            assert len(whole) == 62
            # The same answers as each hint computed alone.
            assert many == {ref: hint_for(conn, head, d, {}) for ref, d in evicted.items()}
            assert {ref: many[ref] for ref in few} == few
    finally:
        engine.dispose()
