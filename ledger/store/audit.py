"""The audit answers: why-evicted, diff, verify, replay.

- `why_evicted`: every pack that considered a version, newest first, with the
  reason and details recorded, and for an eviction the smallest change that
  would have admitted it, computed by the core (`recorded_hint`) on the pack's
  own inputs and only the candidates it depends on.
- `diff`: per chunk id, what entered, left, changed version or reason, each
  tagged with its cause.
- `verify`: recompute every digest from the stored rows and the whole chain.
- `replay`: rebuild a pack from the ledger as it stood at its ledger mark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import compress, count
from operator import add, attrgetter, eq, itemgetter, not_
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, LargeBinary, and_, cast, func, literal, or_, select

from ledger.core.canonical import canonical_json, content_digest, trusted_json
from ledger.core.chain import GENESIS, entry_hash, pack_entry_payload
from ledger.core.errors import InputError, IntegrityError, LedgerError, NotFoundError
from ledger.core.query import RetrievalRecord
from ledger.core.reasons import REASON_CODES, REASON_NAMES
from ledger.core.reasons import REASONS as GATE_ORDER
from ledger.core.records import EXCHANGE_SCOPE, ChunkRecord, flat_record_digest, record_digest
from ledger.core.select import Candidate, HintPool, collector_paused, recorded_hint
from ledger.store.access import Policy, grant_payload, policy_payload
from ledger.store.build import (
    DOCUMENTS,
    INPUT_COLUMNS,
    Inputs,
    candidates_for,
    context_digests,
    decide,
    eviction_entries,
    eviction_head,
    input_digest_of,
    manifest_digest,
    retractions_at,
    safe_ints,
)
from ledger.store.chain import KINDS, Head, read_head
from ledger.store.engine import fetch_tuples, row_type, stream_tuples
from ledger.store.hints import recorded_eviction
from ledger.store.packs import (
    VERSION_COLUMNS,
    VerifyReader,
    VerifyRow,
    bad_pack_types,
    detail_of,
    pack_header,
    reason_of,
    snapshot_of,
)
from ledger.store.schema import (
    batches,
    decisions,
    entries,
    erasures,
    grants,
    packs,
    policies,
    retractions,
    versions,
)
from ledger.tokens import ESTIMATED, counter_id

if TYPE_CHECKING:
    from ledger.core.checkpoint import Checkpoint

# What only verify reads (the Merkle tree, the file and ingest payloads) is
# imported by verify: why-evicted, diff and replay start without it (issue 21).

_HEX = re.compile(r"[0-9a-f]+")


# --------------------------------------------------------------------------
# why-evicted
# --------------------------------------------------------------------------


def resolve_ref(conn: Connection, ref: str) -> Sequence[Any]:
    """The versions a REF names: a chunk id, a full content or record digest, or a
    unique hex prefix (8+ characters) of one. Ambiguous prefixes are refused."""
    c = versions.c
    names = "vid chunk_id source_version record_digest content_digest batch_seq source_uri scope"
    cols = [c[name] for name in names.split()]
    rows = conn.execute(select(*cols).where(c.chunk_id == ref).order_by(c.vid)).all()
    if rows:
        return rows
    low = ref.lower()
    if not _HEX.fullmatch(low):
        raise NotFoundError(f"no chunk id or digest matches {ref!r}; `ledger chunks` lists them")
    if len(low) < 8:
        # Short hex is also a well-formed chunk id ("cafe"): a REF that matches no
        # chunk version exits 3 (SPEC), whatever it looks like.
        raise NotFoundError(
            f"no chunk id matches {ref!r}, and a digest prefix needs at least 8 hex characters; "
            "`ledger chunks` lists them"
        )
    if len(low) == 64:
        cond = or_(c.record_digest == low, c.content_digest == low)
    else:
        upper = low + "g"  # every hex string with this prefix sorts below prefix+"g"
        cond = or_(
            and_(c.record_digest >= low, c.record_digest < upper),
            and_(c.content_digest >= low, c.content_digest < upper),
        )
    rows = conn.execute(select(*cols).where(cond).order_by(c.vid).limit(50)).all()
    if not rows:
        raise NotFoundError(f"no chunk version has a digest starting with {low}")
    digests = {r.record_digest for r in rows if r.record_digest.startswith(low)}
    digests |= {r.content_digest for r in rows if r.content_digest.startswith(low)}
    if len(digests) > 1 and len({r.vid for r in rows}) > 1:
        listing = "; ".join(
            f"{r.chunk_id}@{r.source_version} (record {r.record_digest[:16]}, content "
            f"{r.content_digest[:16]})"
            for r in rows[:10]
        )
        raise InputError(f"REF {low} is ambiguous, it matches: {listing}; give more characters")
    return rows


def inputs_of(head: Any, conn: Connection | None = None) -> Inputs:
    """A recorded pack's inputs, from its snapshots (IntegrityError if unreadable);
    with `conn`, also the retractions at its ledger mark (gate 5)."""
    pol = snapshot_of(head.policy, "policy", head.pack_no)
    grants_list = snapshot_of(head.grants, "grants", head.pack_no)
    try:
        if not isinstance(pol, dict) or not isinstance(grants_list, list):
            raise TypeError
        policy = Policy(tuple(pol["allowed_trust"]), pol["budget"])
        grants_tuple = tuple(grants_list)
    except (KeyError, TypeError):
        raise IntegrityError(
            f"pack {head.pack_no}: its recorded grants or policy do not have the recorded shape; "
            "the database was altered: run `ledger verify`"
        ) from None
    return Inputs(
        **{name: getattr(head, column) for name, column in INPUT_COLUMNS.items()},
        grants=grants_tuple,
        policy=policy,
        retrieval=retrieval_of(head),
        retractions=(
            retractions_at(conn, head.ledger_mark)
            if conn is not None and head.scope == DOCUMENTS
            else {}
        ),
    )


def trace_ids(head: Any) -> tuple[str, str | None] | None:
    """A recorded pack's (trace_id, span_id), as its entry payload covers them."""
    return None if head.trace_id is None else (head.trace_id, head.span_id)


def retrieval_of(head: Any) -> RetrievalRecord | None:
    """A recorded pack's retrieval record (None: a plain build), or exit 4."""
    text = getattr(head, "retrieval", None)
    if text is None:
        return None
    try:
        return RetrievalRecord.from_json(snapshot_of(text, "retrieval", head.pack_no))
    except InputError:
        raise IntegrityError(
            f"pack {head.pack_no}: its recorded retrieval does not have the recorded shape; "
            "the database was altered: run `ledger verify`"
        ) from None


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
            if pool.kind == "rivals" or read < head.candidate_count:
                cands = candidates_for(conn, inputs, where=where(pool))[0]
                if pool.kind != "rivals":
                    cache[key, "wide"] = read + len(cands)
                return cands
            cache[key] = candidates_for(conn, inputs)[0]
        whole: list[Candidate] = cache[key]
        return whole

    hint = recorded_hint(load, reason, inputs.request(), record_digest, inputs.order()).to_json()
    if inputs.is_transcript:
        # A transcript pack's budget excludes continuation.md's fixed header, but
        # `build --transcript --budget` counts the whole file: hint that number.
        from ledger.core.transcript import FRAMING_BYTES

        for step in hint["steps"]:
            if step.get("kind") == "budget":
                step["budget"] += FRAMING_BYTES
                step["framing"] = FRAMING_BYTES
    return hint


