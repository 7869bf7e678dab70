"""The decision of one selection: what was admitted, what was evicted, and why.

Pure values: frozen dataclasses, tuples and read-only mappings, no I/O. A `Context`
whose admitted tokens exceed its budget cannot be built: that is a hard error, never
a silent truncation, because dropping the tail would also drop the eviction
records that explain it.

    >>> c = Candidate("a1", "v1", "policy", "2026-01-01", None, "read",
    ...               "approved-source", "a1", 5, 50, True, "r" * 64, "c" * 64)
    >>> ctx = Context(items=(c,), evicted=(), budget=8)
    >>> ctx.admitted_tokens(), ctx.headroom(), ctx.admitted("c" * 64)
    (5, 3, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, NamedTuple

from ledger.core.errors import InputError, RefusedError
from ledger.core.reasons import DETAIL_KEYS

REF_KEYS = ("id", "source_version", "record_digest")
UNRANKED = 2**31 - 1


class ContextOverBudgetError(RefusedError):
    """The admitted tokens exceed the budget: a selector broke its own law."""

    def __init__(self, admitted: int, budget: int):
        self.admitted = admitted
        self.budget = budget
        super().__init__(f"admitted tokens {admitted} exceed the budget {budget}")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One chunk version as the selector sees it: its metadata, cost and digests."""

    id: str
    source_version: str
    section: str
    effective_from: str  # "YYYY-MM-DD"
    expires_on: str | None
    required_permission: str
    trust: str
    dedupe_key: str
    tokens: int  # cost under the chosen counter (0 allowed)
    priority: int
    required: bool
    record_digest: str
    content_digest: str
    ingest_rank: int = 0  # ledger time order of the version: the later ingest wins ties
    # Retrieval rank (1 = best) in a retrieval build; 0 for every candidate of a
    # plain build, and UNRANKED for the unranked ones (other sections) of a
    # retrieval build, so they follow the ranked ones of equal priority.
    rank: int = 0

    def ref(self) -> dict[str, str]:
        """`{"id", "source_version", "record_digest"}`: how `by` and `kept` name it."""
        return {
            "id": self.id,
            "source_version": self.source_version,
            "record_digest": self.record_digest,
        }

    def ranked(self, rank: int) -> Candidate:
        """This version with retrieval rank `rank`: `dataclasses.replace` at half
        its cost (a retrieval build ranks every candidate)."""
        return Candidate(
            self.id, self.source_version, self.section, self.effective_from, self.expires_on,
            self.required_permission, self.trust, self.dedupe_key, self.tokens, self.priority,
            self.required, self.record_digest, self.content_digest, self.ingest_rank, rank,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """All fields but `rank`, in field order, as plain JSON values."""
        return {name: getattr(self, name) for name in _CANDIDATE_JSON}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Candidate:
        """The inverse of `to_json`; `ingest_rank` defaults to 0."""
        try:
            given = {name: data[name] for name in _CANDIDATE_JSON[:-1]}
            return cls(**given, ingest_rank=data.get("ingest_rank", 0))
        except (KeyError, TypeError) as exc:
            raise InputError(f"candidate is missing or has a bad field: {exc}") from None


# Candidate's JSON keys, in field order: every field but the retrieval `rank`,
# which its JSON has never carried.
_CANDIDATE_JSON = tuple(f.name for f in fields(Candidate) if f.name != "rank")


def freeze(value: Any) -> Any:
    """A read-only copy of a JSON-like value: mappings become MappingProxyType."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The plain-JSON copy of a frozen value (dicts and lists)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


class Eviction(NamedTuple):
    """A candidate that was considered and refused: its reason code and details.

    An immutable named tuple (the selector builds hundreds of thousands of them,
    and a tuple is three times cheaper to build than a frozen dataclass). `detail`
    is read-only (its keys: docs/reference/gates.md);
    the selector shares one detail object among evictions with equal details.
    """

    candidate: Candidate
    reason: str
    detail: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        """`{"candidate": {...}, "reason": CODE, "detail": {...}}` as plain JSON."""
        return {
            "candidate": self.candidate.to_json(),
            "reason": self.reason,
            "detail": thaw(self.detail),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Eviction:
        """The inverse of `to_json`."""
        try:
            reason = data["reason"]
            detail = data["detail"]
            candidate = Candidate.from_json(data["candidate"])
        except (KeyError, TypeError) as exc:
            raise InputError(f"eviction is missing or has a bad field: {exc}") from None
        if reason not in DETAIL_KEYS:
            raise InputError(f"unknown eviction reason {reason!r}")
        if not isinstance(detail, Mapping) or set(detail) != set(DETAIL_KEYS[reason]):
            raise InputError(
                f"eviction detail of {reason!r} must have exactly {list(DETAIL_KEYS[reason])}"
            )
        return cls(candidate, reason, freeze(detail))


@dataclass(frozen=True, slots=True)
class Context:
    """The exact admitted window: immutable, serializable, fully attributed.

    `items` are the admitted candidates in output order; `evicted` one record for
    every other candidate; `budget` the ceiling the admission ran against.
    """

    items: tuple[Candidate, ...]
    evicted: tuple[Eviction, ...]
    budget: int

    def __post_init__(self) -> None:
        if not isinstance(self.items, tuple):
            object.__setattr__(self, "items", tuple(self.items))
        if not isinstance(self.evicted, tuple):
            object.__setattr__(self, "evicted", tuple(self.evicted))
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 0:
            raise InputError(f"budget must be a non-negative integer, not {self.budget!r}")
        admitted = sum(item.tokens for item in self.items)
        if admitted > self.budget:
            raise ContextOverBudgetError(admitted, self.budget)

    @classmethod
    def empty(cls, budget: int) -> Context:
        """An empty window under a given ceiling."""
        return cls(items=(), evicted=(), budget=budget)

    def admitted_tokens(self) -> int:
        """Tokens actually admitted; never above `budget`."""
        return sum(item.tokens for item in self.items)

    def headroom(self) -> int:
        """Tokens left unused under the ceiling."""
        return self.budget - self.admitted_tokens()

    def evicted_tokens(self) -> int:
        """Tokens that were considered and refused (for any reason)."""
        return sum(e.candidate.tokens for e in self.evicted)

    def admitted(self, digest: str) -> bool:
        """Whether a candidate with this record or content digest made it in."""
        return any(digest in (c.record_digest, c.content_digest) for c in self.items)

    def why_evicted(self, digest: str) -> Eviction | None:
        """ "Why did the agent not know X?": the Eviction for a record or content digest.

        None when nothing with that digest was considered, or when it was admitted
        (the same content may be admitted under one version and evicted under
        another: then the agent did see it). With several evicted versions of the
        same content, the first in `evicted` order (id, source_version).
        """
        if self.admitted(digest):
            return None
        for eviction in self.evicted:
            c = eviction.candidate
            if digest in (c.record_digest, c.content_digest):
                return eviction
        return None

    def to_json(self) -> dict[str, Any]:
        """`{"budget", "items": [candidate...], "evicted": [eviction...]}`, plain JSON."""
        return {
            "budget": self.budget,
            "items": [item.to_json() for item in self.items],
            "evicted": [eviction.to_json() for eviction in self.evicted],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Context:
        """The inverse of `to_json` (lossless); enforces the budget invariant."""
        try:
            items: Iterable[Any] = data["items"]
            evicted: Iterable[Any] = data["evicted"]
            budget = data["budget"]
        except (KeyError, TypeError) as exc:
            raise InputError(f"context is missing a field: {exc}") from None
        return cls(
            items=tuple(Candidate.from_json(item) for item in items),
            evicted=tuple(Eviction.from_json(e) for e in evicted),
            budget=budget,
        )
