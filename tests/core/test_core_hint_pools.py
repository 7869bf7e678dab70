"""`recorded_hint`: a hint on a recorded pack, computed on only the candidates it
depends on (the store loads those alone), gives the same answer as
`admission_hint` on the whole pack, for every eviction of random packs."""

from __future__ import annotations

import dataclasses
import importlib
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.hints import HintPool, admission_hint, recorded_hint
from ledger.core.select import Candidate, Context, Request, select
from tests.core.test_core_properties import DATES, candidate_sets, requests, run

# The module whose `select` the hints run.
core = importlib.import_module("ledger.core.hints")

retractions = st.dictionaries(
    st.sampled_from([f"id-{i}" for i in range(12)]),
    st.lists(st.tuples(st.integers(0, 4), st.sampled_from(DATES)), min_size=1, max_size=2).map(
        tuple
    ),
    max_size=4,
)


def pool_of(
    pool: HintPool, candidates: list[Candidate], ctx: Context, target: Candidate, ref: str | None
) -> list[Candidate]:
    """A pack's candidates of `pool`, chosen as the store's SQL chooses them."""

    def rival(c: Candidate) -> bool:
        return c.record_digest in (target.record_digest, ref) or c.id == target.id

    if pool.kind == "rivals":
        return [c for c in candidates if rival(c)]
    if pool.kind == "survivors":
        return list(ctx.items) + [e.candidate for e in ctx.evicted if e.reason == "budget"]
    return [c for c in candidates if rival(c) or pool.holds(c)]


@settings(max_examples=400, deadline=None)
@given(candidate_sets(), requests, retractions, st.booleans())
def test_recorded_hint_is_the_whole_pack_hint(
    candidates: list[Candidate], request: Request, retracted: Any, reason_known: bool
) -> None:
    request = dataclasses.replace(request, retractions=MappingProxyType(retracted))
    ctx = run(candidates, request)
    if ctx is None:
        return  # no pack was recorded
    for eviction in ctx.evicted:
        target = eviction.candidate
        named = eviction.detail.get("kept") or eviction.detail.get("by")
        ref = named["record_digest"] if named else None
        loaded: list[str] = []

        def load(
            pool: HintPool, target: Candidate = target, ref: str | None = ref, loaded: Any = loaded
        ) -> Any:
            loaded.append(pool.kind)
            return pool_of(pool, candidates, ctx, target, ref)

        reason = eviction.reason if reason_known else None
        fast = recorded_hint(load, reason, request, target.record_digest)
        whole = admission_hint(candidates, request, target.record_digest)
        assert fast.to_json() == whole.to_json()
        # Any superset of a pool will do: the store reads the whole pack instead
        # once a report's hints have read as much.
        wide = recorded_hint(lambda pool: candidates, reason, request, target.record_digest)
        assert wide.to_json() == whole.to_json()
        # The whole pack is never needed; an unknown reason goes to "reachable".
        assert loaded[0] == "rivals" and len(loaded) <= 3
        if reason is None:
            assert loaded == ["rivals", "reachable"]


def test_reachable_pool_leaves_out_what_no_step_can_admit(cand: Any, request_for: Any) -> None:
    target = cand(id="t", required_permission="legal", effective_from="2026-09-01")
    unreachable = [
        cand(id="forum", trust="unverified"),  # trust never allowed by the hint
        cand(id="ops", required_permission="ops"),  # permission never granted
        cand(id="late", effective_from="2026-10-01"),  # after both as_of values
        cand(id="gone", expires_on="2026-07-01"),  # expired at both
    ]
    reachable = [
        cand(id="same-perm", required_permission="legal"),
        # Required: in the pool whatever its gates (its id's fate can fail a build).
        cand(id="must", source_version="v1", required=True, required_permission="ops"),
        cand(id="must", source_version="v2"),
        cand(id="then", effective_from="2026-08-01", expires_on="2026-07-02"),
    ]
    pool = HintPool(
        "reachable",
        granted=frozenset({"read", "legal"}),
        allowed_trust=frozenset({"approved-source"}),
        first_day="2026-07-01",
        last_day="2026-09-01",
    )
    assert [c.id for c in [target, *unreachable, *reachable] if pool.holds(c)] == [
        "t",
        "same-perm",
        "must",
        "must",
        "then",
    ]
    seen: list[HintPool] = []

    def load(p: HintPool) -> list[Candidate]:
        seen.append(p)
        pack = [target, *unreachable, *reachable]
        return [c for c in pack if c.id == "t" or (p.kind == "reachable" and p.holds(c))]

    hint = recorded_hint(load, "permission_denied", request_for(), target.record_digest)
    assert seen[-1] == pool
    assert [s["kind"] for s in hint.steps] == ["grant", "as_of"] and hint.admits


