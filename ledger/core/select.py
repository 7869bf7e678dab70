"""The selector core: candidates and a request in, the whole decision out.

This module cannot do any I/O, like `flask/sansio`: it imports only pure modules
of the standard library (plus `gc`, to pause the cyclic collector during a run)
and ledger's pure modules (`errors`, `context`). No database, no files, no
clock, no randomness: `as_of`, grants,
policy and budget come in through `Request`, and the returned `Context` holds every
admission in output order and one eviction, with its reason and details, for every
other candidate, so callers store and render it and never re-derive a reason.

Gates, in SPEC order:

1. permission_denied  2. trust_denied  3. not_yet_effective  4. expired
5. retracted (only with `Request.retractions`: the ledger)
6. superseded (only with `Request.supersede`: the ledger; not `ledger pack`)
7. duplicate (per dedupe_key, the first by `Order.preference` is kept)
8. budget (required first; then optional in preference order, each if it fits)

Cost is O(n log n): one sort into (id, source_version) order, one pass per gate
(versions of an id are then adjacent for gate 5; a dictionary groups gate 6), one
sort for the budget order and one for the output, of integer keys for the default
orders. Evictions land in slots in that canonical order, so they come out sorted
without another sort. A million shuffled candidates take about 2.2 s on a 2-core
host (bench/bench_core.py).
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import date, timedelta
from functools import lru_cache
from itertools import compress, count, filterfalse, islice, repeat
from operator import attrgetter, eq, ne, not_
from types import MappingProxyType
from typing import Any, Literal

from ledger.core.context import (
    Candidate,
    Context,
    ContextOverBudgetError,
    Eviction,
)
from ledger.core.errors import InputError, RefusedError
from ledger.core.reasons import REASONS, SECTIONS, is_date
from ledger.core.records import FIELDS

__all__ = [
    "CANDIDATE_FIELDS",
    "DEFAULT_ORDER",
    "REASONS",
    "SECTION_ORDER",
    "SELECTOR_VERSION",
    "Candidate",
    "Context",
    "ContextOverBudgetError",
    "Eviction",
    "Hint",
    "HintPool",
    "Order",
    "RequiredChunkError",
    "RequiredOverBudgetError",
    "Request",
    "admission_hint",
    "candidate_of",
    "candidates_of_columns",
    "collector_paused",
    "default_output",
    "default_preference",
    "recorded_hint",
    "select",
]

SELECTOR_VERSION = "ledger-selector-1"
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

    `supersede` turns on gate 5 (the ledger, where an id has versions); `ledger
    pack` passes False, as its reference has no such gate.
    """

    as_of: str
    granted: frozenset[str]
    allowed_trust: frozenset[str]
    budget: int
    supersede: bool = True
    # Gate 5 (the ledger): chunk id -> ((retract entry, from date), ...) of the
    # retractions at or before the build's ledger mark. A version is retracted by
    # an entry written after it (entry > its ingest_rank) from a date <= as_of.
    retractions: Mapping[str, tuple[tuple[int, str], ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def __post_init__(self) -> None:
        if not is_date(self.as_of):
            raise InputError(f"as_of must use YYYY-MM-DD, not {self.as_of!r}")
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 0:
            raise InputError(f"budget must be a non-negative integer, not {self.budget!r}")
        if not isinstance(self.granted, frozenset):
            object.__setattr__(self, "granted", frozenset(self.granted))
        if not isinstance(self.allowed_trust, frozenset):
            object.__setattr__(self, "allowed_trust", frozenset(self.allowed_trust))


# The record fields a selector Candidate is made of, in the order `candidate_of`
# reads them from a tuple (the store selects its columns in this order): the chunk
# record's FIELDS without source_uri and content, source_version before section
# as in Candidate.
CANDIDATE_FIELDS: tuple[str, ...] = ("id", "source_version", "section", *FIELDS[4:12])


def candidate_of(
    record: Mapping[str, Any] | tuple[Any, ...],
    *,
    record_digest: str,
    content_digest: str,
    tokens: int | None = None,
    ingest_rank: int = 0,
) -> Candidate:
    """A chunk record as the selector sees it: the one record -> Candidate mapping.

    `record` is a record's JSON (SPEC's field names) or a tuple of its
    `CANDIDATE_FIELDS` values in that order (a stored row: no dict per version). `tokens` is the
    cost under the build's counter (default the record's `estimated_tokens`);
    `ingest_rank` orders versions in ledger time (the later ingest wins ties).

    >>> c = candidate_of({"id": "a1", "source_version": "v1", "section": "policy",
    ...     "effective_from": "2026-01-01", "expires_on": None,
    ...     "required_permission": "read", "trust": "approved-source", "dedupe_key": "a",
    ...     "estimated_tokens": 10, "priority": 5, "required": 0},
    ...     record_digest="d", content_digest="c")
    >>> (c.tokens, c.required, c.ingest_rank)
    (10, False, 0)
    """
    values = record if isinstance(record, tuple) else [record[f] for f in CANDIDATE_FIELDS]
    cid, version, section, effective, expires, permission, trust, key, estimated, priority, req = (
        values
    )
    return Candidate(
        cid,
        version,
        section,
        effective,
        expires,
        permission,
        trust,
        key,
        estimated if tokens is None else tokens,
        priority,
        bool(req),  # a stored row holds 0/1
        record_digest,
        content_digest,
        ingest_rank,
    )


# The stored columns `candidates_of_columns` reads: the CANDIDATE_FIELDS (the
# cost under the build's counter in the place of estimated_tokens), then the
# record and content digests and the ingest rank; any column after them is ignored.
CANDIDATE_ROW: tuple[str, ...] = (
    *CANDIDATE_FIELDS[:8],
    "tokens",
    *CANDIDATE_FIELDS[9:],
    "record_digest",
    "content_digest",
    "ingest_rank",
)


def candidates_of_columns(columns: Sequence[Sequence[Any]]) -> list[Candidate]:
    """`candidate_of` for many stored versions, given as columns (`CANDIDATE_ROW`
    order, one value per version each): a build reads 100,000s of them.
    `required` is stored as 0/1 or a boolean.

    Filled a field at a time (`_ROW_SLOTS`), each pass a loop in C, over blocks of
    versions small enough to stay in the processor's cache: the generated
    `__init__` of a frozen dataclass costs one `object.__setattr__` per field and
    version, most of a build's reading time. The Candidates are the ones
    `Candidate(...)` makes (a test compares them).

    >>> row = ("a1", "v1", "policy", "2026-01-01", None, "read", "approved-source",
    ...        "a", 10, 5, 1, "d", "c", 3)
    >>> [(c.tokens, c.required, c.ingest_rank) for c in candidates_of_columns(
    ...     [[value] for value in row])]
    [(10, True, 3)]
    """
    if len(columns) < len(_ROW_SLOTS):
        raise ValueError(f"{len(columns)} candidate columns, not {len(_ROW_SLOTS)}")
    columns = columns[: len(_ROW_SLOTS)]
    n = len(columns[0])
    if any(len(column) != n for column in columns):
        raise ValueError(f"candidate columns of unequal lengths: {sorted(set(map(len, columns)))}")
    made: list[Candidate] = list(map(_new_object, repeat(Candidate, n)))
    for start in range(0, n, _BLOCK):
        filled = made[start : start + _BLOCK]
        for i, (fill, column) in enumerate(zip(_ROW_SLOTS, columns, strict=True)):
            values: Iterable[Any] = column[start : start + _BLOCK]
            if i == _REQUIRED_AT:
                values = map(eq, values, repeat(1))
            deque(map(fill, filled, values), maxlen=0)
        for fill, default in _DEFAULT_SLOTS:
            deque(map(fill, filled, repeat(default)), maxlen=0)
    return made


_BLOCK = 1024  # versions per block: 15 % faster than whole columns (measured at 100,000)
# Candidate's slot setters (member descriptors: no frozen-dataclass `__setattr__`):
# those of CANDIDATE_ROW's fields in its order, and the other fields' with their
# defaults (a field without one must come from the row: an error at import).
_new_object = object.__new__
_SLOT = {f.name: (Candidate.__dict__[f.name].__set__, f.default) for f in fields(Candidate)}
_ROW_SLOTS = tuple(_SLOT[name][0] for name in CANDIDATE_ROW)
_REQUIRED_AT = CANDIDATE_ROW.index("required")
_DEFAULT_SLOTS = tuple(value for name, value in _SLOT.items() if name not in CANDIDATE_ROW)
if any(default is MISSING for _, default in _DEFAULT_SLOTS):
    raise RuntimeError("a Candidate field without a default is missing from CANDIDATE_ROW")


@lru_cache(maxsize=1 << 16)
def _newest_first(day: str) -> int:
    # Dates are few and repeat: the cache makes the preference key cheap.
    return -date.fromisoformat(day).toordinal()


def default_preference(c: Candidate) -> tuple[Any, ...]:
    """SPEC's dedupe and budget order: priority high first, then (a retrieval
    build's) retrieval rank best first, effective_from newest first, tokens small
    first, id (then source_version and record digest, so the order is total)."""
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
    """SPEC's output order: section, required before optional, priority high first, id."""
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
    """The two orders a selection uses; a parameter, so seed-000 can use its own.

    Keys that tie are broken by (id, source_version, record_digest), so any order
    gives the same result for any input order.
    """

    preference: Callable[[Candidate], tuple[Any, ...]] = default_preference
    output: Callable[[Candidate], tuple[Any, ...]] = default_output


DEFAULT_ORDER = Order()


def _identity(c: Candidate) -> tuple[str, str, str]:
    return (c.id, c.source_version, c.record_digest)


def _weighing_key(order: Order) -> Callable[[Candidate], Any]:
    """The total order of the duplicate and budget gates: the preference, ties
    broken by identity (the default preference is total already)."""
    preference = order.preference
    if preference is default_preference:
        return default_preference

    def key(c: Candidate) -> Any:
        return (preference(c), c.id, c.source_version, c.record_digest)

    return key


def _version_rank(c: Candidate) -> tuple[str, int, str]:
    # Gate 5: the later effective_from wins; ties: the later ingest, then the digest.
    return (c.effective_from, c.ingest_rank, c.record_digest)


def _ref(c: Candidate) -> MappingProxyType[str, str]:
    # `by` and `kept`: how a winning version is named.
    return MappingProxyType(
        {"id": c.id, "source_version": c.source_version, "record_digest": c.record_digest}
    )


_new_tuple = tuple.__new__  # Eviction(...) without its Python-level __new__: hot path
_get_id = attrgetter("id")
_get_version = attrgetter("source_version", "record_digest")


def _canonical(candidates: Iterable[Candidate]) -> tuple[list[Candidate], list[str]]:
    """The candidates sorted by (id, source_version, record_digest), and their ids.

    Working in this order makes every later step independent of the input order,
    and makes the gate 1-4 evictions come out already sorted. Sorting by the id
    string alone allocates no key tuples (which would cost the garbage collector
    dearly for a million candidates); runs of one id (its versions) are then
    sorted by (source_version, record_digest).
    """
    ordered = sorted(candidates, key=_get_id)
    ids = list(map(_get_id, ordered))
    for start, end in _runs(ids):
        if end - start == 2:  # most runs: two versions, compared inline
            a, b = ordered[start], ordered[start + 1]
            va, vb = a.source_version, b.source_version
            if vb < va or (vb == va and b.record_digest < a.record_digest):
                ordered[start], ordered[start + 1] = b, a
        else:
            ordered[start:end] = sorted(ordered[start:end], key=_get_version)
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


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a selection (or a build or a
    verify around one) allocates, and spare it the walk over what was allocated.

    A selection over a million candidates allocates about a million eviction
    records, and each burst of allocations makes CPython walk the whole heap again
    (measured: more than half the run time). Selection makes no reference cycles,
    so the collector has nothing to find here.

    On resuming after a large run (`_PROMOTE_AT` objects or more still
    allocated), what was allocated meanwhile joins the oldest generation
    (`gc.freeze()` then `gc.unfreeze()`: two list splices) instead of staying
    in the youngest: the first collection after would walk all of it (0.2-0.35 s
    after a 1,000,000-candidate selection), and the next ones again as it ages.
    The price: cyclic garbage the caller made just before waits for a full
    collection; a smaller run leaves the generations alone, so the selections
    of a long-running server (a hint each) never do this. Not done when the
    caller froze objects itself (unfreezing would thaw them). Only the outermost
    pause resumes, and only a collector that was enabled; concurrent selections
    can at worst re-enable it early.
    """
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_count()[0] >= _PROMOTE_AT and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


# Objects still allocated at the end of a pause from which they go to the oldest
# generation: a walk of fewer costs a few milliseconds.
_PROMOTE_AT = 100_000


def select(
    candidates: Iterable[Candidate], request: Request, order: Order = DEFAULT_ORDER
) -> Context:
    """Run the seven gates; return the whole decision as a `Context`.

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
    with collector_paused():
        return _select(candidates, request, order)


def _select(candidates: Iterable[Candidate], request: Request, order: Order) -> Context:
    cands, ids = _canonical(candidates)
    as_of = request.as_of
    granted = request.granted
    allowed = request.allowed_trust
    # One slot per candidate, in canonical order: the evictions come out sorted by
    # (id, source_version) without a sort.
    slots: list[Eviction | None] = [None] * len(cands)
    passed: list[int] = []
    failed_required: list[Eviction] = []
    # The required that pass gates 1-4 (read here, in canonical order: the
    # budget gate walks in preference order).
    required: set[int] = set()
    # Equal details are shared: one read-only mapping per reason and value.
    details: dict[str, dict[Any, MappingProxyType[str, Any]]] = {reason: {} for reason in REASONS}

    # Gates 1-4, per candidate; inlined because this loop sees every candidate.
    for rank, c in enumerate(cands):
        if c.required_permission not in granted:
            reason, name, value = "permission_denied", "required_permission", c.required_permission
        elif c.trust not in allowed:
            reason, name, value = "trust_denied", "trust", c.trust
        elif c.effective_from > as_of:
            reason, name, value = "not_yet_effective", "effective_from", c.effective_from
        elif c.expires_on is not None and as_of >= c.expires_on:
            reason, name, value = "expired", "expires_on", c.expires_on
        else:
            passed.append(rank)
            if c.required:
                required.add(rank)
            continue
        shared = details[reason]
        detail = shared.get(value)
        if detail is None:
            detail = shared[value] = MappingProxyType({name: value})
        ev = slots[rank] = _new_tuple(Eviction, (c, reason, detail))
        if c.required:
            failed_required.append(ev)

    if failed_required:
        _raise_required_failure(failed_required, [cands[r] for r in passed], request.supersede)

    # Gate 5: retracted by an entry written after this version, from a date on or
    # before as_of (the first such retraction names it). After the required check:
    # a retraction is a deliberate act, an ordinary eviction.
    if request.retractions:
        passed = _retraction_gate(cands, passed, slots, request, details["retracted"])

    # Gate 5: among versions of one id, the newest effective_from wins. Versions of
    # one id are adjacent in canonical order.
    if request.supersede:
        losers: list[int] = []
        for start, end in _runs(list(map(ids.__getitem__, passed))):
            if end - start == 2:  # most runs: two versions, compared inline
                first, second = passed[start], passed[start + 1]
                a, b = cands[first], cands[second]
                fa, fb = a.effective_from, b.effective_from
                if fb > fa or (
                    fb == fa and (b.ingest_rank, b.record_digest) > (a.ingest_rank, a.record_digest)
                ):
                    winner, older = b, [first]
                else:
                    winner, older = a, [second]
            else:
                group = passed[start:end]
                top = max(group, key=lambda r: _version_rank(cands[r]))
                winner, older = cands[top], [r for r in group if r != top]
            detail = MappingProxyType({"by": _ref(winner)})  # one per id: not shared
            for r in older:
                slots[r] = _new_tuple(Eviction, (cands[r], "superseded", detail))
            losers += older
        if losers:
            passed = list(filterfalse(set(losers).__contains__, passed))

    # Gates 6 and 7 weigh the survivors by the preference: one key each,
    # computed once, in canonical order (which breaks ties).
    weighed = list(map(cands.__getitem__, passed))
    keys = _weighing_keys(weighed, order)

    # Gate 6: per dedupe_key, the first by preference is kept (the earliest of
    # equals). A group is named by its first member in canonical order, found
    # for every survivor in one pass in C; only the later members of groups are
    # compared, with their group's best so far. In canonical order throughout,
    # which is the candidates' order in memory as often as not: a walk in
    # preference order waits on memory at every step for a million of them.
    groups: dict[str, int] = {}  # dedupe key: its group's first member
    firsts = list(map(groups.setdefault, map(_get_dedupe_key, weighed), count()))
    best: dict[int, int] = {}  # a group's first member: its best, when not the first
    beaten: list[int] = []  # indices in `weighed`, like all of these
    for i in compress(count(), map(ne, firsts, count())):
        first = firsts[i]
        j = best.get(first, first)
        if keys[i] < keys[j]:
            best[first] = i
            beaten.append(j)
        else:
            beaten.append(i)
    if beaten:
        # The beaten and their groups' winners, each read in canonical order.
        beaten.sort()
        outranked = list(map(weighed.__getitem__, beaten))
        theirs = list(map(firsts.__getitem__, beaten))
        winners = list(map(best.get, theirs, theirs))
        named = {w: MappingProxyType({"kept": _ref(weighed[w])}) for w in sorted(set(winners))}
        for i, c, w in zip(beaten, outranked, winners, strict=True):
            slots[passed[i]] = _new_tuple(Eviction, (c, "duplicate", named[w]))
        required_beaten = list(compress(outranked, map(_get_required, outranked)))
        if required_beaten:
            # Ingest refuses dedupe groups holding a required chunk; a caller that
            # passes one anyway gets a failed build, never a silent drop.
            first_beaten = min(required_beaten, key=_identity)
            raise RequiredChunkError(first_beaten.id, "duplicate")
    del weighed, firsts
    # The kept (each group's best) in preference order: a stable sort of them
    # in canonical order.
    heads = list(groups.values())
    kept = sorted(sorted(map(best.get, heads, heads)), key=keys.__getitem__)
    kept = list(map(passed.__getitem__, kept))
    del keys

    # Gate 7: required first, all or nothing; then optional in preference order.
    budget = request.budget
    admitted = [r for r in kept if r in required]  # positions
    needed = sum(cands[r].tokens for r in admitted)
    if needed > budget:
        raise RequiredOverBudgetError(needed, budget)
    remaining = budget - needed
    budget_details: dict[tuple[int, int], MappingProxyType[str, Any]] = {}
    for r in kept:
        if r in required:
            continue
        c = cands[r]
        tokens = c.tokens
        if tokens <= remaining:
            admitted.append(r)
            remaining -= tokens
        else:
            detail = budget_details.get((tokens, remaining))
            if detail is None:
                detail = budget_details[tokens, remaining] = MappingProxyType(
                    {"needed": tokens, "remaining": remaining}
                )
            slots[r] = _new_tuple(Eviction, (c, "budget", detail))

    admitted.sort()  # canonical order, then a stable sort into output order
    taken = list(map(cands.__getitem__, admitted))
    keys = _output_keys(taken, order)
    items = tuple(map(taken.__getitem__, sorted(range(len(taken)), key=keys.__getitem__)))
    evicted = tuple(filter(None, slots))  # the slots that hold an eviction (a 3-tuple)
    return Context(items=items, evicted=evicted, budget=budget)


# Candidate fields read a column at a time (each map a loop in C).
_get_priority = attrgetter("priority")
_get_rank = attrgetter("rank")
_get_effective_from = attrgetter("effective_from")
_get_tokens = attrgetter("tokens")
_get_dedupe_key = attrgetter("dedupe_key")
_get_section = attrgetter("section")
_get_required = attrgetter("required")

# The weighing and output keys of a selection are sorted stably over
# candidates in canonical order, so equal keys keep the identity order that
# breaks their ties in SPEC. For the default orders, whose fields are integers,
# each key is one integer with the fields as its digits in mixed radix (each
# digit in [0, its radix)): it sorts exactly as the tuple of the fields, and
# several times faster (200,000 keys of the default preference: 45 ms, their
# tuples 175 ms), since within a priority tuples go on comparing field by field
# as Python objects. A digit's radix is the spread of its field's values in
# this selection, so that the keys mostly fit one machine word, which CPython
# compares without a call (at 1,000,000 candidates: keys made 10 % faster and
# sorted 40 %). Fields that are not integers (a caller's own Candidates) keep
# the tuples.


def _integers(values: list[Any]) -> bool:
    return set(map(type, values)) <= {int}


def _weighing_keys(weighed: list[Candidate], order: Order) -> list[Any]:
    """The duplicate and budget gates' key of each candidate: its preference
    (for the default one, an integer of -priority, rank, newest first, tokens)."""
    if order.preference is default_preference and weighed:
        priorities = list(map(_get_priority, weighed))
        ranks = list(map(_get_rank, weighed))
        days = list(map(_newest_first, map(_get_effective_from, weighed)))
        tokens = list(map(_get_tokens, weighed))
        if _integers(priorities) and _integers(ranks) and _integers(tokens):
            top = max(priorities)
            first_rank = min(ranks)
            ranked = max(ranks) - first_rank + 1
            newest = min(days)
            dated = max(days) - newest + 1
            cheapest = min(tokens)
            costs = max(tokens) - cheapest + 1
            return [
                (((top - p) * ranked + rank - first_rank) * dated + day - newest) * costs
                + cost
                - cheapest
                for p, rank, day, cost in zip(priorities, ranks, days, tokens, strict=True)
            ]
    return list(map(order.preference, weighed))


def _output_keys(chosen: list[Candidate], order: Order) -> list[Any]:
    """The output key of each admitted candidate (for `default_output`, an
    integer of section, optional, -priority)."""
    if order.output is default_output:
        priorities = list(map(_get_priority, chosen))
        if _integers(priorities):
            top = max(priorities, default=0)
            spread = top - min(priorities, default=0) + 1
            sections = map(_SECTION_RANK.get, map(_get_section, chosen), repeat(len(SECTION_ORDER)))
            optional = map(not_, map(_get_required, chosen))
            return [
                (section * 2 + later) * spread + top - p
                for section, later, p in zip(sections, optional, priorities, strict=True)
            ]
    return list(map(order.output, chosen))


def _retraction_gate(
    cands: list[Candidate],
    passed: list[int],
    slots: list[Eviction | None],
    request: Request,
    shared: dict[Any, MappingProxyType[str, Any]],
) -> list[int]:
    as_of = request.as_of
    retractions = request.retractions
    survivors: list[int] = []
    for r in passed:
        c = cands[r]
        marks = retractions.get(c.id)
        hit = None
        if marks:
            hit = min(
                ((entry, day) for entry, day in marks if entry > c.ingest_rank and day <= as_of),
                default=None,
            )
        if hit is None:
            survivors.append(r)
            continue
        detail = shared.get(hit)
        if detail is None:
            detail = shared[hit] = MappingProxyType({"from": hit[1], "entry": hit[0]})
        slots[r] = _new_tuple(Eviction, (c, "retracted", detail))
    return survivors


def _raise_required_failure(
    failed: list[Eviction], passed: list[Candidate], supersede: bool
) -> None:
    """Fail the build for the lowest failing required chunk id, if any fails."""
    if not supersede:
        first = min(failed, key=lambda e: _identity(e.candidate))
        raise RequiredChunkError(first.candidate.id, first.reason)
    # Ledger: decided per chunk id. An id fails only when none of its versions
    # passed gates 1-4; the reason is that of its newest required version.
    passing_ids = {c.id for c in passed}
    newest: dict[str, Eviction] = {}
    for e in failed:
        c = e.candidate
        if c.id in passing_ids:
            continue
        best = newest.get(c.id)
        if best is None or _version_rank(c) > _version_rank(best.candidate):
            newest[c.id] = e
    if newest:
        chunk_id = min(newest)
        raise RequiredChunkError(chunk_id, newest[chunk_id].reason)


# --------------------------------------------------------------------------
# Admission hints: the smallest change that would have admitted an eviction.
# --------------------------------------------------------------------------


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
        step, changed = _fix(eviction, current, context, order, target)
        if step is None:
            return Hint(target.ref(), tuple(steps), False), first
        steps.append(step)
        if changed is None:
            return Hint(target.ref(), tuple(steps), False), first
        if step["kind"] == "budget":
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
        """For "reachable": whether `c` is in the pool besides the rivals (the
        condition the store writes in SQL)."""
        return c.required or (
            c.required_permission in self.granted
            and c.trust in self.allowed_trust
            and c.effective_from <= self.last_day
            and (c.expires_on is None or c.expires_on > self.first_day)
        )


_RIVALS = HintPool("rivals")
_SURVIVORS = HintPool("survivors")
_RIVAL_REASONS = frozenset({"duplicate", "superseded", "expired", "retracted"})
# Gates 1-4 judge each candidate alone: the rivals re-make such an eviction too.
_PER_CANDIDATE = frozenset({"permission_denied", "trust_denied", "not_yet_effective"})
_REQUEST_STEPS = {"grant": "granted", "allow_trust": "allowed_trust", "budget": "budget"}


def _changes(hint: Hint) -> frozenset[str]:
    """The request fields a hint's steps change: granted, allowed_trust, as_of, budget."""
    changed = {_REQUEST_STEPS[s["kind"]] for s in hint.steps if s["kind"] in _REQUEST_STEPS}
    changed |= {"as_of" for s in hint.steps if s["kind"] == "as_of" or "as_of" in s}
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
    elif reason == "budget":
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
    key = _weighing_key(order)
    limit = key(target)
    ids = {c.id for c in survivors if c.required or key(c) <= limit}
    return [c for c in survivors if c.id in ids]


def _budget_fix(
    request: Request, context: Context, order: Order, target: Candidate, deficit: int
) -> tuple[dict[str, Any], Request]:
    """The smallest raise of the budget, from the deficit upwards, that lets the
    greedy budget gate reach the target with room for it.

    Gates 1-6 do not depend on the budget, so their survivors are the admitted
    plus the budget evictions; a raise only changes which optional survivors
    ahead of the target fit. Each round simulates the gate over those alone and
    raises by the new shortfall (every round admits at least one more of them),
    instead of re-running the whole selection per round.
    """
    key = _weighing_key(order)
    target_key = key(target)
    required = sum(c.tokens for c in context.items if c.required)
    survivors = [c for c in context.items if not c.required]
    survivors += [e.candidate for e in context.evicted if e.reason == "budget"]
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
        "kind": "budget",
        "budget": new_budget,
        "extra": new_budget - request.budget,
        "displaced_by": [{"id": c.id, "source_version": c.source_version} for c in taken],
    }
    return step, replace(request, budget=new_budget)


def _fix(
    eviction: Eviction,
    request: Request,
    context: Context,
    order: Order,
    target: Candidate,
) -> tuple[dict[str, Any] | None, Request | None]:
    """The step for the gate the target failed, and the request with it applied.

    The request is None when no change of request can get past that gate.
    """
    reason = eviction.reason
    detail = eviction.detail
    step: dict[str, Any]
    if reason == "permission_denied":
        permission = detail["required_permission"]
        step = {"kind": "grant", "permission": permission}
        return step, replace(request, granted=request.granted | {permission})
    if reason == "trust_denied":
        trust = detail["trust"]
        step = {"kind": "allow_trust", "trust": trust}
        return step, replace(request, allowed_trust=request.allowed_trust | {trust})
    if reason == "not_yet_effective":
        day = detail["effective_from"]
        return {"kind": "as_of", "as_of": day}, replace(request, as_of=day)
    if reason == "expired":
        day = _day_before(detail["expires_on"])
        if day < target.effective_from:
            return None, None
        return {"kind": "as_of", "as_of": day}, replace(request, as_of=day)
    if reason == "retracted":
        # No change of request undoes a retraction; an as_of before it admits.
        step = {"kind": "retracted", "from": detail["from"], "entry": detail["entry"]}
        day = _day_before(detail["from"])
        if day < target.effective_from:
            return step, None
        step["as_of"] = day
        return step, replace(request, as_of=day)
    if reason == "superseded":
        by = dict(detail["by"])
        step = {"kind": "superseded_by", "by": by}
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
    if reason == "duplicate":
        return {"kind": "outranked_by", "kept": dict(detail["kept"])}, None
    if reason == "budget":
        return _budget_fix(request, context, order, target, detail["needed"] - detail["remaining"])
    raise ValueError(f"unknown eviction reason {reason!r}")
