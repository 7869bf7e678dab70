"""The garbage collector's policy of the `ledger` command: a command runs with
the cyclic collector paused, and what it leaves allocated skips the young
generations. The library itself never touches the collector; a program that
embeds it (a server, a notebook) keeps its own policy.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Objects still allocated at the end of a pause from which they go to the oldest
# generation: a walk of fewer costs a few milliseconds.
PROMOTE_AT = 100_000


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a command runs (a selection, a
    build or a verify allocates a lot), and spare it the walk over what was
    allocated.

    A selection over a million candidates allocates about a million eviction
    records, and each burst of allocations makes CPython walk the whole heap
    again (measured: more than half the run time). The ledger makes no
    reference cycles worth collecting during one command.

    On resuming after a large run (`PROMOTE_AT` objects or more still
    allocated), what was allocated meanwhile joins the oldest generation
    (`gc.freeze()` then `gc.unfreeze()`) instead of staying in the youngest:
    the first collection after would walk all of it (0.2-0.35 s after a
    1,000,000-candidate selection), and the next ones again as it ages. A
    smaller run leaves the generations alone. Not done when the caller froze
    objects itself (unfreezing would thaw them). Only the outermost pause
    resumes, and only a collector that was enabled.
    """
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_count()[0] >= PROMOTE_AT and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def freeze_loaded() -> None:
    """Move everything allocated so far out of every later collection: for a
    process that runs one command and ends, what is loaded (SQLAlchemy, the
    ledger's modules, the engine) lives as long as the process, and the
    collections at shutdown need not walk it (tens of milliseconds
    on every database command)."""
    gc.freeze()
