"""Trace context of a pack: the OpenTelemetry trace and span a build ran in.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("packs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("trace_id", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("span_id", sa.String(length=16), nullable=True))
        batch_op.create_index(batch_op.f("ix_packs_trace_id"), ["trace_id"], unique=False)


def downgrade() -> None:
    # A pack's entry hash covers its trace ids; dropping them would break verify.
    bind = op.get_bind()
    n = bind.execute(sa.text("SELECT count(*) FROM packs WHERE trace_id IS NOT NULL")).scalar_one()
    if n:
        raise RuntimeError(
            f"cannot downgrade below 0006: {n} packs record a trace and their entries cover it"
        )
    # In place (SQLite 3.35+ drops a column itself): a batch copy of `packs` would
    # DROP TABLE under the decisions' foreign keys once any pack is recorded.
    op.drop_index(op.f("ix_packs_trace_id"), table_name="packs")
    op.drop_column("packs", "span_id")
    op.drop_column("packs", "trace_id")
