"""The selector core: candidates and a request in, the whole decision out.

This module cannot do any I/O: no database, no files, no clock, no randomness.
`as_of`, grants, policy and budget come in through `Request`, and the returned
`Context` holds every admission in output order and one eviction, with its
reason and details, for every other candidate, so callers store and render it
and never re-derive a reason. What each reason means (its gate number, detail keys, words) is the
table in `ledger.core.reasons`; how each gate decides is here.

The gates, in order (docs/reference/gates.md, "Selection: gates in this order"):

1. permission_denied  2. trust_denied  3. not_yet_effective  4. expired
   (`first_failed_gate`: each candidate alone)
5. retracted (only with `Request.retractions`: the ledger; `retraction_of`)
6. superseded (only with `Request.supersede`: the ledger, not `ledger pack`;
   among the versions of one id, the greatest `version_rank` wins)
7. duplicate (per dedupe_key, the first by `Order.preference` is kept)
8. budget (required first; then optional in preference order, each if it fits)

`select_plain` runs them one function per gate; `select` runs `select_fast`,
the same decision written for a million candidates (a property test holds the
two equal).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from itertools import compress, count, islice
from operator import eq, ne
from types import MappingProxyType
from typing import Any

from ledger.core.candidates import (
    CANDIDATE_FIELDS,
    CANDIDATE_ROW,
    candidate_of,
    candidates_of_columns,
)
from ledger.core.context import (
    Candidate,
    Context,
    ContextOverBudgetError,
    Eviction,
)
from ledger.core.errors import InputError, RefusedError
from ledger.core.reasons import (
    BUDGET,
    DUPLICATE,
    EXPIRED,
    NOT_YET_EFFECTIVE,
    PERMISSION_DENIED,
    REASON,
    REASONS,
    RETRACTED,
    SECTIONS,
    SUPERSEDED,
    TRUST_DENIED,
    is_date,
)

__all__ = [
    "CANDIDATE_FIELDS",
    "CANDIDATE_ROW",
    "DEFAULT_ORDER",
    "ORDER_V1",
    "SELECTOR_V1",
    "REASONS",
    "SECTION_ORDER",
    "SELECTOR_VERSION",
    "Candidate",
    "Context",
    "ContextOverBudgetError",
    "Eviction",
    "Order",
    "RequiredChunkError",
    "RequiredOverBudgetError",
    "Request",
    "candidate_of",
    "candidates_of_columns",
    "default_output",
    "default_preference",
    "first_failed_gate",
    "gate_detail",
    "identity",
    "order_of_version",
    "output_v1",
    "retraction_of",
    "select",
    "select_fast",
    "select_plain",
    "standing",
    "version_rank",
]

# The rules a pack was decided by (docs/reference/gates.md, "Selector versions").
# A pack replays under its own version's rules; a changed rule is a new version.
SELECTOR_V1 = "ledger-selector-1"  # output order without the retrieval rank
SELECTOR_VERSION = "ledger-selector-2"  # output order: section, required, rank, priority
SECTION_ORDER = SECTIONS
_SECTION_RANK = {name: rank for rank, name in enumerate(SECTION_ORDER)}


class RequiredChunkError(RefusedError):
    """A required chunk failed a gate: the whole build fails, nothing is dropped."""

    def __init__(self, chunk_id: str, reason: str):
        self.chunk_id = chunk_id
        self.reason = reason
        super().__init__(f"required chunk {chunk_id!r} failed gate: {reason}")


class RequiredOverBudgetError(RefusedError):
    """The required chunks alone cost more than the budget."""

    def __init__(self, needed: int, budget: int):
        self.needed = needed
        self.budget = budget
        super().__init__(
            f"required chunks exceed the pack budget (needed {needed}, budget {budget}); "
            "split or compress the task"
        )


@dataclass(frozen=True, slots=True)
class Request:
    """What a build asks: the as-of date, grants, allowed trust, budget.

    `supersede` turns on gate 6 (the ledger, where an id has versions); `ledger
    pack` passes False, as its reference has no such gate.
    """

    as_of: str
    granted: frozenset[str]
    allowed_trust: frozenset[str]
    budget: int
    supersede: bool = True
    # Gate 5 (the ledger): chunk id -> ((retract entry, from date), ...) of the
    # retractions at or before the build's ledger mark (`retraction_of`), and
    # likewise the reinstatements that undo the retractions written before them.
    retractions: Mapping[str, tuple[tuple[int, str], ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    reinstatements: Mapping[str, tuple[tuple[int, str], ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def __post_init__(self) -> None:
        if not is_date(self.as_of):
            raise InputError(f"as_of: {self.as_of!r} must use YYYY-MM-DD", param="as_of")
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 0:
            raise InputError(
                f"budget must be a non-negative integer, not {self.budget!r}", param="budget"
            )
        if not isinstance(self.granted, frozenset):
            object.__setattr__(self, "granted", frozenset(self.granted))
        if not isinstance(self.allowed_trust, frozenset):
            object.__setattr__(self, "allowed_trust", frozenset(self.allowed_trust))


# --------------------------------------------------------------------------
# The rules, each written once.
# --------------------------------------------------------------------------


def first_failed_gate(c: Candidate, request: Request) -> str | None:
    """The first of gates 1-4 that `c` fails under `request`, or None.

    Each candidate is judged alone: 1 its permission is granted, 2 its trust is
    allowed, 3 it takes effect on or before as_of, 4 it has not expired by as_of
    (an `expires_on` day is the first day it no longer holds).
    """
    if c.required_permission not in request.granted:
        return PERMISSION_DENIED
    if c.trust not in request.allowed_trust:
        return TRUST_DENIED
    if c.effective_from > request.as_of:
        return NOT_YET_EFFECTIVE
    if c.expires_on is not None and request.as_of >= c.expires_on:
        return EXPIRED
    return None


def gate_detail(c: Candidate, reason: str) -> MappingProxyType[str, Any]:
    """The detail of a gate 1-4 eviction: the candidate's field that failed it,
    under the key the reasons table names."""
    return MappingProxyType({key: getattr(c, name) for key, name in REASON[reason].detail})


def retraction_of(c: Candidate, request: Request) -> tuple[int, str] | None:
    """Gate 5: the retraction that removes version `c`, as (entry, from date), or None.

    A version is retracted by a retract entry written after it (entry greater
    than its ingest_rank) from a date on or before as_of, unless a reinstate
    entry written after that retraction is in force (from a date on or before
    as_of); of several standing retractions, the first entry names it
    (docs/reference/retention.md).
    """
    marks = request.retractions.get(c.id, ())
    hits = [(entry, day) for entry, day in marks if entry > c.ingest_rank and day <= request.as_of]
    if not hits:
        return None
    undone_before = max(
        (entry for entry, day in request.reinstatements.get(c.id, ()) if day <= request.as_of),
        default=0,
    )
    return min((hit for hit in hits if hit[0] > undone_before), default=None)


def version_rank(c: Candidate) -> tuple[str, int, str]:
    """Gate 6's order of an id's versions: the greatest wins. The later
    effective_from; ties: the later ingest, then the greater record digest."""
    return (c.effective_from, c.ingest_rank, c.record_digest)


def identity(c: Candidate) -> tuple[str, str, str]:
    """(id, source_version, record_digest): the canonical order of candidates,
    and of evictions in a `Context`; it breaks every other order's ties."""
    return (c.id, c.source_version, c.record_digest)