def why_evicted(
    conn: Connection, ref: str, pack_no: int | None = None, hints: str = "newest"
) -> dict[str, Any]:
    """SPEC's `why-evicted --json` shape, with a hint on evictions.

    `hints`: "newest" computes the hint for each version's newest eviction (and
    for the pack given with `pack_no`), "all" for every eviction, "none" skips
    them; each hint re-runs the core on that pack's candidates.
    """
    from ledger.store.erase import erased_info

    rows = resolve_ref(conn, ref)
    erased = erased_info(conn, [v.vid for v in rows])
    head_seq = read_head(conn).seq
    last_pack = conn.execute(
        select(packs.c.pack_no, packs.c.ledger_mark).order_by(packs.c.pack_no.desc()).limit(1)
    ).first()
    cache: dict[tuple[Any, ...], Any] = {}
    out = []
    for v in rows:
        # Only what the answer shows; a pack's snapshots are read for the packs
        # that get a hint, and referenced versions in one query: a version has a
        # decision in every pack, so this runs over thousands of rows.
        q = (
            select(
                decisions.c.pack_no,
                decisions.c.status,
                decisions.c.tokens,
                decisions.c.remaining,
                decisions.c.ref_vid,
                packs.c.pack_digest,
                packs.c.as_of,
                packs.c.subject,
                packs.c.budget,
            )
            .select_from(decisions.join(packs, packs.c.pack_no == decisions.c.pack_no))
            .where(decisions.c.vid == v.vid)
            .order_by(decisions.c.pack_no.desc())
        )
        if pack_no is not None:
            q = q.where(decisions.c.pack_no == pack_no)
        found = conn.execute(q).all()
        full = conn.execute(select(versions).where(versions.c.vid == v.vid)).one()
        refs = _referenced(conn, {d.ref_vid for d in found if d.ref_vid is not None})
        items = []
        hinted = False
        for d in found:
            reason = reason_of(d.status, d.pack_no)
            retraction = None
            if reason == "retracted":
                retraction = _retraction(conn, d.remaining, v.chunk_id)
            item: dict[str, Any] = {
                "pack": d.pack_no,
                "pack_digest": d.pack_digest,
                "as_of": d.as_of,
                "subject": d.subject,
                "admitted": reason is None,
                "reason": reason,
                "detail": None
                if reason is None
                else detail_of(reason, _DetailRow(full, d, refs.get(d.ref_vid), retraction)),
                "tokens": d.tokens,
                "budget": d.budget,
            }
            if retraction is not None:  # who withdrew it, and why: the retract entry's record
                item["retraction"] = {
                    "entry": d.remaining,
                    "from": retraction[0],
                    "reason": retraction[1],
                }
            if reason is not None and (
                hints == "all" or (hints == "newest" and not hinted) or pack_no is not None
            ):
                if hints != "none":
                    head = conn.execute(select(packs).where(packs.c.pack_no == d.pack_no)).one()
                    item["would_admit"] = hint_for(conn, head, v.record_digest, cache)
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
            entry["not_considered"] = _not_considered_why(conn, v, pack_no, last_pack, head_seq)
        if v.vid in erased:  # the body is gone; the decisions about it stay
            entry["erased"] = erased[v.vid]
        out.append(entry)
    return {"ref": ref, "versions": out}


_NO_REF: tuple[None, None, None] = (None, None, None)


def _referenced(conn: Connection, vids: set[int]) -> dict[int, tuple[Any, Any, Any]]:
    """(id, source_version, record_digest) of the versions that decisions refer to."""
    if not vids:
        return {}
    rows = conn.execute(
        select(
            versions.c.vid, versions.c.chunk_id, versions.c.source_version, versions.c.record_digest
        ).where(versions.c.vid.in_(sorted(vids)))
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
        ref: tuple[str | None, str | None, str | None] = referenced or _NO_REF
        self.ref_id, self.ref_version, self.ref_digest = ref
        self.retracted_from = retraction[0] if retraction else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._v, name)


def _retraction(
    conn: Connection, entry: int | None, chunk_id: str
) -> tuple[str | None, str | None]:
    """(from date, reason) of the retract entry that withdrew `chunk_id`."""
    t = retractions
    row = conn.execute(
        select(t.c.from_date, t.c.reason).where(t.c.entry_seq == entry, t.c.chunk_id == chunk_id)
    ).first()
    return (row.from_date, row.reason) if row is not None else (None, None)


def _not_considered_why(
    conn: Connection, v: Any, pack_no: int | None, last_pack: Any, head_seq: int
) -> str:
    if pack_no is not None:
        return f"pack {pack_no} did not consider this version"
    if last_pack is None:
        return "no pack has been built yet"
    # Packs are scoped (documents, or one transcript annotation): only packs of the
    # version's own scope could have considered it.
    from ledger.store.build import DOCUMENTS, TRANSCRIPT_SCOPE

    transcript = v.scope is not None
    scope = TRANSCRIPT_SCOPE + v.source_version if transcript else DOCUMENTS
    last_pack = conn.execute(
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


# --------------------------------------------------------------------------
# diff
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _State:
    status: str
    source_version: str | None
    reason: str | None
    vid: int | None
    ref_vid: int | None = None  # the superseding or kept version

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "source_version": self.source_version, "reason": self.reason}


ABSENT = _State("absent", None, None, None)
# Gate order (SPEC "Selection"); admitted passes every gate.
# (By SPEC's gate order, not the stored codes: `retracted` is gate 5 but code 8.)
_GATE = {name: gate for gate, name in enumerate(GATE_ORDER, start=1)}
_ADMITTED_GATE = max(_GATE.values()) + 1
# The cause of a difference at gates 1-6; budget depends on the two budgets.
_GATE_CAUSE = {
    "permission_denied": "grant change",
    "trust_denied": "policy change",
    "not_yet_effective": "validity date",
    "expired": "validity date",
    "retracted": "retracted",
    "superseded": "new version",
    "duplicate": "displaced by another chunk",
}


Decided = dict[int, tuple[int, int | None]]  # version id -> (status, ref_vid)


