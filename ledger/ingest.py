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
from json.encoder import encode_basestring
from typing import Any

from sqlalchemy import Connection, Engine, and_, bindparam, case, func, insert, select, update

from ledger.chain import reserve_entry, seal_entry
from ledger.db import write_transaction
from ledger.errors import InputError, RefusedError
from ledger.models import Batch, ChunkVersion
from ledger.records import FIELDS, ChunkRecord, RecordError, check_dedupe_groups, validate_chunk
from ledger.strictjson import StrictJSONError, loads_strict

FORMATS = ("auto", "fixture", "json", "jsonl", "transcript")
FIXTURE_KEYS = frozenset({"fixture_version", "selector_version", "request", "chunks"})
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
        return {
            "batch": self.batch,
            "read": self.read,
            "new": self.new,
            "unchanged": self.unchanged,
        }


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
                raise InputError(
                    f"{where}: file starts with a UTF-8 byte-order mark; save it without one"
                )
            if not raw.strip():
                raise InputError(f"{where}: blank line; JSON Lines holds one record on every line")
            try:
                obj = loads_strict(raw)
            except StrictJSONError as exc:
                field = _field_of(_lenient_loads(raw))
                error = _line_error(raw, exc)
                raise InputError(f"{where}: {_field_prefix(field)}{error}") from None
            yield where, obj
        if lineno == 0:
            raise InputError(f"{path}: empty file; expected one chunk record per line")


def _line_error(raw: bytes, exc: StrictJSONError) -> StrictJSONError:
    """The error of a line parsed without its line ending, so that a position
    names the line itself (`line 1, column 16`), not the empty one after it."""
    try:
        loads_strict(raw.rstrip(b"\r\n"))
    except StrictJSONError as inline:
        return inline
    return exc


def _iter_json(
    path: str, fmt: str, notes: list[str], progress: Progress | None
) -> Iterator[tuple[str, Any]]:
    data = _read_whole(path)
    if progress is not None:
        progress(len(data))
    if not data:
        raise InputError(f"{path}: empty file; expected a JSON array of chunk records or a fixture")
    try:
        doc = loads_strict(data)
    except StrictJSONError as exc:
        raise InputError(_locate_json_error(path, data, exc)) from None
    if isinstance(doc, dict) and fmt != "json":
        if "chunks" not in doc:
            raise InputError(f"{path}: a seed-001 fixture object needs `chunks`")
        unknown = sorted(set(doc) - FIXTURE_KEYS)
        if unknown:
            raise InputError(
                f"{path}: not a seed-001 fixture: unknown top-level fields {unknown} "
                f"(a fixture has {sorted(FIXTURE_KEYS)})"
            )
        if "request" in doc:
            notes.append(
                f"{path}: the fixture's `request` was not applied; set it with "
                "`ledger subject grant`, `ledger policy set` and `ledger build --as-of`"
            )
        items = doc["chunks"]
        label = "chunks"
        if not isinstance(items, list):
            raise InputError(f"{path}: `chunks` must be an array of chunk records")
    elif isinstance(doc, list) and fmt != "fixture":
        items, label = doc, ""
    elif fmt == "fixture":
        raise InputError(f"{path}: expected a seed-001 fixture object with `chunks`")
    elif fmt == "json":
        hint = "; for a seed-001 fixture use --format fixture" if isinstance(doc, dict) else ""
        raise InputError(f"{path}: expected a JSON array of chunk records{hint}")
    else:
        raise InputError(
            f"{path}: expected a JSON array of chunk records or a fixture object with `chunks`"
        )
    for i, obj in enumerate(items):
        yield _where_in_array(path, label, i), obj


def _where_in_array(path: str, label: str, index: int) -> str:
    return f"{path}: {label}[{index}]" if label else f"{path}: [{index}]"


# Locating a parse-level error. The strict parser stops at the first duplicate
# key, non-finite number, lone surrogate or invalid UTF-8 byte without saying in
# which record or field; on that (rare) path the text is parsed again leniently,
# marking what the strict parser refuses, to name the record and its field.


class _Marked(dict):  # type: ignore[type-arg]
    """A JSON object parsed leniently; `duplicate` is its first repeated key."""

    duplicate: str | None = None


class _Refused:
    """Stands for a non-finite number in a lenient parse."""


_REFUSED = _Refused()


