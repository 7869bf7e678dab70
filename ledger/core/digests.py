"""A pack's two digests, each object written once: the input digest and the pack
manifest (docs/reference/digests.md). Pure: no I/O.

`input_object` and `pack_manifest` are the rules, as plain objects hashed by
`digest_value` (RFC 8785, `ledger.core.canonical`). Build and verify hash one
entry per candidate, so each digest also has one named fast version that writes
the same bytes without building the objects: `input_digest_fast` and
`pack_digest_fast` (with `manifest_digest_fast`, which verify feeds with eviction
entries it reuses from pack to pack). tests/store/test_digests.py checks each
fast version against its plain one, tests/store/test_canonical.py against RFC 8785.

`inputs` below is a build's inputs as JSON (`Inputs.to_json()` in the store): as_of,
subject, grants, policy, budget, counter, selector_version, and scope and
retrieval when a build has them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

from ledger.core.canonical import (
    MAX_SAFE_INT,
    canonical_json,
    digest_value,
    encode_string,
    plain_strings,
    trusted_json,
)
from ledger.core.context import Eviction

T = TypeVar("T")

# The inputs the input digest covers (besides the retractions and the candidates):
# not the subject itself, only the grants it held.
INPUT_KEYS = ("as_of", "budget", "counter", "grants", "policy", "selector_version")
# Present only when a build has them, so the packs recorded before each existed
# keep their digests: a scope other than documents, a retrieval's record, the
# reinstatements in force (`[id, reinstate entry, from date]`, by id then entry).
OPTIONAL_INPUT_KEYS = ("scope", "retrieval", "reinstatements")

Retractions = Mapping[str, Sequence[tuple[int, str]]]


def input_object(
    inputs: Mapping[str, Any], retractions: Retractions, candidates: Iterable[str]
) -> dict[str, Any]:
    """What the input digest covers: the policy snapshot, grants, as-of date,
    budget, selector version, counter, the sorted candidate record digests, the
    scope and retrieval when set, and the retractions in force when there are any
    (each as `[id, retract entry, from date]`, by id then entry)."""
    data = {key: inputs[key] for key in (*INPUT_KEYS, *OPTIONAL_INPUT_KEYS) if key in inputs}
    if retractions:
        data["retractions"] = [
            [chunk_id, entry, day]
            for chunk_id, marks in sorted(retractions.items())
            for entry, day in marks
        ]
    data["candidates"] = sorted(candidates)
    return data


def input_digest(
    inputs: Mapping[str, Any], retractions: Retractions, candidates: Iterable[str]
) -> str:
    """The input digest: SHA-256 of `input_object`'s canonical JSON."""
    return digest_value(input_object(inputs, retractions, candidates))


def pack_manifest(
    inputs: Mapping[str, Any],
    in_digest: str,
    admitted: Iterable[tuple[str, int]],
    evicted: Iterable[tuple[str, str, Mapping[str, Any], int]],
) -> dict[str, Any]:
    """What the pack digest covers: the inputs (and through the input digest the
    candidates), every admission in order as `(record digest, tokens)`, and every
    eviction as `(record digest, reason, detail, tokens)`, by record digest. Not
    the pack's number or entry: two identical builds share a pack digest."""
    entries: list[dict[str, Any]] = [
        {"detail": _plain(detail), "reason": reason, "record_digest": digest, "tokens": tokens}
        for digest, reason, detail, tokens in evicted
    ]
    entries.sort(key=lambda entry: entry["record_digest"])
    return {
        **inputs,
        "input_digest": in_digest,
        "admitted": [{"record_digest": digest, "tokens": tokens} for digest, tokens in admitted],
        "evicted": entries,
    }


def _plain(detail: Mapping[str, Any]) -> dict[str, Any]:
    """A detail as a plain dict (the selector's are read-only; one level nests)."""
    return {
        key: dict(value) if isinstance(value, Mapping) else value for key, value in detail.items()
    }


