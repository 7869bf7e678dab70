"""The database schema as SQLAlchemy Core `Table`s.

The migrations in `migrations/versions` create exactly this schema (a test runs
Alembic's autogenerate against `metadata` and expects no difference). Dates are
stored as `YYYY-MM-DD` text: they compare correctly as text and read back
identically on SQLite and PostgreSQL, which keeps every digest backend-independent.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
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

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

DIGEST = String(64)


# One link of the hash chain: ingest batch, grant, revoke, policy change, retract,
# pack. `entry_hash` = SHA-256 of the canonical JSON of {seq, kind, payload_digest,
# prev_hash}; `recorded_at` is informational wall-clock time and not hashed, so the
# same inputs give the same chain on every backend.
entries = Table(
    "entries",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("kind", String(16), nullable=False),
    Column("payload_digest", DIGEST, nullable=False),
    Column("prev_hash", DIGEST, nullable=False),
    Column("entry_hash", DIGEST, nullable=False, unique=True),
    Column("recorded_at", String(32), nullable=False),
)

# An ingest run: what was read, what was new, what was already stored.
batches = Table(
    "batches",
    metadata,
    Column("seq", Integer, ForeignKey("entries.seq"), primary_key=True),
    Column("read_count", Integer, nullable=False),
    Column("new_count", Integer, nullable=False),
    Column("unchanged_count", Integer, nullable=False),
    Column("sources", Text, nullable=False),  # JSON list of the file names read
)

# One immutable chunk version; `vid` orders versions by ingest (ledger time).
versions = Table(
    "chunk_versions",
    metadata,
    Column("vid", Integer, primary_key=True),
    Column("chunk_id", String(64), nullable=False),
    Column("source_version", String(80), nullable=False),
    Column("section", String(16), nullable=False, index=True),  # retrieval builds
    Column("source_uri", String(300), nullable=False),
    Column("effective_from", String(10), nullable=False),
    Column("expires_on", String(10)),
    Column("required_permission", String(64), nullable=False),
    Column("trust", String(24), nullable=False),
    Column("dedupe_key", String(64), nullable=False, index=True),
    Column("estimated_tokens", Integer, nullable=False),
    Column("priority", Integer, nullable=False),
    Column("required", Boolean, nullable=False),
    # NULL once erased (revision 0009, the `erasures` table names the entry).
    Column("content", Text),
    Column("content_digest", DIGEST, nullable=False, index=True),
    Column("record_digest", DIGEST, nullable=False, unique=True),
    Column("batch_seq", Integer, ForeignKey("batches.seq"), nullable=False, index=True),
    # Documents (revision 0007): the heading path and file path (hashed when set),
    # and the location in the newest snapshot holding this text (not hashed).
    Column("title", Text),
    Column("path", Text),
    Column("loc_kind", String(8)),  # "lines" | "pages"
    Column("loc_first", Integer),
    Column("loc_last", Integer),
    # Which packs may consider this version (revision 0010): NULL for a document,
    # "transcript" for an exchange. Written only by the transcript ingest path,
    # never read from a record, and in the record digest when set.
    Column("scope", String(16)),
    UniqueConstraint("chunk_id", "source_version"),
)

# Cached token counts per chunk version and counter (name and version).
token_counts = Table(
    "token_counts",
    metadata,
    Column("vid", Integer, ForeignKey("chunk_versions.vid"), primary_key=True),
    Column("counter", String(64), primary_key=True),
    Column("tokens", Integer, nullable=False),
)

# A grant or revoke of permissions to a subject; one row per permission.
grants = Table(
    "grants",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("entry_seq", Integer, ForeignKey("entries.seq"), nullable=False, index=True),
    Column("subject", String(128), nullable=False, index=True),
    Column("permission", String(64), nullable=False),
    Column("action", String(8), nullable=False),  # grant | revoke
)

# The whole application policy as it stands after one `policy set`.
policies = Table(
    "policies",
    metadata,
    Column("entry_seq", Integer, ForeignKey("entries.seq"), primary_key=True),
    Column("allowed_trust", Text, nullable=False),  # canonical JSON list, sorted
    Column("budget", Integer),
    # Days after a version ends that its body is kept (revision 0009; NULL: no
    # retention). `ledger erase --retention` applies it.
    Column("retain_bodies", Integer),
)

# One build: its request, snapshots, figures and digests.
packs = Table(
    "packs",
    metadata,
    Column("pack_no", Integer, primary_key=True, autoincrement=False),
    Column("entry_seq", Integer, ForeignKey("entries.seq"), nullable=False, unique=True),
    Column("ledger_mark", Integer, nullable=False),
    Column("as_of", String(10), nullable=False),
    Column("subject", String(128), nullable=False, index=True),
    Column("budget", Integer, nullable=False),
    Column("used", Integer, nullable=False),
    Column("counter", String(64), nullable=False),
    Column("selector_version", String(64), nullable=False),
    # "documents", or "transcript:<source_version>" for a transcript continuation.
    Column("scope", String(120), nullable=False, server_default="documents"),
    Column("grants", Text, nullable=False),  # canonical JSON list, sorted
    Column("policy", Text, nullable=False),  # canonical JSON object
    Column("candidate_count", Integer, nullable=False),
    Column("input_digest", DIGEST, nullable=False),
    Column("pack_digest", DIGEST, nullable=False, index=True),
    # A retrieval build's record (canonical JSON: query or candidates digest, top,
    # ranked list); NULL for a plain build. Covered by the input digest.
    Column("retrieval", Text),
    # The OpenTelemetry trace and span the build ran in (lower-case hex), or NULL.
    # Correlation, not a decision: outside the pack digest, covered by the entry hash.
    Column("trace_id", String(32), index=True),
    Column("span_id", String(16)),
)

# What one pack decided about one candidate. Kept narrow, because there is one row
# per candidate per pack: `status` 0 is admitted, 1-7 the reason codes in gate
# order; `position` is the admitted output order; `remaining` is the budget
# eviction's detail and `ref_vid` the superseding or kept version. Every other
# detail is a field of the version.
decisions = Table(
    "decisions",
    metadata,
    Column("pack_no", Integer, ForeignKey("packs.pack_no"), primary_key=True),
    Column("vid", Integer, ForeignKey("chunk_versions.vid"), primary_key=True),
    Column("status", SmallInteger, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("position", Integer),
    Column("remaining", Integer),
    Column("ref_vid", Integer, ForeignKey("chunk_versions.vid")),
    Index("ix_decisions_vid_pack_no", "vid", "pack_no"),
    sqlite_with_rowid=False,
)

# One chunk id withdrawn by a `retract` entry, from a date on (valid time).
retractions = Table(
    "retractions",
    metadata,
    Column("entry_seq", Integer, ForeignKey("entries.seq"), primary_key=True),
    Column("chunk_id", String(64), primary_key=True, index=True),
    Column("from_date", String(10), nullable=False),
    Column("reason", Text),
)

# One chunk id whose earlier retractions a `reinstate` entry undoes, from a date on.
reinstatements = Table(
    "reinstatements",
    metadata,
    Column("entry_seq", Integer, ForeignKey("entries.seq"), primary_key=True),
    Column("chunk_id", String(64), primary_key=True, index=True),
    Column("from_date", String(10), nullable=False),
    Column("reason", Text),
)

# The incremental path of document ingest: per source and file, its digest, the
# digest of what the rules give it, and the chunk ids it produced (JSON list).
# Derived state, not hashed: losing it only costs a re-parse.
document_files = Table(
    "document_files",
    metadata,
    Column("source", String(64), primary_key=True),
    Column("path", String(1024), primary_key=True),
    Column("file_digest", DIGEST, nullable=False),
    Column("meta_digest", DIGEST, nullable=False),
    Column("chunk_ids", Text, nullable=False),
)

# One erased body (revision 0009): the version, the `erase` entry that removed its
# content, the reason, and the digest of its record without the body (so its
# metadata stays checkable). A version is erased once, so `vid` is the key.
erasures = Table(
    "erasures",
    metadata,
    Column("vid", Integer, ForeignKey("chunk_versions.vid"), primary_key=True, autoincrement=False),
    Column("entry_seq", Integer, ForeignKey("entries.seq"), nullable=False, index=True),
    Column("reason", Text, nullable=False),
    Column("metadata_digest", DIGEST, nullable=False),
)

# --- Proofs and checkpoints (migration 0008) -------------------------------

# Facts about the ledger itself; `ledger_id` names it in checkpoints.
meta_t = Table(
    "ledger_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

# One complete node of the RFC 9162 tree over the entries (ledger.core.merkle):
# level 0 holds the leaves; written when an entry is sealed, never changed.
nodes_t = Table(
    "merkle_nodes",
    metadata,
    Column("level", SmallInteger, primary_key=True, autoincrement=False),
    Column("idx", BigInteger, primary_key=True, autoincrement=False),
    Column("hash", DIGEST, nullable=False),
    sqlite_with_rowid=False,
)