def _marked_object(pairs: list[tuple[str, Any]]) -> _Marked:
    obj = _Marked(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                obj.duplicate = key
                break
            seen.add(key)
    return obj


def _lenient_float(text: str) -> Any:
    value = float(text)
    return value if value not in (float("inf"), float("-inf")) else _REFUSED


_lenient_decoder = json.JSONDecoder(
    object_pairs_hook=_marked_object,
    parse_constant=lambda _name: _REFUSED,
    parse_float=_lenient_float,
)


def _lenient_loads(raw: bytes) -> Any:
    """Parse like `loads_strict` would, but mark instead of refusing; None if unparsable."""
    try:
        return _lenient_decoder.decode(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None


def _refused(value: Any) -> bool:
    """Whether `value` holds something the strict parser refuses."""
    if value is _REFUSED:
        return True
    if isinstance(value, str):
        if value.isascii():
            return False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        if getattr(value, "duplicate", None) is not None:
            return True
        return any(_refused(k) or _refused(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_refused(v) for v in value)
    return False


def _field_of(record: Any) -> str | None:
    """The top-level field of a record that holds what the strict parser refused."""
    if not isinstance(record, dict):
        return None
    duplicate = getattr(record, "duplicate", None)
    if duplicate is not None:
        return str(duplicate)
    for key, value in record.items():
        if _refused(key) or _refused(value):
            return str(key)
    return None


def _field_prefix(field: str | None) -> str:
    # repr() keeps a field name with a lone surrogate printable.
    return f"field {field!r}: " if field is not None else ""


def _locate_json_error(path: str, data: bytes, exc: StrictJSONError) -> str:
    """`path: [i]: field 'f': <what>` for an error inside a record, else `path: <what>`."""
    doc = _lenient_loads(data)
    label = ""
    if isinstance(doc, dict) and not _refused_outside_chunks(doc):
        doc, label = doc.get("chunks"), "chunks"
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            if _refused(item):
                where = _where_in_array(path, label, i)
                return f"{where}: {_field_prefix(_field_of(item))}{exc}"
    return f"{path}: {exc}"


def _refused_outside_chunks(doc: dict[str, Any]) -> bool:
    if getattr(doc, "duplicate", None) is not None:
        return True
    return any(_refused(k) or (k != "chunks" and _refused(v)) for k, v in doc.items())


def _iter_transcript(
    path: str, priorities: str | None, id_prefix: str | None, progress: Progress | None
) -> Iterator[tuple[str, Any]]:
    """A transcript's exchanges as chunk records (see `ledger.continuation`)."""
    from ledger.continuation import check_id_prefix, default_id_prefix, exchange_records, load_annotated

    prefix = check_id_prefix(id_prefix) if id_prefix is not None else default_id_prefix(path)
    annotated = load_annotated(path, priorities)
    if progress is not None:
        progress(len(annotated.transcript.data))
    yield from exchange_records(annotated, prefix)


def read_records(
    paths: Iterable[str],
    fmt: str = "auto",
    *,
    notes: list[str],
    progress: Progress | None = None,
    transcript: tuple[str | None, str | None] = (None, None),
) -> Iterator[tuple[str, ChunkRecord]]:
    """Yield (where, validated record) for every record of every file, lazily.

    `transcript` is (priorities sidecar, id prefix) for `--format transcript`.
    """
    for path in paths:
        _check_input_file(path)
        kind = detect_format(path, fmt)
        # `_iter_json` gets the requested format: `auto` takes an array or a fixture.
        if kind == "transcript":
            raw = _iter_transcript(path, *transcript, progress)
        elif kind == "jsonl":
            raw = _iter_jsonl(path, progress)
        else:
            raw = _iter_json(path, fmt, notes, progress)
        for where, obj in raw:
            try:
                yield where, validate_chunk(obj, allow_nul=False)
            except RecordError as exc:
                field = f"field '{exc.field}': " if exc.field else ""
                raise InputError(f"{where}: {field}{exc.rule}") from None


# The record's canonical JSON, written out: its keys are the 13 field names in
# sorted order (all ASCII, so code-point order is RFC 8785's UTF-16 order).
_DIGEST_ORDER = (
    "content",
    "dedupe_key",
    "effective_from",
    "estimated_tokens",
    "expires_on",
    "id",
    "priority",
    "required",
    "required_permission",
    "section",
    "source_uri",
    "source_version",
    "trust",
)
if tuple(sorted(FIELDS)) != _DIGEST_ORDER:  # a field was added to the chunk record
    raise RuntimeError("ledger.ingest.record_digest is out of date with records.FIELDS")
# C string escaper of json.dumps(ensure_ascii=False): the ECMAScript escapes of
# RFC 8785 (\b \t \n \f \r \" \\ and \u00xx for the other controls, nothing else).
_str = encode_basestring


def record_digest(rec: ChunkRecord) -> str:
    """The record digest of a validated record: `digest_value(rec.to_json())`, fast.

    Ingest's hot path. A validated record holds strings without lone surrogates,
    integers far inside the safe range, a boolean and a date or null, so its RFC
    8785 text can be written out directly, 4x faster than the general encoder;
    tests check it against `ChunkRecord.record_digest` and the `rfc8785` package.
    """
    text = (
        '{"content":'
        + _str(rec.content)
        + ',"dedupe_key":'
        + _str(rec.dedupe_key)
        + ',"effective_from":'
        + _str(rec.effective_from)
        + ',"estimated_tokens":'
        + str(int(rec.estimated_tokens))
        + ',"expires_on":'
        + ("null" if rec.expires_on is None else _str(rec.expires_on))
        + ',"id":'
        + _str(rec.id)
        + ',"priority":'
        + str(int(rec.priority))
        + ',"required":'
        + ("true" if rec.required else "false")
        + ',"required_permission":'
        + _str(rec.required_permission)
        + ',"section":'
        + _str(rec.section)
        + ',"source_uri":'
        + _str(rec.source_uri)
        + ',"source_version":'
        + _str(rec.source_version)
        + ',"trust":'
        + _str(rec.trust)
        + "}"
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# The columns ingest writes, in the order of `_row`'s tuples.
_ROW_COLUMNS = (
    "chunk_id",
    "source_version",
    "section",
    "source_uri",
    "effective_from",
    "expires_on",
    "required_permission",
    "trust",
    "dedupe_key",
    "estimated_tokens",
    "priority",
    "required",
    "content",
    "content_digest",
    "record_digest",
    "batch_seq",
)


def _row(rec: ChunkRecord, digest: str, batch_seq: int) -> tuple[Any, ...]:
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
        hashlib.sha256(rec.content.encode("utf-8")).hexdigest(),
        digest,
        batch_seq,
    )


def _insert_rows(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    """One executemany of chunk-version rows.

    The statement is SQLAlchemy's own, compiled once per call; on a driver with
    positional parameters (sqlite3) the tuples go to it directly, which skips
    SQLAlchemy's per-row parameter processing (a third of the write time). The
    values need none: str, int, bool and None bind as they are.
    """
    compiled = insert(versions).compile(dialect=conn.dialect, column_keys=list(_ROW_COLUMNS))
    if compiled.positional and tuple(compiled.positiontup or ()) == _ROW_COLUMNS:
        conn.exec_driver_sql(str(compiled), rows)
    elif not compiled.positional and set(compiled.binds) == set(_ROW_COLUMNS):
        # Named parameters (psycopg): dicts straight to the driver, same reason.
        conn.exec_driver_sql(str(compiled), [dict(zip(_ROW_COLUMNS, row, strict=True)) for row in rows])
    else:
        conn.execute(insert(versions), [dict(zip(_ROW_COLUMNS, row, strict=True)) for row in rows])


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
    digest_col = versions.c.record_digest
    if conn.dialect.name == "postgresql":
        digest_col = digest_col.collate("C")  # byte order, whatever the database's locale
    result = conn.execute(
        select(versions.c.record_digest)
        .where(versions.c.batch_seq == seq)
        .order_by(digest_col)
        .execution_options(yield_per=10_000)
    )
    for (digest,) in result:
        h.update(b'"' + digest.encode() + b'"' if first else b',"' + digest.encode() + b'"')
        first = False
    h.update(b'],"read":' + str(read).encode() + b',"unchanged":' + str(unchanged).encode() + b"}")
    return h.hexdigest()


Pending = list[tuple[str, ChunkRecord, str]]  # (where, record, record digest)

# Built once, with an expanding parameter: a fresh `in_(values)` per slice kept
# compiled forms piling up in the caches (peak memory of a million-line ingest:
# 218 MB that way, 86 MB this way).
_STORED_VERSIONS = select(
    versions.c.chunk_id, versions.c.source_version, versions.c.record_digest
).where(versions.c.chunk_id.in_(bindparam("ids", expanding=True)))


def _store_slice(conn: Connection, recs: Pending, seq: int) -> tuple[int, int]:
    """Write one slice of validated records; return (new, unchanged).

    Earlier slices of this run are already in the table (same transaction), so
    the lookup below also catches a version repeated anywhere in the input.
    """
    ids = sorted({rec.id for _, rec, _ in recs})
    stored: dict[tuple[str, str], str] = {}
    for row in conn.execute(_STORED_VERSIONS, {"ids": ids}):
        stored[(row.chunk_id, row.source_version)] = row.record_digest
    seen: dict[tuple[str, str], str] = {}
    rows = []
    new = unchanged = 0
    for where, rec, digest in recs:
        key = (rec.id, rec.source_version)
        known = stored.get(key) or seen.get(key)
        if known is None:
            seen[key] = digest
            rows.append(_row(rec, digest, seq))
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
        _insert_rows(conn, rows)
    return new, unchanged


def _check_dedupe_groups(conn: Connection, seq: int, paths: list[str], fmt: str) -> None:
    """SPEC's dedupe-group rules over everything stored, for the keys this batch touched.

    One set-based query finds a broken group; only then are its rows loaded, the
    rule named by `check_dedupe_groups`, and the input read again to name the
    record of this run that breaks it.
    """
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
    rows = list(
        conn.execute(select(versions).where(c.dedupe_key == bad.dedupe_key).order_by(c.vid))
    )
    try:
        check_dedupe_groups(record_from_row(r) for r in rows)
    except RecordError as exc:
        where = _blame_dedupe(rows, seq, exc.rule, paths, fmt)
        prefix = f"{where}: field 'dedupe_key': " if where else ""
        raise RefusedError(f"{prefix}{exc}; nothing was stored") from None
    raise RefusedError(
        f"dedupe_key '{bad.dedupe_key}' breaks the dedupe-group rules; nothing was stored"
    )


def _blame_dedupe(rows: list[Any], seq: int, rule: str, paths: list[str], fmt: str) -> str | None:
    """The place (file:line or file: [i]) of the first record of this run that breaks `rule`.

    A required rule blames the first new required member (else the first new
    member); a boundary rule blames the first new member whose value differs
    from the group's oldest version stored before this run (else its oldest).
    """
    if fmt == "transcript":
        return None  # an exchange's dedupe_key is its own id: the message names it already
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
    for where, rec in read_records(paths, fmt, notes=[]):
        if rec.dedupe_key != key or (rec.id, rec.source_version) not in new:
            continue
        if breaks(rec):
            return where
        first = first or where
    return first


def ingest(
    engine: Engine,
    paths: list[str],
    fmt: str = "auto",
    *,
    progress: Progress | None = None,
    priorities: str | None = None,
    id_prefix: str | None = None,
) -> IngestSummary:
    """Validate and store every record of `paths` in one transaction and one entry.

    Raises `InputError` (a file or record breaks a rule, naming file, line or
    index, field and rule) or `RefusedError` (a changed version, a broken dedupe
    group); either way nothing is stored.
    """
    if fmt not in FORMATS:
        raise InputError(f"--format: unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if not paths:
        raise InputError("no input files; name one or more chunk files")
    if fmt == "transcript" and len(paths) != 1:
        raise InputError("--format transcript takes one transcript (its --priorities belong to it)")
    if fmt != "transcript" and (priorities is not None or id_prefix is not None):
        raise InputError("--priorities and --id-prefix go with --format transcript")
    for path in paths:
        _check_input_file(path)
        detect_format(path, fmt)
    if priorities is not None:
        _check_input_file(priorities)  # a named pipe or /dev/zero would hang the read
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
        pending: Pending = []
        for where, rec in read_records(
            paths, fmt, notes=notes, progress=progress, transcript=(priorities, id_prefix)
        ):
            pending.append((where, rec, record_digest(rec)))
            read += 1
            if len(pending) >= SLICE:
                n, u = _store_slice(conn, pending, seq)
                new, unchanged, pending = new + n, unchanged + u, []
        if pending:
            n, u = _store_slice(conn, pending, seq)
            new, unchanged = new + n, unchanged + u
        if read == 0:
            raise InputError(
                f"{', '.join(paths)}: no chunk records (an empty array or `chunks`); "
                "nothing was stored"
            )
        _check_dedupe_groups(conn, seq, paths, fmt)
        conn.execute(
            update(batches)
            .where(batches.c.seq == seq)
            .values(read_count=read, new_count=new, unchanged_count=unchanged)
        )
        seal_entry(conn, seq, ingest_payload_digest(conn, seq, read, unchanged))
    return IngestSummary(seq, read, new, unchanged, tuple(notes))
