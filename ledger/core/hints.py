"""Admission hints: the smallest change of request that would have admitted an
evicted candidate, found by re-running the selector (docs/reference/gates.md,
"Hints").

Each gate a candidate fails has one kind of change that can get it past (the
reasons table's `change`): grant its permission, allow its trust, move as_of,
name the retraction, the superseding version or the kept duplicate, raise the
budget. `admission_hint` applies the change for the gate the target failed,
re-runs `select`, and goes on with the next gate it fails; `recorded_hint` gives
the same answer for a recorded pack on only the candidates it can depend on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from types import MappingProxyType
from typing import Any, Literal

from ledger.core.context import Candidate, Context, ContextOverBudgetError, Eviction
from ledger.core.errors import InputError
from ledger.core.reasons import (
    BUDGET,
    DUPLICATE,
    EXPIRED,
    NOT_YET_EFFECTIVE,
    PERMISSION_DENIED,
    REASON,
    RETRACTED,
    SUPERSEDED,
    TRUST_DENIED,
)
from ledger.core.select import (
    DEFAULT_ORDER,
    Order,
    Request,
    RequiredChunkError,
    RequiredOverBudgetError,
    first_failed_gate,
    select,
    weighing_key,
)

__all__ = ["Hint", "HintPool", "admission_hint", "fix_for", "recorded_hint"]


@dataclass(frozen=True, slots=True)
class Hint:
    """Steps that admit an evicted candidate, found by re-running `select`.

    Each step is a dict with a "kind": `grant` {permission}, `allow_trust`
    {trust}, `as_of` {as_of}, `budget` {budget, extra, displaced_by},
    `superseded_by` {by, as_of?}, `outranked_by` {kept}. `admits` is True only when
    the steps applied admit the target: a re-run admitted it, or a final budget
    step ran the last gate exactly at the new budget (the gates before it do not
    depend on the budget).
    """

    target: dict[str, Any]
    steps: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    admits: bool = False

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: `{"target", "steps", "admits"}`."""
        return {
            "target": dict(self.target),
            "steps": [_plain(step) for step in self.steps],
            "admits": self.admits,
        }


_NESTED = (dict, MappingProxyType, list, tuple)


def _plain(value: Any) -> Any:
    # Called only on containers below the top: a budget step's `displaced_by`
    # holds thousands of small dicts of strings.
    if isinstance(value, (dict, MappingProxyType)):
        return {k: _plain(v) if isinstance(v, _NESTED) else v for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) if isinstance(v, _NESTED) else v for v in value]
    return value


def _day_before(day: str) -> str:
    return (date.fromisoformat(day) - timedelta(days=1)).isoformat()


def _run(candidates: list[Candidate], request: Request, order: Order) -> Context | None:
    try:
        return select(candidates, request, order)
    except (RequiredChunkError, RequiredOverBudgetError, ContextOverBudgetError):
        return None


# Bounds of `admission_hint`: re-runs of the selector (one per gate the target
# fails, and a few more), and exact passes of the budget gate's simulation.
_HINT_ROUNDS = 12
REINSTATE_STEP = "reinstate"  # the step that undoes a retraction
_BUDGET_ROUNDS = 16


def admission_hint(
    candidates: Iterable[Candidate],
    request: Request,
    target_record_digest: str,
    order: Order = DEFAULT_ORDER,
) -> Hint:
    """The smallest change to `request` that would have admitted one candidate.

    Computed, not guessed: fix the gate the target failed (grant its permission,
    allow its trust, move as_of to its effective_from or to the day before it
    expires, raise the budget until the budget gate reaches it), re-run `select`,
    and go on with the next gate it fails; a budget fix is the last step. For
    `superseded` and `duplicate` the step names the version or chunk that won
    (and, for superseded, an as_of before the winner's effective_from when that
    admits the target). A required-chunk failure in a re-run counts as not
    admitted.
    """
    return _hint(list(candidates), request, target_record_digest, order)[0]


# The first step of a hint, and the request with it applied.
_Step = tuple[dict[str, Any], Request]