def test_budget_hint_weighs_required_chunks_behind_the_target(cand: Any, request_for: Any) -> None:
    """A budget eviction's hint is computed on the survivors weighed before the
    target: every required chunk counts, even one behind it in preference order."""
    must = cand(id="must", required=True, priority=10, tokens=50)
    ahead = cand(id="ahead", priority=90, tokens=30)
    target = cand(id="t", priority=80, tokens=40)
    behind = cand(id="behind", priority=5, tokens=10)
    pack = [must, ahead, target, behind]
    request = request_for(budget=100)  # 50 required + 30 ahead: 20 left for 40
    whole = admission_hint(pack, request, target.record_digest)
    assert whole.steps[0]["budget"] == 120 and whole.admits

    def load(pool: HintPool) -> list[Candidate]:
        # The survivors are the whole pack here: every chunk passed gates 1-6.
        return pack if pool.kind == "survivors" else [target]

    fast = recorded_hint(load, "budget", request, target.record_digest)
    assert fast.to_json() == whole.to_json()


def test_wide_pool_goes_on_from_the_first_step(cand: Any, request_for: Any) -> None:
    """A hint that must move on to the reachable pool starts there after the first
    step the rivals already decided: it does not re-make the pack on that pool,
    and the pool holds only what can pass gates 1-4 from that step on."""
    old = cand(id="t", source_version="v1", effective_from="2026-01-01", tokens=40)
    new = cand(id="t", source_version="v2", effective_from="2026-06-01", tokens=40)
    others = [cand(id=f"o{i}", priority=90, tokens=10) for i in range(5)]
    # Passes gates 1-4 at the request's as_of but not at the first step's.
    late = cand(id="late", priority=95, tokens=10, effective_from="2026-06-15")
    pack = [old, new, *others, late]
    request = request_for(budget=60)  # v2 and two others at as_of; v1 and 2 others before
    whole = admission_hint(pack, request, old.record_digest)
    assert [s["kind"] for s in whole.steps] == ["superseded_by", "budget"] and whole.admits

    def load(pool: HintPool) -> list[Candidate]:
        if pool.kind == "rivals":
            return [old, new]
        return [c for c in pack if c in (old, new) or pool.holds(c)]

    runs: list[int] = []  # the size of each pool `select` ran on
    real_select = core.select

    def counting(candidates: Any, *args: Any) -> Any:
        runs.append(len(candidates))
        return real_select(candidates, *args)

    core.select = counting  # the module's own function, as `_run` calls it
    try:
        fast = recorded_hint(load, "superseded", request, old.record_digest)
    finally:
        core.select = real_select
    assert fast.to_json() == whole.to_json()
    # Two runs on the rivals (re-make, then the new as_of), then one on the
    # reachable pool from the new as_of (without `late`): its budget eviction,
    # whose fix admits.
    assert runs == [2, 2, len(pack) - 1]


def test_a_budget_hint_on_the_whole_pack_keeps_the_versions_that_supersede(
    cand: Any, request_for: Any
) -> None:
    """`x@v1` is ahead of the target in preference, but `x@v2`, behind it,
    supersedes it: on the whole pack (a superset of the survivors) the budget
    hint must still see `x@v1` gone, or it asks for more budget than needed."""
    target = cand(id="t", priority=50, tokens=30)
    old = cand(id="x", source_version="v1", priority=90, tokens=10, effective_from="2026-01-01")
    new = cand(id="x", source_version="v2", priority=10, tokens=5, effective_from="2026-03-01")
    pack = [target, old, new]
    request = request_for(budget=20)
    ctx = select(pack, request)
    assert [(e.candidate, e.reason) for e in ctx.evicted] == [
        (target, "budget"),
        (old, "superseded"),
    ]
    whole = admission_hint(pack, request, target.record_digest)
    assert whole.steps[0]["budget"] == 30 and whole.steps[0]["displaced_by"] == []
    wide = recorded_hint(lambda pool: pack, "budget", request, target.record_digest)
    assert wide.to_json() == whole.to_json()


def test_a_budget_hint_on_the_whole_pack_keeps_the_version_a_required_id_passes_with(
    cand: Any, request_for: Any
) -> None:
    """`r@v2` (required) is not yet effective; `r@v1`, behind the target, is the
    version of that id that passes, so the build stands. Without it the re-run
    would fail the required id and the hint would say nothing admits."""
    target = cand(id="t", priority=50, tokens=30)
    due = cand(id="r", source_version="v2", required=True, effective_from="2026-09-01")
    passing = cand(id="r", source_version="v1", priority=10, tokens=5)
    pack = [target, due, passing]
    request = request_for(budget=20)
    whole = admission_hint(pack, request, target.record_digest)
    assert whole.admits and whole.steps[0]["budget"] == 30
    wide = recorded_hint(lambda pool: pack, "budget", request, target.record_digest)
    assert wide.to_json() == whole.to_json()