def _pack_decisions(conn: Connection, pack_no: int) -> tuple[dict[str, tuple[Any, ...]], Decided]:
    """Per chunk id: the row (vid, status, ref_vid, id, version) of its admitted
    version, else of its newest considered version; and every decision of the pack
    by version id. Plain tuples: a pack may hold 100,000 decisions."""
    q = (
        select(
            decisions.c.vid,
            decisions.c.status,
            decisions.c.ref_vid,
            versions.c.chunk_id,
            versions.c.source_version,
        )
        .select_from(decisions.join(versions, versions.c.vid == decisions.c.vid))
        .where(decisions.c.pack_no == pack_no)
    )
    best: dict[str, tuple[Any, ...]] = {}
    by_vid: Decided = {}
    rows = fetch_tuples(conn, q)  # plain tuples from one fetchall: half the cost of Row objects
    for row in rows:
        vid, status, ref_vid, cid = row[0], row[1], row[2], row[3]
        by_vid[vid] = (status, ref_vid)
        prev = best.get(cid)
        # Admitted beats evicted; among evicted, the newest version (highest vid).
        if prev is None or (status == 0, vid) > (prev[1] == 0, prev[0]):
            best[cid] = row
    for status in {row[1] for row in rows}:
        reason_of(status, pack_no)  # an unknown status is an altered row: say so
    return best, by_vid


def _state(row: tuple[Any, ...] | None, pack_no: int) -> _State:
    if row is None:
        return ABSENT
    vid, status, ref_vid, _cid, sv = row
    return _State(
        "admitted" if status == 0 else "evicted", sv, reason_of(status, pack_no), vid, ref_vid
    )


def _reason(decided: tuple[int, int | None]) -> str | None:
    return REASON_NAMES.get(decided[0]) if decided[0] else None


def _gate_cause(reason: str | None, ha: Any, hb: Any) -> str | None:
    """The cause behind a gate that one side failed and the other passed."""
    if reason is None or reason == "superseded":
        return None
    if reason == "budget":
        return "budget change" if ha.budget != hb.budget else "displaced by another chunk"
    return _GATE_CAUSE.get(reason)


def _cause(a: _State, b: _State, ha: Any, hb: Any, da: Decided, db: Decided) -> str:
    """Why a chunk id's state differs between pack A (`da`: its decisions by version)
    and pack B: the earliest gate that one side failed and the other passed.

    permission_denied: grant change; trust_denied: policy change; not_yet_effective
    or expired: validity date; superseded: what kept the winning version from
    winning on the other side (new version when it was not there); duplicate:
    displaced by another chunk; budget: budget change when the budget moved the
    way the chunk did, else displaced by another chunk. Another version on each
    side: new version when A did not consider B's version, else the gate that kept
    it out. Absent on one side: new / removed candidate.
    """
    if a.status == "absent":
        return "new candidate"
    if b.status == "absent":
        return "removed candidate"
    if a.source_version != b.source_version:
        # B shows another version than A: why was B's version not A's choice, or
        # why did A's version lose in B?
        if b.vid not in da:
            return "new version"
        if a.vid not in db:
            return "removed candidate"
        for reason in (_reason(da[b.vid]), _reason(db[a.vid])):
            cause = _gate_cause(reason, ha, hb) if reason in _GATE_CAUSE else None
            if cause is not None:
                return cause
        return "validity date" if ha.as_of != hb.as_of else "new version"
    reason = min((r for r in (a.reason, b.reason) if r is not None), key=lambda r: _GATE.get(r, 0))
    if reason == "superseded":
        # Superseded on one side only: why did the winning version not win on the other?
        lost, other = (a, db) if a.reason == "superseded" else (b, da)
        if lost.ref_vid not in other:
            # The winner is missing from the other pack's ledger view.
            return "removed candidate" if lost is a else "new version"
        return _gate_cause(_reason(other[lost.ref_vid]), ha, hb) or "new version"
    if reason == "budget":
        # Budget moved the way the chunk did (more budget: in; less: out), or
        # other chunks took or left the room under it.
        if a.status == "admitted":
            return "budget change" if hb.budget < ha.budget else "displaced by another chunk"
        if b.status == "admitted":
            return "budget change" if hb.budget > ha.budget else "displaced by another chunk"
    return _gate_cause(reason, ha, hb) or "displaced by another chunk"


def diff(conn: Connection, a: int, b: int) -> dict[str, Any]:
    """SPEC's `diff --json`: only what differs, each change with its cause."""
    ha, hb = pack_header(conn, a), pack_header(conn, b)
    (sa, da), (sb, db) = _pack_decisions(conn, a), _pack_decisions(conn, b)
    changes = []
    for cid in sorted(set(sa) | set(sb)):
        ra, rb = sa.get(cid), sb.get(cid)
        if ra is not None and rb is not None and ra[1] == rb[1] and ra[4] == rb[4]:
            continue  # same status (so same reason) and same version
        x, y = _state(ra, a), _state(rb, b)
        changes.append(
            {
                "id": cid,
                "from": x.to_json(),
                "to": y.to_json(),
                "cause": _cause(x, y, ha, hb, da, db),
            }
        )
    return {
        "from": a,
        "to": b,
        "as_of": {"from": ha.as_of, "to": hb.as_of},
        "subject": {"from": ha.subject, "to": hb.subject},
        "used": {"from": ha.used, "to": hb.used},
        "budget": {"from": ha.budget, "to": hb.budget},
        "changes": changes,
    }


# --------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------


@dataclass
class VerifyResult:
    ok: bool
    entries: int
    head: str
    first_bad: dict[str, Any] | None
    decisions: int = 0
    # Proofs and checkpoints: the tree checkpoint verified against, and for
    # `--since` the size it started from and the number of entries checked.
    checkpoint: dict[str, Any] | None = None
    since: int | None = None
    checked: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "ok": self.ok,
            "entries": self.entries,
            "head": self.head,
            "first_bad": self.first_bad,
        }
        if self.checkpoint is not None:
            out["checkpoint"] = self.checkpoint
        if self.since is not None:
            out["since"] = self.since
            out["checked"] = self.checked
        return out


class _Problems:
    """The lowest-numbered problem wins; the first reason found for it is kept."""

    def __init__(self) -> None:
        self.found: dict[int, tuple[str, str]] = {}

    def add(self, seq: int, kind: str, why: str) -> None:
        known = self.found.get(seq)
        if known is None:
            self.found[seq] = (kind, why)
        elif known[0] == "?" and kind != "?":
            # A deleted entry's kind is learnt from the records that reference it.
            self.found[seq] = (kind, known[1])

    def first(self) -> dict[str, Any] | None:
        if not self.found:
            return None
        seq = min(self.found)
        kind, why = self.found[seq]
        return {"seq": seq, "kind": kind, "why": why}


