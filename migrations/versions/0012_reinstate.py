"""Reinstatements: a `reinstate` entry undoes the retractions written before it.

One row per chunk id of a `reinstate` entry, from a date on (valid time), as
`retractions` holds a `retract` entry's (docs/reference/retention.md). The
entry's payload digest covers the rows, so a downgrade that would drop them is
refused while any exist (the chain would no longer verify).

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reinstatements",
        sa.Column("entry_seq", sa.Integer, sa.ForeignKey("entries.seq"), primary_key=True),
        sa.Column("chunk_id", sa.String(64), primary_key=True, index=True),
        sa.Column("from_date", sa.String(10), nullable=False),
        sa.Column("reason", sa.Text),
    )


def downgrade() -> None:
    held = op.get_bind().execute(sa.text("SELECT COUNT(*) FROM reinstatements")).scalar_one()
    if held:
        raise RuntimeError(
            f"the ledger holds {held} reinstatement row(s), which its entries' digests "
            "cover: a downgrade below 0012 would lose them; nothing was changed"
        )
    op.drop_table("reinstatements")
