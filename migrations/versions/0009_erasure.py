"""Erasure and retention.

`chunk_versions.content` may be NULL: the body of an erased version. `erasures`
names, per erased version, its `erase` entry, the reason, and the digest of its
record without the body. `policies.retain_bodies`: the policy's retention (days
after a version ends that its body is kept; NULL: none).

On SQLite, dropping NOT NULL would need a copy of `chunk_versions` (a batch
migration), whose DROP TABLE fails under the decisions' foreign keys inside the
upgrade's transaction; SQLite documents editing the stored CREATE TABLE text for
exactly this change (removing a NOT NULL constraint: sqlite.org/lang_altertable,
"making other kinds of table schema changes"), which touches no row.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_NOT_NULL = re.compile(r"(\bcontent\s+TEXT)\s+NOT\s+NULL", re.IGNORECASE)
_NULLABLE = re.compile(r"(\bcontent\s+TEXT)(?=\s*,)", re.IGNORECASE)


def _sqlite_content(bind: sa.Connection, nullable: bool) -> None:
    """Rewrite the stored definition of chunk_versions.content (see the module doc)."""
    sql = bind.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'chunk_versions'"
    ).scalar_one()
    new, n = _NOT_NULL.subn(r"\1", sql) if nullable else _NULLABLE.subn(r"\1 NOT NULL", sql)
    if n != 1:
        raise RuntimeError(
            "chunk_versions.content does not have the definition this migration knows"
        )
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar_one()
    bind.exec_driver_sql("PRAGMA writable_schema = ON")
    try:
        bind.exec_driver_sql(
            "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'chunk_versions'",
            (new,),
        )
        # A new schema version makes every connection read the changed definition.
        bind.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
    finally:
        bind.exec_driver_sql("PRAGMA writable_schema = OFF")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        _sqlite_content(bind, nullable=True)
    else:
        op.alter_column("chunk_versions", "content", existing_type=sa.Text(), nullable=True)
    op.create_table(
        "erasures",
        sa.Column("vid", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("entry_seq", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("metadata_digest", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["entry_seq"], ["entries.seq"], name=op.f("fk_erasures_entry_seq_entries")
        ),
        sa.ForeignKeyConstraint(
            ["vid"], ["chunk_versions.vid"], name=op.f("fk_erasures_vid_chunk_versions")
        ),
        sa.PrimaryKeyConstraint("vid", name=op.f("pk_erasures")),
    )
    with op.batch_alter_table("erasures", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_erasures_entry_seq"), ["entry_seq"], unique=False)
    with op.batch_alter_table("policies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retain_bodies", sa.Integer(), nullable=True))


def downgrade() -> None:
    # An erased body cannot come back, and a retention is part of its policy
    # entry's payload: going below 0009 would leave a ledger that fails verify.
    bind = op.get_bind()
    n = bind.execute(sa.text("SELECT count(*) FROM erasures")).scalar_one()
    r = bind.execute(
        sa.text("SELECT count(*) FROM policies WHERE retain_bodies IS NOT NULL")
    ).scalar_one()
    if n or r:
        raise RuntimeError(
            f"cannot downgrade below 0009: {n} erased bodies and {r} retention policies "
            "are recorded"
        )
    op.drop_column("policies", "retain_bodies")
    with op.batch_alter_table("erasures", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_erasures_entry_seq"))
    op.drop_table("erasures")
    if bind.dialect.name == "sqlite":
        _sqlite_content(bind, nullable=False)
    else:
        op.alter_column("chunk_versions", "content", existing_type=sa.Text(), nullable=False)
