"""Every rule of SPEC's chunk table, through `ledger.api.ingest_files` on a real
migrated ledger on each backend (a SQLite file and a PostgreSQL database): the
refusal names the file, the line (JSON Lines) or index (array), the field and
the rule, and nothing is stored."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import rfc8785
from sqlalchemy import Engine, select

from ledger.api.ingest import ingest_files as ingest
from ledger.core.errors import EXIT_INVALID, InputError, LedgerError, RefusedError
from ledger.store.schema import versions
from tests.conftest import chunk, write_jsonl
from tests.dbtools import snapshot
from tests.store.ingest_cases import (
    BOUNDARY_RECORDS,
    RECORD_RULES,
    Rule,
    array_bytes,
    good_lines,
    jsonl_bytes,
    record_text,
)


def refusal(engine: Engine, db: str, paths: list[Path], fmt: str = "auto") -> LedgerError:
    """Ingest must refuse with exit code 1 and leave the database as it was."""
    before = snapshot(db)
    with pytest.raises(LedgerError) as info:
        ingest(engine, [str(p) for p in paths], fmt)
    assert info.value.exit_code == EXIT_INVALID
    assert "\n" not in str(info.value)
    assert snapshot(db) == before
    return info.value


def expected_prefix(where: str, rule: Rule) -> str:
    return f"{where}: field '{rule.field}': " if rule.field else f"{where}: "


@pytest.mark.parametrize("rule", RECORD_RULES, ids=[r.name for r in RECORD_RULES])
def test_jsonl_rule_names_file_line_field_and_rule(
    rule: Rule, ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "chunks.jsonl"
    lines = good_lines(4)
    path.write_bytes(jsonl_bytes(lines[:2] + [rule.text] + lines[2:]))
    message = str(refusal(ledger_engine, db_url, [path]))
    assert message.startswith(expected_prefix(f"{path}:3", rule)), message
    assert rule.rule in message


@pytest.mark.parametrize("rule", RECORD_RULES, ids=[r.name for r in RECORD_RULES])
def test_array_rule_names_file_index_field_and_rule(
    rule: Rule, ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "chunks.json"
    items = good_lines(4)
    path.write_bytes(array_bytes(items[:3] + [rule.text] + items[3:]))
    message = str(refusal(ledger_engine, db_url, [path]))
    assert message.startswith(expected_prefix(f"{path}: [3]", rule)), message
    assert rule.rule in message


@pytest.mark.parametrize("rule", RECORD_RULES[:8], ids=[r.name for r in RECORD_RULES[:8]])
def test_fixture_rule_names_chunks_index(
    rule: Rule, ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "fixture.json"
    items = good_lines(2)
    head = b'{"fixture_version": "v1", "selector_version": "v1", "request": {}, "chunks": '
    body = head + array_bytes(items + [rule.text]) + b"}"
    path.write_bytes(body)
    message = str(refusal(ledger_engine, db_url, [path]))
    assert message.startswith(expected_prefix(f"{path}: chunks[2]", rule)), message
    assert rule.rule in message


def test_boundary_values_are_accepted(ledger_engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "edges.jsonl", BOUNDARY_RECORDS)
    summary = ingest(ledger_engine, [str(path)])
    assert (summary.read, summary.new, summary.unchanged) == (
        len(BOUNDARY_RECORDS),
        len(BOUNDARY_RECORDS),
        0,
    )


# File-level rules.


def test_bom_is_refused(ledger_engine: Engine, db_url: str, tmp_path: Path) -> None:
    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + jsonl_bytes(good_lines(2)))
    message = str(refusal(ledger_engine, db_url, [jsonl]))
    assert message.startswith(f"{jsonl}:1: ") and "byte-order mark" in message
    array = tmp_path / "bom.json"
    array.write_bytes(b"\xef\xbb\xbf" + array_bytes(good_lines(2)))
    message = str(refusal(ledger_engine, db_url, [array]))
    assert message.startswith(f"{array}: ") and "byte-order mark" in message


@pytest.mark.parametrize("name", ["empty.jsonl", "empty.json"])
def test_empty_file_is_refused(
    name: str, ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.write_bytes(b"")
    assert str(refusal(ledger_engine, db_url, [path])).startswith(f"{path}: empty file")


@pytest.mark.parametrize("blank", [b"", b"   ", b"\t\r"])
def test_blank_line_is_refused(
    blank: bytes, ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "blank.jsonl"
    lines = good_lines(3)
    path.write_bytes(jsonl_bytes(lines[:2] + [blank] + lines[2:]))
    message = str(refusal(ledger_engine, db_url, [path]))
    assert message.startswith(f"{path}:3: blank line"), message


def test_whitespace_only_json_file_is_refused(
    ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "space.json"
    path.write_bytes(b" \n ")
    assert str(refusal(ledger_engine, db_url, [path])).startswith(f"{path}: ")


def test_invalid_json_syntax_names_line(ledger_engine: Engine, db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(jsonl_bytes(good_lines(1) + [b'{"id": "x",']))
    message = str(refusal(ledger_engine, db_url, [path]))
    assert message.startswith(f"{path}:2: invalid JSON"), message


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'{"fixture_version": "v1", "selector_version": "v1", "request": {}, "chunks": []}',
    ],
)
def test_no_records_is_refused(
    body: bytes, ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "none.json"
    path.write_bytes(body)
    message = str(refusal(ledger_engine, db_url, [path]))
    assert str(path) in message and "no chunk records" in message


def test_a_bad_second_file_stores_nothing_of_the_first(
    ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    first = write_jsonl(tmp_path / "first.jsonl", [chunk(id="first")])
    second = tmp_path / "second.jsonl"
    second.write_bytes(jsonl_bytes([record_text(id="second", priority=500)]))
    message = str(refusal(ledger_engine, db_url, [first, second]))
    assert message.startswith(f"{second}:1: field 'priority': must be between 0 and 100")


# Dedupe groups: two or more distinct ids; no required member; one section,
# required_permission and trust.

GROUP = "shared-group"


def member(chunk_id: str, **overrides: object) -> dict[str, object]:
    return chunk(id=chunk_id, dedupe_key=GROUP, **overrides)


DEDUPE_BREAKS = [
    ("required member", {"required": True}, "required chunks cannot share a dedupe_key"),
    ("section", {"section": "state"}, "crosses section boundaries"),
    (
        "required_permission",
        {"required_permission": "secret-read"},
        "crosses required_permission boundaries",
    ),
    ("trust", {"trust": "unverified"}, "crosses trust boundaries"),
]


@pytest.mark.parametrize(
    "overrides, rule", [(o, r) for _, o, r in DEDUPE_BREAKS], ids=[n for n, _, _ in DEDUPE_BREAKS]
)
def test_dedupe_group_rule_in_one_file(
    overrides: dict[str, object], rule: str, ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    path = write_jsonl(
        tmp_path / "group.jsonl",
        [chunk(id="other"), member("member-a"), member("member-b", **overrides)],
    )
    message = str(refusal(ledger_engine, db_url, [path]))
    assert message.startswith(f"{path}:3: field 'dedupe_key': "), message
    assert rule in message
    assert f"'{GROUP}'" in message and "'member-a'" in message and "'member-b'" in message


@pytest.mark.parametrize(
    "overrides, rule", [(o, r) for _, o, r in DEDUPE_BREAKS], ids=[n for n, _, _ in DEDUPE_BREAKS]
)
def test_dedupe_group_rule_across_two_runs(
    overrides: dict[str, object], rule: str, ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    first = write_jsonl(tmp_path / "first.jsonl", [member("member-a")])
    assert ingest(ledger_engine, [str(first)]).new == 1
    second = write_jsonl(
        tmp_path / "second.jsonl", [chunk(id="unrelated"), member("member-b", **overrides)]
    )
    message = str(refusal(ledger_engine, db_url, [second]))
    assert message.startswith(f"{second}:2: field 'dedupe_key': "), message
    assert rule in message


def test_required_member_stored_first_refuses_a_later_member(
    ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    first = write_jsonl(tmp_path / "first.jsonl", [member("member-a", required=True)])
    ingest(ledger_engine, [str(first)])
    second = write_jsonl(tmp_path / "second.jsonl", [member("member-b")])
    message = str(refusal(ledger_engine, db_url, [second]))
    assert message.startswith(f"{second}:1: field 'dedupe_key': required chunks cannot share")


def test_a_consistent_group_of_optional_chunks_is_accepted(
    ledger_engine: Engine, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "ok.jsonl", [member("member-a"), member("member-b", priority=9)])
    assert ingest(ledger_engine, [str(path)]).new == 2
    later = write_jsonl(tmp_path / "later.jsonl", [member("member-c", priority=1)])
    assert ingest(ledger_engine, [str(later)]).new == 1


def test_versions_of_one_id_are_not_duplicates(
    ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    # A required chunk with several versions that differ in section, permission
    # and trust forms a "group" of one id: no rule applies.
    path = write_jsonl(
        tmp_path / "versions.jsonl",
        [
            member("solo", source_version="1", required=True),
            member("solo", source_version="2", required=True, section="state"),
        ],
    )
    assert ingest(ledger_engine, [str(path)]).new == 2
    later = write_jsonl(
        tmp_path / "later.jsonl",
        [
            member(
                "solo",
                source_version="3",
                required=True,
                trust="user-input",
                required_permission="other-read",
            )
        ],
    )
    assert ingest(ledger_engine, [str(later)]).new == 1
    # A second id joining that group makes it a real group, with a required member.
    joiner = write_jsonl(tmp_path / "joiner.jsonl", [member("joiner")])
    message = str(refusal(ledger_engine, db_url, [joiner]))
    assert "required chunks cannot share a dedupe_key" in message


def test_dedupe_refusal_is_a_refused_error(
    ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    path = write_jsonl(
        tmp_path / "g.jsonl", [member("member-a"), member("member-b", trust="unverified")]
    )
    assert isinstance(refusal(ledger_engine, db_url, [path]), RefusedError)


# What is stored.


def test_text_fields_stored_stripped_and_content_exactly(
    ledger_engine: Engine, tmp_path: Path
) -> None:
    content = "  \n\tBody kept exactly, é \U0001f600 \r\n  "
    rec = chunk(
        id="  padded-id ",
        section=" evidence\t",
        source_uri=" doc://padded ",
        source_version="\t v 1 \n",
        effective_from=" 2026-01-01 ",
        expires_on=" 2027-01-01",
        required_permission=" public-read ",
        trust=" approved-source ",
        dedupe_key=" padded-key ",
        content=content,
    )
    path = write_jsonl(tmp_path / "padded.jsonl", [rec])
    ingest(ledger_engine, [str(path)])
    with ledger_engine.connect() as conn:
        row = conn.execute(select(versions)).one()
    stored = {
        "id": row.chunk_id,
        "section": row.section,
        "source_uri": row.source_uri,
        "source_version": row.source_version,
        "effective_from": row.effective_from,
        "expires_on": row.expires_on,
        "required_permission": row.required_permission,
        "trust": row.trust,
        "dedupe_key": row.dedupe_key,
        "estimated_tokens": row.estimated_tokens,
        "priority": row.priority,
        "required": bool(row.required),
        "content": row.content,
    }
    expected = {
        k: (v.strip() if isinstance(v, str) and k != "content" else v) for k, v in rec.items()
    }
    assert stored == expected
    assert row.content == content
    assert row.content_digest == hashlib.sha256(content.encode("utf-8")).hexdigest()
    assert row.record_digest == hashlib.sha256(rfc8785.dumps(expected)).hexdigest()


def test_unknown_format_name_is_refused(ledger_engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [chunk()])
    with pytest.raises(InputError, match="format"):
        ingest(ledger_engine, [str(path)], "yaml")


def test_stored_json_matches_input_json(ledger_engine: Engine, tmp_path: Path) -> None:
    """Every JSON Lines record round-trips: what is stored is what was given."""
    recs = [json.loads(line) for line in good_lines(5, "round")]
    path = write_jsonl(tmp_path / "round.jsonl", recs)
    ingest(ledger_engine, [str(path)])
    with ledger_engine.connect() as conn:
        ids = [r.chunk_id for r in conn.execute(select(versions).order_by("vid"))]
    assert ids == [r["id"] for r in recs]