def ref_of(c: Candidate) -> MappingProxyType[str, str]:
    """How a detail names another version (`by`, `kept`)."""
    return MappingProxyType(
        {"id": c.id, "source_version": c.source_version, "record_digest": c.record_digest}
    )


@lru_cache(maxsize=1 << 16)
def _newest_first(day: str) -> int:
    # Dates are few and repeat: the cache makes the preference key cheap.
    return -date.fromisoformat(day).toordinal()


def default_preference(c: Candidate) -> tuple[Any, ...]:
    """The duplicate and budget gates' order (docs/reference/gates.md): priority
    high first, then (a retrieval build's) retrieval rank best first,
    effective_from newest first, tokens small first, then identity (total)."""
    return (
        -c.priority,
        c.rank,
        _newest_first(c.effective_from),
        c.tokens,
        c.id,
        c.source_version,
        c.record_digest,
    )


def default_output(c: Candidate) -> tuple[Any, ...]:
    """The output order: section, required before optional, (a retrieval
    build's) rank best first, priority high first, then identity: a model reads
    the best match first. A plain build's candidates all have rank 0."""
    return (
        _SECTION_RANK.get(c.section, len(SECTION_ORDER)),
        not c.required,
        c.rank,
        -c.priority,
        c.id,
        c.source_version,
        c.record_digest,
    )


