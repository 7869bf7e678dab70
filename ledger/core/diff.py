"""Why a chunk's state differs between two packs: `ledger diff`'s causes.

Pure: the two packs' states of a chunk id, their decisions by version id and
the figures of the packs in; one cause out. Each gate's cause is the one table's
(`ledger.core.reasons`, `Reason.cause`); see docs/reference/commands.md (diff)
and docs/reference/gates.md for the gates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.reasons import (
    ADMITTED,
    BUDGET,
    DUPLICATE,
    EXPIRED,
    GATE,
    NOT_RETRIEVED,
    REASON,
    REASON_NAMES,
    SUPERSEDED,
    diff_cause,
)


def _cause_of(reason: str) -> str:
    cause = REASON[reason].cause
    if cause is None:
        raise ValueError(f"the table gives {reason} no diff cause")
    return cause


# The causes that are no single gate's: a chunk id on one side only.
NEW_CANDIDATE = "new candidate"
REMOVED_CANDIDATE = "removed candidate"
# The causes of the table that the rules below also give on their own.
NEW_VERSION = _cause_of(SUPERSEDED)
VALIDITY_DATE = _cause_of(EXPIRED)
DISPLACED = _cause_of(DUPLICATE)
BUDGET_CHANGE = _cause_of(BUDGET)
# An evidence chunk that a retrieval build's query did not take (it was in the
# ledger at that pack's mark): "not retrieved by this query".
UNRETRIEVED = _cause_of(NOT_RETRIEVED)

ADMITTED_STATE = "admitted"
EVICTED_STATE = "evicted"
ABSENT_STATE = "absent"


@dataclass(frozen=True, slots=True)
class State:
    """A chunk id's state in one pack: the version shown and how it was decided."""

    status: str  # admitted, evicted or absent
    source_version: str | None
    reason: str | None
    vid: int | None
    ref_vid: int | None = None  # the superseding or kept version

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "source_version": self.source_version, "reason": self.reason}


ABSENT = State(ABSENT_STATE, None, None, None)


@dataclass(frozen=True, slots=True)
class PackFigures:
    """What the causes read of a pack besides its decisions."""

    budget: int
    as_of: str


# A pack's decisions by version id: the stored status (0: admitted).
Decided = Mapping[int, int]


def state_of(
    vid: int, status: int, ref_vid: int | None, source_version: str, reason: str | None
) -> State:
    """The state of a chunk id whose shown version was decided so."""
    shown = ADMITTED_STATE if status == ADMITTED else EVICTED_STATE
    return State(shown, source_version, reason, vid, ref_vid)


def _reason(status: int) -> str | None:
    return None if status == ADMITTED else REASON_NAMES.get(status)


def gate_cause(reason: str | None, a: PackFigures, b: PackFigures) -> str | None:
    """The cause behind a gate that one pack failed and the other passed (None:
    admitted, or superseded, whose cause is the winning version's own)."""
    if reason is None or reason == SUPERSEDED:
        return None
    if reason == BUDGET:
        return BUDGET_CHANGE if a.budget != b.budget else DISPLACED
    return diff_cause(reason)


def _other_version_cause(
    a: State, b: State, fa: PackFigures, fb: PackFigures, da: Decided, db: Decided
) -> str:
    """Pack B shows another version than A: why was B's version not A's choice, or
    why did A's version lose in B?"""
    if b.vid is None or b.vid not in da:
        return NEW_VERSION
    if a.vid is None or a.vid not in db:
        return REMOVED_CANDIDATE
    for reason in (_reason(da[b.vid]), _reason(db[a.vid])):
        if reason is not None and reason not in (SUPERSEDED, BUDGET):
            cause = diff_cause(reason)
            if cause is not None:
                return cause
    return VALIDITY_DATE if fa.as_of != fb.as_of else NEW_VERSION


def _superseded_cause(
    a: State, b: State, fa: PackFigures, fb: PackFigures, da: Decided, db: Decided
) -> str:
    """Superseded on one side only: why did the winning version not win on the other?"""
    lost, other = (a, db) if a.reason == SUPERSEDED else (b, da)
    winner = lost.ref_vid
    if winner is None or winner not in other:
        # The winner is missing from the other pack's ledger view.
        return REMOVED_CANDIDATE if lost is a else NEW_VERSION
    return gate_cause(_reason(other[winner]), fa, fb) or NEW_VERSION


def _budget_cause(a: State, b: State, fa: PackFigures, fb: PackFigures) -> str | None:
    """Budget moved the way the chunk did (more budget: in; less: out), or other
    chunks took or left the room under it (None: evicted on both sides)."""
    if a.status == ADMITTED_STATE:
        return BUDGET_CHANGE if fb.budget < fa.budget else DISPLACED
    if b.status == ADMITTED_STATE:
        return BUDGET_CHANGE if fb.budget > fa.budget else DISPLACED
    return None


def cause(
    a: State,
    b: State,
    fa: PackFigures,
    fb: PackFigures,
    da: Decided,
    db: Decided,
    unretrieved: tuple[bool, bool] = (False, False),
) -> str:
    """Why a chunk id's state differs between pack A (`da`: its decisions by
    version) and pack B: the earliest gate that one side failed and the other
    passed.

    permission_denied: grant change; trust_denied: policy change; not_yet_effective
    or expired: validity date; superseded: what kept the winning version from
    winning on the other side (new version when it was not there); duplicate:
    displaced by another chunk; budget: budget change when the budget moved the
    way the chunk did, else displaced by another chunk. Another version on each
    side: new version when A did not consider B's version, else the gate that kept
    it out. Absent on one side: not retrieved by this query when that side is a
    retrieval build whose ledger held the chunk (`unretrieved`, per side), else
    new / removed candidate.
    """
    if a.status == ABSENT_STATE:
        return UNRETRIEVED if unretrieved[0] else NEW_CANDIDATE
    if b.status == ABSENT_STATE:
        return UNRETRIEVED if unretrieved[1] else REMOVED_CANDIDATE
    if a.source_version != b.source_version:
        return _other_version_cause(a, b, fa, fb, da, db)
    reasons = [r for r in (a.reason, b.reason) if r is not None]
    reason = min(reasons, key=lambda r: GATE.get(r, 0))  # the earlier gate
    if reason == SUPERSEDED:
        return _superseded_cause(a, b, fa, fb, da, db)
    if reason == BUDGET:
        budget = _budget_cause(a, b, fa, fb)
        if budget is not None:
            return budget
    return gate_cause(reason, fa, fb) or DISPLACED
