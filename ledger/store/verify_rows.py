"""Stored chunk versions checked against their digests (`ledger verify`, and
`erase` and `replay` before they trust a body): docs/reference/digests.md.

A version row is what ingest wrote when its fields have their types, its body
matches its content digest and its fields its record digest; an erased version
(no body) when an erase entry names it and its fields match the metadata digest
that erasure recorded (docs/reference/retention.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, LargeBinary, cast, func, literal, select

from ledger.core.canonical import content_digest
from ledger.core.erasure import metadata_digest
from ledger.core.records import EXCHANGE_SCOPE, ChunkRecord, flat_record_digest, record_digest
from ledger.store.engine import row_type, stream_tuples
from ledger.store.ingest import record_from_row
from ledger.store.schema import erasures, versions

# The columns of a version that verify's check of the packs reads (its priority
# only for the type check); `bad_rows` hands them over as it passes.
VERSION_COLUMNS = (
    "vid",
    "record_digest",
    "estimated_tokens",
    "required_permission",
    "trust",
    "effective_from",
    "expires_on",
    "chunk_id",
    "source_version",
    "priority",
)
_VERSION_INTS = ("vid", "estimated_tokens", "priority", "batch_seq")
_VERSION_TEXTS = (
    "chunk_id",
    "source_version",
    "section",
    "source_uri",
    "effective_from",
    "required_permission",
    "trust",
    "dedupe_key",
    "content_digest",
    "record_digest",
)
_RECORD = "its record digest does not match its fields"  # left to `_scope_problem`


def bad_rows(
    conn: Connection,
    condition: Any,
    only: set[int] | None = None,
    legacy: bool | None = None,
    read: list[tuple[Any, ...]] | None = None,
) -> Iterator[str]:
    """The versions matching `condition` whose stored digests do not match their
    fields, each as one line naming it.

    `only`: just these version ids. `legacy`: the batch was written before schema
    0010 (see `_scope_problem`); None when that is not known (replay, a batch
    whose own fields are bad). `read`: each version's `VERSION_COLUMNS` are
    appended to it as it is checked. On SQLite the body is read as its bytes (and
    its storage type), so that a body that is not valid UTF-8, or stored as a
    BLOB, is reported by name instead of failing the read (whose message would
    quote the body)."""
    cols = [c for c in versions.c if c.name != "content"]
    if conn.dialect.name == "sqlite":
        extra = [
            cast(versions.c.content, LargeBinary).label("raw"),
            func.typeof(versions.c.content).label("content_type"),
        ]
    else:
        extra = [versions.c.content.label("raw"), literal("text").label("content_type")]
    # An erased body (NULL) is accepted where an erase entry names the version;
    # its metadata is then checked against the erasure's metadata digest.
    extra += [
        erasures.c.metadata_digest.label("erased_meta"),
        erasures.c.entry_seq.label("erased_by"),
    ]
    query = (
        select(*cols, *extra)
        .select_from(versions.outerjoin(erasures, erasures.c.vid == versions.c.vid))
        .where(condition)
        .order_by(versions.c.vid)
    )
    # The driver's tuples, streamed (PostgreSQL: a server-side cursor): every
    # version of the ledger passes here. `verify` stops at the first bad version:
    # closing this generator closes the cursor.
    names = [c.name for c in query.selected_columns]
    yield from _bad_in(names, stream_tuples(conn, query, 5000), only, legacy, read)


def _bad_in(
    names: list[str],
    result: Iterable[tuple[Any, ...]],
    only: set[int] | None,
    legacy: bool | None,
    read: list[tuple[Any, ...]] | None,
) -> Iterator[str]:
    # Named tuples of the stored columns and the decoded content: a ledger holds
    # up to millions of versions, read here by field.
    stored = row_type("stored", [*names, "content"])
    picked = [names.index(name) for name in VERSION_COLUMNS]
    for values in result:
        row = stored(*values, None)
        if only is not None and row.vid not in only:
            continue
        if read is not None:
            read.append(tuple(values[i] for i in picked))
        why = _bad_version(row, legacy)
        if why == _RECORD:  # a body that matches, but fields that do not: the record tells
            why = _record_problem(row, legacy)
        if why is not None:
            yield f"chunk {row.chunk_id}@{row.source_version}: {why}"


def _record_problem(row: Any, legacy: bool | None) -> str | None:
    try:
        rec = record_from_row(row._replace(content=_body(row.raw)))
        return _scope_problem(rec, row.record_digest, legacy)
    except Exception as exc:  # a tampered row may not even be a valid record
        return f"stored fields are not a valid record ({type(exc).__name__})"


def _typed(row: Any) -> bool:
    """Whether a stored version's fields have the types ingest writes (SQLite may
    hold any type in any column; `int`, not bool or float; the driver's own str)."""
    if any(type(getattr(row, name)) is not int for name in _VERSION_INTS):
        return False
    if any(type(getattr(row, name)) is not str for name in _VERSION_TEXTS):
        return False
    if not (row.expires_on is None or type(row.expires_on) is str):
        return False
    return row.required in (0, 1) and type(row.required) in (int, bool)


