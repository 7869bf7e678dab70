"""Chunk records from files: pack fixtures (docs/reference/compatibility.md),
JSON arrays, JSON Lines, and annotated transcripts, read lazily and validated
record by record.

Each record comes with where it was read (`file:line` or `file: [index]`), so the
store can name the record that breaks a rule. Nothing here touches the database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import replace
from typing import Any

import msgspec

from ledger.core.errors import InputError
from ledger.core.records import (
    EXCHANGE_SCOPE,
    FIELDS,
    ChunkRecord,
    RecordError,
    is_plain,
    record_digest,
    validate_chunk,
)
from ledger.core.strictjson import StrictJSONError, loads_strict
from ledger.ingest.source import check_input_file, iter_lines, read_whole
from ledger.safeio import open_regular

FORMATS = ("auto", "fixture", "json", "jsonl", "transcript")
FIXTURE_KEYS = frozenset({"fixture_version", "selector_version", "request", "chunks"})

Progress = Callable[[int], None]  # called with bytes consumed since the last call


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
        f"{path}: cannot tell the format from the name; use fixture, json or jsonl",
        param="format",
    )


def _read_whole(path: str) -> bytes:
    return read_whole(path, "chunk file")


# Ingest's hot path: a line of JSON Lines that is plainly one plain chunk record
# is decoded by msgspec straight into a ChunkRecord (the parse, the field types
# and the record made in C, no dict per line), then `is_plain` checks its
# values: 1.0-1.25 s per 100,000 lines where the standard library's scanner, its
# pairs hook and the dataclass took 1.55-2.3 s (bench/RESULTS.md). msgspec keeps
# the last of a repeated key where the strict reader refuses it, so a line is
# decoded here only when it cannot repeat one: exactly 13 occurrences of `":`
# and no white space between a quote and a colon. Every key then ends in the
# `":` that closes it, so the line has at most 13 keys, and the decoder finds
# the 13 fields (none has a default but title, path and scope), so it has
# exactly the 13, once each. A `":` inside a string only makes a line take the
# full path. So does anything else msgspec refuses: a number that is not an
# integer, invalid UTF-8 or a lone surrogate, a byte-order mark, text after
# the object.
_DECODE_RECORD = msgspec.json.Decoder(ChunkRecord).decode
_SPACED_KEY = re.compile(rb'"[ \t\r\n]+:')
_KEY_ENDS = len(FIELDS)


def plain_line(raw: bytes) -> ChunkRecord | None:
    """The record of one line of JSON Lines when the line is plainly one plain
    record: what `loads_strict` then `validate_chunk(obj, allow_nul=False,
    ledger=True)` return for it. Else None, and those steps name what is wrong."""
    if raw.count(b'":') != _KEY_ENDS or _SPACED_KEY.search(raw) is not None:
        return None
    try:
        rec = _DECODE_RECORD(raw)
    except msgspec.MsgspecError:  # anything it refuses: the full path says what
        return None
    return rec if is_plain(rec) else None


def iter_jsonl(path: str, progress: Progress | None) -> Iterator[tuple[str, ChunkRecord]]:
    """(where, validated record) of every line of a JSON Lines file, lazily."""
    # Streamed line by line, each line bounded by what a valid record can need.
    with open_regular(path, "chunk file") as f:
        lineno = 0
        for lineno, raw in iter_lines(f, path, "chunk file"):
            if progress is not None:
                progress(len(raw))
            where = f"{path}:{lineno}"
            # Ingest's fast path: a line that is plainly one plain record is that
            # record (`plain_line`); any other line is parsed and validated step by
            # step, which names what is wrong.
            rec = plain_line(raw)
            yield where, rec if rec is not None else validated(where, _parsed(raw, where, lineno))
        if lineno == 0:
            raise InputError(f"{path}: empty file; expected one chunk record per line")


def _parsed(raw: bytes, where: str, lineno: int) -> Any:
    """One line of JSON Lines parsed strictly, or the `InputError` that names its fault."""
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raise InputError(f"{where}: file starts with a UTF-8 byte-order mark; save it without one")
    if raw.isspace():  # (`iter_lines` yields no empty line)
        raise InputError(f"{where}: blank line; JSON Lines holds one record on every line")
    try:
        return loads_strict(raw)
    except StrictJSONError as exc:
        field = _field_of(_lenient_loads(raw))
        error = _line_error(raw, exc)
        raise InputError(f"{where}: {_field_prefix(field)}{error}") from None


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
            raise InputError(f"{path}: a pack fixture object needs `chunks`")
        unknown = sorted(set(doc) - FIXTURE_KEYS)
        if unknown:
            raise InputError(
                f"{path}: not a pack fixture: unknown top-level fields {unknown} "
                f"(a fixture has {sorted(FIXTURE_KEYS)})"
            )
        missing = sorted(FIXTURE_KEYS - set(doc))
        if missing:  # a fixture has exactly its four fields (docs/reference/commands.md)
            raise InputError(
                f"{path}: not a pack fixture: missing top-level fields {missing} "
                f"(a fixture has {sorted(FIXTURE_KEYS)}; for chunk records alone, "
                "write a JSON array of them)"
            )
        if "request" in doc:
            notes.append(
                f"{path}: a pack fixture: its chunks are stored; its request (date, budget, "
                "permissions, trust labels) is not applied: give them with `ledger subject "
                "grant`, `ledger policy set` and `ledger build --as-of`"
            )
        items = doc["chunks"]
        label = "chunks"
        if not isinstance(items, list):
            raise InputError(f"{path}: `chunks` must be an array of chunk records")
    elif isinstance(doc, list) and fmt != "fixture":
        items, label = doc, ""
    elif fmt == "fixture":
        raise InputError(f"{path}: expected a pack fixture object with `chunks`")
    elif fmt == "json":
        hint = "; a pack fixture is format fixture" if isinstance(doc, dict) else ""
        raise InputError(
            f"{path}: expected a JSON array of chunk records{hint}",
            param="format" if hint else None,
        )
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
    path: str,
    priorities: str | None,
    id_prefix: str | None,
    progress: Progress | None,
    source_format: str | None = None,
    notes: list[str] | None = None,
) -> Iterator[tuple[str, Any]]:
    """A transcript's exchanges as chunk records (see `ledger.ingest.transcripts`)."""
    from ledger.ingest.transcripts import (
        check_id_prefix,
        default_id_prefix,
        exchange_records,
        load_annotated,
    )

    annotated = load_annotated(path, priorities, source_format)
    if id_prefix is not None:
        prefix = check_id_prefix(id_prefix)
    else:
        prefix = default_id_prefix(path, annotated)
    export = annotated.transcript.export
    if export is not None and notes is not None:
        shown = ", ".join(f"{k} {v}" for k, v in export.skipped.items()) or "none"
        notes.append(
            f"{path}: session {annotated.session_slug}, skipped {sum(export.skipped.values())} "
            f"record(s) without a message ({shown})"
        )
        if export.agent_id is not None:
            launched = annotated.launched_by or "not found (no parent session file beside it)"
            notes.append(f"{path}: subagent {export.agent_id}, launched by {launched}")
        if export.launches:
            shown = ", ".join(f"{agent} in {ex}" for agent, ex in export.launches.items())
            notes.append(f"{path}: launched subagents {shown}")
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
    source_format: str | None = None,
) -> Iterator[tuple[str, ChunkRecord]]:
    """Yield (where, validated record) for every record of every file, lazily.

    `transcript` is (priorities sidecar, id prefix) for the format "transcript",
    `source_format` the export's format (None: the strict contract).
    """
    for path in paths:
        check_input_file(path)
        kind = detect_format(path, fmt)
        if kind == "jsonl":
            yield from iter_jsonl(path, progress)  # validated as each line is read
        elif kind == "transcript":
            # The one path that writes a scope: an exchange read from a transcript.
            # A record of any other input cannot claim it (it is no record field).
            for where, obj in _iter_transcript(path, *transcript, progress, source_format, notes):
                yield where, replace(validated(where, obj), scope=EXCHANGE_SCOPE)
        else:
            # `_iter_json` gets the requested format: `auto` takes an array or a fixture.
            for where, obj in _iter_json(path, fmt, notes, progress):
                yield where, validated(where, obj)


