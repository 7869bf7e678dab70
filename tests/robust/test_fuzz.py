"""Fuzzing the parsers and the ingest path with Hypothesis.

Random bytes, token soups and mutations of valid inputs go through
`strictjson.loads_strict`, `records.validate_chunk`, `fixture.build_fixture_pack`,
`budgeted.run`, `transcript.parse_transcript` and in-process `ledger.api.ingest_files`
on a real migrated SQLite file. The only exceptions allowed are the library's
`LedgerError` subclasses; what is accepted must satisfy the contract (checked
below), and a refused ingest leaves every table's row count as it was.

A short run in CI: LEDGER_FUZZ_EXAMPLES (default 300) examples per property.
The long run (hours; see README):

    LEDGER_FUZZ_EXAMPLES=200000 .venv/bin/python -m pytest tests/robust/test_fuzz.py -q \
        -p no:cacheprovider --hypothesis-show-statistics
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ledger.core.budgeted import run as select_run
from ledger.core.errors import LedgerError
from ledger.core.fixture import SEED_REASONS, build_fixture_pack
from ledger.core.records import FIELDS, ChunkRecord, validate_chunk
from ledger.core.strictjson import loads_strict
from ledger.core.transcript import parse_transcript
from tests.conftest import FIXTURE, chunk

EXAMPLES = int(os.environ.get("LEDGER_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
SEED_BYTES = FIXTURE.read_bytes()
SEED = json.loads(SEED_BYTES)

# -- strategies --------------------------------------------------------------------------

TOKENS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b" ",
    b"\n",
    b"\r\n",
    b"\t",
    b'"',
    b'"a"',
    b'"id"',
    b'"content"',
    b"0",
    b"1",
    b"-1",
    b"1.5",
    b"1e2",
    b"1e999",
    b"-0",
    b"9" * 30,
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"true",
    b"false",
    b"null",
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"\\u0000"',
    b'"\\n"',
    b'"\\"',
    b"\xff",
    b"\xc3",
    b"\xef\xbb\xbf",
    b"\x00",
    b"\xe2\x80\xa8",
    b'"2026-02-30"',
    b'"2026-07-01"',
    b'"evidence"',
    b'"approved-source"',
]
token_soup = st.lists(st.sampled_from(TOKENS), max_size=40).map(b"".join)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(
        [
            "",
            " ",
            "2026-07-01",
            "2026-02-30",
            "evidence",
            "approved-source",
            "doc://x",
            "a\u0000b",
            "\ud800",
            "x" * 70,
        ]
    ),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def mutated(draw: Any, base: bytes) -> bytes:
    """`base` with a few byte-level edits: deletions, insertions, duplications, flips."""
    data = bytearray(base)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(data)))
        edit = draw(st.sampled_from(["delete", "insert", "duplicate", "flip", "token"]))
        if edit == "delete" and data:
            end = draw(st.integers(min_value=at, max_value=min(len(data), at + 16)))
            del data[at:end]
        elif edit == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif edit == "duplicate" and data:
            end = draw(st.integers(min_value=at, max_value=min(len(data), at + 32)))
            data[at:at] = data[at:end]
        elif edit == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(min_value=0, max_value=7))
        else:
            data[at:at] = draw(st.sampled_from(TOKENS))
    return bytes(data)


@st.composite
def mutated_record(draw: Any) -> dict[str, Any]:
    """A valid chunk with fields replaced by random JSON values, removed or added."""
    rec: dict[str, Any] = chunk(id=draw(st.sampled_from(["alpha", "beta", "x1", "gamma-2"])))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        name = draw(st.sampled_from(FIELDS))
        if action == "replace":
            rec[name] = draw(json_values)
        elif action == "delete":
            rec.pop(name, None)
        else:
            rec[draw(st.text(max_size=6))] = draw(json_values)
    return rec


def json_bytes(value: Any) -> bytes:
    """JSON text of a value that may hold NaN, lone surrogates or huge integers
    (a lone surrogate can only be written as a \\u escape)."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value).encode("ascii")


# -- strictjson ----------------------------------------------------------------------------


