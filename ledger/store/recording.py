"""Recording a pack: its row, one decision row per candidate and its ledger entry.

The digests are `ledger.core.digests`' (docs/reference/digests.md); the functions
here give them a build's `Inputs` and the core's decision.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import count, repeat
from typing import Any, NamedTuple

from sqlalchemy import Connection, func, insert, select

from ledger.core import digests
from ledger.core.canonical import canonical_json, strings_json
from ledger.core.chain import pack_entry_payload  # pure: proofs recompute it
from ledger.core.context import Context
from ledger.core.digests import (
    EvictedColumns,
    input_digest_fast,
    manifest_digest_fast,
    pack_digest_fast,
    per_detail_fast,
)
from ledger.core.reasons import row_of_detail
from ledger.core.select import Candidate
from ledger.store.chain import reserve_entry, seal_entry
from ledger.store.engine import insert_tuples
from ledger.store.inputs import INPUT_COLUMNS, Inputs
from ledger.store.schema import decisions, packs

# An OpenTelemetry trace id (32 hex) and span id (16 hex, or None) a build ran in.
Trace = tuple[str, str | None]  # the pack payload's formula is pure: ledger.core.chain


def input_digest(inputs: Inputs, candidate_digests: Iterable[str]) -> str:
    """The input digest of a build with these inputs and candidates."""
    return input_digest_of(inputs, strings_json(sorted(candidate_digests)))


def input_digest_of(inputs: Inputs, candidates: str) -> str:
    """`input_digest` from the JSON text of the sorted candidate digests (verify
    writes it once for the packs that share their candidates)."""
    return input_digest_fast(inputs.to_json(), inputs.retractions, candidates)


def manifest_digest(
    inputs: Inputs, in_digest: str, admitted: Sequence[tuple[Any, Any]], evicted: list[str]
) -> str:
    """The pack digest from the admissions in order and the evictions' entry texts
    (`ledger.core.digests.eviction_entry`) in record digest order (verify's)."""
    return manifest_digest_fast(inputs.to_json(), in_digest, admitted, evicted)


def pack_manifest(
    inputs: Inputs,
    in_digest: str,
    admitted: Iterable[tuple[str, int]],
    evicted: Iterable[tuple[str, str, Mapping[str, Any], int]],
) -> dict[str, Any]:
    """What the pack digest of a build with these inputs covers
    (`ledger.core.digests.pack_manifest`)."""
    return digests.pack_manifest(inputs.to_json(), in_digest, admitted, evicted)


def context_digests(
    inputs: Inputs,
    candidates: list[Candidate],
    ctx: Context,
    evicted: EvictedColumns | None = None,
) -> tuple[str, str]:
    """(input digest, pack digest) of a decision made by the core (`evicted`: its
    evictions' columns, when the caller has them)."""
    as_json = inputs.to_json()  # both digests cover it
    candidates_json = strings_json(sorted(candidate.record_digest for candidate in candidates))
    in_digest = input_digest_fast(as_json, inputs.retractions, candidates_json)
    admitted = [(item.record_digest, item.tokens) for item in ctx.items]
    if evicted is None:
        evicted = EvictedColumns.of(ctx.evicted)
    return in_digest, pack_digest_fast(as_json, in_digest, admitted, evicted)


class PackDigests(NamedTuple):
    """A decision's input and pack digests, and its evictions' columns."""

    input_digest: str
    pack_digest: str
    evicted: EvictedColumns


def pack_digests(inputs: Inputs, candidates: list[Candidate], ctx: Context) -> PackDigests:
    """What `record_pack` writes besides the rows: pure, so a build computes it
    before it takes the write lock."""
    evicted = EvictedColumns.of(ctx.evicted)
    return PackDigests(*context_digests(inputs, candidates, ctx, evicted), evicted)


def record_pack(
    conn: Connection,
    inputs: Inputs,
    candidates: list[Candidate],
    ctx: Context,
    vid_of: dict[str, int],
    trace: Trace | None = None,
    digests: PackDigests | None = None,
) -> int:
    """Write the pack, its decisions and its entry (inside a write transaction).
    `digests`: `pack_digests`' of the same decision, computed before the write
    lock was taken (a build's; the others compute them here)."""
    if digests is None:
        digests = pack_digests(inputs, candidates, ctx)
    in_digest, pack_dig, evicted = digests
    seq = reserve_entry(conn, "pack")
    pack_no = (
        int(conn.execute(select(func.coalesce(func.max(packs.c.pack_no), 0))).scalar_one()) + 1
    )
    conn.execute(
        insert(packs).values(
            pack_no=pack_no,
            entry_seq=seq,
            **{column: getattr(inputs, name) for name, column in INPUT_COLUMNS.items()},
            used=ctx.admitted_tokens(),
            grants=canonical_json(list(inputs.grants)),
            policy=canonical_json(inputs.policy.to_json()),
            candidate_count=len(candidates),
            input_digest=in_digest,
            pack_digest=pack_dig,
            retrieval=None
            if inputs.retrieval is None
            else json.dumps(inputs.retrieval.to_json(), sort_keys=True, separators=(",", ":")),
            trace_id=None if trace is None else trace[0],
            span_id=None if trace is None else trace[1],
        )
    )
    rows = decision_rows(pack_no, ctx, evicted, vid_of)
    for start in range(0, len(rows), 20_000):
        insert_decisions(conn, rows[start : start + 20_000])
    seal_entry(conn, seq, pack_entry_payload(pack_no, pack_dig, in_digest, inputs.mark, trace))
    return pack_no


def decision_rows(
    pack_no: int, ctx: Context, evicted: EvictedColumns, vid_of: Mapping[str, int]
) -> list[tuple[Any, ...]]:
    """One row per candidate (`_DECISION_COLUMNS`): the admissions in order, then
    the evictions, whose status, `remaining` and `ref_vid` come from their detail;
    sorted by version id."""
    items = ctx.items
    tails = per_detail_fast(
        evicted.reasons,
        evicted.details,
        lambda reason, detail: decision_tail(reason, detail, vid_of),
    )
    # Their columns, so that each column of the rows is a loop in C.
    statuses, remaining, refs = zip(*tails, strict=True) if tails else ((), (), ())
    rows: list[tuple[Any, ...]] = [
        *zip(
            repeat(pack_no),
            [vid_of[item.record_digest] for item in items],
            repeat(0),
            [item.tokens for item in items],
            count(),
            repeat(None),
            repeat(None),
        ),
        *zip(
            repeat(pack_no),
            [vid_of[digest] for digest in evicted.digests],
            statuses,
            evicted.tokens,
            repeat(None),
            remaining,
            refs,
        ),
    ]
    # Written in version id order: both of the table's B-trees (its key, pack then
    # version, and the index by version) then take each row next to the last
    # instead of at a random page: 100,000 rows 320 -> 270 ms.
    rows.sort(key=_vid_of_row)
    return rows


def _vid_of_row(row: tuple[Any, ...]) -> Any:
    return row[1]


def decision_tail(
    reason: str, detail: Mapping[str, Any], vid_of: Mapping[str, int]
) -> tuple[int, int | None, int | None]:
    """An eviction's status, `remaining` (a retraction's: its retract entry) and
    the version its detail names (`by`, `kept`) in its decision row."""
    return row_of_detail(reason, detail, vid_of)


_DECISION_COLUMNS = ("pack_no", "vid", "status", "tokens", "position", "remaining", "ref_vid")


def insert_decisions(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    """One executemany of decision rows (tuples in `_DECISION_COLUMNS` order)."""
    insert_tuples(conn, decisions, _DECISION_COLUMNS, rows)