def verify(
    conn: Connection,
    checkpoint: str | None = None,
    *,
    tree_checkpoint: Checkpoint | None = None,
    since: Checkpoint | None = None,
) -> VerifyResult:
    """Recompute every content, record and pack digest and the whole chain.

    `tree_checkpoint`: also, the tree of its size recomputed from the entries must
    have its root. `since`: check only the entries after that checkpoint, and that
    the stored tree extends it (work proportional to the new entries).
    """
    # One object per decision and version read: the cyclic collector, paused as
    # for a build, would otherwise rescan the growing heap again and again.
    with collector_paused():
        return _verify(conn, checkpoint, tree_checkpoint, since)


def _verify(
    conn: Connection,
    checkpoint: str | None,
    tree_checkpoint: Checkpoint | None,
    since: Checkpoint | None,
) -> VerifyResult:
    from ledger.store import tree
    from ledger.store.documents import retract_payload
    from ledger.store.ingest import ingest_payload_digest

    problems = _Problems()
    after = 0 if since is None else since.size  # entries up to `after` are not read
    chain = conn.execute(select(entries).where(entries.c.seq > after).order_by(entries.c.seq)).all()
    kinds = {}
    prev = GENESIS
    if since is not None and after:
        anchor = tree.entry_row(conn, after)  # the new entries chain from it
        if anchor is not None:
            kinds[after], prev = anchor.kind, anchor.entry_hash
    expected_seq = after + 1
    for e in chain:
        kinds[e.seq] = e.kind
        if e.seq != expected_seq:
            problems.add(expected_seq, "?", f"entry {expected_seq} is missing (found {e.seq} next)")
            expected_seq = e.seq
        if e.kind not in KINDS:
            problems.add(e.seq, e.kind, f"unknown entry kind {e.kind!r}")
        if e.prev_hash != prev:
            problems.add(e.seq, e.kind, "previous-hash link does not match the entry before it")
        if entry_hash(e.seq, e.kind, e.payload_digest, e.prev_hash) != e.entry_hash:
            problems.add(e.seq, e.kind, "entry hash does not match its fields")
        prev = e.entry_hash
        expected_seq += 1
    payload = {e.seq: e.payload_digest for e in chain}

    def check_payload(seq: int, kind: str, computed: str, what: str) -> None:
        if seq not in payload:
            problems.add(seq, kind, f"{what} references entry {seq}, which does not exist")
        elif kinds[seq] not in _KIND_GROUP[kind]:
            problems.add(seq, kinds[seq], f"{what} references entry {seq} of kind {kinds[seq]}")
        elif payload[seq] != computed:
            problems.add(seq, kind, f"{what} does not match the entry's payload digest")

    # Ingest batches and the versions they added.
    stored_per_batch: dict[int, int] = dict(
        conn.execute(
            select(versions.c.batch_seq, func.count()).group_by(versions.c.batch_seq)
        ).all()
    )
    # The fields of every version the packs' check reads, taken as the versions
    # pass here: the versions are read once for both (with `since`, the reader
    # reads those the newer packs name).
    read: list[tuple[Any, ...]] | None = None if after else []
    for b in conn.execute(select(batches).where(batches.c.seq > after).order_by(batches.c.seq)):
        why = _bad_batch(b, stored_per_batch.get(b.seq, 0))
        computed, legacy = "", None  # legacy: written before schema 0010 (None: unknown)
        if why is None:
            names = _source_names(b.sources)
            computed = ingest_payload_digest(conn, b.seq, b.read_count, b.unchanged_count, names)
            legacy = False
            if payload.get(b.seq, computed) != computed:
                # A batch written before its file names were covered (and its
                # versions' scopes) has the older form; a changed name can never
                # match either form of a newer batch, nor make one look older.
                older = ingest_payload_digest(conn, b.seq, b.read_count, b.unchanged_count, None)
                if payload[b.seq] == older:
                    computed, legacy = older, True
        for bad in _bad_versions(conn, b.seq, legacy, read):
            problems.add(b.seq, "ingest", bad)
            break
        if why is not None:
            problems.add(b.seq, "ingest", f"ingest batch {b.seq}: {why}")
            continue
        check_payload(b.seq, "ingest", computed, f"ingest batch {b.seq}")
    # Versions under an entry that is not an ingest batch: rows slipped in beside
    # the batches would otherwise become candidates of every later build.
    orphans = conn.execute(
        select(versions.c.batch_seq, versions.c.chunk_id, versions.c.source_version)
        .where(versions.c.batch_seq > after, versions.c.batch_seq.not_in(select(batches.c.seq)))
        .order_by(versions.c.batch_seq, versions.c.vid)
    ).all()
    for o in orphans:
        problems.add(
            o.batch_seq,
            kinds.get(o.batch_seq, "?"),
            f"chunk {o.chunk_id}@{o.source_version} references entry {o.batch_seq}, "
            "which is not an ingest batch",
        )
    # Grants and revokes.
    by_entry: dict[int, list[Any]] = {}
    for g in conn.execute(
        select(grants).where(grants.c.entry_seq > after).order_by(grants.c.entry_seq, grants.c.id)
    ):
        by_entry.setdefault(g.entry_seq, []).append(g)
    for seq, rows in by_entry.items():
        odd = next(
            (
                r
                for r in rows
                if r.action not in ("grant", "revoke")
                or not isinstance(r.subject, str)
                or not isinstance(r.permission, str)
            ),
            None,
        )
        if odd is not None:
            problems.add(
                seq,
                kinds.get(seq, "?"),
                f"grant row of entry {seq} has an unknown action or a field of the wrong type",
            )
            continue
        actions = {r.action for r in rows}
        subjects = {r.subject for r in rows}
        if len(actions) != 1 or len(subjects) != 1:
            problems.add(
                seq, kinds.get(seq, "?"), "grant rows of one entry disagree on subject or action"
            )
            continue
        action = actions.pop()
        check_payload(
            seq,
            action,
            grant_payload(subjects.pop(), action, [r.permission for r in rows]),
            f"{action} of entry {seq}",
        )
    # Policies.
    for p in conn.execute(
        select(policies).where(policies.c.entry_seq > after).order_by(policies.c.entry_seq)
    ):
        try:
            labels = json.loads(p.allowed_trust)
            if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
                raise ValueError
            pol = Policy(tuple(labels), p.budget, p.retain_bodies)
        except (TypeError, ValueError):
            problems.add(
                p.entry_seq,
                "policy",
                f"policy of entry {p.entry_seq}: allowed trust is not a JSON list",
            )
            continue
        if (
            canonical_json(labels) != p.allowed_trust
            or not _int_or_none(p.budget)
            or not _int_or_none(p.retain_bodies)
        ):
            # The payload digest covers the parsed values; what is stored (and shown)
            # must be exactly their canonical form.
            problems.add(
                p.entry_seq,
                "policy",
                f"policy of entry {p.entry_seq}: stored fields are not in their recorded form",
            )
            continue
        check_payload(p.entry_seq, "policy", policy_payload(pol), f"policy of entry {p.entry_seq}")
    # Packs and every decision.
    n_decisions = 0
    # All versions were read above unless the check stopped at a bad one or some
    # are under no ingest batch: then the reader reads them.
    whole = read is not None and len(read) == sum(stored_per_batch.values())
    reader = VerifyReader(conn, after, read if whole else None)
    del read  # the reader holds what it needs of it
    for head in conn.execute(
        select(packs).where(packs.c.entry_seq > after).order_by(packs.c.pack_no)
    ):
        why, count = _check_pack(reader, head)
        n_decisions += count
        if why:
            problems.add(head.entry_seq, "pack", f"pack {head.pack_no}: {why}")
            continue
        check_payload(
            head.entry_seq,
            "pack",
            pack_entry_payload(
                head.pack_no, head.pack_digest, head.input_digest, head.ledger_mark, trace_ids(head)
            ),
            f"pack {head.pack_no}",
        )
    # Retractions: the rows of each retract entry against its payload.
    retracted = {s: v for s, v in _retract_entries(conn).items() if s > after}
    for seq, (ids, days, reasons) in retracted.items():
        if len(days) != 1 or len(reasons) != 1:
            problems.add(
                seq, kinds.get(seq, "?"), "retraction rows of one entry disagree on date or reason"
            )
            continue
        check_payload(
            seq,
            "retract",
            retract_payload(ids, days.pop(), reasons.pop()),
            f"retraction of entry {seq}",
        )
    # Erasures: the versions of each erase entry, their metadata digests and reason.
    from ledger.core.erasure import erase_payload
    from ledger.store.erase import erase_entries

    erased = {s: v for s, v in erase_entries(conn).items() if s > after}
    for seq, (items, erase_reasons) in erased.items():
        if len(erase_reasons) != 1:
            problems.add(seq, kinds.get(seq, "?"), "erasure rows of one entry disagree on reason")
            continue
        check_payload(
            seq, "erase", erase_payload(items, erase_reasons.pop()), f"erasure of entry {seq}"
        )
    # Every entry must have its records (an entry whose rows were deleted).
    recorded = set(by_entry) | set(retracted) | set(erased)
    recorded |= set(conn.scalars(select(batches.c.seq).where(batches.c.seq > after)))
    recorded |= set(conn.scalars(select(policies.c.entry_seq).where(policies.c.entry_seq > after)))
    recorded |= set(conn.scalars(select(packs.c.entry_seq).where(packs.c.entry_seq > after)))
    for e in chain:
        if e.seq not in recorded:
            problems.add(e.seq, e.kind, "the entry's records are missing")
    chain_head = Head(chain[-1].seq, chain[-1].entry_hash) if chain else read_head(conn)
    # The Merkle tree (proofs and checkpoints): recomputed from the entries, or for
    # `since` extended from the checkpoint's stored frontier by the new entries.
    if since is None:
        tree_problems = tree.check_whole(conn, chain, tree_checkpoint)
    else:
        tree_problems = tree.check_since(conn, since, chain)
    for seq, why in tree_problems:
        problems.add(seq, kinds.get(seq, "?"), why)
    if checkpoint is not None:
        seq, want = parse_checkpoint(checkpoint)
        have = next((e for e in chain if e.seq == seq), None)
        if seq == 0:
            # `ledger head` of an empty ledger: every ledger extends it.
            if want != GENESIS:
                problems.add(1, "?", "checkpoint 0 must carry the genesis hash (64 zeros)")
        elif have is None:
            problems.add(seq, "?", f"checkpoint entry {seq} is missing: the ledger was truncated")
        elif have.entry_hash != want:
            problems.add(
                seq, have.kind, "entry hash differs from the checkpoint: history was rewritten"
            )
    first = problems.first()
    held = since or tree_checkpoint
    return VerifyResult(
        first is None,
        after + len(chain),
        chain_head.entry_hash,
        first,
        n_decisions,
        checkpoint=None if held is None else tree.checkpoint_json(held),
        since=None if since is None else since.size,
        checked=None if since is None else len(chain),
    )


