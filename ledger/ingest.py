"""`ledger ingest`: read chunk records, validate them all, store them all or none.

Inputs: the seed-001 fixture (its `chunks`; its `request` is not applied), a JSON
array of chunk records, or JSON Lines, read line by line and written in slices
inside one transaction, so a file of a million lines is never held in memory and
a bad line anywhere leaves the database as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, and_, case, func, insert, select, update

from ledger.chain import reserve_entry, seal_entry
from ledger.db import write_transaction
from ledger.errors import InputError, RefusedError
from ledger.models import Batch, ChunkVersion
from ledger.records import ChunkRecord, RecordError, check_dedupe_groups, validate_chunk
from ledger.strictjson import StrictJSONError, loads_strict

FORMATS = ("auto", "fixture", "json", "jsonl")
SLICE = 2000  # records validated and written per statement
versions = ChunkVersion.__table__
batches = Batch.__table__

Progress = Callable[[int], None]  # called with bytes consumed since the last call


@dataclass(frozen=True, slots=True)
class IngestSummary:
    """SPEC's `ingest --json` summary: the batch's entry and the counts."""

    batch: int
    read: int
    new: int
    unchanged: int
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, int]:
        return {"batch": self.batch, "read": self.read, "new": self.new, "unchanged": self.unchanged}


def _check_input_file(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"{path}: is a symbolic link; pass the file it points to")
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory; pass chunk files")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: is not a regular file (device, pipe or socket)")


def detect_format(path: str, fmt: str) -> str:
    """`auto`: .jsonl/.ndjson are JSON Lines; .json is an array or a fixture."""
    if fmt != "auto":
        return fmt
    lower = path.lower()
    if lower.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if lower.endswith(".json"):
        return "json"
    raise InputError(
        f"{path}: cannot tell the format from the name; use --format fixture|json|jsonl"
    )


def _read_whole(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def _iter_jsonl(path: str, progress: Progress | None) -> Iterator[tuple[str, Any]]:
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    with f:
        lineno = 0
        for raw in f:
            lineno += 1
            if progress is not None:
                progress(len(raw))
            where = f"{path}:{lineno}"
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raise InputError(f"{where}: file starts with a UTF-8 byte-order mark; save it without one")
            if not raw.strip():
                raise InputError(f"{where}: blank line; JSON Lines holds one record on every line")
            try:
                yield where, loads_strict(raw)
            except StrictJSONError as exc:
                raise InputError(f"{where}: {exc}") from None
        if lineno == 0:
            raise InputError(f"{path}: empty file; expected one chunk record per line")


def _iter_json(path: str, fmt: str, notes: list[str], progress: Progress | None) -> Iterator[tuple[str, Any]]:
    data = _read_whole(path)
    if progress is not None:
        progress(len(data))
    if not data:
        raise InputError(f"{path}: empty file; expected a JSON array of chunk records or a fixture")
    try:
        doc = loads_strict(data)
    except StrictJSONError as exc:
        raise InputError(f"{path}: {exc}") from None
    if isinstance(doc, dict) and "chunks" in doc:
        if fmt == "json" and "request" not in doc:
            raise InputError(f"{path}: expected a JSON array of chunk records")
        if "request" in doc:
            notes.append(
                f"{path}: the fixture's `request` was not applied; set it with "
                "`ledger subject grant`, `ledger policy set` and `ledger build --as-of`"
            )
        items = doc["chunks"]
        label = "chunks"
        if not isinstance(items, list):
            raise InputError(f"{path}: `chunks` must be an array of chunk records")
    elif isinstance(doc, list):
        if fmt == "fixture":
            raise InputError(f"{path}: expected a seed-001 fixture object with `chunks`")
        items, label = doc, ""
    else:
        raise InputError(
            f"{path}: expected a JSON array of chunk records or a fixture object with `chunks`"
        )
    for i, obj in enumerate(items):
        yield (f"{path}: {label}[{i}]" if label else f"{path}: [{i}]"), obj


def read_records(
    paths: Iterable[str], fmt: str = "auto", *, notes: list[str], progress: Progress | None = None
) -> Iterator[tuple[str, ChunkRecord]]:
    """Yield (where, validated record) for every record of every file, lazily."""
    for path in paths:
        _check_input_file(path)
        kind = detect_format(path, fmt)
        raw = _iter_jsonl(path, progress) if kind == "jsonl" else _iter_json(path, kind, notes, progress)
        for where, obj in raw:
            try:
                yield where, validate_chunk(obj)
            except RecordError as exc:
                field = f"field '{exc.field}': " if exc.field else ""
                raise InputError(f"{where}: {field}{exc.rule}") from None


def _row(rec: ChunkRecord, batch_seq: int) -> dict[str, Any]:
    return {
        "chunk_id": rec.id,
        "source_version": rec.source_version,
        "section": rec.section,
        "source_uri": rec.source_uri,
        "effective_from": rec.effective_from,
        "expires_on": rec.expires_on,
        "required_permission": rec.required_permission,
        "trust": rec.trust,
        "dedupe_key": rec.dedupe_key,
        "estimated_tokens": rec.estimated_tokens,
        "priority": rec.priority,
        "required": rec.required,
        "content": rec.content,
        "content_digest": rec.content_digest,
        "record_digest": rec.record_digest,
        "batch_seq": batch_seq,
    }


def record_from_row(row: Any) -> ChunkRecord:
    """The chunk record of a stored version (the inverse of what ingest writes)."""
    return ChunkRecord(
        id=row.chunk_id,
        section=row.section,
        source_uri=row.source_uri,
        source_version=row.source_version,
        effective_from=row.effective_from,
        expires_on=row.expires_on,
        required_permission=row.required_permission,
        trust=row.trust,
        dedupe_key=row.dedupe_key,
        estimated_tokens=row.estimated_tokens,
        priority=row.priority,
        required=bool(row.required),
        content=row.content,
    )


def ingest_payload_digest(conn: Connection, seq: int, read: int, unchanged: int) -> str:
    """Digest of an ingest entry: its counts and the sorted record digests it added.

    Streamed from the database in digest order, so verify and ingest compute it
    the same way and a million digests are never held in memory. It equals
    `digest_value({"kind": "ingest", "new": [...], "read": R, "unchanged": U})`.
    """
    h = hashlib.sha256(b'{"kind":"ingest","new":[')
    first = True
    result = conn.execution_options(yield_per=10_000).execute(
        select(versions.c.record_digest)
        .where(versions.c.batch_seq == seq)
        .order_by(versions.c.record_digest)
    )
    for (digest,) in result:
        h.update(b'"' + digest.encode() + b'"' if first else b',"' + digest.encode() + b'"')
        first = False
    h.update(b'],"read":' + str(read).encode() + b',"unchanged":' + str(unchanged).encode() + b"}")
    return h.hexdigest()


def _store_slice(conn: Connection, recs: list[tuple[str, ChunkRecord]], seq: int) -> tuple[int, int]:
    """Write one slice of validated records; return (new, unchanged).

    Earlier slices of this run are already in the table (same transaction), so
    the lookup below also catches a version repeated anywhere in the input.
    """
    ids = {rec.id for _, rec in recs}
    stored: dict[tuple[str, str], str] = {}
    for row in conn.execute(
        select(versions.c.chunk_id, versions.c.source_version, versions.c.record_digest).where(
            versions.c.chunk_id.in_(ids)
        )
    ):
        stored[(row.chunk_id, row.source_version)] = row.record_digest
    seen: dict[tuple[str, str], str] = {}
    rows = []
    new = unchanged = 0
    for where, rec in recs:
        key = (rec.id, rec.source_version)
        digest = rec.record_digest
        known = stored.get(key) or seen.get(key)
        if known is None:
            seen[key] = digest
            rows.append(_row(rec, seq))
            new += 1
        elif known == digest:
            unchanged += 1
        else:
            raise RefusedError(
                f"{where}: chunk '{rec.id}' version '{rec.source_version}' is already stored "
                f"with record digest {known}; this record's digest is {digest}. Versions are "
                "immutable: give the changed record a new source_version"
            )
    if rows:
        conn.execute(insert(versions), rows)
    return new, unchanged


def _check_dedupe_groups(conn: Connection, seq: int) -> None:
    """SPEC's dedupe-group rules over everything stored, for the keys this batch touched."""
    c = versions.c
    touched = select(c.dedupe_key).where(c.batch_seq == seq).distinct().scalar_subquery()
    req = func.max(case((c.required, 1), else_=0))
    bad = conn.execute(
        select(c.dedupe_key)
        .where(c.dedupe_key.in_(touched))
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
    rows = conn.execute(select(versions).where(c.dedupe_key == bad.dedupe_key).order_by(c.vid))
    try:
        check_dedupe_groups(record_from_row(r) for r in rows)
    except RecordError as exc:
        raise RefusedError(f"dedupe group rules: {exc.rule}; nothing was stored") from None
    raise RefusedError(f"dedupe_key '{bad.dedupe_key}' breaks the dedupe-group rules; nothing was stored")


def ingest(
    engine: Engine, paths: list[str], fmt: str = "auto", *, progress: Progress | None = None
) -> IngestSummary:
    """Validate and store every record of `paths` in one transaction and one entry."""
    if fmt not in FORMATS:
        raise InputError(f"--format: unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if not paths:
        raise InputError("no input files; name one or more chunk files")
    for path in paths:
        _check_input_file(path)
        detect_format(path, fmt)
    notes: list[str] = []
    with write_transaction(engine) as conn:
        seq = reserve_entry(conn, "ingest")
        conn.execute(
            insert(batches).values(
                seq=seq,
                read_count=0,
                new_count=0,
                unchanged_count=0,
                sources=json.dumps([os.path.basename(p) for p in paths]),
            )
        )
        read = new = unchanged = 0
        pending: list[tuple[str, ChunkRecord]] = []
        for item in read_records(paths, fmt, notes=notes, progress=progress):
            pending.append(item)
            read += 1
            if len(pending) >= SLICE:
                n, u = _store_slice(conn, pending, seq)
                new, unchanged, pending = new + n, unchanged + u, []
        if pending:
            n, u = _store_slice(conn, pending, seq)
            new, unchanged = new + n, unchanged + u
        if read == 0:
            raise InputError("the input holds no chunk records; nothing was stored")
        _check_dedupe_groups(conn, seq)
        conn.execute(
            update(batches)
            .where(batches.c.seq == seq)
            .values(read_count=read, new_count=new, unchanged_count=unchanged)
        )
        seal_entry(conn, seq, ingest_payload_digest(conn, seq, read, unchanged))
    return IngestSummary(seq, read, new, unchanged, tuple(notes))