def pack_digest(
    inputs: Mapping[str, Any],
    in_digest: str,
    admitted: Iterable[tuple[str, int]],
    evicted: Iterable[tuple[str, str, Mapping[str, Any], int]],
) -> str:
    """The pack digest: SHA-256 of `pack_manifest`'s canonical JSON."""
    return digest_value(pack_manifest(inputs, in_digest, admitted, evicted))


# The fast versions. Bench rows `build 20,000 / 100,000 candidates` (<= 2.0x) and
# `verify` (<= 3.0x) hash one manifest entry per candidate: these write the same
# text as the plain objects above, in C where they can, fed to the hash in pieces.


def input_digest_fast(
    inputs: Mapping[str, Any], retractions: Retractions, candidates_json: str
) -> str:
    """`input_digest`, given the JSON text of the sorted candidate digests (verify
    writes it once for the packs that share their candidates)."""
    members: dict[str, str | list[str]] = {
        key: trusted_json(value) for key, value in input_object(inputs, retractions, ()).items()
    }
    members["candidates"] = candidates_json
    return object_digest(members)


class EvictedColumns(NamedTuple):
    """A decision's evictions, a column each, in the decision's order."""

    digests: list[str]  # record digests
    reasons: list[str]
    details: list[Mapping[str, Any]]
    tokens: list[int]

    @classmethod
    def of(cls, evicted: Sequence[Eviction]) -> EvictedColumns:
        losers = [eviction.candidate for eviction in evicted]
        return cls(
            [candidate.record_digest for candidate in losers],
            [eviction.reason for eviction in evicted],
            [eviction.detail for eviction in evicted],
            [candidate.tokens for candidate in losers],
        )

    def rows(self) -> Iterator[tuple[str, str, Mapping[str, Any], int]]:
        """(record digest, reason, detail, tokens) of each eviction: `pack_manifest`'s."""
        return zip(self.digests, self.reasons, self.details, self.tokens, strict=True)


def pack_digest_fast(
    inputs: Mapping[str, Any],
    in_digest: str,
    admitted: Sequence[tuple[str, int]],
    evicted: EvictedColumns,
) -> str:
    """`pack_digest` of the evictions' columns, each distinct detail written once."""
    heads = per_detail_fast(evicted.reasons, evicted.details, eviction_head)
    entries = eviction_entries(heads, evicted.digests, evicted.tokens)
    by_digest = sorted(range(len(entries)), key=evicted.digests.__getitem__)
    return manifest_digest_fast(inputs, in_digest, admitted, [entries[i] for i in by_digest])


def per_detail_fast(
    reasons: list[str], details: list[Mapping[str, Any]], make: Callable[[str, Any], T]
) -> list[T]:
    """`[make(reason, detail) ...]` of each eviction, called once per distinct detail
    object: the selector shares equal details (90,442 evictions of the build bench
    hold 19,596). Keyed by the objects' ids, which `details` holds alive meanwhile."""
    keys = list(zip(reasons, map(id, details), strict=True))
    distinct = dict(zip(keys, details, strict=True))
    made = {key: make(key[0], detail) for key, detail in distinct.items()}
    return [made[key] for key in keys]


def manifest_digest_fast(
    inputs: Mapping[str, Any],
    in_digest: str,
    admitted: Sequence[tuple[Any, Any]],
    evicted: list[str],
) -> str:
    """The pack digest from the admissions in order and the evictions' entry texts
    (`eviction_entry`) in record digest order."""
    # The inputs in C, as `input_digest_fast` writes them.
    members: dict[str, str | list[str]] = {k: trusted_json(v) for k, v in inputs.items()}
    members["input_digest"] = canonical_json(in_digest)
    members["admitted"] = admitted_entries(admitted)
    members["evicted"] = evicted
    return object_digest(members)


def admitted_entries(admitted: Sequence[tuple[Any, Any]]) -> list[str]:
    """The text of each admission's manifest entry, in order."""
    digests = [digest for digest, _ in admitted]
    tokens = [count for _, count in admitted]
    if plain_strings(digests) and safe_ints(tokens):
        return [f'{{"record_digest":"{d}","tokens":{t}}}' for d, t in admitted]
    return [f'{{"record_digest":{_text(d)},"tokens":{_number(t)}}}' for d, t in admitted]


