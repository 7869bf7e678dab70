"""Each named fast path equals the plain rule beside it, on generated inputs.

- `select_fast` (what `select` runs) and `select_plain`: the whole Context,
  evictions and details included, or the same refusal;
- `candidates_of_columns` and `candidates_of_columns_plain`;
- `Candidate.ranked` and `dataclasses.replace`;
- the store's `reachable_where` (SQL) and `HintPool.holds`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, insert, select

from ledger.core.candidates import (
    CANDIDATE_ROW,
    candidates_of_columns,
    candidates_of_columns_plain,
)
from ledger.core.context import UNRANKED, Candidate, Context
from ledger.core.hints import HintPool
from ledger.core.select import (
    DEFAULT_ORDER,
    ORDER_V1,
    Order,
    Request,
    RequiredChunkError,
    RequiredOverBudgetError,
    select_fast,
    select_plain,
)
from ledger.store.hints import reachable_where
from ledger.store.schema import versions

DATES = ["2026-01-01", "2026-03-01", "2026-06-30", "2026-07-01", "2026-07-02", "2026-12-31"]
PERMISSIONS = ["read", "legal", "ops"]
TRUST = ["approved-source", "unverified", "user-input"]
SECTIONS = ["policy", "state", "evidence", "current-input", "other"]


@st.composite
def candidate_sets(draw: Any) -> list[Candidate]:
    """Several versions per id (equal dates and ingests among them), shared dedupe
    keys, required chunks, retrieval ranks, repeated source versions of an id."""
    n = draw(st.integers(min_value=0, max_value=40))
    ranked = draw(st.booleans())
    out = []
    for index in range(n):
        chunk_id = f"id-{draw(st.integers(0, 9))}"
        start = draw(st.sampled_from(DATES[:-1]))
        expires = draw(st.one_of(st.none(), st.sampled_from([d for d in DATES if d > start])))
        rank = draw(st.sampled_from([1, 2, 3, UNRANKED])) if ranked else 0
        out.append(
            Candidate(
                id=chunk_id,
                source_version=f"v{draw(st.integers(0, 3))}",
                section=draw(st.sampled_from(SECTIONS)),
                effective_from=start,
                expires_on=expires,
                # Mostly the granted and allowed ones, so that most sets reach
                # the later gates.
                required_permission=draw(st.sampled_from(PERMISSIONS[:1] * 4 + PERMISSIONS)),
                trust=draw(st.sampled_from(TRUST[:1] * 4 + TRUST)),
                dedupe_key=draw(st.sampled_from(["k1", "k2", "k3", chunk_id])),
                tokens=draw(st.integers(min_value=0, max_value=60)),
                priority=draw(st.integers(min_value=0, max_value=3)),
                required=draw(st.integers(0, 15)) == 0,
                record_digest=f"r{index:04d}",
                content_digest=f"c{draw(st.integers(0, 5))}",
                ingest_rank=draw(st.integers(min_value=0, max_value=3)),
                rank=rank,
            )
        )
    return out


retractions = st.dictionaries(
    st.sampled_from([f"id-{i}" for i in range(10)]),
    st.lists(st.tuples(st.integers(0, 4), st.sampled_from(DATES)), min_size=1, max_size=3).map(
        tuple
    ),
    max_size=5,
)

requests = st.builds(
    Request,
    as_of=st.sampled_from(DATES),
    granted=st.frozensets(st.sampled_from(PERMISSIONS)).map(lambda s: s | {PERMISSIONS[0]}),
    allowed_trust=st.frozensets(st.sampled_from(TRUST)).map(lambda s: s | {TRUST[0]}),
    budget=st.integers(min_value=0, max_value=300),
    supersede=st.booleans(),
    retractions=retractions,
    reinstatements=retractions,
)


def _own_order(c: Candidate) -> tuple[Any, ...]:
    return (c.tokens % 7, c.section)  # not total: identity breaks its ties


orders = st.sampled_from(
    [
        DEFAULT_ORDER,
        ORDER_V1,
        Order(preference=_own_order),
        Order(output=_own_order),
        Order(_own_order, _own_order),
    ]
)


def outcome(run: Any, *args: Any) -> Context | tuple[str, tuple[Any, ...]]:
    try:
        return run(*args)  # type: ignore[no-any-return]
    except RequiredChunkError as exc:
        return ("required", (exc.chunk_id, exc.reason))
    except RequiredOverBudgetError as exc:
        return ("over budget", (exc.needed, exc.budget))


@settings(max_examples=250, deadline=None)
@given(candidate_sets(), requests, orders)
def test_select_fast_equals_select_plain(
    candidates: list[Candidate], request: Request, order: Order
) -> None:
    fast = outcome(select_fast, candidates, request, order)
    plain = outcome(select_plain, candidates, request, order)
    event("refused" if isinstance(plain, tuple) else "selected")
    assert fast == plain
    if isinstance(fast, Context) and isinstance(plain, Context):
        # Equal details of equal types, in the same order.
        assert [(e.reason, dict(e.detail)) for e in fast.evicted] == [
            (e.reason, dict(e.detail)) for e in plain.evicted
        ]
        assert [c.record_digest for c in fast.items] == [c.record_digest for c in plain.items]


def test_select_fast_equals_select_plain_on_many_versions() -> None:
    """Runs longer than two versions, and equal version ranks."""
    cands = [
        Candidate(
            f"id-{i % 5}",
            f"v{i % 4}",
            "state",
            DATES[i % 3],
            None,
            "read",
            "t",
            f"k{i % 11}",
            i % 13,
            i % 4,
            False,
            f"r{i:04d}",
            "c",
            i % 2,
        )  # fmt: skip
        for i in range(300)
    ]
    request = Request("2026-07-01", frozenset({"read"}), frozenset({"t"}), 200)
    assert select_fast(cands, request) == select_plain(cands, request)
    assert select_fast(cands[::-1], request) == select_plain(cands, request)


row_values = st.tuples(
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(["v1", "v2"]),
    st.sampled_from(SECTIONS),
    st.sampled_from(DATES),
    st.one_of(st.none(), st.sampled_from(DATES)),
    st.sampled_from(PERMISSIONS),
    st.sampled_from(TRUST),
    st.sampled_from(["k1", "k2"]),
    st.integers(0, 10**6),
    st.integers(-5, 100),
    st.sampled_from([0, 1, True, False]),
    st.text(max_size=3),
    st.text(max_size=3),
    st.integers(0, 10**9),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(row_values, max_size=2100), st.integers(0, 2))
def test_candidates_of_columns_equals_the_plain_one(
    rows: list[tuple[Any, ...]], extra: int
) -> None:
    width = len(CANDIDATE_ROW) + extra  # columns after CANDIDATE_ROW are ignored
    columns = [[row[i % len(row)] for row in rows] for i in range(width)]
    fast = candidates_of_columns(columns)
    plain = candidates_of_columns_plain(columns)
    assert fast == plain
    assert [type(c.required) for c in fast] == [bool] * len(rows)


@settings(max_examples=60, deadline=None)
@given(candidate_sets(), st.sampled_from([0, 1, 7, UNRANKED]))
def test_ranked_equals_dataclasses_replace(cands: list[Candidate], rank: int) -> None:
    assert [c.ranked(rank) for c in cands] == [replace(c, rank=rank) for c in cands]


def test_candidates_of_columns_refuses_bad_columns() -> None:
    with pytest.raises(ValueError, match="candidate columns"):
        candidates_of_columns([[1]])
    with pytest.raises(ValueError, match="unequal"):
        candidates_of_columns([[1]] * (len(CANDIDATE_ROW) - 1) + [[]])
    with pytest.raises(ValueError, match="unequal"):
        candidates_of_columns_plain([[1]] * (len(CANDIDATE_ROW) - 1) + [[]])


pools = st.builds(
    lambda granted, trust, days: HintPool(
        "reachable", granted, trust, first_day=min(days), last_day=max(days)
    ),
    st.frozensets(st.sampled_from(PERMISSIONS)),
    st.frozensets(st.sampled_from(TRUST)),
    st.lists(st.sampled_from(DATES), min_size=2, max_size=2),
)


@settings(max_examples=60, deadline=None)
@given(candidate_sets(), pools)
def test_reachable_where_is_holds_in_sql(candidates: list[Candidate], pool: HintPool) -> None:
    engine = create_engine("sqlite://")
    with engine.begin() as conn:
        versions.create(conn)
        if candidates:
            conn.execute(
                insert(versions),
                [
                    {
                        "chunk_id": c.id,
                        "source_version": f"{c.source_version}-{c.record_digest}",
                        "section": c.section,
                        "source_uri": "u",
                        "effective_from": c.effective_from,
                        "expires_on": c.expires_on,
                        "required_permission": c.required_permission,
                        "trust": c.trust,
                        "dedupe_key": c.dedupe_key,
                        "estimated_tokens": c.tokens,
                        "priority": c.priority,
                        "required": c.required,
                        "content_digest": c.content_digest,
                        "record_digest": c.record_digest,
                        "batch_seq": 1,
                    }
                    for c in candidates
                ],
            )
        v = versions.c
        found = set(conn.scalars(select(v.record_digest).where(reachable_where(pool))))
    engine.dispose()
    assert found == {c.record_digest for c in candidates if pool.holds(c)}
