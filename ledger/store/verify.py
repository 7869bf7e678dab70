"""`ledger verify`: recompute every digest from the stored rows, and the whole chain.

The chain of entries first (docs/reference/digests.md, chain), then one checker
per kind of entry (`CHECKERS`): each reads its table's rows, recomputes the
entry's payload digest from them and compares it with the chain's, and returns
the entries it found records of. Then every entry must have records, the Merkle
tree must be the one its entries make (docs/reference/proofs.md), and an entry
checkpoint `SEQ:HASH` must still be in the chain. The lowest-numbered entry with
a problem is reported (docs/reference/json.md, verify).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, func, select

from ledger.core.canonical import canonical_json
from ledger.core.chain import GENESIS, entry_hash, pack_entry_payload
from ledger.core.checkpoint import Checkpoint, parse_seq_hash
from ledger.core.erasure import erase_payload
from ledger.core.errors import InputError
from ledger.core.results import VerifyResult
from ledger.store import tree
from ledger.store.access import Policy, grant_payload, policy_payload
from ledger.store.chain import KINDS, Head, read_head
from ledger.store.documents import reinstate_payload, retract_payload
from ledger.store.erase import erase_entries
from ledger.store.ingest import ingest_payload_digest
from ledger.store.inputs import trace_ids
from ledger.store.schema import (
    batches,
    entries,
    grants,
    packs,
    policies,
    reinstatements,
    retractions,
    versions,
)
from ledger.store.verify_packs import VerifyReader, check_pack
from ledger.store.verify_rows import bad_rows

INGEST, GRANT, REVOKE, POLICY, PACK, RETRACT, ERASE, REINSTATE = KINDS
_UNKNOWN = "?"  # the kind of an entry that is missing


class _Problems:
    """The lowest-numbered problem wins; the first reason found for it is kept."""

    def __init__(self) -> None:
        self.found: dict[int, tuple[str, str]] = {}

    def add(self, seq: int, kind: str, why: str) -> None:
        known = self.found.get(seq)
        if known is None:
            self.found[seq] = (kind, why)
        elif known[0] == _UNKNOWN and kind != _UNKNOWN:
            # A deleted entry's kind is learnt from the records that reference it.
            self.found[seq] = (kind, known[1])

    def first(self) -> dict[str, Any] | None:
        if not self.found:
            return None
        seq = min(self.found)
        kind, why = self.found[seq]
        return {"seq": seq, "kind": kind, "why": why}


@dataclass
class _Run:
    """One verify: the entries read (after `after`), their kinds and payload
    digests, the problems found, and what one checker hands to a later one."""

    conn: Connection
    after: int
    problems: _Problems
    chain: list[Any]
    kinds: dict[int, str]
    payload: dict[int, str] = field(default_factory=dict)
    # The versions' `VERSION_COLUMNS`, read by the batches' check for the packs'.
    read: list[tuple[Any, ...]] | None = None
    stored_versions: int = 0
    decisions: int = 0

    def kind_at(self, seq: int) -> str:
        return self.kinds.get(seq, _UNKNOWN)

    def add(self, seq: int, kind: str, why: str) -> None:
        self.problems.add(seq, kind, why)

    def check_payload(self, seq: int, kind: str, computed: str, what: str) -> None:
        """The records of entry `seq` (of `kind`) against its payload digest."""
        if seq not in self.payload:
            self.add(seq, kind, f"{what} references entry {seq}, which does not exist")
        elif self.kinds[seq] != kind:
            self.add(
                seq, self.kinds[seq], f"{what} references entry {seq} of kind {self.kinds[seq]}"
            )
        elif self.payload[seq] != computed:
            self.add(seq, kind, f"{what} does not match the entry's payload digest")


def _read_chain(conn: Connection, after: int, problems: _Problems) -> _Run:
    """The entries after `after`, each checked against the one before it."""
    chain = conn.execute(select(entries).where(entries.c.seq > after).order_by(entries.c.seq)).all()
    kinds: dict[int, str] = {}
    prev = GENESIS
    if after:
        anchor = tree.entry_row(conn, after)  # the new entries chain from it
        if anchor is not None:
            kinds[after], prev = anchor.kind, anchor.entry_hash
    expected_seq = after + 1
    for e in chain:
        kinds[e.seq] = e.kind
        if e.seq != expected_seq:
            problems.add(
                expected_seq, _UNKNOWN, f"entry {expected_seq} is missing (found {e.seq} next)"
            )
            expected_seq = e.seq
        if e.kind not in KINDS:
            problems.add(e.seq, e.kind, f"unknown entry kind {e.kind!r}")
        if e.prev_hash != prev:
            problems.add(e.seq, e.kind, "previous-hash link does not match the entry before it")
        if entry_hash(e.seq, e.kind, e.payload_digest, e.prev_hash) != e.entry_hash:
            problems.add(e.seq, e.kind, "entry hash does not match its fields")
        prev = e.entry_hash
        expected_seq += 1
    run = _Run(conn, after, problems, list(chain), kinds)
    run.payload = {e.seq: e.payload_digest for e in chain}
    return run


# --------------------------------------------------------------------------
# One checker per kind of entry: each returns the entries it found records of.
# --------------------------------------------------------------------------


def _batch_payload(run: _Run, b: Any) -> tuple[str, bool]:
    """An ingest batch's payload digest recomputed from its rows, and whether it
    has the form written before schema 0010 (`legacy`)."""
    names = _source_names(b.sources)
    computed = ingest_payload_digest(run.conn, b.seq, b.read_count, b.unchanged_count, names)
    if run.payload.get(b.seq, computed) == computed:
        return computed, False
    # A batch written before its file names were covered (and its versions'
    # scopes) has the older form; a changed name can never match either form of
    # a newer batch, nor make one look older.
    older = ingest_payload_digest(run.conn, b.seq, b.read_count, b.unchanged_count, None)
    if run.payload[b.seq] == older:
        return older, True
    return computed, False


def _check_batches(run: _Run) -> set[int]:
    """Ingest batches and the versions they added; versions under no batch."""
    conn, after = run.conn, run.after
    stored = select(versions.c.batch_seq, func.count()).group_by(versions.c.batch_seq)
    counted: Any = conn.execute(stored).all()
    stored_per_batch: dict[int, int] = dict(counted)
    run.stored_versions = sum(stored_per_batch.values())
    # The fields of every version the packs' check reads, taken as the versions
    # pass here: the versions are read once for both (with `after`, the reader
    # reads those the newer packs name).
    run.read = None if after else []
    seen: set[int] = set()
    for b in conn.execute(select(batches).where(batches.c.seq > after).order_by(batches.c.seq)):
        seen.add(b.seq)
        why = _bad_batch(b, stored_per_batch.get(b.seq, 0))
        computed, legacy = ("", None) if why is not None else _batch_payload(run, b)
        for bad in bad_rows(conn, versions.c.batch_seq == b.seq, legacy=legacy, read=run.read):
            run.add(b.seq, INGEST, bad)
            break
        if why is not None:
            run.add(b.seq, INGEST, f"ingest batch {b.seq}: {why}")
        else:
            run.check_payload(b.seq, INGEST, computed, f"ingest batch {b.seq}")
    _check_orphans(run)
    return seen


def _check_orphans(run: _Run) -> None:
    """Versions under an entry that is not an ingest batch: rows slipped in beside
    the batches would otherwise become candidates of every later build."""
    c = versions.c
    orphans = run.conn.execute(
        select(c.batch_seq, c.chunk_id, c.source_version)
        .where(c.batch_seq > run.after, c.batch_seq.not_in(select(batches.c.seq)))
        .order_by(c.batch_seq, c.vid)
    ).all()
    for o in orphans:
        run.add(
            o.batch_seq,
            run.kind_at(o.batch_seq),
            f"chunk {o.chunk_id}@{o.source_version} references entry {o.batch_seq}, "
            "which is not an ingest batch",
        )


def _grant_rows_problem(seq: int, rows: list[Any]) -> str | None:
    """Why the grant rows of entry `seq` are not what a grant or revoke wrote."""
    for r in rows:
        if r.action not in (GRANT, REVOKE) or not (
            isinstance(r.subject, str) and isinstance(r.permission, str)
        ):
            return f"grant row of entry {seq} has an unknown action or a field of the wrong type"
    if len({r.action for r in rows}) != 1 or len({r.subject for r in rows}) != 1:
        return "grant rows of one entry disagree on subject or action"
    return None


def _check_grants(run: _Run) -> set[int]:
    """Grants and revokes: the rows of each entry against its payload."""
    by_entry: dict[int, list[Any]] = {}
    query = select(grants).where(grants.c.entry_seq > run.after)
    for g in run.conn.execute(query.order_by(grants.c.entry_seq, grants.c.id)):
        by_entry.setdefault(g.entry_seq, []).append(g)
    for seq, rows in by_entry.items():
        why = _grant_rows_problem(seq, rows)
        if why is not None:
            run.add(seq, run.kind_at(seq), why)
            continue
        action, subject = rows[0].action, rows[0].subject
        computed = grant_payload(subject, action, [r.permission for r in rows])
        run.check_payload(seq, action, computed, f"{action} of entry {seq}")
    return set(by_entry)


def _policy_of(p: Any) -> tuple[Policy | None, str | None]:
    """A policy row as the policy it records, or why it is not in its recorded form."""
    try:
        labels = json.loads(p.allowed_trust)
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise ValueError
        pol = Policy(tuple(labels), p.budget, p.retain_bodies)
    except (TypeError, ValueError):
        return None, "allowed trust is not a JSON list"
    # The payload digest covers the parsed values; what is stored (and shown)
    # must be exactly their canonical form.
    if (
        canonical_json(labels) != p.allowed_trust
        or not _int_or_none(p.budget)
        or not _int_or_none(p.retain_bodies)
    ):
        return None, "stored fields are not in their recorded form"
    return pol, None


def _check_policies(run: _Run) -> set[int]:
    """Policies: each row against its entry's payload."""
    seen: set[int] = set()
    query = select(policies).where(policies.c.entry_seq > run.after)
    for p in run.conn.execute(query.order_by(policies.c.entry_seq)):
        seen.add(p.entry_seq)
        what = f"policy of entry {p.entry_seq}"
        pol, why = _policy_of(p)
        if pol is None:
            run.add(p.entry_seq, POLICY, f"{what}: {why}")
        else:
            run.check_payload(p.entry_seq, POLICY, policy_payload(pol), what)
    return seen