_KIND_GROUP = {
    "ingest": {"ingest"},
    "grant": {"grant"},
    "revoke": {"revoke"},
    "policy": {"policy"},
    "pack": {"pack"},
}
_KIND_GROUP["retract"] = {"retract"}
_KIND_GROUP["erase"] = {"erase"}


def _retract_entries(conn: Connection) -> dict[int, tuple[list[str], set[str], set[str | None]]]:
    t = retractions
    out: dict[int, tuple[list[str], set[str], set[str | None]]] = {}
    rows: Iterable[tuple[int, str, str, str | None]] = conn.execute(
        select(t.c.entry_seq, t.c.chunk_id, t.c.from_date, t.c.reason).order_by(
            t.c.entry_seq, t.c.chunk_id
        )
    )
    for seq, cid, day, why in rows:
        ids, days, reasons = out.setdefault(seq, ([], set(), set()))
        ids.append(cid)
        days.add(day)
        reasons.add(why)
    return out


def is_seq_hash(text: str) -> bool:
    """Whether a --checkpoint value is the `SEQ:HASH` form (else: a checkpoint file)."""
    return re.fullmatch(r"\s*\d+:[0-9a-f]{64}\s*", text) is not None


def _int(value: Any) -> bool:
    """An integer as the ledger stores it (SQLite may hold any type in any column)."""
    return type(value) is int


def _int_or_none(value: Any) -> bool:
    return value is None or type(value) is int


def _bad_batch(b: Any, stored: int) -> str | None:
    """A batch row whose fields are not what ingest wrote (the counts and the
    sources are shown by the ledger; the payload digest covers read/unchanged,
    the sources and the versions, so new_count must equal the versions stored
    under it)."""
    if not all(_int(v) for v in (b.seq, b.read_count, b.new_count, b.unchanged_count)):
        return "a count is not an integer"
    if b.new_count != stored:
        return f"records {b.new_count} new versions, {stored} are stored under it"
    if _source_names(b.sources) is None:
        return "its list of sources is not in its recorded form"
    return None


def _source_names(sources: Any) -> list[str] | None:
    """A batch's file names (`batches.sources`), or None unless stored exactly as
    ingest writes them (`json.dumps` of a list of strings)."""
    try:
        names = json.loads(sources) if isinstance(sources, str) else None
    except ValueError:
        return None
    if (
        not isinstance(names, list)
        or not all(isinstance(n, str) for n in names)
        or json.dumps(names) != sources
    ):
        return None
    return names


def parse_checkpoint(text: str) -> tuple[int, str]:
    m = re.fullmatch(r"(\d+):([0-9a-f]{64})", text.strip())
    if not m:
        raise InputError(f"--checkpoint {text!r}: expected SEQ:HASH as printed by `ledger head`")
    return int(m.group(1)), m.group(2)