def check_loads(data: bytes) -> None:
    try:
        value = loads_strict(data)
    except LedgerError:
        return
    # What the strict parser accepts, the standard one reads the same way,
    # and it holds no non-finite number.
    assert json.loads(data) == value
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            assert math.isfinite(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


@FUZZ
@given(st.binary(max_size=300) | token_soup)
def test_loads_strict_on_bytes(data: bytes) -> None:
    check_loads(data)


@FUZZ
@given(mutated(SEED_BYTES[:1500]) | json_values.map(json_bytes))
def test_loads_strict_on_near_json(data: bytes) -> None:
    check_loads(data)


# -- records ---------------------------------------------------------------------------------


@FUZZ
@given(mutated_record() | json_values)
def test_validate_chunk(obj: Any) -> None:
    for fixture_mode in (False, True):
        kwargs = (
            {"max_content": 10_000, "strip_content": True} if fixture_mode else {"allow_nul": False}
        )
        try:
            record = validate_chunk(obj, **kwargs)
        except LedgerError:
            continue
        assert isinstance(record, ChunkRecord)
        # Accepted records are stable: validating the stored form gives it back.
        assert validate_chunk(record.to_json(), **kwargs) == record
        assert len(record.record_digest) == 64


# -- ledger pack -----------------------------------------------------------------------------


@st.composite
def fixture_documents(draw: Any) -> bytes:
    doc = json.loads(SEED_BYTES)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        where = draw(st.sampled_from(["chunk", "chunk", "request"]))
        if where == "chunk":
            target = doc["chunks"][draw(st.integers(0, len(doc["chunks"]) - 1))]
            target[draw(st.sampled_from(FIELDS))] = draw(json_values)
        else:
            name = draw(st.sampled_from(sorted(doc["request"]) + ["extra"]))
            doc["request"][name] = draw(json_values)
    if draw(st.integers(0, 4)) == 0:  # last: it may replace `chunks` or `request`
        doc[draw(st.sampled_from(sorted(doc) + ["extra"]))] = draw(json_values)
    return json_bytes(doc)


@FUZZ
@given(fixture_documents() | mutated(SEED_BYTES) | token_soup)
def test_build_fixture_pack(data: bytes) -> None:
    try:
        result = build_fixture_pack(data)
    except LedgerError:
        return
    pack = result.pack
    assert pack["used_tokens"] <= pack["budget_tokens"]
    assert pack["remaining_tokens"] == pack["budget_tokens"] - pack["used_tokens"]
    assert {e["reason"] for e in pack["excluded"]} <= set(SEED_REASONS)
    assert len(result.lines) == 3


# -- ledger select ---------------------------------------------------------------------------


@st.composite
def select_inputs(draw: Any) -> Any:
    items = []
    for i in range(draw(st.integers(0, 6))):
        item: dict[str, Any] = {
            "id": draw(st.sampled_from([f"i{i}", "dup", ""])),
            "cost": draw(st.integers(0, 20)),
            "priority": draw(st.integers(-3, 3)),
            "required": draw(st.booleans()),
            "content": draw(st.text(max_size=5)),
        }
        if draw(st.integers(0, 3)) == 0:
            item[draw(st.sampled_from(sorted(item) + ["extra"]))] = draw(json_values)
        items.append(item)
    doc: dict[str, Any] = {"budget": draw(st.integers(0, 60)), "items": items}
    if draw(st.integers(0, 4)) == 0:
        doc[draw(st.sampled_from(["budget", "items", "more"]))] = draw(json_values)
    return doc


@FUZZ
@given(select_inputs() | json_values)
def test_budgeted_run(doc: Any) -> None:
    try:
        result = select_run(doc)
    except LedgerError:
        return
    items = {i["id"]: i for i in doc["items"]}
    assert result["used"] <= doc["budget"]
    assert sorted(result["selected"] + result["omitted"]) == sorted(items)
    assert {i for i, v in items.items() if v["required"]} <= set(result["selected"])
    assert result["used"] == sum(items[i]["cost"] for i in result["selected"])


# -- transcripts -----------------------------------------------------------------------------

RECORDS = [
    b'{"role": "user", "content": "hello"}',
    b'{"role": "assistant", "content": "hi"}',
    b'{"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]}',
    b'{"role": "tool", "tool_call_id": "c1", "content": "42"}',
    b'{"type": "user", "message": {"role": "user", "content": "q"}}',
    b'{"type": "assistant", "message": {"role": "assistant", "content": '
    b'[{"type": "tool_use", "id": "t1"}]}}',
    b'{"type": "user", "message": {"role": "user", "content": '
    b'[{"type": "tool_result", "tool_use_id": "t1"}]}}',
    b'{"type": "assistant", "message": {"role": "assistant", "content": "done"}}',
    b'{"type": "summary", "summary": "x"}',
    b'{"role": "system", "content": "x"}',
]
transcripts = st.lists(st.sampled_from(RECORDS), max_size=12).map(
    lambda lines: b"".join(line + b"\n" for line in lines)
)
GOOD_TRANSCRIPT = b"".join(RECORDS[i] + b"\n" for i in (0, 1, 0, 2, 3, 1, 4, 5, 6, 7))


@FUZZ
@given(transcripts | mutated(GOOD_TRANSCRIPT) | st.binary(max_size=200) | token_soup)
def test_parse_transcript(data: bytes) -> None:
    try:
        transcript = parse_transcript(data, name="fuzz.jsonl")
    except LedgerError:
        return
    # The exchanges cover the file: in order, without gaps or overlaps.
    assert b"".join(transcript.payload(e) for e in transcript.exchanges) == data
    assert [e.index for e in transcript.exchanges] == list(range(1, len(transcript.exchanges) + 1))


# -- the ingest path -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_ledger() -> Iterator[tuple[Any, Path]]:
    """One migrated SQLite ledger for every example (Hypothesis reuses it)."""
    from ledger.store.engine import make_engine, open_engine
    from ledger.store.migrate import upgrade_to_head

    with tempfile.TemporaryDirectory(prefix="ledger-fuzz-") as folder:
        path = Path(folder) / "ledger.db"
        url = "sqlite:///" + str(path)
        engine = make_engine(url, create=True)
        upgrade_to_head(engine)
        engine.dispose()
        engine = open_engine(url)
        try:
            yield engine, path
        finally:
            engine.dispose()


def row_counts(path: Path) -> dict[str, int]:
    con = sqlite3.connect(path)
    try:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        con.close()


@st.composite
def jsonl_files(draw: Any) -> bytes:
    """A few records (fresh ids, so that many are stored), some mutated."""
    # Ids from a small range come back (unchanged, or a refused changed version).
    n = draw(st.integers(min_value=0, max_value=10**12) | st.integers(min_value=0, max_value=9))
    lines = []
    for i in range(draw(st.integers(min_value=1, max_value=5))):
        rec = (
            draw(mutated_record())
            if draw(st.integers(0, 3)) == 0
            else chunk(
                content=draw(st.sampled_from(["Alpha content.", "Other content.", " padded "]))
            )
        )
        if isinstance(rec.get("id"), str) and rec["id"] in ("alpha", "beta", "x1", "gamma-2"):
            rec["id"] = f"f{n}-{i}"
            if rec.get("dedupe_key") == "alpha":
                rec["dedupe_key"] = rec["id"]
        lines.append(json_bytes(rec))
    data = b"".join(line + b"\n" for line in lines)
    if draw(st.integers(0, 3)) == 0:
        data = draw(mutated(data))
    return data


def as_array(data: bytes) -> bytes:
    return b"[" + b",".join(data.splitlines()) + b"]"


@FUZZ
@given(
    st.sampled_from(["jsonl", "json"]),
    st.one_of(jsonl_files(), jsonl_files(), jsonl_files(), token_soup, st.binary(max_size=200)),
)
def test_ingest_path(fuzz_ledger: tuple[Any, Path], fmt: str, data: bytes) -> None:
    from ledger.api.ingest import ingest_files as ingest

    engine, path = fuzz_ledger
    source = path.parent / f"input.{fmt}"
    source.write_bytes(data if fmt == "jsonl" else as_array(data))
    before = row_counts(path)
    try:
        summary = ingest(engine, [str(source)], fmt)
    except LedgerError as exc:
        event(f"refused: {type(exc).__name__}")
        assert row_counts(path) == before  # nothing partial
        return
    event("stored" if summary.new else "unchanged")
    after = row_counts(path)
    # SPEC: one entry and batch for a run that stores something new, none otherwise.
    wrote = 1 if summary.new else 0
    assert (summary.batch is not None) == bool(summary.new)
    assert after["entries"] == before["entries"] + wrote
    assert after["batches"] == before["batches"] + wrote
    assert after["chunk_versions"] == before["chunk_versions"] + summary.new
    assert summary.read == summary.new + summary.unchanged


def test_fuzzed_ledger_still_verifies(fuzz_ledger: tuple[Any, Path]) -> None:
    """After every example above (module order), the whole chain verifies."""
    from ledger.store.engine import read_transaction
    from ledger.store.verify import verify

    engine, _ = fuzz_ledger
    with read_transaction(engine) as conn:
        result = verify(conn)
    assert result.ok, result.first_bad
