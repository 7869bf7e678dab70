"""The append-only hash chain: one line of entries numbered 1, 2, 3, ...

Each entry's hash covers its number, kind, payload digest and the previous
entry's hash, so changing, deleting, inserting or reordering any entry breaks
every hash after it; `verify --checkpoint SEQ:HASH` also catches truncation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, func, insert, select, update

from ledger.core.chain import GENESIS, entry_hash  # the formulas, pure (proofs need them)
from ledger.core.numbers import backend_max
from ledger.store.schema import entries

KINDS = ("ingest", "grant", "revoke", "policy", "pack", "retract", "erase", "reinstate")


@dataclass(frozen=True, slots=True)
class Head:
    """The newest entry: a checkpoint that later states must extend."""

    seq: int
    entry_hash: str

    def checkpoint(self) -> str:
        return f"{self.seq}:{self.entry_hash}"


def read_head(conn: Connection) -> Head:
    """The newest entry, or seq 0 with the genesis hash for an empty ledger."""
    row = conn.execute(
        select(entries.c.seq, entries.c.entry_hash).order_by(entries.c.seq.desc()).limit(1)
    ).first()
    return Head(0, GENESIS) if row is None else Head(row.seq, row.entry_hash)


def entry_at(conn: Connection, seq: int) -> Head | None:
    """Entry `seq`, or None (also for a number no entry column of this backend holds)."""
    if not 1 <= seq <= backend_max(conn.dialect.name):
        return None
    row = conn.execute(
        select(entries.c.seq, entries.c.entry_hash).where(entries.c.seq == seq)
    ).first()
    return None if row is None else Head(row.seq, row.entry_hash)


def reserve_entry(conn: Connection, kind: str) -> int:
    """Append a placeholder entry (inside a write transaction) and return its number.

    Records that reference the entry are written next; `seal_entry` then sets
    the payload digest and hash before the transaction commits, so no other
    reader ever sees the placeholder.
    """
    head = read_head(conn)
    seq = head.seq + 1
    conn.execute(
        insert(entries).values(
            seq=seq,
            kind=kind,
            payload_digest=GENESIS,
            prev_hash=head.entry_hash,
            entry_hash=f"pending-{seq}",
            recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    )
    return seq


def seal_entry(conn: Connection, seq: int, payload_digest: str) -> Head:
    """Fill in the payload digest and the chained hash of a reserved entry."""
    row = conn.execute(
        select(entries.c.kind, entries.c.prev_hash).where(entries.c.seq == seq)
    ).one()
    h = entry_hash(seq, row.kind, payload_digest, row.prev_hash)
    conn.execute(
        update(entries)
        .where(entries.c.seq == seq)
        .values(payload_digest=payload_digest, entry_hash=h)
    )
    # The Merkle tree grows in the same transaction. Imported here, by the writers:
    # a read command needs neither the tree nor the proofs(start-up).
    from ledger.store.tree import append_entry

    append_entry(conn, seq, h)
    return Head(seq, h)


def entry_count(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(entries)).scalar_one())
