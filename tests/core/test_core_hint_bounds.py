"""Issue 14: `admission_hint` is near-linear and bounded.

The default hint of `why-evicted` grew super-quadratically (17-20 s on a
20,000-candidate pack): for a budget eviction it re-simulated the budget gate
once per candidate that a raise could admit, each pass over every candidate.
Speed is measured by the benchmarks; these tests count *work* instead, with a
line tracer over the core's own functions (no timing): the lines executed for a
hint must grow linearly with the candidates, and the hint must still admit.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from ledger.core.hints import admission_hint
from ledger.core.select import Candidate, Request, select

# The modules of the hints and the selector they re-run.
cores = [
    importlib.import_module("ledger.core.hints"),
    importlib.import_module("ledger.core.select"),
]


def _ladder(cand: Callable[..., Candidate], n: int) -> tuple[list[Candidate], Candidate]:
    """n optional chunks of 10 tokens ahead of the target (higher priority), all
    evicted by a budget of 5: each exact budget round admits only one more."""
    ahead = [cand(id=f"ahead-{i:05d}", tokens=10, priority=90) for i in range(n)]
    target = cand(id="target", tokens=10, priority=10)
    return ahead + [target], target


def _lines(fn: Callable[[], Any]) -> tuple[Any, int]:
    """Run fn; count the line events executed in ledger.core.hints and .select."""
    count = 0
    paths = {core.__file__ for core in cores}

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename not in paths:
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        result = fn()
    finally:
        sys.settrace(None)
    return result, count


def test_budget_hint_work_grows_linearly(
    cand: Callable[..., Candidate], request_for: Callable[..., Request]
) -> None:
    work = {}
    for n in (100, 400):
        pool, target = _ladder(cand, n)
        request = request_for(budget=5)
        hint, lines = _lines(
            lambda p=pool, r=request, t=target: admission_hint(p, r, t.record_digest)
        )
        assert hint.admits
        budget = hint.steps[-1]["budget"]
        assert select(pool, dataclasses.replace(request, budget=budget)).admitted(
            target.record_digest
        )
        work[n] = lines
    # Four times the candidates: at most about four times the work (a quadratic
    # search does sixteen times).
    assert work[400] < 6 * work[100], work


def test_exact_budget_is_kept_when_a_few_rounds_find_it(
    cand: Callable[..., Candidate], request_for: Callable[..., Request]
) -> None:
    """The bound does not change small answers: two chunks ahead, one round each."""
    pool, target = _ladder(cand, 2)
    hint = admission_hint(pool, request_for(budget=5), target.record_digest)
    assert hint.admits and hint.steps[-1]["budget"] == 30