_INT, _STR = {int}, {str}
_VERSION_INTS = attrgetter("vid", "estimated_tokens", "priority", "batch_seq")
_VERSION_TEXTS = attrgetter(
    "chunk_id",
    "source_version",
    "section",
    "source_uri",
    "effective_from",
    "required_permission",
    "trust",
    "dedupe_key",
    "content_digest",
    "record_digest",
)


def _bad_versions(
    conn: Connection, seq: int, legacy: bool | None, read: list[tuple[Any, ...]] | None
) -> Iterator[str]:
    """Versions of one batch whose stored digests do not match their fields (each
    version's `VERSION_COLUMNS` appended to `read`, if given, as it is checked)."""
    return _bad_rows(conn, versions.c.batch_seq == seq, legacy=legacy, read=read)


def _bad_rows(
    conn: Connection,
    condition: Any,
    only: set[int] | None = None,
    legacy: bool | None = None,
    read: list[tuple[Any, ...]] | None = None,
) -> Iterator[str]:
    """Versions of a batch whose stored digests do not match their fields.

    `legacy`: the batch was written before schema 0010 (see `_scope_problem`);
    None when that is not known (replay, a batch whose own fields are bad).
    `read`: each version's `VERSION_COLUMNS` are appended to it as it is checked.
    On SQLite the body is read as its bytes (and its storage type), so that a
    body that is not valid UTF-8, or stored as a BLOB, is reported by name
    instead of failing the read (whose message would quote the body)."""
    cols = [c for c in versions.c if c.name != "content"]
    if conn.dialect.name == "sqlite":
        extra = [
            cast(versions.c.content, LargeBinary).label("raw"),
            func.typeof(versions.c.content).label("content_type"),
        ]
    else:
        extra = [versions.c.content.label("raw"), literal("text").label("content_type")]
    # An erased body (NULL) is accepted where an erase entry names the version;
    # its metadata is then checked against the erasure's metadata digest.
    extra += [
        erasures.c.metadata_digest.label("erased_meta"),
        erasures.c.entry_seq.label("erased_by"),
    ]
    query = (
        select(*cols, *extra)
        .select_from(versions.outerjoin(erasures, erasures.c.vid == versions.c.vid))
        .where(condition)
        .order_by(versions.c.vid)
    )
    # The driver's tuples, streamed (PostgreSQL: a server-side cursor): every
    # version of the ledger passes here. `verify` stops at the first bad version:
    # closing this generator closes the cursor.
    names = [c.name for c in query.selected_columns]
    yield from _bad_in(names, stream_tuples(conn, query, 5000), only, legacy, read)


def _legacy_scope(source_uri: str) -> str | None:
    """The scope a version stored before schema 0010 had: its URI decided it (the
    rule migration 0010 back-fills by)."""
    return EXCHANGE_SCOPE if source_uri.startswith("transcript://") else None


def _scope_problem(rec: ChunkRecord, stored: str, legacy: bool | None) -> str | None:
    """Why a version's fields, scope included, do not match its stored record digest.

    Versions of batches written since schema 0010 hash their scope when set. An
    older version's digest does not cover it, so its scope must be the one its URI
    gave it then; whether a batch is older is told by its entry's payload form,
    which the chain covers. Unknown (None): either form is accepted."""
    if legacy is not True and rec.record_digest == stored:
        return None
    if legacy is True or (legacy is None and rec.scope is not None):
        if rec.scope != _legacy_scope(rec.source_uri):
            return "its scope is not the one it was ingested with"
        if record_digest(replace(rec, scope=None)) == stored:
            return None
    return "fields do not match the record digest"


def _bad_in(
    names: list[str],
    result: Iterable[tuple[Any, ...]],
    only: set[int] | None,
    legacy: bool | None,
    read: list[tuple[Any, ...]] | None,
) -> Iterator[str]:
    from ledger.store.ingest import record_from_row

    # Named tuples of the stored columns and the decoded content: a ledger holds
    # up to millions of versions, read here by field.
    make = row_type("stored", [*names, "content"])._make  # in C, as a plain tuple
    pick = itemgetter(*map(names.index, VERSION_COLUMNS))
    for values in result:
        row = make((*values, None))
        if only is not None and row.vid not in only:
            continue
        if read is not None:
            read.append(pick(values))
        why = _bad_version(row, legacy)
        if why is None:
            continue  # the common case: named only in a problem
        if why == _RECORD:  # a body that matches, but fields that do not: the record tells
            try:
                rec = record_from_row(row._replace(content=_body(row.raw)))
                why = _scope_problem(rec, row.record_digest, legacy)
            except Exception as exc:  # a tampered row may not even be a valid record
                why = f"stored fields are not a valid record ({type(exc).__name__})"
            if why is None:
                continue
        yield f"chunk {row.chunk_id}@{row.source_version}: {why}"


_RECORD = "its record digest does not match its fields"  # left to `_scope_problem`


def _bad_version(row: Any, legacy: bool | None) -> str | None:
    """Why a stored version row (its body as stored, `raw`) is not what ingest
    wrote, or `_RECORD` when its record digest needs its record to tell, or None."""
    if (
        {*map(type, _VERSION_INTS(row))} != _INT  # as `_int`: no bool, no float
        or {*map(type, _VERSION_TEXTS(row))} != _STR  # the driver's own str
        or not (row.expires_on is None or type(row.expires_on) is str)
        or (row.required not in (0, 1) or type(row.required) not in (int, bool))
    ):
        return "a stored field has the wrong type"
    if row.raw is None and row.erased_by is not None:
        return _bad_erased(row, legacy)
    if row.raw is None:
        return "its body is missing and no erase entry names it"
    if row.erased_by is not None:
        return f"erased by entry {row.erased_by}, yet a body is stored again"
    if row.content_type != "text":
        return f"its content is stored as {row.content_type}, not text"
    try:
        content = _body(row.raw)
    except UnicodeDecodeError:
        return "its stored content is not valid UTF-8"
    if content_digest(content) != row.content_digest:
        return "content does not match its content digest"
    if legacy is not True and _flat_digest(row, content) == row.record_digest:
        return None  # the common case, without a record (`_scope_problem` would agree)
    return _RECORD


def _body(raw: Any) -> str:
    """A stored body as text (SQLite's is read as its bytes)."""
    return bytes(raw).decode("utf-8") if isinstance(raw, (bytes, memoryview)) else str(raw)


def _flat_digest(row: Any, content: str) -> str | None:
    """The record digest of a stored version without title and path, from its row
    (None: it has them, or its fields are no valid record: the record tells)."""
    if row.title is not None or row.path is not None:
        return None
    try:
        return flat_record_digest(
            content,
            row.dedupe_key,
            row.effective_from,
            row.estimated_tokens,
            row.expires_on,
            row.chunk_id,
            row.priority,
            bool(row.required),
            row.required_permission,
            row.scope,
            row.section,
            row.source_uri,
            row.source_version,
            row.trust,
        )
    except Exception:  # a tampered row: `record_from_row` and its digest report it
        return None


