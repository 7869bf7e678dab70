"""Storing chunk records: all or nothing per run, one ingest entry per run.

Records arrive as an iterator of `(where, record)` (see `ledger.ingest.files`)
and are written in slices inside one transaction, so a file of a million lines
is never held in memory and a bad record anywhere leaves the database as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from sqlalchemy import (
    ARRAY,
    Connection,
    Engine,
    and_,
    any_,
    bindparam,
    case,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.sql.elements import ColumnElement

from ledger.core.canonical import canonical_bytes
from ledger.core.errors import InputError, RefusedError
from ledger.core.records import (
    FIELDS,
    INGEST_SLICE,
    ChunkRecord,
    RecordError,
    check_dedupe_groups,
    record_digest,
)
from ledger.core.results import IngestSummary
from ledger.store.chain import reserve_entry, seal_entry
from ledger.store.engine import insert_tuples, stream_tuples, write_transaction
from ledger.store.fulltext import has_index, index_batch, index_payloads
from ledger.store.schema import batches, versions

SLICE = INGEST_SLICE  # records validated and written per statement

Records = Iterable[tuple[str, ChunkRecord]]  # (where it was read, validated record)
# What the store takes: (where, record, its `record_digest`, and its PostgreSQL
# index row as `ledger.core.tsvector.index_payload` makes it, or None).
Payload = bytes | str | None
Digested = Iterable[tuple[str, ChunkRecord, str, Payload]]


def wants_index_payloads(engine: Engine) -> bool:
    """Whether a reader process should make each record's index row for the
    store: PostgreSQL's, whose words and tsvector cost as much as storing the
    version (the store then indexes those slice by slice). SQLite's FTS5 does
    the work itself, after the last slice, from the stored bodies; so do both
    backends for the versions read without one."""
    return engine.dialect.name == "postgresql"


# The columns ingest writes, in the order of `_row`'s tuples.
# The record's fields from effective_from on (FIELDS[4:]) keep their names as columns.
_ROW_COLUMNS = (
    "chunk_id",
    "source_version",
    "section",
    "source_uri",
    *FIELDS[4:],
    "content_digest",
    "record_digest",
    "batch_seq",
    "scope",
)


def _row(rec: ChunkRecord, digest: str, batch_seq: int) -> tuple[Any, ...]:
    content_digest = hashlib.sha256(rec.content.encode("utf-8")).hexdigest()
    return (
        rec.id,
        rec.source_version,
        rec.section,
        rec.source_uri,
        rec.effective_from,
        rec.expires_on,
        rec.required_permission,
        rec.trust,
        rec.dedupe_key,
        rec.estimated_tokens,
        rec.priority,
        rec.required,
        rec.content,
        content_digest,
        digest,
        batch_seq,
        rec.scope,
    )


def _insert_rows(
    conn: Connection, rows: list[tuple[Any, ...]], vids: list[int] | None = None
) -> None:
    """One executemany of chunk-version rows (tuples in `_ROW_COLUMNS` order),
    with the version ids `vids` (`_draw_vids`) or the column's default."""
    if vids is None:
        insert_tuples(conn, versions, _ROW_COLUMNS, rows)
        return
    with_vids = [(vid, *row) for vid, row in zip(vids, rows, strict=True)]
    insert_tuples(conn, versions, ("vid", *_ROW_COLUMNS), with_vids)


# PostgreSQL: `n` consecutive version ids drawn from the column's own sequence
# in one step, the last returned (a `nextval` per id, over a generated series,
# cost 6 ms per 2,000). Consecutive because every ledger writer holds the write
# lock (`write_transaction`); an id drawn twice anyway would fail the insert on
# the primary key, never be stored twice.
_DRAW_VIDS_PG = (
    "SELECT setval(s.seq, nextval(s.seq) + %(n)s - 1) FROM "
    "(SELECT pg_get_serial_sequence('chunk_versions', 'vid')::regclass AS seq) AS s"
)


