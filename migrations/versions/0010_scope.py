"""Version scope: which packs may consider a chunk version, as a stored field.

Before this revision a version was a transcript exchange when its `source_uri`
started with `transcript://`, a value any record may carry. Now
`chunk_versions.scope` says so ("transcript", else NULL), written only by the
transcript ingest path and in the record digest when set. The versions stored
before keep their digests (which do not cover the column): they are back-filled
by the rule they were decided by, and `verify` holds them to that rule.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # In place (no batch copy): a copy of `chunk_versions` would DROP TABLE under
    # the decisions' foreign keys. A nullable column needs none on any backend.
    op.add_column("chunk_versions", sa.Column("scope", sa.String(length=16), nullable=True))
    op.execute(
        "UPDATE chunk_versions SET scope = 'transcript' WHERE source_uri LIKE 'transcript://%'"
    )


def downgrade() -> None:
    # Without the column a version's scope falls back to its URI: a document
    # ingested with a `transcript://` URI would leave every document pack, and
    # exchanges stored since hash their scope. Refuse while any could change.
    bind = op.get_bind()
    n = bind.execute(
        sa.text(
            "SELECT count(*) FROM chunk_versions WHERE scope IS NOT NULL "
            "OR source_uri LIKE 'transcript://%'"
        )
    ).scalar_one()
    if n:
        raise RuntimeError(
            f"cannot downgrade below 0010: {n} versions are transcript exchanges or carry a "
            "transcript:// URI, and their scope would change"
        )
    op.drop_column("chunk_versions", "scope")