def output_v1(c: Candidate) -> tuple[Any, ...]:
    """The output order of selector version 1 (no rank): the packs recorded
    under it replay in it."""
    return (
        _SECTION_RANK.get(c.section, len(SECTION_ORDER)),
        not c.required,
        -c.priority,
        c.id,
        c.source_version,
        c.record_digest,
    )


@dataclass(frozen=True, slots=True)
class Order:
    """The two orders a selection uses; a parameter, so `ledger select` can use its own.

    Keys that tie are broken by identity (id, source_version, record_digest), so
    any order gives the same result for any input order.
    """

    preference: Callable[[Candidate], tuple[Any, ...]] = default_preference
    output: Callable[[Candidate], tuple[Any, ...]] = default_output


DEFAULT_ORDER = Order()
ORDER_V1 = Order(output=output_v1)


def order_of_version(selector_version: str) -> Order:
    """The document order a selector version decides by (an unknown version is
    refused: a pack must never replay under rules it was not built by)."""
    if selector_version == SELECTOR_VERSION:
        return DEFAULT_ORDER
    if selector_version == SELECTOR_V1:
        return ORDER_V1
    raise InputError(
        f"selector_version: {selector_version!r} is not a selector this ledger knows "
        f"({SELECTOR_V1}, {SELECTOR_VERSION})",
        param="selector_version",
    )


def weighing_key(order: Order) -> Callable[[Candidate], Any]:
    """The total order of gates 7 and 8: the preference, ties broken by identity
    (the default preference is total already)."""
    preference = order.preference
    if preference is default_preference:
        return default_preference

    def key(c: Candidate) -> Any:
        return (preference(c), c.id, c.source_version, c.record_digest)

    return key


def required_failure(
    failed: list[Eviction], passed: list[Candidate], supersede: bool
) -> RequiredChunkError | None:
    """The build's failure when a required chunk fails gates 1-4, or None.

    `failed`: the gate 1-4 evictions of required candidates; `passed`: every
    candidate that passed gates 1-4. Without versions (`supersede` False) the
    lowest failing candidate by identity names it. In the ledger it is decided
    per chunk id: an id fails only when none of its versions passed gates 1-4,
    with the reason of its newest required version; the lowest such id names it.
    """
    if not failed:
        return None
    if not supersede:
        first = min(failed, key=lambda e: identity(e.candidate))
        return RequiredChunkError(first.candidate.id, first.reason)
    passing_ids = {c.id for c in passed}
    newest: dict[str, Eviction] = {}
    for e in failed:
        c = e.candidate
        if c.id in passing_ids:
            continue
        best = newest.get(c.id)
        if best is None or version_rank(c) > version_rank(best.candidate):
            newest[c.id] = e
    if not newest:
        return None
    chunk_id = min(newest)
    return RequiredChunkError(chunk_id, newest[chunk_id].reason)


def select(
    candidates: Iterable[Candidate], request: Request, order: Order = DEFAULT_ORDER
) -> Context:
    """Run the eight gates; return the whole decision as a `Context`.

    Raises `RequiredChunkError` when a required chunk fails a gate (in the ledger:
    when an id with a required version has no version passing gates 1-4), and
    `RequiredOverBudgetError` when the required chunks exceed the budget.

    >>> c = Candidate("a1", "v1", "policy", "2026-01-01", None, "read",
    ...               "approved-source", "a1", 5, 50, False, "r" * 64, "c" * 64)
    >>> r = Request("2026-07-01", frozenset({"read"}), frozenset({"approved-source"}), 4)
    >>> ctx = select([c], r)
    >>> ctx.evicted[0].reason, dict(ctx.evicted[0].detail)
    ('budget', {'needed': 5, 'remaining': 4})
    """
    return select_fast(candidates, request, order)