def _bad_erased(row: Any, legacy: bool | None) -> str | None:
    """An erased version: its fields against the metadata digest its erasure kept.

    The scope as for a stored body (`_scope_problem`): a version of a batch
    written before schema 0010 may have been erased before its scope was stored
    (its metadata digest then has none), and its scope is its URI's."""
    from ledger.core.erasure import metadata_digest
    from ledger.store.ingest import record_from_row

    try:
        rec = record_from_row(row._replace(content=""))
        if legacy is not True and metadata_digest(rec.to_json(), row.content_digest) == (
            row.erased_meta
        ):
            return None
        if legacy is not False and rec.scope == _legacy_scope(rec.source_uri):
            forms = (rec, replace(rec, scope=None))
            if row.erased_meta in {metadata_digest(r.to_json(), row.content_digest) for r in forms}:
                return None
    except Exception as exc:  # a tampered row may not even be a valid record
        return f"stored fields are not a valid record ({type(exc).__name__})"
    return "fields do not match the metadata digest its erasure recorded"


def _check_pack(reader: VerifyReader, head: Any) -> tuple[str | None, int]:
    """Recompute a pack's figures, input digest and pack digest from its rows
    (plain tuples: a large ledger holds millions of decisions)."""
    bad = bad_pack_types(head)
    if bad is not None:
        return bad, 0
    try:
        found, pv = reader.decisions(head.pack_no)
    except IntegrityError as exc:
        return str(exc).split(": ", 1)[-1], 0
    named = pv.named
    n = len(found)
    try:
        inputs = inputs_of(head, reader.conn)
    except IntegrityError:
        return "its recorded grants or policy snapshot is not readable", n
    if (
        canonical_json(list(inputs.grants)) != head.grants
        or canonical_json(inputs.policy.to_json()) != head.policy
    ):
        # The input digest covers the parsed snapshots; what is stored (and shown by
        # `show --json`) must be exactly their canonical form, without extra keys.
        return "its grants or policy snapshot is not in its recorded form", n
    if n != head.candidate_count:
        return f"{n} decision rows, the pack records {head.candidate_count} candidates", n
    statuses = list(map(_status_of, found))
    admitted = sorted(
        [found[i] + named[i] for i in compress(count(), map(not_, statuses))], key=_position
    )
    if [r[_POSITION] for r in admitted] != list(range(len(admitted))):
        return "admitted positions are not 0..n-1", n
    used = sum(r[_TOKENS] for r in admitted)
    if used != head.used:
        return f"admitted tokens add up to {used}, the pack records used {head.used}", n
    if used > head.budget:
        return f"used {used} exceeds the budget {head.budget}", n
    tokens = list(map(_tokens_of, found))
    if not safe_ints(tokens):
        # No build writes one (the manifest is RFC 8785 JSON): a changed row.
        for r in map(add, found, named):
            if not safe_ints([r[_TOKENS]]):
                return f"{reader.name(r)}: tokens outside JSON's safe integer range", n
    if head.counter == ESTIMATED and tokens != list(map(_version_estimate, named)):
        for r in map(add, found, named):
            if r[_TOKENS] != r[_ESTIMATED]:
                return f"{reader.name(r)}: tokens differ from the version's estimate", n
    why, entries = _evictions(reader, found, named, statuses)
    if why is not None:
        return why, n
    if pv.candidates is None:  # else the same as the previous pack's
        pv.candidates = trusted_json([named[i][0] for i in pv.order])
    ind = input_digest_of(inputs, pv.candidates)
    if ind != head.input_digest:
        return "input digest does not match the recorded inputs and candidates", n
    # The evictions by record digest (an admitted decision has no entry).
    evicted = list(filter(None, map(entries.__getitem__, pv.order)))
    pd = manifest_digest(inputs, ind, [(r[_DIGEST], r[_TOKENS]) for r in admitted], evicted)
    if pd != head.pack_digest:
        return "pack digest does not match its decisions", n
    return None, n


def _evictions(
    reader: VerifyReader,
    found: list[tuple[Any, ...]],
    named: list[tuple[Any, ...]],
    statuses: list[Any],
) -> tuple[str | None, list[str | None]]:
    """The eviction entry of each decision as `manifest_digest` takes them (None:
    admitted), or the first decision whose status is unknown or whose detail cannot
    be made.

    An entry is decided by its decision's fields (its version's are the same in
    every pack): each decision is compared with the previous pack's of its vid
    first (in C), as the same versions are mostly decided alike from pack to pack."""
    vids = list(map(_first, found))
    last_vids, last_found, last_entries = reader.entries
    if vids != last_vids:  # the previous pack's decisions and entries at this pack's vids
        at = dict(zip(last_vids, range(len(last_vids)), strict=True))
        where = list(map(at.get, vids))
        last_found = [None if j is None else last_found[j] for j in where]
        last_entries = [None if j is None else last_entries[j] for j in where]
    entries: list[str | None] = last_entries.copy()
    same = list(map(eq, found, last_found))
    for i in compress(count(), map(not_, statuses)):
        entries[i] = None  # admitted
    heads = reader.heads
    changed: list[int] = []  # the decisions whose entries are made here
    made: list[str] = []  # their heads
    why = None
    for i in compress(count(), map(not_, same)):  # not as in the previous pack
        status = statuses[i]
        if not status:
            continue  # admitted
        known = heads.get(status)
        if known is None:
            why = f"{reader.name(found[i] + named[i])}: unknown status {status}"
            break
        reason, made_of, extended, versioned, texts = known
        # A detail decided by the decision's own fields: no row with its version's.
        key = made_of(found[i] + named[i] if versioned else found[i])
        text = texts.get(key)
        if text is None:
            r = found[i] + named[i]
            row = reader.named(reader.extended(r) if extended else r)
            if status in _REFERRING and row.ref_digest is None:
                why = f"{reader.name(r)}: {reason} without the version it refers to"
                break
            text = texts[key] = eviction_head(reason, detail_of(reason, row))
        changed.append(i)
        made.append(text)
    # The entries at once, with no call per eviction (each version's record digest
    # and each decision's tokens, checked to be in JSON's safe range before).
    digests = list(map(_first, map(named.__getitem__, changed)))
    tokens = list(map(_tokens_of, map(found.__getitem__, changed)))
    for i, entry in zip(changed, eviction_entries(made, digests, tokens), strict=True):
        entries[i] = entry
    if why is not None:
        return why, []
    reader.entries = (vids, found, entries)
    return None, entries


# Evictions whose detail names another version: a row must have it.
_REFERRING = {REASON_CODES["superseded"], REASON_CODES["duplicate"]}