def _draw_vids(conn: Connection, n: int) -> list[int]:
    """PostgreSQL: the ids of a slice's `n` new versions, in ingest order,
    known before their COPY, so that their index rows go with them: looking
    them up after by record digest cost the server as much as storing the
    index rows."""
    last = int(conn.exec_driver_sql(_DRAW_VIDS_PG, {"n": n}).scalar_one())
    return list(range(last - n + 1, last + 1))


# The record fields a stored version's row holds under other names.
_STORED_AS = {"id": "chunk_id"}


def record_from_row(row: Any) -> ChunkRecord:
    """The chunk record of a stored version (the inverse of what ingest writes):
    every record field from its column, `required` as a boolean (SQLite stores
    0/1), and a document's `title` and `path` (revision 0007) and an exchange's
    `scope` when the row has them."""
    values = {name: getattr(row, _STORED_AS.get(name, name)) for name in FIELDS}
    values["required"] = bool(values["required"])
    return ChunkRecord(
        **values,
        title=getattr(row, "title", None),
        path=getattr(row, "path", None),
        scope=getattr(row, "scope", None),
    )


def ingest_payload_digest(
    conn: Connection, seq: int, read: int, unchanged: int, sources: list[str] | None
) -> str:
    """Digest of an ingest entry: its counts, the file names it read and the
    sorted record digests it added.

    Streamed from the database in digest order, so verify and ingest compute it
    the same way and a million digests are never held in memory. It equals
    `digest_value({"kind": "ingest", "new": [...], "read": R, "sources": [...],
    "unchanged": U})`. `sources` None is the form of ledgers written before the
    sources were covered (no `sources` key): verify accepts it for their batches.
    """
    h = hashlib.sha256(b'{"kind":"ingest","new":[')
    first = True
    digest_col: ColumnElement[str] = versions.c.record_digest
    if conn.dialect.name == "postgresql":
        digest_col = digest_col.collate("C")  # byte order, whatever the database's locale
    result = stream_tuples(
        conn,
        select(versions.c.record_digest).where(versions.c.batch_seq == seq).order_by(digest_col),
        10_000,
    )
    for (digest,) in result:
        # A stored digest that is not text (a tampered row) is hashed as its
        # JSON form, never as a digest's: the entry's digest then differs.
        text = b'"' + digest.encode() + b'"' if type(digest) is str else _tampered(digest)
        h.update(text if first else b"," + text)
        first = False
    h.update(b'],"read":' + str(read).encode())
    if sources is not None:
        h.update(b',"sources":' + canonical_bytes(sources))
    h.update(b',"unchanged":' + str(unchanged).encode() + b"}")
    return h.hexdigest()


def _tampered(value: Any) -> bytes:
    """A stored value of the wrong type, as bytes no value of the right type gives."""
    return canonical_bytes({"tampered": repr(value)})


Pending = list[tuple[str, ChunkRecord, str, Payload]]  # (where, record, digest, index payload)

# The stored versions of a slice's ids. SQLite: the driver's own `IN (?, ...)`
# (SQLAlchemy's rendering of an expanding parameter of 2,000 values per slice
# cost twice the lookup; a fresh `in_(values)` per slice also kept compiled
# forms piling up in its caches). PostgreSQL takes the ids as one array (2,000
# parameters cost more to parse and plan than the lookup itself).
_STORED_VERSIONS_SQL = (
    "SELECT chunk_id, source_version, record_digest FROM chunk_versions WHERE chunk_id IN ({})"
)
_STORED_VERSIONS_PG = select(
    versions.c.chunk_id, versions.c.source_version, versions.c.record_digest
).where(versions.c.chunk_id == any_(bindparam("ids", type_=ARRAY(versions.c.chunk_id.type))))