# --------------------------------------------------------------------------
# The selection, one function per gate.
# --------------------------------------------------------------------------

# What a gate leaves for the next: positions of candidates in canonical order.
# Evictions are filed by position, so they come out in canonical order.
_Evicted = dict[int, Eviction]


def select_plain(
    candidates: Iterable[Candidate], request: Request, order: Order = DEFAULT_ORDER
) -> Context:
    """`select`, one readable function per gate: the rule `select_fast` follows."""
    cands = sorted(candidates, key=identity)
    evicted: _Evicted = {}
    passed = gates_5_and_6(cands, gates_1_to_4(cands, request, evicted), request, evicted)
    kept = gate_7_duplicate(cands, passed, order, evicted)
    admitted = gate_8_budget(cands, kept, request.budget, evicted)
    items = sorted((cands[i] for i in sorted(admitted)), key=order.output)
    return Context(
        items=tuple(items),
        evicted=tuple(evicted[i] for i in sorted(evicted)),
        budget=request.budget,
    )


def standing(
    candidates: Iterable[Candidate], request: Request
) -> tuple[list[Candidate], list[Eviction]]:
    """Gates 1-6 alone, and no build failure for a required chunk: the versions
    a build with `request` could give (at most one per id), and the first gate
    that keeps out each other. The built-in retriever ranks only the first;
    `why` reads the second for a chunk the pack never considered."""
    cands = sorted(candidates, key=identity)
    evicted: _Evicted = {}
    passed = _each_through_gates_1_to_4(cands, request, evicted)
    passed = gates_5_and_6(cands, passed, request, evicted)
    return [cands[i] for i in passed], [evicted[i] for i in sorted(evicted)]


def gates_5_and_6(
    cands: list[Candidate], passed: list[int], request: Request, evicted: _Evicted
) -> list[int]:
    """Gate 5 when the request carries retractions, gate 6 when it supersedes."""
    if request.retractions:
        passed = gate_5_retracted(cands, passed, request, evicted)
    if request.supersede:
        passed = gate_6_superseded(cands, passed, evicted)
    return passed


def _each_through_gates_1_to_4(
    cands: list[Candidate], request: Request, evicted: _Evicted
) -> list[int]:
    passed = []
    for i, c in enumerate(cands):
        reason = first_failed_gate(c, request)
        if reason is None:
            passed.append(i)
        else:
            evicted[i] = Eviction(c, reason, gate_detail(c, reason))
    return passed


def gates_1_to_4(cands: list[Candidate], request: Request, evicted: _Evicted) -> list[int]:
    """Gates 1-4, each candidate alone; a required candidate that fails them
    fails the build (`required_failure`). After them: a retraction is a
    deliberate act, an ordinary eviction."""
    passed = _each_through_gates_1_to_4(cands, request, evicted)
    failed = [e for e in evicted.values() if e.candidate.required]
    error = required_failure(failed, [cands[i] for i in passed], request.supersede)
    if error is not None:
        raise error
    return passed


def gate_5_retracted(
    cands: list[Candidate], passed: list[int], request: Request, evicted: _Evicted
) -> list[int]:
    """Gate 5: a version retracted as of the build's date is evicted."""
    survivors = []
    for i in passed:
        hit = retraction_of(cands[i], request)
        if hit is None:
            survivors.append(i)
        else:
            entry, day = hit
            evicted[i] = Eviction(
                cands[i], RETRACTED, MappingProxyType({"from": day, "entry": entry})
            )
    return survivors


