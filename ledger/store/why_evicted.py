"""`ledger why-evicted REF`: every pack that considered a version, newest first,
with the reason and details recorded (docs/reference/commands.md,
docs/reference/json.md), and for an eviction the smallest change that would have
admitted it, computed by the core (`recorded_hint`) on the pack's own inputs and
only the candidates it depends on (docs/reference/gates.md, hints).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from ledger.core.hints import HintPool, recorded_hint
from ledger.core.reasons import ADMITTED, BUDGET, REASON, RETRACTED
from ledger.core.select import Candidate
from ledger.core.transcript import FRAMING_BYTES, budget_unit
from ledger.store.candidates import candidates_for
from ledger.store.hints import recorded_eviction
from ledger.store.inputs import DOCUMENTS, TRANSCRIPT_SCOPE, inputs_of
from ledger.store.packs import detail_of, reason_of
from ledger.store.readers import erased_info, resolve_ref
from ledger.store.schema import decisions, packs, retractions, versions

_RIVALS = "rivals"  # the hint pool of a version's own rivals (`HintPool.kind`)
_BUDGET_STEP = REASON[BUDGET].change  # the hint step that raises the budget


def hint_for(
    conn: Connection, head: Any, record_digest: str, cache: dict[tuple[Any, ...], Any]
) -> dict[str, Any]:
    """The core's smallest change that would have admitted a version in a pack,
    computed on only the candidates it depends on (`recorded_hint`); `cache`
    keeps the whole candidate lists read for a pack's mark."""
    inputs = inputs_of(head, conn)
    key = (head.ledger_mark, head.counter, inputs.scope, head.pack_no if inputs.retrieval else 0)
    reason, where = recorded_eviction(conn, head.pack_no, record_digest)

    def load(pool: HintPool) -> list[Candidate]:
        # Many hints on one pack (a report): once the wide pools read as many
        # rows as the pack has candidates, the next reads the whole pack instead,
        # and every later hint reuses it. A few hints (why-evicted) read only
        # their pools: often a fraction of the pack.
        if key not in cache:
            read = cache.get((key, "wide"), 0)
            if pool.kind == _RIVALS or read < head.candidate_count:
                cands = candidates_for(conn, inputs, where=where(pool))[0]
                if pool.kind != _RIVALS:
                    cache[key, "wide"] = read + len(cands)
                return cands
            cache[key] = candidates_for(conn, inputs)[0]
        whole: list[Candidate] = cache[key]
        return whole

    hint = recorded_hint(load, reason, inputs.request(), record_digest, inputs.order()).to_json()
    if inputs.is_transcript:
        # A transcript pack's budget excludes continuation.md's fixed header, but
        # `build --transcript --budget` counts the whole file: hint that number.
        for step in hint["steps"]:
            if step.get("kind") == _BUDGET_STEP:
                step["budget"] += FRAMING_BYTES
                step["framing"] = FRAMING_BYTES
    return hint


class _Context:
    """What every version's answer reads: the connection, the options, the newest
    entry and pack, and the hints' cache of candidate lists."""

    def __init__(self, conn: Connection, pack_no: int | None, hints: str) -> None:
        self.conn = conn
        self.pack_no = pack_no
        self.hints = hints
        self.last_pack = conn.execute(
            select(packs.c.pack_no, packs.c.ledger_mark).order_by(packs.c.pack_no.desc()).limit(1)
        ).first()
        self.cache: dict[tuple[Any, ...], Any] = {}

    def wants_hint(self, hinted: bool) -> bool:
        """Whether an eviction gets a hint: every one ("all"), the newest of each
        version ("newest"), or the one pack asked about."""
        if self.hints == "none":
            return False
        newest = self.hints == "newest" and not hinted
        return self.hints == "all" or newest or self.pack_no is not None


def why_evicted(
    conn: Connection, ref: str, pack_no: int | None = None, hints: str = "newest"
) -> dict[str, Any]:
    """`why-evicted --json` (docs/reference/json.md), with a hint on evictions.

    `hints`: "newest" computes the hint for each version's newest eviction (and
    for the pack given with `pack_no`), "all" for every eviction, "none" skips
    them; each hint re-runs the core on that pack's candidates.
    """
    rows = resolve_ref(conn, ref)
    erased = erased_info(conn, [v.vid for v in rows])
    ctx = _Context(conn, pack_no, hints)
    out = []
    for v in rows:
        entry = _version_answer(ctx, v)
        if v.vid in erased:  # the body is gone; the decisions about it stay
            entry["erased"] = erased[v.vid]
        out.append(entry)
    return {"ref": ref, "versions": out}


def _decisions_of(ctx: _Context, vid: int) -> list[Any]:
    """The decisions about a version, newest pack first, with what the answer shows
    of their packs. A pack's snapshots are read only for the packs that get a
    hint: a version has a decision in every pack, so this runs over thousands of
    rows."""
    d, p = decisions.c, packs.c
    q = (
        select(
            d.pack_no,
            d.status,
            d.tokens,
            d.remaining,
            d.ref_vid,
            p.pack_digest,
            p.as_of,
            p.subject,
            p.budget,
            p.scope,
        )
        .select_from(decisions.join(packs, p.pack_no == d.pack_no))
        .where(d.vid == vid)
        .order_by(d.pack_no.desc())
    )
    if ctx.pack_no is not None:
        q = q.where(d.pack_no == ctx.pack_no)
    return list(ctx.conn.execute(q).all())


