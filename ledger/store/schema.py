"""The database schema as SQLAlchemy 2 typed models.

The migrations in `migrations/versions` create exactly this schema (a test runs
Alembic's autogenerate against it and expects no difference). Dates are stored
as `YYYY-MM-DD` text: they compare correctly as text and read back identically on
SQLite and PostgreSQL, which keeps every digest backend-independent.
"""

from __future__ import annotations

from typing import cast

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

DIGEST = String(64)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Entry(Base):
    """One link of the hash chain: ingest batch, grant, revoke, policy change or pack.

    `entry_hash` = SHA-256 of the canonical JSON of {seq, kind, payload_digest,
    prev_hash}; `recorded_at` is informational wall-clock time and not hashed, so
    the same inputs give the same chain on every backend.
    """

    __tablename__ = "entries"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String(16))
    payload_digest: Mapped[str] = mapped_column(DIGEST)
    prev_hash: Mapped[str] = mapped_column(DIGEST)
    entry_hash: Mapped[str] = mapped_column(DIGEST, unique=True)
    recorded_at: Mapped[str] = mapped_column(String(32))


class Batch(Base):
    """An ingest run: what was read, what was new, what was already stored."""

    __tablename__ = "batches"

    seq: Mapped[int] = mapped_column(ForeignKey("entries.seq"), primary_key=True)
    read_count: Mapped[int] = mapped_column(Integer)
    new_count: Mapped[int] = mapped_column(Integer)
    unchanged_count: Mapped[int] = mapped_column(Integer)
    sources: Mapped[str] = mapped_column(Text)  # JSON list of the file names read


class ChunkVersion(Base):
    """One immutable chunk version; `vid` orders versions by ingest (ledger time)."""

    __tablename__ = "chunk_versions"
    __table_args__ = (UniqueConstraint("chunk_id", "source_version"),)

    vid: Mapped[int] = mapped_column(Integer, primary_key=True)
    chunk_id: Mapped[str] = mapped_column(String(64))
    source_version: Mapped[str] = mapped_column(String(80))
    section: Mapped[str] = mapped_column(String(16), index=True)  # retrieval builds
    source_uri: Mapped[str] = mapped_column(String(300))
    effective_from: Mapped[str] = mapped_column(String(10))
    expires_on: Mapped[str | None] = mapped_column(String(10))
    required_permission: Mapped[str] = mapped_column(String(64))
    trust: Mapped[str] = mapped_column(String(24))
    dedupe_key: Mapped[str] = mapped_column(String(64), index=True)
    estimated_tokens: Mapped[int] = mapped_column(Integer)
    priority: Mapped[int] = mapped_column(Integer)
    required: Mapped[bool] = mapped_column(Boolean)
    content: Mapped[str] = mapped_column(Text)
    content_digest: Mapped[str] = mapped_column(DIGEST, index=True)
    record_digest: Mapped[str] = mapped_column(DIGEST, unique=True)
    batch_seq: Mapped[int] = mapped_column(ForeignKey("batches.seq"), index=True)
    # Documents (revision 0007): the heading path and file path (hashed when set), and
    # the location in the newest snapshot holding this text (not hashed).
    title: Mapped[str | None] = mapped_column(Text)
    path: Mapped[str | None] = mapped_column(Text)
    loc_kind: Mapped[str | None] = mapped_column(String(8))  # "lines" | "pages"
    loc_first: Mapped[int | None] = mapped_column(Integer)
    loc_last: Mapped[int | None] = mapped_column(Integer)


class TokenCount(Base):
    """Cached token counts per chunk version and counter (name and version)."""

    __tablename__ = "token_counts"

    vid: Mapped[int] = mapped_column(ForeignKey("chunk_versions.vid"), primary_key=True)
    counter: Mapped[str] = mapped_column(String(64), primary_key=True)
    tokens: Mapped[int] = mapped_column(Integer)


class Grant(Base):
    """A grant or revoke of permissions to a subject; one row per permission."""

    __tablename__ = "grants"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    entry_seq: Mapped[int] = mapped_column(ForeignKey("entries.seq"), index=True)
    subject: Mapped[str] = mapped_column(String(128), index=True)
    permission: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(8))  # grant | revoke


class PolicyVersion(Base):
    """The whole application policy as it stands after one `policy set`."""

    __tablename__ = "policies"

    entry_seq: Mapped[int] = mapped_column(ForeignKey("entries.seq"), primary_key=True)
    allowed_trust: Mapped[str] = mapped_column(Text)  # canonical JSON list, sorted
    budget: Mapped[int | None] = mapped_column(Integer)


