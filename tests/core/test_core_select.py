"""The selector core: gates in SPEC order, details, required failures, orders."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from ledger.core.errors import InputError, RefusedError
from ledger.core.select import (
    DEFAULT_ORDER,
    REASONS,
    SELECTOR_VERSION,
    Candidate,
    Context,
    Order,
    Request,
    RequiredChunkError,
    RequiredOverBudgetError,
    select,
)

Cand = Callable[..., Candidate]
Req = Callable[..., Request]


def decision(ctx: Context) -> dict[tuple[str, str], Any]:
    """(id, source_version) -> "admitted" or (reason, plain detail)."""
    out: dict[tuple[str, str], Any] = {(c.id, c.source_version): "admitted" for c in ctx.items}
    for e in ctx.evicted:
        detail = {k: dict(v) if hasattr(v, "items") else v for k, v in e.detail.items()}
        out[(e.candidate.id, e.candidate.source_version)] = (e.reason, detail)
    return out


def test_constants() -> None:
    assert REASONS == (
        "permission_denied",
        "trust_denied",
        "not_yet_effective",
        "expired",
        "retracted",
        "superseded",
        "duplicate",
        "budget",
    )
    assert SELECTOR_VERSION == "ledger-selector-2"


@pytest.mark.parametrize(
    ("overrides", "reason", "detail"),
    [
        ({"required_permission": "legal"}, "permission_denied", {"required_permission": "legal"}),
        ({"trust": "unverified"}, "trust_denied", {"trust": "unverified"}),
        ({"effective_from": "2026-07-02"}, "not_yet_effective", {"effective_from": "2026-07-02"}),
        ({"expires_on": "2026-07-01"}, "expired", {"expires_on": "2026-07-01"}),
        ({"tokens": 1001}, "budget", {"needed": 1001, "remaining": 1000}),
    ],
)
def test_each_gate_evicts_with_its_detail(
    cand: Cand, request_for: Req, overrides: dict[str, Any], reason: str, detail: dict[str, Any]
) -> None:
    ctx = select([cand(**overrides)], request_for())
    assert decision(ctx) == {("chunk-a", "v1"): (reason, detail)}


def test_boundaries_of_the_date_gates(cand: Cand, request_for: Req) -> None:
    # effective_from is inclusive; expires_on is exclusive.
    on_the_day = cand(id="starts", effective_from="2026-07-01")
    day_before_expiry = cand(id="ends", expires_on="2026-07-02")
    ctx = select([on_the_day, day_before_expiry], request_for())
    assert [c.id for c in ctx.items] == ["ends", "starts"]


def test_gates_apply_in_spec_order(cand: Cand, request_for: Req) -> None:
    # Fails every gate: the first one (permission) is the reason reported.
    c = cand(
        required_permission="legal",
        trust="unverified",
        effective_from="2026-08-01",
        expires_on="2026-09-01",
    )
    assert select([c], request_for()).evicted[0].reason == "permission_denied"
    c = cand(trust="unverified", effective_from="2026-08-01", expires_on="2026-09-01")
    assert select([c], request_for()).evicted[0].reason == "trust_denied"
    c = cand(effective_from="2026-07-05", expires_on="2026-07-06")
    assert select([c], request_for(as_of="2026-07-06")).evicted[0].reason == "expired"
    # A duplicate is decided before the budget: the loser is a duplicate, not budget.
    winner = cand(id="winner", dedupe_key="k", priority=90, tokens=5)
    loser = cand(id="loser", dedupe_key="k", priority=10, tokens=500)
    ctx = select([winner, loser], request_for(budget=5))
    assert decision(ctx)[("loser", "v1")][0] == "duplicate"


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"required_permission": "legal"}, "permission_denied"),
        ({"trust": "unverified"}, "trust_denied"),
        ({"effective_from": "2026-07-02"}, "not_yet_effective"),
        ({"expires_on": "2026-06-30"}, "expired"),
    ],
)
@pytest.mark.parametrize("supersede", [False, True])
def test_required_chunk_failing_a_gate_fails_the_build(
    cand: Cand, request_for: Req, overrides: dict[str, Any], reason: str, supersede: bool
) -> None:
    candidates = [cand(id="other"), cand(id="needed", required=True, **overrides)]
    with pytest.raises(RequiredChunkError) as caught:
        select(candidates, request_for(supersede=supersede))
    assert str(caught.value) == f"required chunk 'needed' failed gate: {reason}"
    assert (caught.value.chunk_id, caught.value.reason) == ("needed", reason)
    assert isinstance(caught.value, RefusedError)


def test_required_over_budget(cand: Cand, request_for: Req) -> None:
    candidates = [cand(id="a1", required=True, tokens=60), cand(id="b1", required=True, tokens=50)]
    with pytest.raises(RequiredOverBudgetError) as caught:
        select(candidates, request_for(budget=100))
    assert str(caught.value).startswith("required chunks exceed the pack budget")
    assert (caught.value.needed, caught.value.budget) == (110, 100)
    ctx = select(candidates, request_for(budget=110))
    assert ctx.admitted_tokens() == 110 and ctx.headroom() == 0


def test_several_failing_required_chunks_report_the_lowest_id(cand: Cand, request_for: Req) -> None:
    candidates = [
        cand(id="zeta", required=True, trust="unverified"),
        cand(id="alpha", required=True, required_permission="legal"),
        cand(id="mid", required=True, expires_on="2026-02-01"),
    ]
    for supersede in (False, True):
        for seed in range(5):
            random.Random(seed).shuffle(candidates)
            with pytest.raises(RequiredChunkError, match="'alpha' failed gate: permission_denied"):
                select(candidates, request_for(supersede=supersede))


def test_ledger_mode_decides_required_per_chunk_id(cand: Cand, request_for: Req) -> None:
    # v2 is required but not yet effective; v1 passes: no failure, v2 is evicted.
    v1 = cand(id="terms", source_version="v1", effective_from="2026-01-01")
    v2 = cand(id="terms", source_version="v2", effective_from="2026-08-01", required=True)
    ctx = select([v1, v2], request_for())
    assert decision(ctx) == {
        ("terms", "v1"): "admitted",
        ("terms", "v2"): ("not_yet_effective", {"effective_from": "2026-08-01"}),
    }
    # Fixture mode knows no versions: the required chunk fails the build.
    with pytest.raises(RequiredChunkError, match="'terms' failed gate: not_yet_effective"):
        select([v1, v2], request_for(supersede=False))


def test_ledger_mode_reports_the_newest_required_versions_reason(
    cand: Cand, request_for: Req
) -> None:
    old = cand(id="terms", source_version="v1", required=True, expires_on="2026-03-01")
    new = cand(id="terms", source_version="v2", required=True, effective_from="2026-09-01")
    with pytest.raises(RequiredChunkError, match="'terms' failed gate: not_yet_effective"):
        select([old, new], request_for())


def test_superseded_by_a_newer_valid_version_is_an_ordinary_eviction(
    cand: Cand, request_for: Req
) -> None:
    old = cand(id="terms", source_version="v1", effective_from="2026-01-01", required=True)
    new = cand(id="terms", source_version="v2", effective_from="2026-05-01", required=True)
    ctx = select([new, old], request_for())
    assert decision(ctx) == {
        ("terms", "v2"): "admitted",
        ("terms", "v1"): (
            "superseded",
            {"by": {"id": "terms", "source_version": "v2", "record_digest": new.record_digest}},
        ),
    }


def test_superseded_tie_goes_to_the_later_ingest(cand: Cand, request_for: Req) -> None:
    first = cand(id="terms", source_version="b-first", ingest_rank=1)
    later = cand(id="terms", source_version="a-later", ingest_rank=2)
    for candidates in ([first, later], [later, first]):
        ctx = select(candidates, request_for())
        assert [c.source_version for c in ctx.items] == ["a-later"]
        assert ctx.evicted[0].detail["by"]["source_version"] == "a-later"


def test_every_older_version_of_an_id_is_superseded(cand: Cand, request_for: Req) -> None:
    days = {"v1": "2026-03-01", "v2": "2026-01-01", "v3": "2026-02-01", "v4": "2026-01-15"}
    versions = [cand(id="terms", source_version=v, effective_from=d) for v, d in days.items()]
    newest = {"id": "terms", "source_version": "v1", "record_digest": versions[0].record_digest}
    for candidates in (versions, versions[::-1]):
        assert decision(select(candidates, request_for())) == {
            ("terms", "v1"): "admitted",
            **{("terms", v): ("superseded", {"by": newest}) for v in ("v2", "v3", "v4")},
        }


def test_superseded_only_among_versions_passing_gates_1_to_4(cand: Cand, request_for: Req) -> None:
    valid = cand(id="terms", source_version="v1", effective_from="2026-01-01")
    future = cand(id="terms", source_version="v2", effective_from="2026-12-01")
    ctx = select([valid, future], request_for())
    assert decision(ctx)[("terms", "v1")] == "admitted"
    assert decision(ctx)[("terms", "v2")][0] == "not_yet_effective"


def test_no_superseded_gate_in_fixture_mode(cand: Cand, request_for: Req) -> None:
    v1 = cand(id="terms", source_version="v1", dedupe_key="k1")
    v2 = cand(id="terms", source_version="v2", dedupe_key="k2", effective_from="2026-02-01")
    ctx = select([v1, v2], request_for(supersede=False))
    assert len(ctx.items) == 2


@pytest.mark.parametrize(
    ("a", "b", "winner"),
    [
        ({"priority": 60}, {"priority": 50}, "a1"),  # priority high first
        (
            {"priority": 50, "effective_from": "2026-01-01"},
            {"priority": 50, "effective_from": "2026-03-01"},
            "b1",
        ),  # newest first
        ({"tokens": 30}, {"tokens": 20}, "b1"),  # tokens small first
        ({}, {}, "a1"),  # then id
        (
            {"priority": 51, "tokens": 99, "effective_from": "2025-01-01"},
            {"priority": 50, "tokens": 1},
            "a1",
        ),  # priority outranks the rest
        ({"effective_from": "2026-03-01", "tokens": 99}, {"tokens": 1}, "a1"),  # date before tokens
    ],
)
def test_dedupe_preference(
    cand: Cand, request_for: Req, a: dict[str, Any], b: dict[str, Any], winner: str
) -> None:
    first = cand(id="a1", dedupe_key="same", **a)
    second = cand(id="b1", dedupe_key="same", **b)
    loser = second if winner == "a1" else first
    kept = first if winner == "a1" else second
    for candidates in ([first, second], [second, first]):
        ctx = select(candidates, request_for())
        assert [c.id for c in ctx.items] == [winner]
        assert decision(ctx)[(loser.id, "v1")] == (
            "duplicate",
            {"kept": {"id": kept.id, "source_version": "v1", "record_digest": kept.record_digest}},
        )


def test_required_chunk_that_loses_dedupe_fails_the_build(cand: Cand, request_for: Req) -> None:
    # Ingest refuses such groups; the selector still never drops a required chunk.
    candidates = [
        cand(id="a1", dedupe_key="k", priority=90),
        cand(id="b1", dedupe_key="k", required=True),
    ]
    with pytest.raises(RequiredChunkError, match="'b1' failed gate: duplicate"):
        select(candidates, request_for())


def test_budget_takes_required_first_then_preference_order(cand: Cand, request_for: Req) -> None:
    candidates = [
        cand(id="must", required=True, tokens=50, priority=0),
        cand(id="high", tokens=30, priority=90),
        cand(id="big", tokens=40, priority=80),
        cand(id="small", tokens=20, priority=10),
    ]
    ctx = select(candidates, request_for(budget=100))
    assert decision(ctx) == {
        ("must", "v1"): "admitted",
        ("high", "v1"): "admitted",
        ("big", "v1"): ("budget", {"needed": 40, "remaining": 20}),
        ("small", "v1"): "admitted",
    }
    assert ctx.admitted_tokens() == 100


def test_budget_ties_between_dedupe_groups_go_by_id(cand: Cand, request_for: Req) -> None:
    # "c1" wins its group "k1" after "b1" won "k2", and the two tie on every
    # field of the preference but the id: the budget takes "b1" first, not the
    # group found first.
    candidates = [
        cand(id="a1", dedupe_key="k1", priority=10, tokens=5),
        cand(id="b1", dedupe_key="k2", tokens=5),
        cand(id="c1", dedupe_key="k1", tokens=5),
    ]
    for ordering in (candidates, candidates[::-1]):
        ctx = select(ordering, request_for(budget=5))
        assert [c.id for c in ctx.items] == ["b1"]
        assert decision(ctx)[("c1", "v1")] == ("budget", {"needed": 5, "remaining": 0})


JAN = {day: f"2026-01-0{day}" for day in (1, 2, 3)}


# Pairs of one dedupe group where the winner is better by one step in a field
# of the preference and at the far end of the next one (the pair spans that
# field's values); the loser has the smaller id, so it wins the tie they make
# if a digit of the integer key spills into the one above it (a radix one short).
@pytest.mark.parametrize(
    ("winner", "loser"),
    [
        ({"priority": 2, "rank": 5}, {"priority": 1, "rank": 0}),
        ({"rank": 0, "effective_from": JAN[1]}, {"rank": 1, "effective_from": JAN[3]}),
        ({"effective_from": JAN[2], "tokens": 9}, {"effective_from": JAN[1], "tokens": 2}),
    ],
)
def test_each_preference_field_outweighs_all_below_it(
    cand: Cand, request_for: Req, winner: dict[str, Any], loser: dict[str, Any]
) -> None:
    base = {"dedupe_key": "k", "tokens": 5}
    candidates = [cand(id="b", **{**base, **winner}), cand(id="a", **{**base, **loser})]
    ctx = select(candidates, request_for())
    assert [c.id for c in ctx.items] == ["b"]
    assert decision(ctx)[("a", "v1")][0] == "duplicate"


def test_required_comes_first_whatever_the_priorities(cand: Cand, request_for: Req) -> None:
    # One section; the optional one has the top priority and the smaller id.
    candidates = [
        cand(id="a", section="policy", priority=9),
        cand(id="b", section="policy", priority=1, required=True),
    ]
    assert [c.id for c in select(candidates, request_for()).items] == ["b", "a"]


def test_zero_token_candidates_always_fit(cand: Cand, request_for: Req) -> None:
    ctx = select([cand(id="free", tokens=0), cand(id="full", tokens=5)], request_for(budget=5))
    assert ctx.admitted_tokens() == 5 and len(ctx.items) == 2
    ctx = select([cand(id="free", tokens=0)], request_for(budget=0))
    assert [c.id for c in ctx.items] == ["free"]


def test_output_order(cand: Cand, request_for: Req) -> None:
    candidates = [
        cand(id="input", section="current-input", priority=100),
        cand(id="ev-b", section="evidence", priority=70),
        cand(id="ev-a", section="evidence", priority=70),
        cand(id="ev-req", section="evidence", priority=1, required=True),
        cand(id="ev-top", section="evidence", priority=99),
        cand(id="state", section="state", priority=0),
        cand(id="policy", section="policy", priority=0),
    ]
    ctx = select(candidates, request_for())
    assert [c.id for c in ctx.items] == [
        "policy",
        "state",
        "ev-req",
        "ev-top",
        "ev-a",
        "ev-b",
        "input",
    ]


def test_evictions_sorted_by_id_then_version(cand: Cand, request_for: Req) -> None:
    candidates = [
        cand(id="b-chunk", source_version="2", trust="unverified"),
        cand(id="a-chunk", source_version="9", required_permission="x1"),
        cand(id="b-chunk", source_version="10", trust="unverified"),
        cand(id="a-chunk", source_version="1", required_permission="x1"),
    ]
    ctx = select(candidates, request_for())
    assert [(e.candidate.id, e.candidate.source_version) for e in ctx.evicted] == [
        ("a-chunk", "1"),
        ("a-chunk", "9"),
        ("b-chunk", "10"),
        ("b-chunk", "2"),
    ]


def test_same_result_for_any_input_order(cand: Cand, request_for: Req) -> None:
    rng = random.Random(7)
    candidates = [
        cand(
            id=f"c{i % 23:02d}",
            source_version=f"v{i}",
            dedupe_key=f"k{i % 7}",
            priority=rng.randint(0, 3),
            tokens=rng.randint(0, 40),
            effective_from=rng.choice(["2026-01-01", "2026-03-01"]),
            ingest_rank=rng.randint(0, 2),
            trust=rng.choice(["approved-source"] * 5 + ["unverified"]),
        )
        for i in range(120)
    ]
    reference = select(candidates, request_for(budget=150))
    for _ in range(20):
        rng.shuffle(candidates)
        assert select(candidates, request_for(budget=150)) == reference


def test_custom_order_is_a_parameter(cand: Cand, request_for: Req) -> None:
    # Cheapest first, output by id descending.
    order = Order(preference=lambda c: (c.tokens,), output=lambda c: (-ord(c.id[0]),))
    candidates = [
        cand(id="a1", tokens=30, priority=99),
        cand(id="b1", tokens=10),
        cand(id="c1", tokens=15),
    ]
    ctx = select(candidates, request_for(budget=30), order)
    assert [c.id for c in ctx.items] == ["c1", "b1"]
    assert DEFAULT_ORDER != order


@pytest.mark.parametrize(
    "overrides",
    [
        {"as_of": "2026-7-1"},
        {"as_of": "2026-02-30"},
        {"budget": -1},
        {"budget": True},
        {"budget": 1.0},
    ],
)
def test_request_is_validated(request_for: Req, overrides: dict[str, Any]) -> None:
    with pytest.raises(InputError):
        request_for(**overrides)


def test_request_accepts_plain_sets(request_for: Req) -> None:
    r = request_for(granted={"read"}, allowed_trust=["approved-source"])
    assert r.granted == frozenset({"read"}) and isinstance(r.allowed_trust, frozenset)
