"""Pack scope: document packs, or the continuation of one annotated transcript.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 13:20:37.480999
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Every pack recorded before this revision was a document pack.
    with op.batch_alter_table("packs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("scope", sa.String(length=120), server_default="documents", nullable=False)
        )


def downgrade() -> None:
    # Dropping the column would turn transcript packs into document packs and
    # silently change history: refuse while any exists.
    bind = op.get_bind()
    n = bind.execute(sa.text("SELECT count(*) FROM packs WHERE scope <> 'documents'")).scalar_one()
    if n:
        raise RuntimeError(
            f"cannot downgrade below 0002: {n} transcript packs are recorded and would lose "
            "their scope"
        )
    with op.batch_alter_table("packs", schema=None) as batch_op:
        batch_op.drop_column("scope")
