"""`ledger.core.diff`: the causes of `ledger diff`, read from the one table of
reasons, and equal to the rule as the store wrote it before it moved to core."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.diff import (
    ABSENT,
    BUDGET_CHANGE,
    DISPLACED,
    NEW_CANDIDATE,
    NEW_VERSION,
    REMOVED_CANDIDATE,
    VALIDITY_DATE,
    PackFigures,
    State,
    cause,
    gate_cause,
    state_of,
)
from ledger.core.reasons import (
    BUDGET,
    DUPLICATE,
    EXPIRED,
    GATE,
    NOT_YET_EFFECTIVE,
    PERMISSION_DENIED,
    REASON,
    REASON_CODES,
    REASON_NAMES,
    REASONS,
    RETRACTED,
    SUPERSEDED,
    TRUST_DENIED,
)

A, B = PackFigures(100, "2026-01-01"), PackFigures(100, "2026-01-01")


def test_each_gate_cause_is_the_tables() -> None:
    for reason in (PERMISSION_DENIED, TRUST_DENIED, NOT_YET_EFFECTIVE, EXPIRED, RETRACTED):
        assert gate_cause(reason, A, B) == REASON[reason].cause
    assert gate_cause(DUPLICATE, A, B) == DISPLACED == REASON[DUPLICATE].cause
    assert gate_cause(BUDGET, A, PackFigures(50, A.as_of)) == BUDGET_CHANGE
    assert gate_cause(BUDGET, A, B) == DISPLACED
    assert gate_cause(SUPERSEDED, A, B) is None and gate_cause(None, A, B) is None


def test_absent_on_one_side() -> None:
    shown = state_of(1, 0, None, "v1", None)
    assert cause(ABSENT, shown, A, B, {}, {1: 0}) == NEW_CANDIDATE
    assert cause(shown, ABSENT, A, B, {1: 0}, {}) == REMOVED_CANDIDATE


def test_budget_moved_the_way_the_chunk_did() -> None:
    admitted = state_of(1, 0, None, "v1", None)
    evicted = state_of(1, REASON_CODES[BUDGET], None, "v1", BUDGET)
    less = PackFigures(50, A.as_of)
    assert cause(admitted, evicted, A, less, {1: 0}, {1: 7}) == BUDGET_CHANGE
    assert cause(admitted, evicted, A, B, {1: 0}, {1: 7}) == DISPLACED
    assert cause(evicted, admitted, less, A, {1: 7}, {1: 0}) == BUDGET_CHANGE


def test_another_version() -> None:
    old = state_of(1, 0, None, "v1", None)
    new = state_of(2, 0, None, "v2", None)
    assert cause(old, new, A, B, {1: 0}, {1: 0, 2: 0}) == NEW_VERSION
    later = PackFigures(100, "2026-02-01")
    expired = REASON_CODES[EXPIRED]
    assert cause(old, new, A, later, {1: 0, 2: 3}, {1: expired, 2: 0}) == VALIDITY_DATE


# The rule as `ledger/store/audit.py` wrote it before it moved to core (its
# decisions by version id as (status, ref_vid); its causes a table of its own).
_OLD_GATE = {name: gate for gate, name in enumerate(REASONS, start=1)}
_OLD_GATE_CAUSE = {
    PERMISSION_DENIED: "grant change",
    TRUST_DENIED: "policy change",
    NOT_YET_EFFECTIVE: "validity date",
    EXPIRED: "validity date",
    RETRACTED: "retracted",
    SUPERSEDED: "new version",
    DUPLICATE: "displaced by another chunk",
}


def _old_reason(decided: tuple[int, int | None]) -> str | None:
    return REASON_NAMES.get(decided[0]) if decided[0] else None


def _old_gate_cause(reason: str | None, ha: Any, hb: Any) -> str | None:
    if reason is None or reason == SUPERSEDED:
        return None
    if reason == BUDGET:
        return "budget change" if ha.budget != hb.budget else "displaced by another chunk"
    return _OLD_GATE_CAUSE.get(reason)


def _old_cause(a: State, b: State, ha: Any, hb: Any, da: Any, db: Any) -> str:  # noqa: C901
    if a.status == "absent":
        return "new candidate"
    if b.status == "absent":
        return "removed candidate"
    if a.source_version != b.source_version:
        if b.vid not in da:
            return "new version"
        if a.vid not in db:
            return "removed candidate"
        for reason in (_old_reason(da[b.vid]), _old_reason(db[a.vid])):
            c = _old_gate_cause(reason, ha, hb) if reason in _OLD_GATE_CAUSE else None
            if c is not None:
                return c
        return "validity date" if ha.as_of != hb.as_of else "new version"
    reason = min(
        (r for r in (a.reason, b.reason) if r is not None), key=lambda r: _OLD_GATE.get(r, 0)
    )
    if reason == SUPERSEDED:
        lost, other = (a, db) if a.reason == SUPERSEDED else (b, da)
        if lost.ref_vid not in other:
            return "removed candidate" if lost is a else "new version"
        return _old_gate_cause(_old_reason(other[lost.ref_vid]), ha, hb) or "new version"
    if reason == BUDGET:
        if a.status == "admitted":
            return "budget change" if hb.budget < ha.budget else "displaced by another chunk"
        if b.status == "admitted":
            return "budget change" if hb.budget > ha.budget else "displaced by another chunk"
    return _old_gate_cause(reason, ha, hb) or "displaced by another chunk"


STATUSES = [0, *sorted(REASON_NAMES)]
vids = st.integers(1, 6)
decided = st.dictionaries(vids, st.sampled_from(STATUSES), max_size=6)
figures = st.builds(PackFigures, st.sampled_from([50, 100]), st.sampled_from(["d1", "d2"]))


@st.composite
def states(draw: Any) -> State:
    if draw(st.integers(0, 5)) == 0:
        return ABSENT
    status = draw(st.sampled_from(STATUSES))
    reason = REASON_NAMES.get(status)
    ref = draw(st.none() | vids)
    return state_of(draw(vids), status, ref, draw(st.sampled_from(["v1", "v2"])), reason)


@settings(max_examples=500, deadline=None)
@given(states(), states(), figures, figures, decided, decided)
def test_cause_equals_the_rule_before_the_move(
    a: State, b: State, fa: PackFigures, fb: PackFigures, da: dict[int, int], db: dict[int, int]
) -> None:
    if a.status != "absent" and b.status != "absent" and a.source_version == b.source_version:
        if a.reason is None and b.reason is None:
            return  # the same state: diff shows no change, asks no cause
    old_da = {vid: (status, None) for vid, status in da.items()}
    old_db = {vid: (status, None) for vid, status in db.items()}
    assert cause(a, b, fa, fb, da, db) == _old_cause(a, b, fa, fb, old_da, old_db)
    assert _OLD_GATE == dict(GATE)
