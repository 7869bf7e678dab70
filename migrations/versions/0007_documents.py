"""Documents and retractions.

Chunk versions from documents carry `title` and `path` (in the record digest
when present, so versions stored before keep their digests) and their location
in the newest snapshot that holds them (`loc_kind` "lines" or "pages",
`loc_first`, `loc_last`; not hashed, updated when a section only moves).
`retractions`: the ids a `retract` entry withdraws, from which date, and why.
`document_files`: per source and path, the file digest, the digest of what the
rules give it and the ids it produced, so an unchanged file is not parsed again.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chunk_versions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("title", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("path", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("loc_kind", sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column("loc_first", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("loc_last", sa.Integer(), nullable=True))
    op.create_table(
        "retractions",
        sa.Column("entry_seq", sa.Integer(), nullable=False),
        sa.Column("chunk_id", sa.String(length=64), nullable=False),
        sa.Column("from_date", sa.String(length=10), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["entry_seq"], ["entries.seq"], name=op.f("fk_retractions_entry_seq_entries")
        ),
        sa.PrimaryKeyConstraint("entry_seq", "chunk_id", name=op.f("pk_retractions")),
    )
    with op.batch_alter_table("retractions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_retractions_chunk_id"), ["chunk_id"], unique=False)
    op.create_table(
        "document_files",
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("file_digest", sa.String(length=64), nullable=False),
        sa.Column("meta_digest", sa.String(length=64), nullable=False),
        sa.Column("chunk_ids", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("source", "path", name=op.f("pk_document_files")),
    )


def downgrade() -> None:
    # Dropping retractions would silently re-admit withdrawn chunks in replays.
    bind = op.get_bind()
    n = bind.execute(sa.text("SELECT count(*) FROM retractions")).scalar_one()
    if n:
        raise RuntimeError(f"cannot downgrade below 0007: {n} retractions are recorded")
    # A document version's title and path are in its record digest: dropping them
    # would leave versions whose digests no longer verify.
    d = bind.execute(
        sa.text("SELECT count(*) FROM chunk_versions WHERE title IS NOT NULL OR path IS NOT NULL")
    ).scalar_one()
    if d:
        raise RuntimeError(
            f"cannot downgrade below 0007: {d} document versions are recorded, and their "
            "record digests cover the title and path this would drop; nothing was changed"
        )
    op.drop_table("document_files")
    with op.batch_alter_table("retractions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_retractions_chunk_id"))
    op.drop_table("retractions")
    # In place (SQLite 3.35+ drops a column itself): a batch copy of
    # `chunk_versions` would DROP TABLE under the decisions' foreign keys.
    for column in ("loc_last", "loc_first", "loc_kind", "path", "title"):
        op.drop_column("chunk_versions", column)
