"""The Context value (seed-004): immutable, serializable, never over budget."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from types import MappingProxyType

import pytest

from ledger.core.context import Context, ContextOverBudgetError, Eviction
from ledger.core.errors import InputError, RefusedError
from ledger.core.select import Candidate, Request, select

Cand = Callable[..., Candidate]


def test_over_budget_is_a_hard_error_never_a_truncation(cand: Cand) -> None:
    items = (cand(id="a1", tokens=60), cand(id="b1", tokens=50))
    with pytest.raises(ContextOverBudgetError) as caught:
        Context(items=items, evicted=(), budget=100)
    assert (caught.value.admitted, caught.value.budget) == (110, 100)
    assert isinstance(caught.value, RefusedError)
    assert "110" in str(caught.value) and "100" in str(caught.value)


def test_accounting_and_lookup(cand: Cand) -> None:
    kept = cand(id="kept", tokens=120)
    dropped = cand(id="dropped", tokens=9000)
    eviction = Eviction(dropped, "budget", MappingProxyType({"needed": 9000, "remaining": 880}))
    ctx = Context(items=(kept,), evicted=(eviction,), budget=1000)
    assert ctx.admitted_tokens() == 120
    assert ctx.headroom() == 880
    assert ctx.evicted_tokens() == 9000
    assert ctx.admitted(kept.record_digest) and ctx.admitted(kept.content_digest)
    assert not ctx.admitted(dropped.record_digest)
    assert ctx.why_evicted(dropped.content_digest) == eviction
    assert ctx.why_evicted(dropped.record_digest).reason == "budget"
    assert ctx.why_evicted(kept.record_digest) is None
    assert ctx.why_evicted("0" * 64) is None


def test_content_admitted_under_another_version_is_not_evicted(cand: Cand) -> None:
    admitted = cand(id="a1", source_version="v2", content_digest="same")
    old = cand(id="a1", source_version="v1", content_digest="same")
    ctx = Context(
        items=(admitted,),
        evicted=(Eviction(old, "superseded", MappingProxyType({"by": admitted.ref()})),),
        budget=100,
    )
    assert ctx.why_evicted("same") is None
    assert ctx.why_evicted(old.record_digest).reason == "superseded"


def test_immutable(cand: Cand) -> None:
    ctx = Context(items=[cand()], evicted=[], budget=10)
    assert isinstance(ctx.items, tuple) and isinstance(ctx.evicted, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.budget = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.items[0].tokens = 1  # type: ignore[misc]
    ctx = select(
        [cand(tokens=11)],
        Request("2026-07-01", frozenset({"read"}), frozenset({"approved-source"}), 10),
    )
    with pytest.raises(TypeError):
        ctx.evicted[0].detail["needed"] = 1  # type: ignore[index]


def test_round_trip_through_json(cand: Cand) -> None:
    candidates = [
        cand(id="a1", tokens=5),
        cand(id="b1", required_permission="legal"),
        cand(id="c1", dedupe_key="a1", priority=1),
        cand(id="d1", source_version="v1", effective_from="2026-01-01"),
        cand(id="d1", source_version="v2", effective_from="2026-02-01", ingest_rank=4),
        cand(id="e1", tokens=500),
    ]
    ctx = select(
        candidates, Request("2026-07-01", frozenset({"read"}), frozenset({"approved-source"}), 30)
    )
    data = ctx.to_json()
    text = json.dumps(data, sort_keys=True)  # plain JSON values only
    again = Context.from_json(json.loads(text))
    assert again == ctx
    assert again.to_json() == data
    assert {e.reason for e in again.evicted} == {
        "permission_denied",
        "duplicate",
        "superseded",
        "budget",
    }


def test_from_json_refuses_bad_input(cand: Cand) -> None:
    with pytest.raises(InputError):
        Context.from_json({"items": []})
    good = {
        "candidate": cand().to_json(),
        "reason": "budget",
        "detail": {"needed": 1, "remaining": 0},
    }
    Eviction.from_json(good)
    with pytest.raises(InputError, match="unknown eviction reason"):
        Eviction.from_json({**good, "reason": "bored"})
    with pytest.raises(InputError, match="must have exactly"):
        Eviction.from_json({**good, "detail": {"needed": 1}})
    with pytest.raises(ContextOverBudgetError):
        Context.from_json({"items": [cand(tokens=3).to_json()], "evicted": [], "budget": 2})


def test_empty_and_negative_budget() -> None:
    assert Context.empty(10).headroom() == 10
    with pytest.raises(InputError):
        Context.empty(-1)


def test_candidates_of_columns_makes_the_candidates_the_constructor_makes() -> None:
    from ledger.core.candidates import CANDIDATE_ROW, candidates_of_columns

    rows = [
        ("a1", "v1", "policy", "2026-01-01", None, "read", "approved-source", "a", 10, 5, 1)
        + ("d" * 64, "c" * 64, 3, "ignored"),
        ("b2", "v9", "state", "2025-12-31", "2027-01-01", "p", "t", "k", 0, 0, 0)
        + ("e" * 64, "f" * 64, 7, "ignored"),
        ("c3", "v1", "evidence", "2026-02-02", None, "p", "t", "k", 4, 100, True)
        + ("g" * 64, "h" * 64, 1, "ignored"),
    ]
    made = candidates_of_columns(list(zip(*rows, strict=True)))
    expected = [Candidate(*r[:10], r[10] == 1, *r[11:14]) for r in rows]
    assert made == expected
    assert [type(c.required) for c in made] == [bool, bool, bool]
    # Over several blocks (filled a block at a time), the last one short.
    many = [
        (f"id{i}", f"v{i % 3}", "state", "2026-01-01", None, "p", "t", f"k{i}", i, i % 7)
        + (i % 2, f"{i:064x}", f"{i + 1:064x}", i // 10)
        for i in range(2500)
    ]
    assert candidates_of_columns([list(c) for c in zip(*many, strict=True)]) == [
        Candidate(*r[:10], r[10] == 1, *r[11:14]) for r in many
    ]
    assert [c.rank for c in made] == [0, 0, 0]  # the field no column holds: its default
    for c, r in zip(made, rows, strict=True):
        assert dataclasses.astuple(c)[: len(CANDIDATE_ROW)] == (*r[:10], r[10] == 1, *r[11:14])
        assert hash(c) == hash(Candidate(*r[:10], r[10] == 1, *r[11:14]))
        with pytest.raises(dataclasses.FrozenInstanceError):
            c.tokens = 1  # type: ignore[misc]
    assert candidates_of_columns([[]] * 14) == []
    with pytest.raises(ValueError, match="12 candidate columns, not 14"):
        candidates_of_columns([[]] * 12)
    columns = [list(c) for c in zip(*rows, strict=True)]
    columns[5] = columns[5][:2]  # one column short
    with pytest.raises(ValueError, match=r"unequal lengths: \[2, 3\]"):
        candidates_of_columns(columns)