def _hint(
    pool: list[Candidate],
    request: Request,
    target_record_digest: str,
    order: Order,
    start: _Step | None = None,
) -> tuple[Hint, _Step | None]:
    """`admission_hint`, and its first step that changed the request (None when
    the first run ended the hint).

    `start`: the first step, already known (from a pool that decides it exactly):
    the runs begin after it, as they would after the first run.
    """
    target = next((c for c in pool if c.record_digest == target_record_digest), None)
    if target is None:
        raise InputError(f"no candidate has record digest {target_record_digest!r}")
    steps: list[dict[str, Any]] = []
    current = request
    first = start
    if start is not None:
        steps.append(dict(start[0]))
        current = start[1]
    # Each fix removes one cause and the gates are few: one re-run of the
    # selector per gate (a budget fix is simulated, not re-run per candidate).
    for _round in range(_HINT_ROUNDS - len(steps)):
        context = _run(pool, current, order)
        if context is None:
            return Hint(target.ref(), tuple(steps), False), first
        if any(c.record_digest == target_record_digest for c in context.items):
            return Hint(target.ref(), tuple(steps), True), first
        eviction = next(
            e for e in context.evicted if e.candidate.record_digest == target_record_digest
        )
        step, changed = fix_for(eviction, current, context, order, target)
        if step is None:
            return Hint(target.ref(), tuple(steps), False), first
        steps.append(step)
        if changed is None:
            return Hint(target.ref(), tuple(steps), False), first
        if step["kind"] == _BUDGET_STEP:
            # The budget gate is the last and the gates before it do not depend
            # on the budget: `_budget_fix` ran that gate exactly at the new
            # budget and it admits the target. A re-run would only repeat it.
            return Hint(target.ref(), tuple(steps), True), first
        if first is None:
            first = (dict(step), changed)
        current = changed
    return Hint(target.ref(), tuple(steps), False), first


# A hint for a recorded pack, computed on only the candidates it can depend on
# (the store loads those alone, not the whole pack). The first run of
# `admission_hint` re-makes the recorded pack; each step then changes the request.


@dataclass(frozen=True, slots=True)
class HintPool:
    """Which of a pack's candidates a hint is computed on.

    - "rivals": the target's id's versions and the version the recorded
      eviction's detail names (`kept`, `by`). They re-make any eviction by gates
      1-6 exactly as the whole pack does (gates 1-5 are per candidate, gate 6 per
      id, gate 7 keeps the same first), so a hint's first step is the whole
      pack's; for a duplicate, superseded, expired or retracted target they
      decide the whole hint, as long as no step changes the request.
    - "survivors": the admitted and the budget evictions. Gates 1-7 do not depend
      on the budget: for a budget eviction they are all that changes while only
      the budget does.
    - "reachable": the rivals, and every candidate that `holds`: the required
      ones and those that pass gates 1-4 under some request a hint can try from
      its start (the request, or the request after the first step when the runs
      begin there). A hint's steps only add the target's permission and trust
      and move as_of within the days between the start's as_of and the target's
      effective_from (to the target's effective_from, or back to a day not before
      it), so any other candidate fails gates 1-4 in every run of the hint: it
      cannot change the target's fate, nor (not being required) fail the build.
      Exact for any target.
    """

    kind: Literal["rivals", "survivors", "reachable"]
    granted: frozenset[str] = frozenset()
    allowed_trust: frozenset[str] = frozenset()
    first_day: str = ""
    last_day: str = ""

    def holds(self, c: Candidate) -> bool:
        """For "reachable": whether `c` is in the pool besides the rivals: it is
        required, or it passes gates 1-4 under the pool's grants and trust on
        some day from `first_day` to `last_day` (gates 1-3 on the last day, and
        gates 1, 2 and 4 on the first: gate 3 only passes later, gate 4 only
        earlier). The store writes this condition in SQL."""
        if c.required:
            return True
        last = Request(self.last_day, self.granted, self.allowed_trust, 0)
        first = Request(self.first_day, self.granted, self.allowed_trust, 0)
        return first_failed_gate(c, last) in (None, EXPIRED) and first_failed_gate(c, first) in (
            None,
            NOT_YET_EFFECTIVE,
        )


_RIVALS = HintPool("rivals")
_SURVIVORS = HintPool("survivors")
_RIVAL_REASONS = frozenset({DUPLICATE, SUPERSEDED, EXPIRED, RETRACTED})
# Gates 1-4 judge each candidate alone: the rivals re-make such an eviction too.
_PER_CANDIDATE = frozenset({PERMISSION_DENIED, TRUST_DENIED, NOT_YET_EFFECTIVE})
# The step kinds that change the request, and the field each changes (an as_of
# is also changed by any step that carries one).
_AS_OF_STEP = REASON[NOT_YET_EFFECTIVE].change
_BUDGET_STEP = REASON[BUDGET].change
_REQUEST_STEPS = {
    REASON[PERMISSION_DENIED].change: "granted",
    REASON[TRUST_DENIED].change: "allowed_trust",
    _BUDGET_STEP: "budget",
}


def _changes(hint: Hint) -> frozenset[str]:
    """The request fields a hint's steps change: granted, allowed_trust, as_of, budget."""
    changed = {_REQUEST_STEPS[s["kind"]] for s in hint.steps if s["kind"] in _REQUEST_STEPS}
    changed |= {"as_of" for s in hint.steps if s["kind"] == _AS_OF_STEP or "as_of" in s}
    # A reinstatement lets the target on to gates 6-8, where the others weigh.
    changed |= {"reinstatements" for s in hint.steps if s["kind"] == REINSTATE_STEP}
    return frozenset(changed)


