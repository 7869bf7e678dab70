"""Initial schema: hash chain, ingest batches, chunk versions, grants, policy, packs, decisions.

Revision ID: 0001
Revises:
Create Date: 2026-11-29 12:35:21.097122
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "entries",
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("payload_digest", sa.String(length=64), nullable=False),
        sa.Column("prev_hash", sa.String(length=64), nullable=False),
        sa.Column("entry_hash", sa.String(length=64), nullable=False),
        sa.Column("recorded_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_entries")),
        sa.UniqueConstraint("entry_hash", name=op.f("uq_entries_entry_hash")),
    )
    op.create_table(
        "batches",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("read_count", sa.Integer(), nullable=False),
        sa.Column("new_count", sa.Integer(), nullable=False),
        sa.Column("unchanged_count", sa.Integer(), nullable=False),
        sa.Column("sources", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["seq"], ["entries.seq"], name=op.f("fk_batches_seq_entries")),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_batches")),
    )
    op.create_table(
        "grants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("entry_seq", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=128), nullable=False),
        sa.Column("permission", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=8), nullable=False),
        sa.ForeignKeyConstraint(
            ["entry_seq"], ["entries.seq"], name=op.f("fk_grants_entry_seq_entries")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grants")),
    )
    with op.batch_alter_table("grants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_grants_entry_seq"), ["entry_seq"], unique=False)
        batch_op.create_index(batch_op.f("ix_grants_subject"), ["subject"], unique=False)

    op.create_table(
        "packs",
        sa.Column("pack_no", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("entry_seq", sa.Integer(), nullable=False),
        sa.Column("ledger_mark", sa.Integer(), nullable=False),
        sa.Column("as_of", sa.String(length=10), nullable=False),
        sa.Column("subject", sa.String(length=128), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.Column("counter", sa.String(length=64), nullable=False),
        sa.Column("selector_version", sa.String(length=64), nullable=False),
        sa.Column("grants", sa.Text(), nullable=False),
        sa.Column("policy", sa.Text(), nullable=False),
        sa.Column("candidate_count", sa.Integer(), nullable=False),
        sa.Column("input_digest", sa.String(length=64), nullable=False),
        sa.Column("pack_digest", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["entry_seq"], ["entries.seq"], name=op.f("fk_packs_entry_seq_entries")
        ),
        sa.PrimaryKeyConstraint("pack_no", name=op.f("pk_packs")),
        sa.UniqueConstraint("entry_seq", name=op.f("uq_packs_entry_seq")),
    )
    with op.batch_alter_table("packs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_packs_pack_digest"), ["pack_digest"], unique=False)
        batch_op.create_index(batch_op.f("ix_packs_subject"), ["subject"], unique=False)

    op.create_table(
        "policies",
        sa.Column("entry_seq", sa.Integer(), nullable=False),
        sa.Column("allowed_trust", sa.Text(), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["entry_seq"], ["entries.seq"], name=op.f("fk_policies_entry_seq_entries")
        ),
        sa.PrimaryKeyConstraint("entry_seq", name=op.f("pk_policies")),
    )
    op.create_table(
        "chunk_versions",
        sa.Column("vid", sa.Integer(), nullable=False),
        sa.Column("chunk_id", sa.String(length=64), nullable=False),
        sa.Column("source_version", sa.String(length=80), nullable=False),
        sa.Column("section", sa.String(length=16), nullable=False),
        sa.Column("source_uri", sa.String(length=300), nullable=False),
        sa.Column("effective_from", sa.String(length=10), nullable=False),
        sa.Column("expires_on", sa.String(length=10), nullable=True),
        sa.Column("required_permission", sa.String(length=64), nullable=False),
        sa.Column("trust", sa.String(length=24), nullable=False),
        sa.Column("dedupe_key", sa.String(length=64), nullable=False),
        sa.Column("estimated_tokens", sa.Integer(), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("required", sa.Boolean(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("content_digest", sa.String(length=64), nullable=False),
        sa.Column("record_digest", sa.String(length=64), nullable=False),
        sa.Column("batch_seq", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["batch_seq"], ["batches.seq"], name=op.f("fk_chunk_versions_batch_seq_batches")
        ),
        sa.PrimaryKeyConstraint("vid", name=op.f("pk_chunk_versions")),
        sa.UniqueConstraint(
            "chunk_id", "source_version", name=op.f("uq_chunk_versions_chunk_id_source_version")
        ),
        sa.UniqueConstraint("record_digest", name=op.f("uq_chunk_versions_record_digest")),
    )
    with op.batch_alter_table("chunk_versions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_chunk_versions_batch_seq"), ["batch_seq"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_chunk_versions_content_digest"), ["content_digest"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_chunk_versions_dedupe_key"), ["dedupe_key"], unique=False
        )

    op.create_table(
        "decisions",
        sa.Column("pack_no", sa.Integer(), nullable=False),
        sa.Column("vid", sa.Integer(), nullable=False),
        sa.Column("status", sa.SmallInteger(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=True),
        sa.Column("remaining", sa.Integer(), nullable=True),
        sa.Column("ref_vid", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["pack_no"], ["packs.pack_no"], name=op.f("fk_decisions_pack_no_packs")
        ),
        sa.ForeignKeyConstraint(
            ["ref_vid"], ["chunk_versions.vid"], name=op.f("fk_decisions_ref_vid_chunk_versions")
        ),
        sa.ForeignKeyConstraint(
            ["vid"], ["chunk_versions.vid"], name=op.f("fk_decisions_vid_chunk_versions")
        ),
        sa.PrimaryKeyConstraint("pack_no", "vid", name=op.f("pk_decisions")),
        sqlite_with_rowid=False,
    )
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.create_index("ix_decisions_vid_pack_no", ["vid", "pack_no"], unique=False)

    op.create_table(
        "token_counts",
        sa.Column("vid", sa.Integer(), nullable=False),
        sa.Column("counter", sa.String(length=64), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["vid"], ["chunk_versions.vid"], name=op.f("fk_token_counts_vid_chunk_versions")
        ),
        sa.PrimaryKeyConstraint("vid", "counter", name=op.f("pk_token_counts")),
    )


def downgrade() -> None:

    op.drop_table("token_counts")
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.drop_index("ix_decisions_vid_pack_no")

    op.drop_table("decisions")
    with op.batch_alter_table("chunk_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_chunk_versions_dedupe_key"))
        batch_op.drop_index(batch_op.f("ix_chunk_versions_content_digest"))
        batch_op.drop_index(batch_op.f("ix_chunk_versions_batch_seq"))

    op.drop_table("chunk_versions")
    op.drop_table("policies")
    with op.batch_alter_table("packs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_packs_subject"))
        batch_op.drop_index(batch_op.f("ix_packs_pack_digest"))

    op.drop_table("packs")
    with op.batch_alter_table("grants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_grants_subject"))
        batch_op.drop_index(batch_op.f("ix_grants_entry_seq"))

    op.drop_table("grants")
    op.drop_table("batches")
    op.drop_table("entries")
