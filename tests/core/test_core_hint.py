"""admission_hint: the smallest change that admits an evicted candidate, verified."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings

from ledger.core.errors import InputError
from ledger.core.hints import Hint, admission_hint
from ledger.core.select import (
    Candidate,
    Request,
    RequiredChunkError,
    RequiredOverBudgetError,
    select,
)
from tests.core.test_core_properties import candidate_sets, requests, run

Cand = Callable[..., Candidate]
Req = Callable[..., Request]


def apply(request: Request, steps: tuple[dict[str, Any], ...]) -> Request:
    """Apply a hint's steps as a user would, independently of the code under test."""
    for step in steps:
        kind = step["kind"]
        if kind == "grant":
            request = dataclasses.replace(request, granted=request.granted | {step["permission"]})
        elif kind == "allow_trust":
            request = dataclasses.replace(
                request, allowed_trust=request.allowed_trust | {step["trust"]}
            )
        elif kind == "as_of":
            request = dataclasses.replace(request, as_of=step["as_of"])
        elif kind == "budget":
            assert step["budget"] == request.budget + step["extra"]
            request = dataclasses.replace(request, budget=step["budget"])
        elif kind == "superseded_by" and "as_of" in step:
            request = dataclasses.replace(request, as_of=step["as_of"])
    return request


def admitted_after(candidates: list[Candidate], request: Request, target: Candidate) -> bool:
    try:
        ctx = select(candidates, request)
    except (RequiredChunkError, RequiredOverBudgetError):
        return False
    return ctx.admitted(target.record_digest)


def check(candidates: list[Candidate], request: Request, target: Candidate) -> Hint:
    assert not admitted_after(candidates, request, target)
    hint = admission_hint(candidates, request, target.record_digest)
    assert hint.admits == admitted_after(candidates, apply(request, hint.steps), target)
    json.dumps(hint.to_json())  # plain JSON
    return hint


def test_grant(cand: Cand, request_for: Req) -> None:
    target = cand(id="legal-note", required_permission="legal-read")
    hint = check([target, cand(id="other")], request_for(), target)
    assert hint.steps == ({"kind": "grant", "permission": "legal-read"},)
    assert hint.admits


def test_allow_trust(cand: Cand, request_for: Req) -> None:
    target = cand(id="forum", trust="unverified")
    hint = check([target], request_for(), target)
    assert hint.steps == ({"kind": "allow_trust", "trust": "unverified"},) and hint.admits


def test_as_of_for_not_yet_effective(cand: Cand, request_for: Req) -> None:
    target = cand(id="future", effective_from="2026-09-01")
    hint = check([target], request_for(), target)
    assert hint.steps == ({"kind": "as_of", "as_of": "2026-09-01"},) and hint.admits


def test_as_of_for_expired(cand: Cand, request_for: Req) -> None:
    target = cand(id="old", effective_from="2025-01-01", expires_on="2026-04-01")
    hint = check([target], request_for(), target)
    assert hint.steps == ({"kind": "as_of", "as_of": "2026-03-31"},) and hint.admits


def test_expired_one_day_window(cand: Cand, request_for: Req) -> None:
    target = cand(id="one-day", effective_from="2026-03-31", expires_on="2026-04-01")
    hint = check([target], request_for(), target)
    assert hint.steps == ({"kind": "as_of", "as_of": "2026-03-31"},) and hint.admits
    target = cand(id="edge", effective_from="2026-04-01", expires_on="2026-04-02")
    hint = check([target], request_for(), target)
    assert hint.admits and hint.steps[0]["as_of"] == "2026-04-01"


def test_budget_with_displacing_chunks(cand: Cand, request_for: Req) -> None:
    ahead = cand(id="ahead", priority=90, tokens=60)
    target = cand(id="target", priority=70, tokens=45)
    hint = check([ahead, target], request_for(budget=100), target)
    assert hint.steps == (
        {
            "kind": "budget",
            "budget": 105,
            "extra": 5,
            "displaced_by": [{"id": "ahead", "source_version": "v1"}],
        },
    )
    assert hint.admits


def test_budget_repeats_with_the_new_deficit(cand: Cand, request_for: Req) -> None:
    # Raising the budget by 1 lets "second" in first; the target then needs 41 more.
    first = cand(id="first", priority=90, tokens=60)
    second = cand(id="second", priority=80, tokens=41)
    target = cand(id="target", priority=70, tokens=41)
    hint = check([first, second, target], request_for(budget=100), target)
    (step,) = hint.steps
    assert step["kind"] == "budget" and hint.admits
    assert (step["budget"], step["extra"]) == (142, 42)
    assert step["displaced_by"] == [
        {"id": "first", "source_version": "v1"},
        {"id": "second", "source_version": "v1"},
    ]
    # Smallest: one token less does not admit it.
    smaller = dataclasses.replace(request_for(), budget=141)
    assert not admitted_after([first, second, target], smaller, target)