def _check_packs(run: _Run) -> set[int]:
    """Packs and every decision (`ledger.store.verify_packs`)."""
    # All versions were read by the batches' check unless it stopped at a bad one
    # or some are under no ingest batch: then the reader reads them.
    read = run.read
    whole = read is not None and len(read) == run.stored_versions
    reader = VerifyReader(run.conn, run.after, read if whole else None)
    run.read = None  # the reader holds what it needs of it
    seen: set[int] = set()
    query = select(packs).where(packs.c.entry_seq > run.after)
    for head in run.conn.execute(query.order_by(packs.c.pack_no)):
        seen.add(head.entry_seq)
        why, count = check_pack(reader, head)
        run.decisions += count
        if why:
            run.add(head.entry_seq, PACK, f"pack {head.pack_no}: {why}")
            continue
        computed = pack_entry_payload(
            head.pack_no, head.pack_digest, head.input_digest, head.ledger_mark, trace_ids(head)
        )
        run.check_payload(head.entry_seq, PACK, computed, f"pack {head.pack_no}")
    return seen


def _check_retractions(run: _Run) -> set[int]:
    """Retractions: the rows of each retract entry against its payload."""
    return _check_marks(run, retractions, RETRACT, retract_payload, "retraction")


def _check_reinstatements(run: _Run) -> set[int]:
    """Reinstatements: the rows of each reinstate entry against its payload."""
    return _check_marks(run, reinstatements, REINSTATE, reinstate_payload, "reinstatement")


