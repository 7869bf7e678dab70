"""`collector_paused`: a selection runs with the cyclic collector paused, and what
it allocated does not stay in the youngest generation for the collector to walk."""

from __future__ import annotations

import gc
from collections.abc import Callable

from ledger.core.select import _PROMOTE_AT, Candidate, Request, collector_paused, select


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_a_large_run_leaves_its_objects_to_the_oldest_generation() -> None:
    assert gc.isenabled()
    gc.collect()  # the generations' counts from zero: no older collection is due
    with collector_paused():
        assert not gc.isenabled()
        kept = [(i, [i]) for i in range(_PROMOTE_AT)]  # 2 tracked objects each
    assert gc.isenabled()
    # Old already: the next collections of the young generations do not walk them.
    assert _in_generation(kept[0], 2) and _in_generation(kept[-1][1], 2)
    assert not _in_generation(kept[0], 0)


def test_a_small_selection_leaves_the_generations_alone(
    cand: Callable[..., Candidate], request_for: Callable[..., Request]
) -> None:
    """A hint's selection in a long-running server: its objects stay young, and
    so does whatever the server made before it."""
    gc.collect()
    made = [[i] for i in range(10)]  # young
    candidates = [cand(id=f"c{i:03d}", tokens=10) for i in range(300)]
    ctx = select(candidates, request_for(budget=100))
    assert gc.isenabled() and len(ctx.evicted) == 290
    assert not _in_generation(made[0], 2) and not _in_generation(ctx.evicted[0], 2)


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
        with collector_paused():
            kept = [(i, [i]) for i in range(_PROMOTE_AT)]  # a large run
        assert gc.get_freeze_count() == frozen  # not thawed
        assert gc.isenabled() and not _in_generation(kept[0], 2)
    finally:
        gc.unfreeze()