def _store_slice(conn: Connection, recs: Pending, seq: int, index: bool) -> tuple[int, int, int]:
    """Write one slice of validated records (and, with `index`, the rows of the
    full-text index that came with them, PostgreSQL's); return (new, unchanged,
    indexed).

    Earlier slices of this run are already in the table (same transaction), so
    the lookup below also catches a version repeated anywhere in the input.
    """
    ids = sorted({rec.id for _, rec, _, _ in recs})
    if conn.dialect.name == "postgresql":
        found = conn.execute(_STORED_VERSIONS_PG, {"ids": ids})
    else:
        marks = ", ".join(["?"] * len(ids))
        found = conn.exec_driver_sql(_STORED_VERSIONS_SQL.format(marks), tuple(ids))
    stored = {(chunk_id, version): digest for chunk_id, version, digest in found}
    seen: dict[tuple[str, str], str] = {}
    first_at: dict[tuple[str, str], str] = {}  # where this run read each version first
    rows: list[tuple[Any, ...]] = []
    payloads: list[bytes | str] = []  # the index payloads, of `indexed` rows
    indexed: list[int] = []  # positions in rows
    unchanged = 0
    for where, rec, digest, payload in recs:
        key = (rec.id, rec.source_version)
        known = stored.get(key) or seen.get(key)
        if known is None:
            seen[key] = digest
            first_at[key] = where
            if index and payload is not None:
                indexed.append(len(rows))
                payloads.append(payload)
            rows.append(_row(rec, digest, seq))
        elif known == digest or (
            rec.scope is not None and known == record_digest(replace(rec, scope=None))
        ):
            # (An exchange stored before scopes were recorded hashes without it.)
            unchanged += 1
        elif key in first_at:  # twice in this run, not yet stored
            raise RefusedError(
                f"{where}: chunk '{rec.id}' version '{rec.source_version}' is also at "
                f"{first_at[key]} with other content (record digest {known}; this one's is "
                f"{digest}); give one of them a new source_version, or drop one"
            )
        else:
            raise RefusedError(
                f"{where}: chunk '{rec.id}' version '{rec.source_version}' is already stored "
                f"with record digest {known}; this record's digest is {digest}. Versions are "
                "immutable: give the changed record a new source_version"
            )
    if not payloads:
        if rows:
            _insert_rows(conn, rows)
        return len(rows), unchanged, 0
    vids = _draw_vids(conn, len(rows))
    _insert_rows(conn, rows, vids)
    if len(indexed) < len(rows):
        vids = [vids[at] for at in indexed]
    index_payloads(conn, [(vids, payloads)])
    return len(rows), unchanged, len(payloads)


def _check_dedupe_groups(conn: Connection, seq: int, reread: Callable[[], Records] | None) -> None:
    """The dedupe-group rules (docs/reference/records.md) over everything stored,
    for the keys this batch touched.

    One set-based query finds a broken group; only then are its rows loaded, the
    rule named by `check_dedupe_groups`, and the input read again to name the
    record of this run that breaks it.
    """
    c = versions.c
    touched = select(c.dedupe_key).where(c.batch_seq == seq).distinct()
    # Only a key of two or more versions can break a rule. Found on the dedupe_key
    # index alone, they spare the other keys the row reads and the four DISTINCT
    # counts below (a batch of 100,000 keys of one version each: 0.18 s, 0.08 s so).
    shared = (
        select(c.dedupe_key)
        .where(c.dedupe_key.in_(touched))
        .group_by(c.dedupe_key)
        .having(func.count() > 1)
    )
    req = func.max(case((c.required, 1), else_=0))
    bad = conn.execute(
        select(c.dedupe_key)
        .where(c.dedupe_key.in_(shared))
        .group_by(c.dedupe_key)
        .having(
            and_(
                func.count(c.chunk_id.distinct()) > 1,
                (req == 1)
                | (func.count(c.section.distinct()) > 1)
                | (func.count(c.required_permission.distinct()) > 1)
                | (func.count(c.trust.distinct()) > 1),
            )
        )
        .order_by(c.dedupe_key)
        .limit(1)
    ).first()
    if bad is None:
        return
    rows = list(
        conn.execute(select(versions).where(c.dedupe_key == bad.dedupe_key).order_by(c.vid))
    )
    try:
        check_dedupe_groups(record_from_row(r) for r in rows)
    except RecordError as exc:
        where = _blame_dedupe(rows, seq, exc.rule, reread) if reread else None
        prefix = f"{where}: field 'dedupe_key': " if where else ""
        raise RefusedError(f"{prefix}{exc}; nothing was stored") from None
    raise RefusedError(
        f"dedupe_key '{bad.dedupe_key}' breaks the dedupe-group rules; nothing was stored"
    )


