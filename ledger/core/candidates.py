"""A stored chunk version as the selector sees it: record or row -> `Candidate`.

`candidate_of` maps one record (its JSON, or a stored row's values) to a
`Candidate`; `candidates_of_columns` maps the many versions a build reads, given
as columns. `candidates_of_columns_plain` is the rule; `candidates_of_columns`
is its fast path for the build bench, equal to it on every input (a property
test compares them).

    >>> row = ("a1", "v1", "policy", "2026-01-01", None, "read", "approved-source",
    ...        "a", 10, 5, 1, "d", "c", 3)
    >>> [(c.tokens, c.required, c.ingest_rank) for c in candidates_of_columns(
    ...     [[value] for value in row])]
    [(10, True, 3)]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, fields
from typing import Any

from ledger.core.context import Candidate
from ledger.core.records import FIELDS

__all__ = [
    "CANDIDATE_FIELDS",
    "CANDIDATE_ROW",
    "candidate_of",
    "candidates_of_columns",
    "candidates_of_columns_plain",
]

# The record fields a selector Candidate is made of, in the order `candidate_of`
# reads them from a tuple (the store selects its columns in this order): the chunk
# record's FIELDS without source_uri and content, source_version before section
# as in Candidate.
CANDIDATE_FIELDS: tuple[str, ...] = ("id", "source_version", "section", *FIELDS[4:12])

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
_REQUIRED_AT = CANDIDATE_ROW.index("required")


def candidate_of(
    record: Mapping[str, Any] | tuple[Any, ...],
    *,
    record_digest: str,
    content_digest: str,
    tokens: int | None = None,
    ingest_rank: int = 0,
) -> Candidate:
    """A chunk record as the selector sees it: the one record -> Candidate mapping.

    `record` is a record's JSON (field names of docs/reference/records.md) or a
    tuple of its `CANDIDATE_FIELDS` values in that order (a stored row). `tokens`
    is the cost under the build's counter (default the record's
    `estimated_tokens`); `ingest_rank` orders versions in ledger time (the later
    ingest wins ties).

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


def _checked(columns: Sequence[Sequence[Any]]) -> Sequence[Sequence[Any]]:
    """The `CANDIDATE_ROW` columns of `columns`, all of one length."""
    if len(columns) < len(CANDIDATE_ROW):
        raise ValueError(f"{len(columns)} candidate columns, not {len(CANDIDATE_ROW)}")
    columns = columns[: len(CANDIDATE_ROW)]
    if len({len(column) for column in columns}) > 1:
        raise ValueError(f"candidate columns of unequal lengths: {sorted(set(map(len, columns)))}")
    return columns


def candidates_of_columns_plain(columns: Sequence[Sequence[Any]]) -> list[Candidate]:
    """`candidate_of` for many stored versions, given as columns (`CANDIDATE_ROW`
    order, one value per version each). `required` is stored as 0/1 or a boolean."""
    made = []
    for row in zip(*_checked(columns), strict=True):
        values = list(row)
        values[_REQUIRED_AT] = values[_REQUIRED_AT] == 1
        made.append(Candidate(*values))
    return made


def candidates_of_columns(columns: Sequence[Sequence[Any]]) -> list[Candidate]:
    """`candidates_of_columns_plain`, filled a field at a time for the build bench
    (build 20,000 <= 2.0x): a frozen dataclass's `__init__` costs one
    `object.__setattr__` per field and version, most of a build's reading time;
    here each field is one loop in C over a block of versions small enough to stay
    in the processor's cache."""
    columns = list(_checked(columns))
    columns[_REQUIRED_AT] = [value == 1 for value in columns[_REQUIRED_AT]]
    n = len(columns[0])
    made: list[Candidate] = list(map(object.__new__, [Candidate] * n))
    for start in range(0, n, _BLOCK):
        block = made[start : start + _BLOCK]
        for fill, column in zip(_FILL, columns, strict=True):
            deque(map(fill, block, column[start : start + _BLOCK]), maxlen=0)
    for c in made:
        for name, value in _DEFAULTS:
            object.__setattr__(c, name, value)
    return made


_BLOCK = 1024  # versions per block: 15 % faster than whole columns (measured at 100,000)
# Each row field's slot setter: its member descriptor, without the frozen
# dataclass's `__setattr__`.
_FILL = tuple(Candidate.__dict__[name].__set__ for name in CANDIDATE_ROW)
# Candidate's fields outside CANDIDATE_ROW take their defaults (a field without
# one must come from the row: an error at import).
_DEFAULTS = tuple((f.name, f.default) for f in fields(Candidate) if f.name not in CANDIDATE_ROW)
if any(default is MISSING for _, default in _DEFAULTS):
    raise RuntimeError("a Candidate field without a default is missing from CANDIDATE_ROW")
