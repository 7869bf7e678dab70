"""Gates 1-6 alone (`standing`), gate 5 with reinstatements, and the output
order of each selector version."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings

from ledger.core.context import UNRANKED
from ledger.core.errors import InputError
from ledger.core.reasons import REASON
from ledger.core.select import (
    DEFAULT_ORDER,
    ORDER_V1,
    SELECTOR_V1,
    SELECTOR_VERSION,
    Candidate,
    Request,
    RequiredChunkError,
    RequiredOverBudgetError,
    order_of_version,
    select_plain,
    standing,
)
from tests.core.test_core_fast_paths import candidate_sets, requests
from tests.core.test_core_retraction import cand


@settings(max_examples=250, deadline=None)
@given(candidate_sets(), requests)
def test_standing_is_the_selection_through_gate_6(
    candidates: list[Candidate], request: Request
) -> None:
    """Whatever the later gates do, `standing` keeps out exactly what gates 1-6
    of the selection keep out, with the same reasons and details; and what it
    lets through is what reached gate 7."""
    live, out = standing(candidates, request)
    try:
        ctx = select_plain(candidates, request, DEFAULT_ORDER)
    except (RequiredChunkError, RequiredOverBudgetError):
        # The build fails; `standing` still answers, one version per id at most.
        ids = [c.id for c in live]
        assert len(ids) == len(set(ids)) or not request.supersede
        return
    early = [e for e in ctx.evicted if REASON[e.reason].gate <= 6]
    assert [(e.candidate, e.reason, dict(e.detail)) for e in out] == [
        (e.candidate, e.reason, dict(e.detail)) for e in early
    ]
    late = {e.candidate for e in ctx.evicted if REASON[e.reason].gate > 6}
    assert set(live) == late | set(ctx.items)


def _request(as_of: str, retract: Any, reinstate: Any) -> Request:
    return Request(
        as_of,
        frozenset({"read"}),
        frozenset({"approved-source"}),
        1000,
        retractions=MappingProxyType(retract),
        reinstatements=MappingProxyType(reinstate),
    )


def _fate(version: Candidate, request: Request) -> Any:
    _live, out = standing([version], request)
    return (out[0].reason, dict(out[0].detail)) if out else "live"


def test_a_reinstatement_undoes_the_retractions_written_before_it_from_its_date() -> None:
    faq = cand("faq", "v1", "2026-01-01", rank=1)
    retract = {"faq": ((5, "2026-03-01"),)}
    reinstate = {"faq": ((7, "2026-06-01"),)}
    assert _fate(faq, _request("2026-04-01", retract, reinstate)) == (
        "retracted",
        {"from": "2026-03-01", "entry": 5},
    )
    assert _fate(faq, _request("2026-06-01", retract, reinstate)) == "live"
    # A later retraction withdraws it again, and names itself.
    again = {"faq": ((5, "2026-03-01"), (9, "2026-08-01"))}
    assert _fate(faq, _request("2026-07-01", again, reinstate)) == "live"
    assert _fate(faq, _request("2026-08-01", again, reinstate)) == (
        "retracted",
        {"from": "2026-08-01", "entry": 9},
    )
    # A reinstatement written before the retraction undoes nothing.
    early = {"faq": ((4, "2026-01-01"),)}
    assert _fate(faq, _request("2026-07-01", retract, early))[0] == "retracted"


def test_version_2_puts_a_retrieval_builds_best_rank_first() -> None:
    best = cand("zeta", "v1", "2026-01-01", rank=1, priority=10)
    worse = cand("alpha", "v1", "2026-01-01", rank=1, priority=90)
    policy = cand("policy", "v1", "2026-01-01", rank=1, section="policy")
    best, worse, policy = (
        _ranked(best, 1),
        _ranked(worse, 2),
        _ranked(policy, UNRANKED),
    )
    request = _request("2026-07-01", {}, {})
    v2 = select_plain([worse, best, policy], request, order_of_version(SELECTOR_VERSION))
    v1 = select_plain([worse, best, policy], request, order_of_version(SELECTOR_V1))
    assert [c.id for c in v2.items] == ["policy", "zeta", "alpha"]
    assert [c.id for c in v1.items] == ["policy", "alpha", "zeta"]  # priority, then id
    assert order_of_version(SELECTOR_V1) is ORDER_V1


def _ranked(c: Candidate, rank: int) -> Candidate:
    from dataclasses import replace

    return replace(c, rank=rank)


def test_an_unknown_selector_version_is_refused() -> None:
    with pytest.raises(InputError, match="selector_version: 'ledger-selector-9'"):
        order_of_version("ledger-selector-9")