def gate_6_superseded(cands: list[Candidate], passed: list[int], evicted: _Evicted) -> list[int]:
    """Gate 6: of the versions of one id, the greatest `version_rank` (the first
    such in canonical order) is kept; the others name it."""
    by_id: dict[str, list[int]] = {}
    for i in passed:
        by_id.setdefault(cands[i].id, []).append(i)
    for group in by_id.values():
        winner = max(group, key=lambda i: version_rank(cands[i]))
        detail = MappingProxyType({"by": ref_of(cands[winner])})
        for i in group:
            if i != winner:
                evicted[i] = Eviction(cands[i], SUPERSEDED, detail)
    return [i for i in passed if i not in evicted]


def gate_7_duplicate(
    cands: list[Candidate], passed: list[int], order: Order, evicted: _Evicted
) -> list[int]:
    """Gate 7: per dedupe_key the first by preference is kept (of equals, the
    first in canonical order). Returns the kept in preference order.

    Ingest refuses dedupe groups holding a required chunk; a caller that passes
    one anyway gets a failed build when it is not kept, never a silent drop."""
    key = weighing_key(order)
    groups: dict[str, list[int]] = {}
    for i in passed:
        groups.setdefault(cands[i].dedupe_key, []).append(i)
    kept = []
    for group in groups.values():
        winner = min(group, key=lambda i: key(cands[i]))
        kept.append(winner)
        detail = MappingProxyType({"kept": ref_of(cands[winner])})
        for i in group:
            if i != winner:
                evicted[i] = Eviction(cands[i], DUPLICATE, detail)
    beaten = [cands[i] for i in passed if i in evicted and cands[i].required]
    if beaten:
        raise RequiredChunkError(min(beaten, key=identity).id, DUPLICATE)
    return sorted(sorted(kept), key=lambda i: key(cands[i]))


def gate_8_budget(
    cands: list[Candidate], kept: list[int], budget: int, evicted: _Evicted
) -> list[int]:
    """Gate 8: the required, all or nothing (else `RequiredOverBudgetError`);
    then the optional in preference order, each admitted if it fits in what
    remains. Returns the admitted."""
    admitted = [i for i in kept if cands[i].required]
    needed = sum(cands[i].tokens for i in admitted)
    if needed > budget:
        raise RequiredOverBudgetError(needed, budget)
    remaining = budget - needed
    for i in kept:
        c = cands[i]
        if c.required:
            continue
        if c.tokens <= remaining:
            admitted.append(i)
            remaining -= c.tokens
        else:
            detail = MappingProxyType({"needed": c.tokens, "remaining": remaining})
            evicted[i] = Eviction(c, BUDGET, detail)
    return admitted


# --------------------------------------------------------------------------
# The same selection, for a million candidates.
# --------------------------------------------------------------------------


def select_fast(
    candidates: Iterable[Candidate], request: Request, order: Order = DEFAULT_ORDER
) -> Context:
    """`select_plain`, written for the bench row select 1,000,000 <= 2.5 s
    (bench/bench_core.py): no key tuple per candidate where one string or
    integer will do, gates 1-4 inline in one pass, equal details shared, and
    evictions made where they fall in canonical order (no sort of them). A
    property test holds it equal to `select_plain`, Context for Context."""
    cands, ids = _canonical_fast(candidates)
    slots: list[Eviction | None] = [None] * len(cands)
    passed, required = _gates_1_to_4_fast(cands, request, slots)
    if request.retractions:
        passed = _gate_5_fast(cands, passed, request, slots)
    if request.supersede:
        passed = _gate_6_fast(cands, [ids[i] for i in passed], passed, slots)
    weighed = [cands[i] for i in passed]
    keys = _weighing_keys(weighed, order)
    kept = _gate_7_fast(weighed, keys, passed, slots)
    admitted = _gate_8_fast(cands, kept, required, request.budget, slots)
    admitted.sort()  # canonical order, then a stable sort into output order
    taken = [cands[i] for i in admitted]
    keys = _output_keys(taken, order)
    items = [taken[j] for j in sorted(range(len(taken)), key=keys.__getitem__)]
    evicted = tuple(filter(None, slots))  # the slots that hold an eviction
    return Context(items=tuple(items), evicted=evicted, budget=request.budget)


