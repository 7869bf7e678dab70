"""Hypothesis properties of the selector over random candidate sets."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.context import UNRANKED, Context
from ledger.core.select import (
    Candidate,
    Order,
    Request,
    RequiredChunkError,
    RequiredOverBudgetError,
    default_output,
    default_preference,
    select,
)

DATES = ["2026-01-01", "2026-03-01", "2026-06-30", "2026-07-01", "2026-07-02", "2026-12-31"]
PERMISSIONS = ["read", "legal", "ops"]
TRUST = ["approved-source", "unverified", "user-input"]


@st.composite
def candidate_sets(draw: Any) -> list[Candidate]:
    n = draw(st.integers(min_value=0, max_value=30))
    ids = draw(st.lists(st.sampled_from([f"id-{i}" for i in range(12)]), min_size=n, max_size=n))
    out = []
    for index, chunk_id in enumerate(ids):
        start = draw(st.sampled_from(DATES[:-1]))
        expires = draw(st.one_of(st.none(), st.sampled_from([d for d in DATES if d > start])))
        out.append(
            Candidate(
                id=chunk_id,
                source_version=f"v{index}",  # (id, source_version) unique
                section=draw(st.sampled_from(["policy", "state", "evidence", "current-input"])),
                effective_from=start,
                expires_on=expires,
                required_permission=draw(st.sampled_from(PERMISSIONS)),
                trust=draw(st.sampled_from(TRUST)),
                dedupe_key=draw(st.sampled_from(["k1", "k2", "k3", chunk_id])),
                tokens=draw(st.integers(min_value=0, max_value=60)),
                priority=draw(st.integers(min_value=0, max_value=3)),
                required=draw(st.booleans()) and draw(st.booleans()),
                record_digest=f"r{index:04d}",
                content_digest=f"c{draw(st.integers(0, 5))}",
                ingest_rank=draw(st.integers(min_value=0, max_value=3)),
            )
        )
    return out


requests = st.builds(
    Request,
    as_of=st.sampled_from(DATES),
    granted=st.frozensets(st.sampled_from(PERMISSIONS)),
    allowed_trust=st.frozensets(st.sampled_from(TRUST)),
    budget=st.integers(min_value=0, max_value=300),
    supersede=st.booleans(),
)


def run(candidates: list[Candidate], request: Request) -> Context | None:
    try:
        return select(candidates, request)
    except (RequiredChunkError, RequiredOverBudgetError):
        return None


@settings(max_examples=200, deadline=None)
@given(candidate_sets(), requests, st.randoms(use_true_random=False))
def test_selection_laws(candidates: list[Candidate], request: Request, rng: random.Random) -> None:
    ctx = run(candidates, request)
    if ctx is None:
        # A failed build must be explained by a required chunk: never otherwise.
        assert any(c.required for c in candidates)
        return
    # Every candidate decided exactly once.
    decided = [c.record_digest for c in ctx.items] + [
        e.candidate.record_digest for e in ctx.evicted
    ]
    assert sorted(decided) == sorted(c.record_digest for c in candidates)
    # Used never above budget.
    assert 0 <= ctx.admitted_tokens() <= request.budget
    # Budget evictions are honest: the chunk did not fit what was left.
    for e in ctx.evicted:
        if e.reason == "budget":
            assert e.detail["needed"] == e.candidate.tokens > e.detail["remaining"] >= 0
    # Gate 6: a duplicate names the version its key kept, which was not itself a
    # duplicate and comes first by preference (so it is the group's first).
    by_digest = {c.record_digest: c for c in candidates}
    not_duplicate = {c.record_digest for c in ctx.items} | {
        e.candidate.record_digest for e in ctx.evicted if e.reason == "budget"
    }
    for e in ctx.evicted:
        if e.reason == "duplicate":
            kept = by_digest[e.detail["kept"]["record_digest"]]
            assert kept.dedupe_key == e.candidate.dedupe_key
            assert kept.record_digest in not_duplicate
            assert default_preference(kept) < default_preference(e.candidate)
    # No required chunk is dropped: a required candidate is evicted only in the
    # ledger, only by gates 1-5, and only when another version of its id passed
    # gates 1-4 (else the build would have failed).
    gate_1_to_4 = {"permission_denied", "trust_denied", "not_yet_effective", "expired"}
    passed_ids = {c.id for c in ctx.items} | {
        e.candidate.id for e in ctx.evicted if e.reason not in gate_1_to_4
    }
    for e in ctx.evicted:
        if e.candidate.required:
            assert request.supersede
            assert e.reason in gate_1_to_4 | {"superseded"}
            assert e.candidate.id in passed_ids
    # Independent of input order.
    shuffled = list(candidates)
    rng.shuffle(shuffled)
    assert run(shuffled, request) == ctx
    # Round trip through JSON.
    assert Context.from_json(ctx.to_json()) == ctx


@settings(max_examples=200, deadline=None)
@given(candidate_sets(), requests)
def test_failures_are_order_independent(candidates: list[Candidate], request: Request) -> None:
    def outcome(cs: list[Candidate]) -> Any:
        try:
            return select(cs, request)
        except RequiredChunkError as exc:
            return ("required", exc.chunk_id, exc.reason)
        except RequiredOverBudgetError as exc:
            return ("over", exc.needed, exc.budget)

    assert outcome(candidates) == outcome(list(reversed(candidates)))


@settings(max_examples=200, deadline=None)
@given(candidate_sets(), requests)
def test_optional_evictions_by_budget_are_greedy(
    candidates: list[Candidate], request: Request
) -> None:
    """A budget eviction ahead of an admitted chunk could not have fit: replay the greedy."""
    ctx = run(candidates, request)
    if ctx is None:
        return
    remaining = request.budget - sum(c.tokens for c in ctx.items if c.required)
    budget_evicted = {e.candidate.record_digest: e for e in ctx.evicted if e.reason == "budget"}
    optional = [c for c in ctx.items if not c.required] + [
        e.candidate for e in budget_evicted.values()
    ]
    optional.sort(
        key=lambda c: (
            -c.priority,
            -int(c.effective_from.replace("-", "")),
            c.tokens,
            c.id,
            c.source_version,
            c.record_digest,
        )
    )
    for c in optional:
        if c.record_digest in budget_evicted:
            assert budget_evicted[c.record_digest].detail["remaining"] == remaining
            assert c.tokens > remaining
        else:
            assert c.tokens <= remaining
            remaining -= c.tokens


# The default orders as a caller's own: the same keys, but not the default
# functions, so the selector sorts them as tuples instead of integers.
TUPLE_ORDER = Order(preference=lambda c: default_preference(c), output=lambda c: default_output(c))


@st.composite
def wide_candidate_sets(draw: Any) -> list[Candidate]:
    """Candidates whose integer fields span their whole ranges: the extreme
    dates, retrieval ranks, huge token counts and priorities (`ledger pack`
    takes any integer priority), sections outside SPEC's."""
    n = draw(st.integers(min_value=0, max_value=25))
    days = ["0001-01-01", "0001-01-02", "2026-07-01", "9999-12-30", "9999-12-31"]
    big = st.integers(min_value=-(10**30), max_value=10**30)
    out = []
    for index in range(n):
        out.append(
            Candidate(
                id=f"id-{draw(st.integers(0, 8))}",
                source_version=f"v{index}",
                section=draw(st.sampled_from(["policy", "state", "evidence", "notes", "zz"])),
                effective_from=draw(st.sampled_from(days)),
                expires_on=None,
                required_permission="read",
                trust="approved-source",
                dedupe_key=draw(st.sampled_from(["k1", "k2", "k3", f"own-{index}"])),
                tokens=draw(st.one_of(st.integers(0, 3), st.integers(0, 10**40))),
                priority=draw(st.one_of(st.integers(-2, 2), big)),
                required=draw(st.booleans()) and draw(st.booleans()),
                record_digest=f"r{draw(st.integers(0, 3))}",
                content_digest="c",
                ingest_rank=draw(st.integers(min_value=0, max_value=3)),
                rank=draw(st.sampled_from([0, 1, 2, 10**6, UNRANKED])),
            )
        )
    return out