def read_digested(
    paths: list[str],
    fmt: str = "auto",
    *,
    notes: list[str],
    progress: Progress | None = None,
    transcript: tuple[str | None, str | None] = (None, None),
    source_format: str | None = None,
    index_payloads: bool = False,
) -> Generator[tuple[str, ChunkRecord, str, bytes | str | None], None, None]:
    """`read_records` with each record's digest and None: (where, record,
    record digest, None).

    A large JSON Lines file is read by a second process while the caller
    stores what it sent (`ledger.ingest.worker`); the records, and the errors,
    are the same. With `index_payloads` that process also makes each record's
    PostgreSQL index row (`ledger.core.tsvector.index_payload`) in the place of
    the None.
    """
    from ledger.ingest.worker import read_jsonl, worth_a_worker

    for path in paths:
        check_input_file(path)
        if detect_format(path, fmt) == "jsonl" and worth_a_worker(path, index_payloads):
            yield from read_jsonl(path, progress, index_payloads)
            continue
        one = read_records(
            [path],
            fmt,
            notes=notes,
            progress=progress,
            transcript=transcript,
            source_format=source_format,
        )
        yield from with_digests(one)


def with_digests(
    records: Iterable[tuple[str, ChunkRecord]],
) -> Iterator[tuple[str, ChunkRecord, str, bytes | str | None]]:
    """(where, record) as the store takes them: (where, record, record digest,
    None for the index row it makes itself)."""
    for where, rec in records:
        yield where, rec, record_digest(rec), None


def validated(where: str, obj: Any) -> ChunkRecord:
    """One chunk object validated for the ledger; an error names `where` and the field."""
    try:
        return validate_chunk(obj, allow_nul=False, ledger=True)
    except RecordError as exc:
        field = f"field '{exc.field}': " if exc.field else ""
        raise InputError(f"{where}: {field}{exc.rule}") from None