def eviction_head(reason: Any, detail: Any) -> str:
    """The text of an eviction's manifest entry up to its record digest."""
    return f'{{"detail":{detail_json(detail)},"reason":{_text(reason)},"record_digest":'


def detail_json(detail: Any) -> str:
    """`trusted_json(detail)` (the details are the ledger's: ASCII keys, no floats).
    The two kinds a pack holds thousands of distinct ones of are written directly,
    the same text: a budget eviction's (two integers) and a superseded or
    duplicate one's (the version it names, three strings)."""
    if len(detail) == 2:
        needed, remaining = detail.get("needed"), detail.get("remaining")
        if type(needed) is int and type(remaining) is int:
            return f'{{"needed":{needed},"remaining":{remaining}}}'
    elif len(detail) == 1:
        key = "by" if "by" in detail else "kept"
        ref = detail.get(key)
        if type(ref) in (dict, MappingProxyType) and len(ref) == 3:
            cid, version, digest = (
                ref.get("id"),
                ref.get("source_version"),
                ref.get("record_digest"),
            )
            if type(cid) is str and type(version) is str and type(digest) is str:
                return (
                    f'{{"{key}":{{"id":{encode_string(cid)},'
                    f'"record_digest":{encode_string(digest)},'
                    f'"source_version":{encode_string(version)}}}}}'
                )
    return trusted_json(detail)


def eviction_entry(head: str, digest: Any, tokens: Any) -> str:
    """The text of an eviction's manifest entry, from its `eviction_head`."""
    return f'{head}{_text(digest)},"tokens":{_number(tokens)}}}'


def eviction_entries(heads: list[str], digests: list[Any], tokens: list[Any]) -> list[str]:
    """`eviction_entry` of many evictions, with no call per eviction when the
    digests are `plain_strings` and the tokens `safe_ints` (what the ledger writes)."""
    if plain_strings(digests) and safe_ints(tokens):
        return [f'{h}"{d}","tokens":{t}}}' for h, d, t in zip(heads, digests, tokens, strict=True)]
    return [eviction_entry(h, d, t) for h, d, t in zip(heads, digests, tokens, strict=True)]


def safe_ints(values: list[Any]) -> bool:
    """Whether every value is an `int` (not a bool) in RFC 8785's safe range."""
    if not set(map(type, values)) <= {int}:
        return False
    return not values or (-MAX_SAFE_INT <= min(values) and max(values) <= MAX_SAFE_INT)


def object_digest(members: Mapping[str, str | list[str]]) -> str:
    """SHA-256 of the JSON object of these members, each given as its JSON text
    or, for an array, as its elements' texts; the keys are ASCII (Python's order
    is RFC 8785's). Fed to the hash a piece at a time: a pack's manifest is
    megabytes, and copying it whole into fresh memory costs more than hashing it."""
    digest = hashlib.sha256()
    opening = "{"
    for key in sorted(members):
        value = members[key]
        digest.update(f"{opening}{_text(key)}:".encode())
        opening = ","
        if isinstance(value, str):
            for start in range(0, len(value), _PIECE_CHARS):
                digest.update(value[start : start + _PIECE_CHARS].encode())
            continue
        digest.update(b"[")
        for start in range(0, len(value), _PIECE_TEXTS):
            piece = ",".join(value[start : start + _PIECE_TEXTS])
            digest.update((f",{piece}" if start else piece).encode())
        digest.update(b"]")
    digest.update(b"}")
    return digest.hexdigest()


# Pieces of a digest's text (above): small enough to reuse freed memory.
_PIECE_CHARS, _PIECE_TEXTS = 1 << 15, 256


def _text(value: Any) -> str:
    # A stored string (digests, reasons) as RFC 8785 writes it (json's escapes,
    # in C); anything a changed database holds instead through the same writer.
    return encode_string(value) if type(value) is str else canonical_json(value)


def _number(value: Any) -> str:
    if type(value) is int and -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
        return str(value)
    return canonical_json(value)