def _canonical_fast(candidates: Iterable[Candidate]) -> tuple[list[Candidate], list[str]]:
    """The candidates sorted by identity, and their ids: sorted by the id string
    alone (no key tuple per candidate), then each run of one id's versions by
    the rest of it."""
    ordered = sorted(candidates, key=_id_of)
    ids = [c.id for c in ordered]
    for start, end in _runs(ids):
        if end - start == 2:  # most runs: two versions, compared inline
            a, b = ordered[start], ordered[start + 1]
            va, vb = a.source_version, b.source_version
            if vb < va or (vb == va and b.record_digest < a.record_digest):
                ordered[start], ordered[start + 1] = b, a
        else:
            ordered[start:end] = sorted(ordered[start:end], key=identity)
    return ordered, ids


def _runs(keys: list[str]) -> Iterator[tuple[int, int]]:
    """The runs [start, end) of two or more equal adjacent keys, found without a
    Python step per key: only the positions whose key repeats the one before."""
    repeats = compress(range(1, len(keys)), map(eq, keys, islice(keys, 1, None)))
    start = end = 0
    for i in repeats:
        if i != end:  # a new run starts at i - 1
            if end:
                yield start, end
            start = i - 1
        end = i + 1
    if end:
        yield start, end


def _id_of(c: Candidate) -> str:
    return c.id


def _gates_1_to_4_fast(
    cands: list[Candidate], request: Request, slots: list[Eviction | None]
) -> tuple[list[int], set[int]]:
    """`gates_1_to_4`, with `first_failed_gate` inline: this loop sees every
    candidate. One detail object per reason and value. Returns the passed, and
    those of them that are required (gate 8 reads them without another walk
    over the candidates)."""
    as_of, granted, allowed = request.as_of, request.granted, request.allowed_trust
    passed: list[int] = []
    required: set[int] = set()
    failed: list[Eviction] = []  # of required candidates
    shared: dict[str, dict[Any, Any]] = {reason: {} for reason in REASONS}
    for i, c in enumerate(cands):
        if c.required_permission not in granted:
            reason, value = PERMISSION_DENIED, c.required_permission
        elif c.trust not in allowed:
            reason, value = TRUST_DENIED, c.trust
        elif c.effective_from > as_of:
            reason, value = NOT_YET_EFFECTIVE, c.effective_from
        elif c.expires_on is not None and as_of >= c.expires_on:
            reason, value = EXPIRED, c.expires_on
        else:
            passed.append(i)
            if c.required:
                required.add(i)
            continue
        detail = shared[reason].get(value)
        if detail is None:
            detail = shared[reason][value] = gate_detail(c, reason)
        slots[i] = eviction = Eviction(c, reason, detail)
        if c.required:
            failed.append(eviction)
    error = required_failure(failed, [cands[i] for i in passed], request.supersede)
    if error is not None:
        raise error
    return passed, required


def _gate_5_fast(
    cands: list[Candidate], passed: list[int], request: Request, slots: list[Eviction | None]
) -> list[int]:
    """`gate_5_retracted`, filing its evictions in their slots."""
    survivors = []
    for i in passed:
        hit = retraction_of(cands[i], request)
        if hit is None:
            survivors.append(i)
        else:
            entry, day = hit
            slots[i] = Eviction(
                cands[i], RETRACTED, MappingProxyType({"from": day, "entry": entry})
            )
    return survivors


def _gate_6_fast(
    cands: list[Candidate], ids: list[str], passed: list[int], slots: list[Eviction | None]
) -> list[int]:
    """`gate_6_superseded` over the runs of one id (`ids`: those of `passed`),
    adjacent in canonical order."""
    losers = set()
    for start, end in _runs(ids):
        group = passed[start:end]
        winner = max(group, key=lambda i: version_rank(cands[i]))
        detail = MappingProxyType({"by": ref_of(cands[winner])})
        for i in group:
            if i != winner:
                slots[i] = Eviction(cands[i], SUPERSEDED, detail)
                losers.add(i)
    return [i for i in passed if i not in losers] if losers else passed


