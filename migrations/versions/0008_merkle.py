"""Merkle tree over the entries (RFC 9162) and the ledger's id, for proofs and checkpoints.

`merkle_nodes` holds every complete node of the tree, `(level, idx) -> hash`:
written as entries are sealed, never changed after. `ledger_meta` holds the
ledger id of the checkpoint origin `ledger/<id>`, random, fixed here once. For
a ledger that already has entries the tree is computed from them.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 18:10:00
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

from ledger.core.merkle import CompactRange, entry_leaf

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_CHUNK = 20_000


def upgrade() -> None:
    meta = op.create_table(
        "ledger_meta",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_ledger_meta")),
    )
    nodes = op.create_table(
        "merkle_nodes",
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("idx", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("level", "idx", name=op.f("pk_merkle_nodes")),
        sqlite_with_rowid=False,  # the key is the row: half the size, one B-tree
    )
    bind = op.get_bind()
    # 128 random bits: two ledgers never share an origin, so a checkpoint of one
    # can never be taken for the other's.
    bind.execute(sa.insert(meta).values(key="ledger_id", value=secrets.token_hex(16)))
    frontier = CompactRange()
    rows: list[dict[str, object]] = []
    result = bind.execute(sa.text("SELECT seq, entry_hash FROM entries ORDER BY seq"))
    for seq, entry_hash in result:
        if seq != frontier.size + 1:
            raise RuntimeError(
                f"cannot build the Merkle tree: entry {frontier.size + 1} is missing "
                f"(found {seq}); run `ledger verify` on the old version first"
            )
        try:
            leaf = entry_leaf(entry_hash)
        except ValueError:
            raise RuntimeError(
                f"cannot build the Merkle tree: entry {seq} has a malformed hash; "
                "run `ledger verify` on the old version first"
            ) from None
        for level, idx, h in frontier.append(leaf):
            rows.append({"level": level, "idx": idx, "hash": h.hex()})
        if len(rows) >= _CHUNK:
            bind.execute(sa.insert(nodes), rows)
            rows = []
    if rows:
        bind.execute(sa.insert(nodes), rows)


def downgrade() -> None:
    # The tree is derived from the entries, so dropping it loses nothing. The id
    # is not: upgrading again draws a new one, and checkpoints taken before the
    # downgrade then name another origin (`verify --checkpoint` says so).
    op.drop_table("merkle_nodes")
    op.drop_table("ledger_meta")