def _check_marks(
    run: _Run,
    table: Any,
    kind: str,
    payload: Callable[[Sequence[str], str, str | None], str],
    what: str,
) -> set[int]:
    entries_of = {s: v for s, v in _mark_entries(run.conn, table).items() if s > run.after}
    for seq, (ids, days, reasons) in entries_of.items():
        if len(days) != 1 or len(reasons) != 1:
            run.add(seq, run.kind_at(seq), f"{what} rows of one entry disagree on date or reason")
            continue
        computed = payload(ids, days.pop(), reasons.pop())
        run.check_payload(seq, kind, computed, f"{what} of entry {seq}")
    return set(entries_of)


def _check_erasures(run: _Run) -> set[int]:
    """Erasures: the versions of each erase entry, their metadata digests and reason."""
    erased = {s: v for s, v in erase_entries(run.conn).items() if s > run.after}
    for seq, (items, erase_reasons) in erased.items():
        if len(erase_reasons) != 1:
            run.add(seq, run.kind_at(seq), "erasure rows of one entry disagree on reason")
            continue
        computed = erase_payload(items, erase_reasons.pop())
        run.check_payload(seq, ERASE, computed, f"erasure of entry {seq}")
    return set(erased)


# The checker of each kind of entry's records, in the order they run (the
# batches' check reads the versions the packs' check then uses). A revoke's rows
# are grant rows: the grants' checker checks both kinds.
CHECKERS: dict[str, Callable[[_Run], set[int]]] = {
    INGEST: _check_batches,
    GRANT: _check_grants,
    POLICY: _check_policies,
    PACK: _check_packs,
    RETRACT: _check_retractions,
    ERASE: _check_erasures,
    REINSTATE: _check_reinstatements,
}