def recorded_hint(
    load: Callable[[HintPool], Iterable[Candidate]],
    reason: str | None,
    request: Request,
    target_record_digest: str,
    order: Order = DEFAULT_ORDER,
) -> Hint:
    """`admission_hint` for a candidate of a recorded pack that evicted it for
    `reason` (None: unknown): the same answer, on the narrowest pool that gives it.

    `load(pool)` returns the pack's candidates of that `HintPool` (a superset
    will do: the whole pack gives the same answer).
    """
    rivals = list(load(_RIVALS))
    # The first run on the narrow pool re-makes the recorded eviction exactly, so
    # its first step is the whole pack's: when the hint must go on to the wide
    # pool, it goes on from there instead of re-making the pack once more.
    first = None
    if reason in _RIVAL_REASONS or reason in _PER_CANDIDATE:
        hint, first = _hint(rivals, request, target_record_digest, order)
        if not _changes(hint):
            return hint
    elif reason == BUDGET:
        survivors = _weighed_before(list(load(_SURVIVORS)), target_record_digest, order)
        hint, first = _hint(survivors, request, target_record_digest, order)
        if _changes(hint) <= {"budget"}:
            return hint
    target = next((c for c in rivals if c.record_digest == target_record_digest), None)
    if target is None:
        return admission_hint(rivals, request, target_record_digest, order)  # refuses it
    # The runs on the wide pool start from the first step's request, when known.
    start = request if first is None else first[1]
    days = sorted((start.as_of, target.effective_from))
    reachable = HintPool(
        "reachable",
        granted=start.granted | {target.required_permission},
        allowed_trust=start.allowed_trust | {target.trust},
        first_day=days[0],
        last_day=days[1],
    )
    return _hint(list(load(reachable)), request, target_record_digest, order, first)[0]


def _weighed_before(survivors: list[Candidate], digest: str, order: Order) -> list[Candidate]:
    """Of a budget eviction's survivors, those the budget gate weighs before the
    target, and the target: the required, and the optional ahead of it in
    preference order. The greedy gate decides the target on these alone at any
    budget, so its hint is the same on them as on all the survivors.

    With every version of their ids: `survivors` may be a superset (the whole
    pack), where a version behind the target can supersede one ahead of it, or
    be the one of a required id that passes gates 1-4. Candidates of other ids
    behind the target change nothing ahead of it: a duplicate group keeps its
    first by preference."""
    target = next((c for c in survivors if c.record_digest == digest), None)
    if target is None:
        return survivors  # admission_hint refuses it
    key = weighing_key(order)
    limit = key(target)
    ids = {c.id for c in survivors if c.required or key(c) <= limit}
    return [c for c in survivors if c.id in ids]


def _budget_fix(
    request: Request, context: Context, order: Order, target: Candidate, deficit: int
) -> tuple[dict[str, Any], Request]:
    """The smallest raise of the budget, from the deficit upwards, that lets the
    greedy budget gate reach the target with room for it.

    Gates 1-7 do not depend on the budget, so their survivors are the admitted
    plus the budget evictions; a raise only changes which optional survivors
    ahead of the target fit. Each round simulates the gate over those alone and
    raises by the new shortfall (every round admits at least one more of them),
    instead of re-running the whole selection per round.
    """
    key = weighing_key(order)
    target_key = key(target)
    required = sum(c.tokens for c in context.items if c.required)
    survivors = [c for c in context.items if not c.required]
    survivors += [e.candidate for e in context.evicted if e.reason == BUDGET]
    # Each key computed once: (key, position) pairs sort as the gate does.
    keyed = sorted((k, i) for i, c in enumerate(survivors) if (k := key(c)) < target_key)
    ahead = [survivors[i] for _, i in keyed]
    new_budget = request.budget + deficit
    for _ in range(_BUDGET_ROUNDS):
        room = new_budget - required
        taken = []  # the optional survivors ahead that the gate admits at this budget
        for c in ahead:
            if c.tokens <= room:
                room -= c.tokens
                taken.append(c)
        if room >= target.tokens:
            break
        new_budget += target.tokens - room
    else:
        # Bounded: each round is one pass over the survivors ahead, and a round
        # may admit only one more of them, so the exact search could take one
        # pass per candidate (quadratic). After _BUDGET_ROUNDS passes, take the
        # budget at which everything ahead fits and then the target: it admits
        # the target for certain (the re-run checks it) and is at most the sum
        # of what is ahead above the exact minimum.
        new_budget = max(new_budget, required + sum(c.tokens for c in ahead) + target.tokens)
        taken = list(ahead)
    step = {
        "kind": _BUDGET_STEP,
        "budget": new_budget,
        "extra": new_budget - request.budget,
        "displaced_by": [{"id": c.id, "source_version": c.source_version} for c in taken],
    }
    return step, replace(request, budget=new_budget)