_STATUS, _TOKENS, _POSITION, _DIGEST, _ESTIMATED = (
    VerifyRow._fields.index(f)
    for f in ("status", "tokens", "position", "record_digest", "estimated_tokens")
)
_first, _status_of, _tokens_of = itemgetter(0), itemgetter(_STATUS), itemgetter(_TOKENS)
# A version's estimate among its fields (`PackVersions.named`).
_version_estimate = itemgetter(_ESTIMATED - VerifyRow._fields.index("record_digest"))


def _position(row: tuple[Any, ...]) -> int:
    position = row[_POSITION]
    return -1 if position is None else position


# --------------------------------------------------------------------------
# replay
# --------------------------------------------------------------------------


@dataclass
class ReplayResult:
    pack: int
    identical: bool
    recorded: str
    replayed: str
    difference: str | None
    # Candidates whose bodies were erased, so that the pack's counter could not
    # recount them: their recorded counts were used (only a real counter's pack).
    not_recounted: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pack": self.pack,
            "identical": self.identical,
            "recorded_pack_digest": self.recorded,
            "replayed_pack_digest": self.replayed,
            "first_difference": self.difference,
        }
        if self.not_recounted:
            out["not_recounted"] = {
                "count": len(self.not_recounted),
                "versions": self.not_recounted,
                "why": "their bodies were erased; the pack's recorded token counts were used",
            }
        return out


def replay(conn: Connection, pack_no: int) -> ReplayResult:
    """Rebuild a pack from the ledger as it stood at its mark; compare it with the record.

    Identical means the rebuild's pack digest equals the recorded one AND every
    recorded decision row (status, reason, detail, tokens, position) and figure
    equals the rebuild's: the pack digest is stored beside the rows, so a changed
    row would otherwise replay as "identical".
    """
    head = pack_header(conn, pack_no)
    inputs = inputs_of(head, conn)
    if inputs.counter != ESTIMATED:
        name = inputs.counter.split("@", 1)[0]
        now = counter_id(name)
        if now != inputs.counter:
            return ReplayResult(
                pack_no,
                False,
                head.pack_digest,
                "",
                f"the pack was costed with {inputs.counter}; this installation has {now}",
            )
    candidates, vid_of = candidates_for(conn, inputs, ESTIMATED)  # a retrieval: its recorded list
    # Recompute, never trust, the digests of the rows the rebuild uses: a field
    # changed behind the ledger's back must not replay as "identical".
    tampered = next(
        _bad_rows(conn, versions.c.batch_seq <= inputs.mark, set(vid_of.values())), None
    )
    if tampered is not None:
        return ReplayResult(pack_no, False, head.pack_digest, "", f"candidate {tampered}")
    not_recounted: list[str] = []
    if inputs.counter != ESTIMATED:
        # Recount rather than trust the cache: replay must not inherit a bad count.
        # An erased body cannot be recounted: its count is the pack's recorded one.
        candidates, not_recounted = _recount(conn, candidates, vid_of, inputs.counter, pack_no)
    try:
        ctx = decide(inputs, candidates)
    except LedgerError as exc:  # a required chunk now failing: a difference, not a crash
        return ReplayResult(pack_no, False, head.pack_digest, "", f"the rebuild failed: {exc}")
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
    from dataclasses import replace

    from ledger.tokens import text_counter

    count = text_counter(counter.split("@", 1)[0])
    content = {
        r.vid: r.content
        for r in conn.execute(
            select(versions.c.vid, versions.c.content).where(
                versions.c.vid.in_(list(vid_of.values()))
            )
        )
    }
    recorded = {
        vid: tokens
        for vid, tokens in conn.execute(
            select(decisions.c.vid, decisions.c.tokens).where(decisions.c.pack_no == pack_no)
        )
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


def _first_difference(
    conn: Connection, head: Any, ind: str, candidates: list[Any], ctx: Any
) -> str | None:
    """The first way the recorded pack differs from the rebuild, or None."""
    from ledger.core.context import thaw
    from ledger.store.packs import decision_rows

    rows = decision_rows(conn, head.pack_no)
    now = {c.record_digest: c for c in candidates}
    # A version on one side only, recorded or rebuilt: named id@version by its digest.
    recorded_names = {r.record_digest: f"{r.chunk_id}@{r.source_version}" for r in rows}
    now_names = {d: f"{c.id}@{c.source_version}" for d, c in now.items()}
    for these, others, happened in (
        (recorded_names, now_names, "was recorded but is no longer in the ledger"),
        (now_names, recorded_names, "is in the ledger at the pack's mark but was not recorded"),
    ):
        only = sorted(set(these) - set(others))
        if only:
            return f"candidate {these[only[0]]} {happened} ({len(only)} such)"
    if ind != head.input_digest:
        return (
            "the inputs (grants, policy, budget, counter or selector) differ from the recorded ones"
        )
    replayed: dict[str, tuple[str, str | None, dict[str, Any] | None]] = {
        c.record_digest: ("admitted", None, None) for c in ctx.items
    }
    replayed.update(
        {e.candidate.record_digest: ("evicted", e.reason, thaw(e.detail)) for e in ctx.evicted}
    )
    for r in sorted(rows, key=lambda r: (r.chunk_id, r.source_version)):
        name = f"{r.chunk_id}@{r.source_version}"
        reason = REASON_NAMES.get(r.status)
        if r.status != 0 and reason is None:
            return (
                f"{name}: recorded an unknown status {r.status}, "
                f"replay gives {_said(replayed[r.record_digest])}"
            )
        was = ("admitted", None) if r.status == 0 else ("evicted", reason)
        got = replayed[r.record_digest]
        if got[:2] != was:
            return f"{name}: recorded {was[1] or was[0]}, replay gives {_said(got)}"
        c = now[r.record_digest]
        if c.tokens != r.tokens:
            return f"{name}: recorded {r.tokens} tokens, replay counts {c.tokens}"
        if reason is not None:
            detail = detail_of(reason, r)
            if detail != got[2]:
                return (
                    f"{name}: recorded {reason} detail {json.dumps(detail, sort_keys=True)}, "
                    f"replay gives {json.dumps(got[2], sort_keys=True)}"
                )
    admitted_rows = [r for r in rows if r.status == 0]
    if sorted(-1 if r.position is None else r.position for r in admitted_rows) != list(
        range(len(admitted_rows))
    ):
        return "the recorded admitted positions are not 0..n-1"
    order_rec = [r.record_digest for r in sorted(admitted_rows, key=lambda r: r.position)]
    if [c.record_digest for c in ctx.items] != order_rec:
        return "the admitted output order differs"
    if head.used != ctx.admitted_tokens():
        return (
            f"the pack records used {head.used}, the rebuild admits {ctx.admitted_tokens()} tokens"
        )
    if head.candidate_count != len(candidates):
        return (
            f"the pack records {head.candidate_count} candidates, the rebuild has {len(candidates)}"
        )
    return None


def _said(state: tuple[str, str | None, Any]) -> str:
    return state[1] or state[0]


__all__ = ["REASON_CODES", "diff", "replay", "verify", "why_evicted"]