# --------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------


def verify(
    conn: Connection,
    checkpoint: str | None = None,
    *,
    tree_checkpoint: Checkpoint | None = None,
    since: Checkpoint | None = None,
) -> VerifyResult:
    """Recompute every content, record and pack digest and the whole chain.

    `checkpoint`: an entry checkpoint `SEQ:HASH` (as `ledger head` prints it) that
    the chain must still hold. `tree_checkpoint`: also, the tree of its size
    recomputed from the entries must have its root. `since`: check only the
    entries after that checkpoint, and that the stored tree extends it (work
    proportional to the new entries).
    """
    entry_checkpoint = None
    if checkpoint is not None:
        entry_checkpoint = parse_seq_hash(checkpoint)
        if entry_checkpoint is None:
            raise InputError(
                f"checkpoint: {checkpoint!r}: expected SEQ:HASH as printed by `ledger head`",
                param="checkpoint",
            )
    problems = _Problems()
    after = 0 if since is None else since.size  # entries up to `after` are not read
    run = _read_chain(conn, after, problems)
    recorded: set[int] = set()
    for checker in CHECKERS.values():
        recorded |= checker(run)
    # Every entry must have its records (an entry whose rows were deleted).
    for e in run.chain:
        if e.seq not in recorded:
            problems.add(e.seq, e.kind, "the entry's records are missing")
    _check_tree(run, tree_checkpoint, since)
    if entry_checkpoint is not None:
        _check_entry_checkpoint(run, *entry_checkpoint)
    chain = run.chain
    chain_head = Head(chain[-1].seq, chain[-1].entry_hash) if chain else read_head(conn)
    first = problems.first()
    held = since or tree_checkpoint
    return VerifyResult(
        first is None,
        after + len(chain),
        chain_head.entry_hash,
        first,
        run.decisions,
        checkpoint=None if held is None else tree.checkpoint_json(held),
        since=None if since is None else since.size,
        checked=None if since is None else len(chain),
    )


def _check_tree(run: _Run, tree_checkpoint: Checkpoint | None, since: Checkpoint | None) -> None:
    """The Merkle tree (proofs and checkpoints): recomputed from the entries, or
    for `since` extended from the checkpoint's stored frontier by the new entries."""
    if since is None:
        tree_problems = tree.check_whole(run.conn, run.chain, tree_checkpoint)
    else:
        tree_problems = tree.check_since(run.conn, since, run.chain)
    for seq, why in tree_problems:
        run.add(seq, run.kind_at(seq), why)


def _check_entry_checkpoint(run: _Run, seq: int, want: str) -> None:
    """Entry `seq` must still have the hash an entry checkpoint recorded."""
    if seq == 0:
        # `ledger head` of an empty ledger: every ledger extends it.
        if want != GENESIS:
            run.add(1, _UNKNOWN, "checkpoint 0 must carry the genesis hash (64 zeros)")
        return
    have = next((e for e in run.chain if e.seq == seq), None)
    if have is None:
        run.add(seq, _UNKNOWN, f"checkpoint entry {seq} is missing: the ledger was truncated")
    elif have.entry_hash != want:
        run.add(seq, have.kind, "entry hash differs from the checkpoint: history was rewritten")


# --------------------------------------------------------------------------
# The stored forms of the records
# --------------------------------------------------------------------------


def _mark_entries(
    conn: Connection, table: Any
) -> dict[int, tuple[list[str], set[str], set[str | None]]]:
    t = table.c
    out: dict[int, tuple[list[str], set[str], set[str | None]]] = {}
    rows: Iterable[tuple[int, str, str, str | None]] = conn.execute(
        select(t.entry_seq, t.chunk_id, t.from_date, t.reason).order_by(t.entry_seq, t.chunk_id)
    )
    for seq, cid, day, why in rows:
        ids, days, reasons = out.setdefault(seq, ([], set(), set()))
        ids.append(cid)
        days.add(day)
        reasons.add(why)
    return out


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