def _blame_dedupe(
    rows: list[Any], seq: int, rule: str, reread: Callable[[], Records]
) -> str | None:
    """The place (file:line or file: [i]) of the first record of this run that breaks `rule`.

    A required rule blames the first new required member (else the first new
    member); a boundary rule blames the first new member whose value differs
    from the group's oldest version stored before this run (else its oldest).
    """
    key = rows[0].dedupe_key
    new = {(r.chunk_id, r.source_version) for r in rows if r.batch_seq == seq}
    older = [r for r in rows if r.batch_seq != seq] or rows
    attribute = next(
        (a for a in ("section", "required_permission", "trust") if f"crosses {a} " in rule), None
    )

    def breaks(rec: ChunkRecord) -> bool:
        if attribute is None:
            return rec.required
        return bool(getattr(rec, attribute) != getattr(older[0], attribute))

    first = None
    for where, rec in reread():
        if rec.dedupe_key != key or (rec.id, rec.source_version) not in new:
            continue
        if breaks(rec):
            return where
        first = first or where
    return first


def store_records(
    engine: Engine,
    records: Digested,
    *,
    paths: list[str],
    reread: Callable[[], Records] | None = None,
    notes: Iterable[str] = (),
) -> IngestSummary:
    """Store every record of `records` (with its digest) in one transaction and
    one ingest entry.

    `paths` name the inputs (the batch records their file names); `reread` reads the input
    again, only to name the record that breaks a dedupe group (None: the message
    names the group alone). Raises `InputError` (a record breaks a rule, naming
    where it was read) or `RefusedError` (a changed version, a broken dedupe
    group); either way nothing is stored. `notes` is read after the records (the
    readers add to it while they run).
    """
    names = [os.path.basename(p) for p in paths]
    try:
        return _store(engine, records, paths, names, reread, notes)
    except _NothingNew as nothing:
        # A run that stores nothing new writes no entry (rolled back whole).
        return IngestSummary(None, nothing.read, 0, nothing.read, tuple(notes))


class _NothingNew(Exception):
    """Every record read was already stored: the transaction is rolled back."""

    def __init__(self, read: int):
        super().__init__(read)
        self.read = read


def _store(
    engine: Engine,
    records: Digested,
    paths: list[str],
    names: list[str],
    reread: Callable[[], Records] | None,
    notes: Iterable[str],
) -> IngestSummary:
    with write_transaction(engine) as conn:
        seq = reserve_entry(conn, "ingest")
        conn.execute(
            insert(batches).values(
                seq=seq,
                read_count=0,
                new_count=0,
                unchanged_count=0,
                sources=json.dumps(names),
            )
        )
        read = new = unchanged = indexed = 0
        pending: Pending = []
        # The versions that came with their index rows are indexed slice by
        # slice, the others after the last one (never in a database whose schema
        # predates the index: only reachable below the commands, which refuse a
        # schema that is behind).
        by_slice = wants_index_payloads(engine) and has_index(conn)
        for item in records:
            pending.append(item)
            read += 1
            if len(pending) >= SLICE:
                n, u, i = _store_slice(conn, pending, seq, by_slice)
                new, unchanged, indexed, pending = new + n, unchanged + u, indexed + i, []
        if pending:
            n, u, i = _store_slice(conn, pending, seq, by_slice)
            new, unchanged, indexed = new + n, unchanged + u, indexed + i
        if read == 0:
            raise InputError(
                f"{', '.join(paths)}: no chunk records (an empty array or `chunks`); "
                "nothing was stored"
            )
        if new == 0:
            raise _NothingNew(read)
        _check_dedupe_groups(conn, seq, reread)
        if indexed < new:  # the full-text index, in the same transaction
            index_batch(conn, seq, unindexed=indexed > 0)
        conn.execute(
            update(batches)
            .where(batches.c.seq == seq)
            .values(read_count=read, new_count=new, unchanged_count=unchanged)
        )
        seal_entry(conn, seq, ingest_payload_digest(conn, seq, read, unchanged, names))
    return IngestSummary(seq, read, new, unchanged, tuple(notes))