def _bad_version(row: Any, legacy: bool | None) -> str | None:
    """Why a stored version row (its body as stored, `raw`) is not what ingest
    wrote, or `_RECORD` when its record digest needs its record to tell, or None."""
    if not _typed(row):
        return "a stored field has the wrong type"
    if row.raw is None and row.erased_by is not None:
        return _bad_erased(row, legacy)
    if row.raw is None:
        return "its body is missing and no erase entry names it"
    if row.erased_by is not None:
        return f"erased by entry {row.erased_by}, yet a body is stored again"
    if row.content_type != "text":
        return f"its content is stored as {row.content_type}, not text"
    try:
        content = _body(row.raw)
    except UnicodeDecodeError:
        return "its stored content is not valid UTF-8"
    if content_digest(content) != row.content_digest:
        return "content does not match its content digest"
    if legacy is not True and _flat_digest(row, content) == row.record_digest:
        return None  # the common case, without a record (`_scope_problem` would agree)
    return _RECORD


def _body(raw: Any) -> str:
    """A stored body as text (SQLite's is read as its bytes)."""
    return bytes(raw).decode("utf-8") if isinstance(raw, (bytes, memoryview)) else str(raw)


def _flat_digest(row: Any, content: str) -> str | None:
    """The record digest of a stored version without title and path, from its row
    (None: it has them, or its fields are no valid record: the record tells)."""
    if row.title is not None or row.path is not None:
        return None
    try:
        return flat_record_digest(
            content,
            row.dedupe_key,
            row.effective_from,
            row.estimated_tokens,
            row.expires_on,
            row.chunk_id,
            row.priority,
            bool(row.required),
            row.required_permission,
            row.scope,
            row.section,
            row.source_uri,
            row.source_version,
            row.trust,
        )
    except Exception:  # a tampered row: `record_from_row` and its digest report it
        return None


def _legacy_scope(source_uri: str) -> str | None:
    """The scope a version stored before schema 0010 had: its URI decided it (the
    rule migration 0010 back-fills by)."""
    return EXCHANGE_SCOPE if source_uri.startswith("transcript://") else None


def _scope_problem(rec: ChunkRecord, stored: str, legacy: bool | None) -> str | None:
    """Why a version's fields, scope included, do not match its stored record digest.

    Versions of batches written since schema 0010 hash their scope when set. An
    older version's digest does not cover it, so its scope must be the one its URI
    gave it then; whether a batch is older is told by its entry's payload form,
    which the chain covers. Unknown (None): either form is accepted."""
    if legacy is not True and rec.record_digest == stored:
        return None
    if legacy is True or (legacy is None and rec.scope is not None):
        if rec.scope != _legacy_scope(rec.source_uri):
            return "its scope is not the one it was ingested with"
        if record_digest(replace(rec, scope=None)) == stored:
            return None
    return "fields do not match the record digest"


def _bad_erased(row: Any, legacy: bool | None) -> str | None:
    """An erased version: its fields against the metadata digest its erasure kept.

    The scope as for a stored body (`_scope_problem`): a version of a batch
    written before schema 0010 may have been erased before its scope was stored
    (its metadata digest then has none), and its scope is its URI's."""
    try:
        rec = record_from_row(row._replace(content=""))
        if legacy is not True and metadata_digest(rec.to_json(), row.content_digest) == (
            row.erased_meta
        ):
            return None
        if legacy is not False and rec.scope == _legacy_scope(rec.source_uri):
            forms = (rec, replace(rec, scope=None))
            if row.erased_meta in {metadata_digest(r.to_json(), row.content_digest) for r in forms}:
                return None
    except Exception as exc:  # a tampered row may not even be a valid record
        return f"stored fields are not a valid record ({type(exc).__name__})"
    return "fields do not match the metadata digest its erasure recorded"
