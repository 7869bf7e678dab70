"""The PostgreSQL full-text index without a foreign key to its versions.

`search_index.vid` referenced `chunk_versions (vid)`: every index row a COPY
wrote ran the foreign key's trigger, a lookup of its version, which cost as much
on ingest as storing the row's tsvector (0.25 s of server time per 20,000
chunks). The index is derived: ingest and the migrations write its rows from
the versions they read in the same transaction, and no version is ever deleted.
SQLite's FTS5 index never had the constraint; nothing else changes (SQLite:
nothing to do).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from alembic import op

from ledger.store.fulltext import TABLE

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# The name PostgreSQL gave the constraint revision 0005 declared inline.
_CONSTRAINT = f"{TABLE}_vid_fkey"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE {TABLE} DROP CONSTRAINT IF EXISTS {_CONSTRAINT}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            f"ALTER TABLE {TABLE} ADD CONSTRAINT {_CONSTRAINT} "
            "FOREIGN KEY (vid) REFERENCES chunk_versions (vid)"
        )
