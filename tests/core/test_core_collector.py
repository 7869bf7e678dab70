"""`collector_paused`: a selection runs with the cyclic collector paused, and what
it allocated does not stay in the youngest generation for the collector to walk."""

from __future__ import annotations

import gc
from collections.abc import Callable

from ledger.core.select import Candidate, Request, collector_paused, select


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_a_selection_leaves_its_objects_to_the_oldest_generation(
    cand: Callable[..., Candidate], request_for: Callable[..., Request]
) -> None:
    candidates = [cand(id=f"c{i:03d}", tokens=10) for i in range(300)]
    assert gc.isenabled()
    ctx = select(candidates, request_for(budget=100))
    assert gc.isenabled()
    assert len(ctx.evicted) == 290
    # The evictions, allocated while the collector was paused, are old already:
    # the next collections of the young generations do not walk them.
    assert _in_generation(ctx.evicted[0], 2)
    assert not _in_generation(ctx.evicted[0], 0)


def test_a_paused_or_frozen_collector_is_left_as_the_caller_had_it(
    cand: Callable[..., Candidate], request_for: Callable[..., Request]
) -> None:
    candidates = [cand(id=f"c{i:03d}", tokens=10) for i in range(30)]
    gc.disable()
    try:
        with collector_paused():
            select(candidates, request_for(budget=100))
        assert not gc.isenabled()  # only the caller resumes it
    finally:
        gc.enable()
    gc.freeze()  # a server that froze its objects before forking
    try:
        frozen = gc.get_freeze_count()
        ctx = select(candidates, request_for(budget=100))
        assert gc.get_freeze_count() == frozen  # not thawed
        assert gc.isenabled() and ctx.evicted
    finally:
        gc.unfreeze()
