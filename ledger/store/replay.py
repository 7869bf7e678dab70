"""`ledger replay PACK`: rebuild a pack from the ledger as it stood at its ledger
mark and compare it with the record (docs/reference/commands.md,
docs/reference/json.md).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, select

from ledger.core.context import thaw
from ledger.core.errors import LedgerError
from ledger.core.reasons import ADMITTED, REASON_NAMES
from ledger.core.results import ReplayResult
from ledger.core.transcript import budget_unit
from ledger.store.build import decide
from ledger.store.candidates import candidates_for
from ledger.store.inputs import inputs_of
from ledger.store.packs import decision_rows, detail_of, pack_header
from ledger.store.recording import context_digests
from ledger.store.schema import decisions, versions
from ledger.store.verify_rows import bad_rows
from ledger.tokens import ESTIMATED, counter_id, same_counter, text_counter

_ADMITTED = "admitted"
_EVICTED = "evicted"


def replay(conn: Connection, pack_no: int) -> ReplayResult:
    """Rebuild a pack from the ledger as it stood at its mark; compare it with the record.

    Identical means the rebuild's pack digest equals the recorded one AND every
    recorded decision row (status, reason, detail, tokens, position) and figure
    equals the rebuild's: the pack digest is stored beside the rows, so a changed
    row would otherwise replay as "identical".
    """
    head = pack_header(conn, pack_no)
    inputs = inputs_of(head, conn)

    def differs(why: str) -> ReplayResult:
        return ReplayResult(pack_no, False, head.pack_digest, "", why)

    if inputs.counter != ESTIMATED:
        now = counter_id(inputs.counter.split("@", 1)[0])
        if not same_counter(inputs.counter, now):
            return differs(
                f"the pack was costed with {inputs.counter}; this installation has {now}"
            )
    candidates, vid_of = candidates_for(conn, inputs, ESTIMATED)  # a retrieval: its recorded list
    # Recompute, never trust, the digests of the rows the rebuild uses: a field
    # changed behind the ledger's back must not replay as "identical".
    tampered = next(bad_rows(conn, versions.c.batch_seq <= inputs.mark, set(vid_of.values())), None)
    if tampered is not None:
        return differs(f"candidate {tampered}")
    not_recounted: list[str] = []
    if inputs.counter != ESTIMATED:
        # Recount rather than trust the cache: replay must not inherit a bad count.
        # An erased body cannot be recounted: its count is the pack's recorded one.
        candidates, not_recounted = _recount(conn, candidates, vid_of, inputs.counter, pack_no)
    try:
        ctx = decide(inputs, candidates)
    except LedgerError as exc:  # a required chunk now failing: a difference, not a crash
        return differs(f"the rebuild failed: {exc}")
    ind, pd = context_digests(inputs, candidates, ctx)
    difference = _first_difference(conn, head, ind, candidates, ctx)
    if difference is None and pd != head.pack_digest:
        difference = "the recorded pack digest does not match the rebuild's"
    return ReplayResult(
        pack_no, difference is None, head.pack_digest, pd, difference, not_recounted
    )


def _recount(
    conn: Connection, candidates: list[Any], vid_of: dict[str, int], counter: str, pack_no: int
) -> tuple[list[Any], list[str]]:
    """The candidates recounted from their bodies; an erased body keeps the count
    the pack recorded for it (returned by name: replay says it could not recount)."""
    count = text_counter(counter.split("@", 1)[0])
    v = versions.c
    content = {
        r.vid: r.content
        for r in conn.execute(select(v.vid, v.content).where(v.vid.in_(list(vid_of.values()))))
    }
    d = decisions.c
    recorded = {
        vid: tokens
        for vid, tokens in conn.execute(select(d.vid, d.tokens).where(d.pack_no == pack_no))
    }
    out, kept = [], []
    for c in candidates:
        vid = vid_of[c.record_digest]
        body = content[vid]
        if body is None and vid in recorded:
            out.append(replace(c, tokens=recorded[vid]))
            kept.append(f"{c.id}@{c.source_version}")
        else:
            out.append(replace(c, tokens=count(body)))
    return out, sorted(kept)


def _name(row: Any) -> str:
    return f"{row.chunk_id}@{row.source_version}"


def _one_side_only(rows: list[Any], now: dict[str, Any]) -> str | None:
    """A version on one side only, recorded or rebuilt: named id@version by its digest."""
    recorded_names = {r.record_digest: _name(r) for r in rows}
    now_names = {d: f"{c.id}@{c.source_version}" for d, c in now.items()}
    for these, others, happened in (
        (recorded_names, now_names, "was recorded but is no longer in the ledger"),
        (now_names, recorded_names, "is in the ledger at the pack's mark but was not recorded"),
    ):
        only = sorted(set(these) - set(others))
        if only:
            return f"candidate {these[only[0]]} {happened} ({len(only)} such)"
    return None


# How the rebuild decided a version: admitted or evicted, the reason, the detail.
Replayed = dict[str, tuple[str, str | None, dict[str, Any] | None]]


def _replayed(ctx: Any) -> Replayed:
    out: Replayed = {c.record_digest: (_ADMITTED, None, None) for c in ctx.items}
    for e in ctx.evicted:
        out[e.candidate.record_digest] = (_EVICTED, e.reason, thaw(e.detail))
    return out


def _said(state: tuple[str, str | None, Any]) -> str:
    return state[1] or state[0]


def _row_difference(row: Any, got: tuple[str, str | None, Any], now: Any) -> str | None:
    """How one recorded decision differs from the rebuild's, or None."""
    name = _name(row)
    reason = REASON_NAMES.get(row.status)
    if row.status != ADMITTED and reason is None:
        return f"{name}: recorded an unknown status {row.status}, replay gives {_said(got)}"
    was = (_ADMITTED, None) if row.status == ADMITTED else (_EVICTED, reason)
    if got[:2] != was:
        return f"{name}: recorded {was[1] or was[0]}, replay gives {_said(got)}"
    if now.tokens != row.tokens:
        return f"{name}: recorded {row.tokens} tokens, replay counts {now.tokens}"
    if reason is not None:
        detail = detail_of(reason, row)
        if detail != got[2]:
            return (
                f"{name}: recorded {reason} detail {json.dumps(detail, sort_keys=True)}, "
                f"replay gives {json.dumps(got[2], sort_keys=True)}"
            )
    return None


