"""Full-text search and retrieval builds.

The index of every chunk version's words (SQLite FTS5, PostgreSQL tsvector + GIN;
see ledger.fulltext), filled here for the versions already stored; the pack's
retrieval record (query or candidates-file digest, K, the ranked list); an
index on `section`, so a retrieval build reads the non-evidence chunks without
a scan of the evidence.

Revision ID: 0005
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from ledger.store.fulltext import create_index, drop_index, index_all

revision = "0005"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("packs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retrieval", sa.Text(), nullable=True))
    with op.batch_alter_table("chunk_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_chunk_versions_section"), ["section"], unique=False)
    bind = op.get_bind()
    create_index(bind)
    index_all(bind)


def downgrade() -> None:
    # Dropping the record would turn retrieval packs into plain ones whose digests
    # no longer verify: refuse while any exists.
    bind = op.get_bind()
    n = bind.execute(sa.text("SELECT count(*) FROM packs WHERE retrieval IS NOT NULL")).scalar_one()
    if n:
        raise RuntimeError(
            f"cannot downgrade below 0005: {n} retrieval packs are recorded and would lose "
            "their ranked candidates"
        )
    drop_index(bind)
    with op.batch_alter_table("chunk_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_chunk_versions_section"))
    with op.batch_alter_table("packs", schema=None) as batch_op:
        batch_op.drop_column("retrieval")