# The step for the gate the target failed, and the request with it applied (None
# when no change of request gets past that gate): one function per kind of
# change, the reasons table's `change` of the eviction's reason.
_Fix = tuple[dict[str, Any] | None, Request | None]


def fix_for(
    eviction: Eviction, request: Request, context: Context, order: Order, target: Candidate
) -> _Fix:
    """The step past the gate that evicted `target`, and the request with it
    applied (None when no change of request gets past it): the one fix per
    reason, used on a recorded pack's candidates and on a rebuilt pack
    (`ledger.store.rebuild`)."""
    change = REASON[eviction.reason].change
    if change not in _FIXES:
        raise ValueError(f"unknown eviction reason {eviction.reason!r}")
    return _FIXES[change](eviction, request, context, order, target)


def _grant(e: Eviction, request: Request, _c: Context, _o: Order, _t: Candidate) -> _Fix:
    permission = e.detail["required_permission"]
    step = {"kind": REASON[e.reason].change, "permission": permission}
    return step, replace(request, granted=request.granted | {permission})


def _allow_trust(e: Eviction, request: Request, _c: Context, _o: Order, _t: Candidate) -> _Fix:
    trust = e.detail["trust"]
    step = {"kind": REASON[e.reason].change, "trust": trust}
    return step, replace(request, allowed_trust=request.allowed_trust | {trust})


def _as_of(e: Eviction, request: Request, _c: Context, _o: Order, target: Candidate) -> _Fix:
    """Gate 3: build as of the day it takes effect; gate 4: the day before it
    expires, unless that is before it takes effect."""
    if e.reason == NOT_YET_EFFECTIVE:
        day = e.detail["effective_from"]
    else:
        day = _day_before(e.detail["expires_on"])
        if day < target.effective_from:
            return None, None
    return {"kind": REASON[e.reason].change, "as_of": day}, replace(request, as_of=day)


def _retracted(e: Eviction, request: Request, _c: Context, _o: Order, target: Candidate) -> _Fix:
    """A retraction is undone by a reinstatement (`ledger reinstate ID --from
    DATE`, DATE the build's as-of date): simulated as a reinstate entry after
    every retraction of the id."""
    entries = [entry for entry, _day in request.retractions.get(target.id, ())]
    after = max(entries, default=e.detail["entry"]) + 1
    step = {
        "kind": REINSTATE_STEP,
        "id": target.id,
        "from": request.as_of,
        RETRACTED: {"from": e.detail["from"], "entry": e.detail["entry"]},
    }
    marks = dict(request.reinstatements)
    marks[target.id] = (*marks.get(target.id, ()), (after, request.as_of))
    return step, replace(request, reinstatements=MappingProxyType(marks))


def _superseded_by(
    e: Eviction, request: Request, context: Context, _o: Order, target: Candidate
) -> _Fix:
    """Names the winning version; an as_of before the winner takes effect admits
    the target when it is in effect by then."""
    by = dict(e.detail["by"])
    step = {"kind": REASON[e.reason].change, "by": by}
    winner_from = next(
        c.effective_from
        for c in context.items + tuple(e.candidate for e in context.evicted)
        if c.record_digest == by["record_digest"]
    )
    if target.effective_from < winner_from:
        day = _day_before(winner_from)
        step["as_of"] = day
        return step, replace(request, as_of=day)
    return step, None


def _outranked_by(e: Eviction, _r: Request, _c: Context, _o: Order, _t: Candidate) -> _Fix:
    """No change of request: the kept chunk of its dedupe group is named."""
    return {"kind": REASON[e.reason].change, "kept": dict(e.detail["kept"])}, None


def _budget(
    e: Eviction, request: Request, context: Context, order: Order, target: Candidate
) -> _Fix:
    deficit = e.detail["needed"] - e.detail["remaining"]
    return _budget_fix(request, context, order, target, deficit)


_FIXES: dict[str | None, Callable[[Eviction, Request, Context, Order, Candidate], _Fix]] = {
    REASON[PERMISSION_DENIED].change: _grant,
    REASON[TRUST_DENIED].change: _allow_trust,
    REASON[NOT_YET_EFFECTIVE].change: _as_of,
    REASON[EXPIRED].change: _as_of,
    REASON[RETRACTED].change: _retracted,
    REASON[SUPERSEDED].change: _superseded_by,
    REASON[DUPLICATE].change: _outranked_by,
    REASON[BUDGET].change: _budget,
}