def outcome(candidates: list[Candidate], request: Request, order: Order) -> Any:
    try:
        return select(candidates, request, order)
    except RequiredChunkError as exc:
        return ("required", exc.chunk_id, exc.reason)
    except RequiredOverBudgetError as exc:
        return ("over", exc.needed, exc.budget)


@settings(max_examples=300, deadline=None)
@given(
    wide_candidate_sets(),
    st.one_of(st.integers(0, 10), st.integers(0, 10**41)),
    st.booleans(),
)
def test_integer_keys_decide_as_the_tuples_do(
    candidates: list[Candidate], budget: int, supersede: bool
) -> None:
    """The default orders' keys packed into integers choose and order exactly
    as the tuples of the same fields, over the fields' whole ranges."""
    request = Request(
        "9999-12-31", frozenset({"read"}), frozenset({"approved-source"}), budget, supersede
    )
    assert outcome(candidates, request, Order()) == outcome(candidates, request, TUPLE_ORDER)


def test_fields_that_are_not_integers_are_weighed_as_tuples() -> None:
    """A caller's Candidate with a float priority or cost (the selector does
    not check types) is weighed as its tuple: no integer packing loses digits."""
    request = Request("2026-07-01", frozenset({"read"}), frozenset({"approved-source"}), 10)

    def cand(i: int, priority: Any, tokens: Any) -> Candidate:
        return Candidate(
            f"a{i}", "v1", "policy", "2026-01-01", None, "read", "approved-source",
            "k", tokens, priority, False, f"r{i}", "c",
        )  # fmt: skip

    # Priorities 1e17 and 1e17 + 16 differ, as floats, only beyond the 53 bits
    # an integer key of these fields would keep.
    floats = [cand(0, 1e17, 4), cand(1, 1e17 + 16, 4)]
    assert [c.id for c in select(floats, request).items] == ["a1"]
    fractions = [cand(0, 1, 4.5), cand(1, 1, 4.25), cand(2, 0, 1.5)]
    ctx = select(fractions, request)
    assert [c.id for c in ctx.items] == ["a1"]
    assert [(e.candidate.id, e.detail["kept"]["id"]) for e in ctx.evicted] == [
        ("a0", "a1"),
        ("a2", "a1"),
    ]
