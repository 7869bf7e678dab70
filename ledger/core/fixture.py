"""`ledger pack`: the pack-fixture contract, exactly. Pure: bytes in, pack out.
(docs/reference/compatibility.md)

The fixture is validated as the reference validates it (same order of checks, same
words), every text field stripped, `content` included, and run through the one
selector (`ledger.core.select`) without gates 5 and 6 (retracted, superseded), which
the reference does not have.

    >>> from importlib.resources import files
    >>> result = build_fixture_pack(files("ledger_fixtures").joinpath(
    ...     "support-chunks.json").read_bytes())
    >>> result.lines[0]
    'budget=170 used=162 remaining=8'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.candidates import candidate_of
from ledger.core.errors import InputError, RefusedError
from ledger.core.reasons import SEED_REASONS as SEED_REASONS  # the six this contract uses
from ledger.core.records import (
    FIELDS,
    FIXTURE_MAX_CONTENT,
    MAX_TOKENS,
    TRUST_LABELS,
    ChunkRecord,
    RecordError,
    check_dedupe_groups,
    check_fields,
    identifier,
    integer,
    iso_date,
    validate_chunk,
)
from ledger.core.select import Candidate, Request, select
from ledger.core.strictjson import loads_strict

ROOT_FIELDS = frozenset({"fixture_version", "selector_version", "request", "chunks"})
REQUEST_FIELDS = frozenset({"as_of", "pack_budget_tokens", "granted_permissions", "allowed_trust"})
MAX_CHUNKS = 500
PACK_KEYS = (
    "fixture_version",
    "selector_version",
    "as_of",
    "budget_tokens",
    "used_tokens",
    "remaining_tokens",
    "selected",
    "excluded",
)
# A selected chunk: the record's first six fields (id to expires_on), then these.
SELECTED_KEYS = (*FIELDS[:6], "trust", "required", "estimated_tokens", "content")


class PackError(InputError):
    """Why `ledger pack` failed: the text after `context pack error: `."""


@dataclass(frozen=True, slots=True)
class FixtureRequest:
    """The fixture's `request`, validated."""

    as_of: str
    pack_budget_tokens: int
    granted_permissions: frozenset[str]
    allowed_trust: frozenset[str]


@dataclass(frozen=True, slots=True)
class Fixture:
    """A validated pack fixture."""

    fixture_version: str
    selector_version: str
    request: FixtureRequest
    chunks: tuple[ChunkRecord, ...]


@dataclass(frozen=True, slots=True)
class FixturePack:
    """The pack (the keys of docs/reference/json.md) and the three lines `ledger pack` prints."""

    pack: dict[str, Any]
    lines: tuple[str, str, str]


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PackError(f"{where} must be a JSON object")
    return value


def _exact(value: Mapping[str, Any], expected: frozenset[str], where: str) -> None:
    try:
        check_fields(value, expected)
    except RecordError as exc:
        raise PackError(exc.located(where)) from None


def _located(where: str, check: Any, *args: Any) -> Any:
    """Run a records.py check; report its failure at `where` (`request.as_of`)."""
    try:
        return check(*args)
    except RecordError as exc:
        raise PackError(f"{where} {exc.rule}") from None


def _string_list(value: Any, where: str, allowed: tuple[str, ...] | None = None) -> frozenset[str]:
    if not isinstance(value, list) or not value:
        raise PackError(f"{where} must be a non-empty array")
    items = [
        _located(f"{where}[{index}]", identifier, item, "value") for index, item in enumerate(value)
    ]
    if len(set(items)) != len(items):
        raise PackError(f"{where} values must be unique")
    if allowed is not None:
        unsupported = set(items) - set(allowed)
        if unsupported:
            raise PackError(f"{where} contains unsupported values: {sorted(unsupported)}")
    return frozenset(items)


