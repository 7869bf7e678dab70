"""The chunk-table rules as test cases, shared by the store tests (in-process
`ledger.api.ingest_files`) and the CLI tests (`ledger ingest` in a subprocess)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.conftest import chunk

# The ledger's content cap: 16 Mi characters (docs/reference/records.md).
CONTENT_CAP = 16 * 1024 * 1024

PLACEHOLDER = "__PLACEHOLDER__"


def record_text(**overrides: Any) -> bytes:
    """One chunk record as JSON text; a field set to PLACEHOLDER is left for `literal`."""
    return json.dumps(chunk(**overrides), ensure_ascii=False).encode("utf-8")


def with_literal(field: str, literal: bytes, **overrides: Any) -> bytes:
    """A record whose `field` holds raw JSON text `literal` (NaN, 1e2, invalid UTF-8...)."""
    text = record_text(**{field: PLACEHOLDER}, **overrides)
    quoted = json.dumps(PLACEHOLDER).encode()
    assert text.count(quoted) == 1
    return text.replace(quoted, literal)


def without(field: str, **extra: Any) -> bytes:
    rec = chunk(id="bad-record")
    del rec[field]
    rec.update(extra)
    return json.dumps(rec).encode()


@dataclass(frozen=True)
class Rule:
    """A bad record (JSON text) and what the refusal must name."""

    name: str
    text: bytes
    field: str | None  # None: the record as a whole (invalid fields, not an object)
    rule: str  # the rule's words, as they must appear


def bad(name: str, field: str | None, rule: str, **overrides: Any) -> Rule:
    return Rule(name, record_text(**{"id": "bad-record", **overrides}), field, rule)


def bad_literal(name: str, field: str, literal: bytes, rule: str) -> Rule:
    return Rule(name, with_literal(field, literal, id="bad-record"), field, rule)


INTEGER = "must be an integer"
PATTERN = "must match ^[a-z0-9][a-z0-9-]{1,63}$"
DATE = "must use YYYY-MM-DD"
NON_BLANK = "must be a non-blank string"

RECORD_RULES: list[Rule] = [
    Rule(
        "duplicate key",
        record_text(id="bad-record")[:-1] + b', "priority": 7}',
        "priority",
        "duplicate JSON key: 'priority'",
    ),
    bad_literal("NaN", "priority", b"NaN", "non-finite JSON number: NaN"),
    bad_literal("Infinity", "estimated_tokens", b"Infinity", "non-finite JSON number: Infinity"),
    bad_literal("-Infinity", "priority", b"-Infinity", "non-finite JSON number: -Infinity"),
    bad_literal("overflow to infinity", "estimated_tokens", b"1e999", "non-finite JSON number"),
    bad("bool as priority", "priority", INTEGER, priority=True),
    bad("bool as estimated_tokens", "estimated_tokens", INTEGER, estimated_tokens=False),
    bad_literal("float 3.0 as priority", "priority", b"3.0", INTEGER),
    bad_literal("exponent 1e2 as priority", "priority", b"1e2", INTEGER),
    bad_literal("exponent 1E1 as estimated_tokens", "estimated_tokens", b"1E1", INTEGER),
    bad_literal("fraction as estimated_tokens", "estimated_tokens", b"10.5", INTEGER),
    bad("string as estimated_tokens", "estimated_tokens", INTEGER, estimated_tokens="10"),
    Rule(
        "unknown field",
        without("content", content="x", body="y"),
        None,
        "has invalid fields: unknown=['body']",
    ),
    Rule("missing field", without("content"), None, "has invalid fields: missing=['content']"),
    Rule(
        "missing and unknown",
        without("trust", trust_level="unverified"),
        None,
        "has invalid fields: missing=['trust'], unknown=['trust_level']",
    ),
    bad("impossible date", "effective_from", DATE, effective_from="2026-02-30"),
    bad("unpadded date", "effective_from", DATE, effective_from="2026-7-1"),
    bad("basic-format date", "effective_from", DATE, effective_from="20260701"),
    bad("date with time", "effective_from", DATE, effective_from="2026-07-01T00:00"),
    bad("bad expires_on", "expires_on", DATE, expires_on="2026-13-01"),
    bad(
        "expires_on equal",
        "expires_on",
        "must be later than effective_from",
        effective_from="2026-03-01",
        expires_on="2026-03-01",
    ),
    bad(
        "expires_on before",
        "expires_on",
        "must be later than effective_from",
        effective_from="2026-03-01",
        expires_on="2026-02-28",
    ),
    bad_literal("invalid UTF-8", "content", b'"caf\xe9 au lait"', "invalid UTF-8"),
    bad_literal("lone surrogate in content", "content", b'"a\\ud800b"', "lone surrogate"),
    bad_literal("lone low surrogate", "source_version", b'"v\\udc00"', "lone surrogate"),
    bad("upper-case id", "id", PATTERN, id="Alpha"),
    bad("one-character id", "id", PATTERN, id="a"),
    bad("id starting with a dash", "id", PATTERN, id="-ab"),
    bad("id with underscore", "id", PATTERN, id="a_b"),
    bad("id of 65 characters", "id", "exceeds 64 characters", id="a" * 65),
    bad("id not a string", "id", NON_BLANK, id=7),
    bad(
        "required_permission pattern",
        "required_permission",
        PATTERN,
        required_permission="Policy Read",
    ),
    bad("dedupe_key pattern", "dedupe_key", PATTERN, dedupe_key="x"),
    bad("section unsupported", "section", "is unsupported: 'misc'", section="misc"),
    bad("section case", "section", "is unsupported: 'Policy'", section="Policy"),
    bad("trust unsupported", "trust", "is unsupported: 'rumor'", trust="rumor"),
    bad("relative URI", "source_uri", "must be an absolute URI", source_uri="alpha.txt"),
    bad("URI without //", "source_uri", "must be an absolute URI", source_uri="doc:/alpha"),
    bad("URI with a space", "source_uri", "must be an absolute URI", source_uri="doc://a b"),
    bad("URI too long", "source_uri", "exceeds 300 characters", source_uri="doc://" + "a" * 295),
    bad("source_version blank", "source_version", NON_BLANK, source_version=" \t "),
    bad("source_version empty", "source_version", NON_BLANK, source_version=""),
    bad(
        "source_version too long",
        "source_version",
        "exceeds 80 characters",
        source_version="v" * 81,
    ),
    bad("source_version null", "source_version", NON_BLANK, source_version=None),
    bad("content blank", "content", NON_BLANK, content=" \n\t "),
    bad("content not text", "content", NON_BLANK, content=5),
    bad(
        "content over 16 Mi characters",
        "content",
        f"exceeds {CONTENT_CAP} characters",
        content="x" * (CONTENT_CAP + 1),
    ),
    bad(
        "content under the cap only once stripped",
        "content",
        f"exceeds {CONTENT_CAP} characters",
        content="x" + " " * CONTENT_CAP,
    ),
    bad(
        "estimated_tokens 0",
        "estimated_tokens",
        "must be between 1 and 10000000",
        estimated_tokens=0,
    ),
    bad(
        "estimated_tokens negative",
        "estimated_tokens",
        "must be between 1 and 10000000",
        estimated_tokens=-1,
    ),
    bad(
        "estimated_tokens too large",
        "estimated_tokens",
        "must be between 1 and 10000000",
        estimated_tokens=10_000_001,
    ),
    bad("priority negative", "priority", "must be between 0 and 100", priority=-1),
    bad("priority too large", "priority", "must be between 0 and 100", priority=101),
    bad("required as string", "required", "must be a boolean", required="true"),
    bad("required as integer", "required", "must be a boolean", required=1),
    bad("required null", "required", "must be a boolean", required=None),
    Rule("not an object", b'["alpha", 1]', None, "must be a JSON object"),
]

# Values on the edge of each range: accepted.
BOUNDARY_RECORDS: list[dict[str, Any]] = [
    chunk(id="ab", dedupe_key="ab"),
    chunk(id="a" * 64, dedupe_key="b" * 64, required_permission="c" * 64),
    chunk(id="tokens-low", dedupe_key="tokens-low", estimated_tokens=1, priority=0),
    chunk(id="tokens-high", dedupe_key="tokens-high", estimated_tokens=10_000_000, priority=100),
    chunk(id="uri-300", dedupe_key="uri-300", source_uri="doc://" + "a" * 294),
    chunk(id="version-80", dedupe_key="version-80", source_version="v" * 80),
    chunk(
        id="expires-next-day",
        dedupe_key="expires-next-day",
        effective_from="2028-02-28",
        expires_on="2028-02-29",
    ),
    # 16 Mi characters as stored, white space around the text included.
    chunk(
        id="content-max", dedupe_key="content-max", content="\n " + "y" * (CONTENT_CAP - 4) + " \n"
    ),
    chunk(id="padded", dedupe_key="padded", section=" state ", trust="\tconfirmed-state\n"),
]


def good_lines(n: int, prefix: str = "good") -> list[bytes]:
    """n valid, mutually independent records (distinct ids and dedupe keys)."""
    return [record_text(id=f"{prefix}-{i}", dedupe_key=f"{prefix}-{i}") for i in range(n)]


def jsonl_bytes(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def array_bytes(items: list[bytes]) -> bytes:
    return b"[\n" + b",\n".join(items) + b"\n]\n"