def _gate_7_fast(
    weighed: list[Candidate], keys: list[Any], passed: list[int], slots: list[Eviction | None]
) -> list[int]:
    """`gate_7_duplicate` on the survivors' keys. A group is named by its first
    member in canonical order, found for every survivor in one pass in C; only
    the later members are compared, with their group's best so far."""
    groups: dict[str, int] = {}  # dedupe key: its group's first member
    firsts = list(map(groups.setdefault, [c.dedupe_key for c in weighed], count()))
    best: dict[int, int] = {}  # a group's first member: its best, when not the first
    beaten: list[int] = []
    for j in compress(count(), map(ne, firsts, count())):
        first = firsts[j]
        k = best.get(first, first)
        if keys[j] < keys[k]:
            best[first] = j
            beaten.append(k)
        else:
            beaten.append(j)
    named: dict[int, Any] = {}
    required = []
    for j in sorted(beaten):
        c = weighed[j]
        w = best.get(firsts[j], firsts[j])
        detail = named.get(w)
        if detail is None:
            detail = named[w] = MappingProxyType({"kept": ref_of(weighed[w])})
        slots[passed[j]] = Eviction(c, DUPLICATE, detail)
        if c.required:
            required.append(c)
    if required:
        raise RequiredChunkError(min(required, key=identity).id, DUPLICATE)
    heads = [best.get(first, first) for first in groups.values()]
    return [passed[j] for j in sorted(sorted(heads), key=keys.__getitem__)]


def _gate_8_fast(
    cands: list[Candidate],
    kept: list[int],
    required: set[int],
    budget: int,
    slots: list[Eviction | None],
) -> list[int]:
    """`gate_8_budget`, its details shared per (needed, remaining); `required`
    holds (at least) the kept that are required."""
    admitted = [i for i in kept if i in required]
    needed = sum(cands[i].tokens for i in admitted)
    if needed > budget:
        raise RequiredOverBudgetError(needed, budget)
    remaining = budget - needed
    shared: dict[tuple[int, int], Any] = {}
    for i in kept:
        if i in required:
            continue
        c = cands[i]
        tokens = c.tokens
        if tokens <= remaining:
            admitted.append(i)
            remaining -= tokens
        else:
            detail = shared.get((tokens, remaining))
            if detail is None:
                detail = shared[tokens, remaining] = MappingProxyType(
                    {"needed": tokens, "remaining": remaining}
                )
            slots[i] = Eviction(c, BUDGET, detail)
    return admitted


def _weighing_keys(weighed: list[Candidate], order: Order) -> list[Any]:
    """Each survivor's key in gates 7 and 8, sorted stably over the canonical
    order (which breaks ties): the default preference without its identity tail."""
    if order.preference is not default_preference:
        return list(map(weighing_key(order), weighed))
    priority = [-c.priority for c in weighed]
    rank = [c.rank for c in weighed]
    day = [_newest_first(c.effective_from) for c in weighed]
    tokens = [c.tokens for c in weighed]
    return _as_integers([priority, rank, day, tokens])


def _output_keys(taken: list[Candidate], order: Order) -> list[Any]:
    """Each admitted candidate's output key, sorted stably over the canonical
    order: `default_output` without its identity tail."""
    if order.output is not default_output:
        return list(map(order.output, taken))
    last = len(SECTION_ORDER)
    section = [_SECTION_RANK.get(c.section, last) for c in taken]
    optional = [0 if c.required else 1 for c in taken]
    rank = [c.rank for c in taken]
    priority = [-c.priority for c in taken]
    return _as_integers([section, optional, rank, priority])


def _as_integers(columns: list[list[Any]]) -> list[Any]:
    """Keys that sort as the tuples of the columns' values, and several times
    faster: when all are integers, each key is one integer with the values as
    its digits, each digit's radix the spread of its column (so most keys fit
    a machine word); else the tuples."""
    if not all(set(map(type, column)) <= {int} for column in columns):
        return list(zip(*columns, strict=True)) if columns[0] else []
    keys = [0] * len(columns[0])
    for column in columns:
        low = min(column, default=0)
        radix = max(column, default=0) - low + 1
        keys = [key * radix + v - low for key, v in zip(keys, column, strict=True)]
    return keys