def parse_fixture(data: bytes | str, *, source: str | None = None) -> Fixture:
    """Parse and validate a fixture exactly as the reference does; raise `PackError`.

    Checks in the reference's order: JSON, root fields, `chunks` (1 to 500), each
    chunk, unique ids, dedupe groups, the two versions, then `request`. `source`
    (the file name) prefixes JSON errors.
    """
    try:
        root = _object(loads_strict(data, source=source), "root")
    except PackError:
        raise
    except InputError as exc:
        raise PackError(str(exc)) from None
    _exact(root, ROOT_FIELDS, "root")
    raw_chunks = root["chunks"]
    if not isinstance(raw_chunks, list) or not 1 <= len(raw_chunks) <= MAX_CHUNKS:
        raise PackError(f"chunks must contain 1 to {MAX_CHUNKS} entries")
    chunks = []
    for index, raw in enumerate(raw_chunks):
        try:
            chunks.append(validate_chunk(raw, max_content=FIXTURE_MAX_CONTENT, strip_content=True))
        except RecordError as exc:
            raise PackError(exc.located(f"chunks[{index}]")) from None
    ids = [chunk.id for chunk in chunks]
    if len(set(ids)) != len(ids):
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        raise PackError(f"chunk ids must be unique: {duplicates}")
    try:
        check_dedupe_groups(chunks)
    except RecordError as exc:
        raise PackError(str(exc)) from None
    fixture_version = _located("fixture_version", identifier, root["fixture_version"], "v")
    selector_version = _located("selector_version", identifier, root["selector_version"], "v")
    request = _object(root["request"], "request")
    _exact(request, REQUEST_FIELDS, "request")
    parsed_request = FixtureRequest(
        as_of=_located("request.as_of", iso_date, request["as_of"], "as_of"),
        pack_budget_tokens=_located(
            "request.pack_budget_tokens",
            integer,
            request["pack_budget_tokens"],
            "pack_budget_tokens",
            1,
            MAX_TOKENS,
        ),
        granted_permissions=_string_list(
            request["granted_permissions"], "request.granted_permissions"
        ),
        allowed_trust=_string_list(request["allowed_trust"], "request.allowed_trust", TRUST_LABELS),
    )
    return Fixture(fixture_version, selector_version, parsed_request, tuple(chunks))


def _candidate(chunk: ChunkRecord) -> Candidate:
    return candidate_of(
        chunk.to_json(), record_digest=chunk.record_digest, content_digest=chunk.content_digest
    )


def pack_fixture(fixture: Fixture) -> FixturePack:
    """Select over a validated fixture: the pack dict and the three output lines."""
    request = Request(
        as_of=fixture.request.as_of,
        granted=fixture.request.granted_permissions,
        allowed_trust=fixture.request.allowed_trust,
        budget=fixture.request.pack_budget_tokens,
        supersede=False,
    )
    by_id = {chunk.id: chunk for chunk in fixture.chunks}
    try:
        context = select([_candidate(chunk) for chunk in fixture.chunks], request)
    except RefusedError as exc:
        raise PackError(str(exc)) from exc
    selected = [by_id[item.id] for item in context.items]
    # Ids are unique in a fixture, so (id, source_version) order is id order.
    excluded = [{"id": e.candidate.id, "reason": e.reason} for e in context.evicted]
    used = context.admitted_tokens()
    budget = fixture.request.pack_budget_tokens
    pack = {
        "fixture_version": fixture.fixture_version,
        "selector_version": fixture.selector_version,
        "as_of": fixture.request.as_of,
        "budget_tokens": budget,
        "used_tokens": used,
        "remaining_tokens": budget - used,
        "selected": [
            {
                "id": chunk.id,
                "section": chunk.section,
                "source_uri": chunk.source_uri,
                "source_version": chunk.source_version,
                "effective_from": chunk.effective_from,
                "expires_on": chunk.expires_on,
                "trust": chunk.trust,
                "required": chunk.required,
                "estimated_tokens": chunk.estimated_tokens,
                "content": chunk.content,
            }
            for chunk in selected
        ],
        "excluded": excluded,
    }
    lines = (
        f"budget={budget} used={used} remaining={budget - used}",
        "selected: " + ", ".join(chunk.id for chunk in selected),
        "excluded: "
        + (", ".join(f"{item['id']}({item['reason']})" for item in excluded) or "none"),
    )
    return FixturePack(pack, lines)


def build_fixture_pack(data: bytes | str, *, source: str | None = None) -> FixturePack:
    """Parse, validate and select: what `ledger pack` prints and writes.

    Raises `PackError` (its message is what follows `context pack error: `).
    """
    return pack_fixture(parse_fixture(data, source=source))