def _figures_difference(head: Any, rows: list[Any], candidates: list[Any], ctx: Any) -> str | None:
    """The recorded order and figures against the rebuild's, or None."""
    admitted_rows = [r for r in rows if r.status == ADMITTED]
    positions = sorted(-1 if r.position is None else r.position for r in admitted_rows)
    if positions != list(range(len(admitted_rows))):
        return "the recorded admitted positions are not 0..n-1"
    order_rec = [r.record_digest for r in sorted(admitted_rows, key=lambda r: r.position)]
    if [c.record_digest for c in ctx.items] != order_rec:
        return "the admitted output order differs"
    if head.used != ctx.admitted_tokens():
        return (
            f"the pack records used {head.used}, the rebuild admits {ctx.admitted_tokens()} "
            f"{budget_unit(head.scope)}"
        )
    if head.candidate_count != len(candidates):
        return (
            f"the pack records {head.candidate_count} candidates, the rebuild has {len(candidates)}"
        )
    return None


def _first_difference(
    conn: Connection, head: Any, ind: str, candidates: list[Any], ctx: Any
) -> str | None:
    """The first way the recorded pack differs from the rebuild, or None."""
    rows = decision_rows(conn, head.pack_no)
    now = {c.record_digest: c for c in candidates}
    difference = _one_side_only(rows, now)
    if difference is not None:
        return difference
    if ind != head.input_digest:
        return (
            "the inputs (grants, policy, budget, counter or selector) differ from the recorded ones"
        )
    replayed = _replayed(ctx)
    for r in sorted(rows, key=lambda r: (r.chunk_id, r.source_version)):
        difference = _row_difference(r, replayed[r.record_digest], now[r.record_digest])
        if difference is not None:
            return difference
    return _figures_difference(head, rows, candidates, ctx)