class Pack(Base):
    """One build: its request, snapshots, figures and digests."""

    __tablename__ = "packs"

    pack_no: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    entry_seq: Mapped[int] = mapped_column(ForeignKey("entries.seq"), unique=True)
    ledger_mark: Mapped[int] = mapped_column(Integer)
    as_of: Mapped[str] = mapped_column(String(10))
    subject: Mapped[str] = mapped_column(String(128), index=True)
    budget: Mapped[int] = mapped_column(Integer)
    used: Mapped[int] = mapped_column(Integer)
    counter: Mapped[str] = mapped_column(String(64))
    selector_version: Mapped[str] = mapped_column(String(64))
    # "documents", or "transcript:<source_version>" for a transcript continuation.
    scope: Mapped[str] = mapped_column(String(120), server_default="documents")
    grants: Mapped[str] = mapped_column(Text)  # canonical JSON list, sorted
    policy: Mapped[str] = mapped_column(Text)  # canonical JSON object
    candidate_count: Mapped[int] = mapped_column(Integer)
    input_digest: Mapped[str] = mapped_column(DIGEST)
    pack_digest: Mapped[str] = mapped_column(DIGEST, index=True)
    # A retrieval build's record (canonical JSON: query or candidates digest, top,
    # ranked list); NULL for a plain build. Covered by the input digest.
    retrieval: Mapped[str | None] = mapped_column(Text)
    # The OpenTelemetry trace and span the build ran in (lower-case hex), or NULL.
    # Correlation, not a decision: outside the pack digest, covered by the entry hash.
    trace_id: Mapped[str | None] = mapped_column(String(32), index=True)
    span_id: Mapped[str | None] = mapped_column(String(16))


class Decision(Base):
    """What one pack decided about one candidate.

    Kept narrow, because there is one row per candidate per pack: `status` 0 is
    admitted, 1-7 the reason codes in gate order; `position` is the admitted
    output order; `remaining` is the budget eviction's detail and `ref_vid` the
    superseding or kept version. Every other detail is a field of the version.
    """

    __tablename__ = "decisions"
    __table_args__ = (
        Index("ix_decisions_vid_pack_no", "vid", "pack_no"),
        {"sqlite_with_rowid": False},
    )

    pack_no: Mapped[int] = mapped_column(ForeignKey("packs.pack_no"), primary_key=True)
    vid: Mapped[int] = mapped_column(ForeignKey("chunk_versions.vid"), primary_key=True)
    status: Mapped[int] = mapped_column(SmallInteger)
    tokens: Mapped[int] = mapped_column(Integer)
    position: Mapped[int | None] = mapped_column(Integer)
    remaining: Mapped[int | None] = mapped_column(Integer)
    ref_vid: Mapped[int | None] = mapped_column(ForeignKey("chunk_versions.vid"))


class Retraction(Base):
    """One chunk id withdrawn by a `retract` entry, from a date on (valid time)."""

    __tablename__ = "retractions"

    entry_seq: Mapped[int] = mapped_column(ForeignKey("entries.seq"), primary_key=True)
    chunk_id: Mapped[str] = mapped_column(String(64), primary_key=True, index=True)
    from_date: Mapped[str] = mapped_column(String(10))
    reason: Mapped[str | None] = mapped_column(Text)


class DocumentFile(Base):
    """The incremental path of document ingest: per source and file, its digest, the
    digest of what the rules give it, and the chunk ids it produced (JSON list).
    Derived state, not hashed: losing it only costs a re-parse."""

    __tablename__ = "document_files"

    source: Mapped[str] = mapped_column(String(64), primary_key=True)
    path: Mapped[str] = mapped_column(String(1024), primary_key=True)
    file_digest: Mapped[str] = mapped_column(DIGEST)
    meta_digest: Mapped[str] = mapped_column(DIGEST)
    chunk_ids: Mapped[str] = mapped_column(Text)


# --- Proofs and checkpoints (migration 0008) -------------------------------


class LedgerMeta(Base):
    """Facts about the ledger itself; `ledger_id` names it in checkpoints."""

    __tablename__ = "ledger_meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class MerkleNode(Base):
    """One complete node of the RFC 9162 tree over the entries (ledger.core.merkle):
    level 0 holds the leaves; written when an entry is sealed, never changed."""

    __tablename__ = "merkle_nodes"
    __table_args__ = ({"sqlite_with_rowid": False},)

    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True, autoincrement=False)
    idx: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    hash: Mapped[str] = mapped_column(DIGEST)


# The tables as SQLAlchemy Core `Table`s: what the store's queries use (the classes
# above only declare them, for the migrations' autogenerate check).
entries: Table = cast(Table, Entry.__table__)
batches: Table = cast(Table, Batch.__table__)
versions: Table = cast(Table, ChunkVersion.__table__)
token_counts: Table = cast(Table, TokenCount.__table__)
grants: Table = cast(Table, Grant.__table__)
policies: Table = cast(Table, PolicyVersion.__table__)
packs: Table = cast(Table, Pack.__table__)
decisions: Table = cast(Table, Decision.__table__)
retractions: Table = cast(Table, Retraction.__table__)
document_files: Table = cast(Table, DocumentFile.__table__)
meta_t: Table = cast(Table, LedgerMeta.__table__)
nodes_t: Table = cast(Table, MerkleNode.__table__)