def test_several_gates_give_several_steps(cand: Cand, request_for: Req) -> None:
    big = cand(id="big", priority=99, tokens=90)
    target = cand(
        id="target",
        required_permission="legal",
        trust="unverified",
        effective_from="2026-08-01",
        tokens=20,
    )
    hint = check([big, target], request_for(budget=100), target)
    assert [s["kind"] for s in hint.steps] == ["grant", "allow_trust", "as_of", "budget"]
    assert hint.steps[-1]["extra"] == 10 and hint.admits


def test_superseded_names_the_winner_and_an_earlier_as_of(cand: Cand, request_for: Req) -> None:
    old = cand(id="terms", source_version="v1", effective_from="2026-01-01")
    new = cand(id="terms", source_version="v2", effective_from="2026-05-01")
    hint = check([old, new], request_for(), old)
    assert hint.steps == (
        {
            "kind": "superseded_by",
            "as_of": "2026-04-30",
            "by": {"id": "terms", "source_version": "v2", "record_digest": new.record_digest},
        },
    )
    assert hint.admits


def test_superseded_tie_cannot_be_undone_by_a_date(cand: Cand, request_for: Req) -> None:
    first = cand(id="terms", source_version="v1", ingest_rank=1)
    later = cand(id="terms", source_version="v2", ingest_rank=2)
    hint = check([first, later], request_for(), first)
    assert hint.steps == ({"kind": "superseded_by", "by": later.ref()},)
    assert not hint.admits


def test_duplicate_names_the_kept_chunk(cand: Cand, request_for: Req) -> None:
    kept = cand(id="current", dedupe_key="policy", priority=95)
    target = cand(id="mirror", dedupe_key="policy", priority=80)
    hint = check([kept, target], request_for(), target)
    assert hint.steps == ({"kind": "outranked_by", "kept": kept.ref()},)
    assert not hint.admits


def test_a_fix_that_breaks_a_required_chunk_does_not_admit(cand: Cand, request_for: Req) -> None:
    # Moving as_of to the target's start makes the required chunk expire.
    required = cand(id="policy", required=True, expires_on="2026-08-01")
    target = cand(id="future", effective_from="2026-09-01")
    hint = check([required, target], request_for(), target)
    assert hint.steps == ({"kind": "as_of", "as_of": "2026-09-01"},)
    assert not hint.admits


def test_admitted_target_needs_no_steps(cand: Cand, request_for: Req) -> None:
    target = cand()
    hint = admission_hint([target], request_for(), target.record_digest)
    assert hint == Hint(target.ref(), (), True)


def test_unknown_target(cand: Cand, request_for: Req) -> None:
    with pytest.raises(InputError, match="no candidate has record digest"):
        admission_hint([cand()], request_for(), "f" * 64)


def test_seed_fixture_hints(cand: Cand) -> None:
    """Every seed-001 exclusion gets a hint that is true when applied."""
    request = Request(
        "2026-07-14",
        frozenset({"policy-read", "state-read", "user-input", "public-read"}),
        frozenset({"application-policy", "confirmed-state", "approved-source", "user-input"}),
        170,
        supersede=False,
    )
    chunks = [
        cand(
            id="policy",
            section="policy",
            required_permission="policy-read",
            trust="application-policy",
            tokens=32,
            priority=100,
            required=True,
        ),
        cand(
            id="current",
            required_permission="policy-read",
            dedupe_key="rp",
            tokens=48,
            priority=95,
            effective_from="2026-04-01",
        ),
        cand(
            id="mirror",
            required_permission="policy-read",
            dedupe_key="rp",
            tokens=44,
            priority=80,
            effective_from="2026-04-01",
        ),
        cand(id="shipping", required_permission="public-read", tokens=24, priority=55),
        cand(id="faq", required_permission="public-read", tokens=80, priority=60),
    ]
    target = chunks[3]
    hint = check(chunks, request, target)
    assert hint.admits
    assert hint.steps == (
        {
            "kind": "budget",
            "budget": 184,
            "extra": 14,
            "displaced_by": [
                {"id": "current", "source_version": "v1"},
                {"id": "faq", "source_version": "v1"},
            ],
        },
    )


@settings(max_examples=300, deadline=None)
@given(candidate_sets(), requests)
def test_admits_is_what_a_rerun_with_the_steps_gives(
    candidates: list[Candidate], request: Request
) -> None:
    """For every eviction of random packs, `admits` is what a re-run with the
    steps applied decides: a hint that ends with a budget step says it admits
    without re-running, so the budget gate's simulation must be exact."""
    ctx = run(candidates, request)
    if ctx is None:
        return
    for eviction in ctx.evicted:
        target = eviction.candidate
        hint = admission_hint(candidates, request, target.record_digest)
        assert hint.admits == admitted_after(candidates, apply(request, hint.steps), target)
        # A budget step is always the last.
        assert all(step["kind"] != "budget" for step in hint.steps[:-1])