def _version_answer(ctx: _Context, v: Any) -> dict[str, Any]:
    """One version's part of the answer: its decisions (with hints), or why no
    pack considered it."""
    conn = ctx.conn
    found = _decisions_of(ctx, v.vid)
    full = conn.execute(select(versions).where(versions.c.vid == v.vid)).one()
    refs = _referenced(conn, {d.ref_vid for d in found if d.ref_vid is not None})
    items = []
    hinted = False
    for d in found:
        item = _decision_item(conn, v, full, d, refs.get(d.ref_vid))
        if item["reason"] is not None and ctx.wants_hint(hinted):
            head = conn.execute(select(packs).where(packs.c.pack_no == d.pack_no)).one()
            item["would_admit"] = hint_for(conn, head, v.record_digest, ctx.cache)
            hinted = True
        items.append(item)
    entry: dict[str, Any] = {
        "id": v.chunk_id,
        "source_version": v.source_version,
        "content_digest": v.content_digest,
        "record_digest": v.record_digest,
        "ingested_at_entry": v.batch_seq,
        "decisions": items,
    }
    if not items:
        entry["not_considered"] = _not_considered_why(ctx, v)
    return entry


def _decision_item(
    conn: Connection, v: Any, full: Any, d: Any, referenced: tuple[Any, Any, Any] | None
) -> dict[str, Any]:
    """One decision about a version, as the answer shows it."""
    reason = reason_of(d.status, d.pack_no)
    retraction = None
    if reason == RETRACTED:
        retraction = _retraction(conn, d.remaining, v.chunk_id)
    detail = None
    if reason is not None:
        detail = detail_of(reason, _DetailRow(full, d, referenced, retraction))
    item: dict[str, Any] = {
        "pack": d.pack_no,
        "pack_digest": d.pack_digest,
        "as_of": d.as_of,
        "subject": d.subject,
        "admitted": d.status == ADMITTED,
        "reason": reason,
        "detail": detail,
        "tokens": d.tokens,
        "budget": d.budget,
        "unit": budget_unit(d.scope),  # of tokens and budget: bytes in a transcript pack
    }
    if retraction is not None:  # who withdrew it, and why: the retract entry's record
        item["retraction"] = {"entry": d.remaining, "from": retraction[0], "reason": retraction[1]}
    return item


def _referenced(conn: Connection, vids: set[int]) -> dict[int, tuple[Any, Any, Any]]:
    """(id, source_version, record_digest) of the versions that decisions refer to."""
    if not vids:
        return {}
    c = versions.c
    rows = conn.execute(
        select(c.vid, c.chunk_id, c.source_version, c.record_digest).where(c.vid.in_(sorted(vids)))
    )
    return {r.vid: (r.chunk_id, r.source_version, r.record_digest) for r in rows}


class _DetailRow:
    """Adapts a version row, a decision row and the version it refers to (a
    version that no longer exists reads as None) to what `detail_of` reads."""

    __slots__ = (
        "_v",
        "tokens",
        "remaining",
        "ref_id",
        "ref_version",
        "ref_digest",
        "retracted_from",
    )

    def __init__(
        self,
        version: Any,
        decision: Any,
        referenced: tuple[Any, Any, Any] | None,
        retraction: tuple[str | None, str | None] | None = None,
    ) -> None:
        self._v = version
        self.tokens = decision.tokens
        self.remaining = decision.remaining
        if referenced is None:
            self.ref_id = self.ref_version = self.ref_digest = None
        else:
            self.ref_id, self.ref_version, self.ref_digest = referenced
        self.retracted_from = retraction[0] if retraction else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._v, name)


def _retraction(
    conn: Connection, entry: int | None, chunk_id: str
) -> tuple[str | None, str | None]:
    """(from date, reason) of the retract entry that withdrew `chunk_id`."""
    t = retractions.c
    row = conn.execute(
        select(t.from_date, t.reason).where(t.entry_seq == entry, t.chunk_id == chunk_id)
    ).first()
    return (row.from_date, row.reason) if row is not None else (None, None)


def _not_considered_why(ctx: _Context, v: Any) -> str:
    """Why no pack (or not the pack asked about) considered a version."""
    if ctx.pack_no is not None:
        return f"pack {ctx.pack_no} did not consider this version"
    if ctx.last_pack is None:
        return "no pack has been built yet"
    # Packs are scoped (documents, or one transcript annotation): only packs of the
    # version's own scope could have considered it.
    transcript = v.scope is not None
    scope = TRANSCRIPT_SCOPE + v.source_version if transcript else DOCUMENTS
    last_pack = ctx.conn.execute(
        select(packs.c.pack_no, packs.c.ledger_mark)
        .where(packs.c.scope == scope)
        .order_by(packs.c.pack_no.desc())
        .limit(1)
    ).first()
    if last_pack is None:
        if transcript:
            return (
                "no pack was built from this transcript annotation (every pack is of documents "
                "or of another transcript or annotation); run `ledger build --transcript` "
                "with this sidecar"
            )
        return "no document pack has been built yet (every pack is a transcript continuation)"
    if v.batch_seq > last_pack.ledger_mark:
        return (
            f"ingested at entry {v.batch_seq}, after the newest pack ({last_pack.pack_no}, "
            f"which saw the ledger up to entry {last_pack.ledger_mark}); build again to consider it"
        )
    return "no pack considered this version (every pack was built at an earlier ledger time)"
