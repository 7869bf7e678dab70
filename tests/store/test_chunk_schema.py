"""The shipped chunk-record JSON Schema agrees with the ingest rules: every record
ingest refuses for a rule a schema can state is invalid under it, and every
record at the edge of a range that ingest accepts is valid under it."""

from __future__ import annotations

import json
from importlib.resources import files

import jsonschema
import pytest

from ledger.core.records import FIELDS, SECTIONS, TRUST_LABELS, validate_chunk
from ledger.core.strictjson import loads_strict
from tests.conftest import chunk
from tests.store.ingest_cases import BOUNDARY_RECORDS, RECORD_RULES, Rule

SCHEMA = json.loads(files("ledger").joinpath("schemas/chunk.schema.json").read_text("utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(
    SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
)

# Rules ingest checks that a JSON Schema cannot state, or that live below JSON.
NOT_IN_A_SCHEMA = {
    # two fields compared with each other
    "expires_on equal": "expires_on must be later than effective_from",
    "expires_on before": "expires_on must be later than effective_from",
    # refused by the strict JSON reader before any schema could look
    "duplicate key": "a duplicate key is refused by the reader",
    "NaN": "not JSON",
    "Infinity": "not JSON",
    "-Infinity": "not JSON",
    "overflow to infinity": "not JSON",
    "invalid UTF-8": "not JSON",
    "lone surrogate in content": "refused by the reader",
    "lone low surrogate": "refused by the reader",
    # JSON Schema's integer type includes 3.0 and 1e2; the reader refuses them
    "float 3.0 as priority": "an integral number is an integer to JSON Schema",
    "exponent 1e2 as priority": "an integral number is an integer to JSON Schema",
    "exponent 1E1 as estimated_tokens": "an integral number is an integer to JSON Schema",
}


def test_the_schema_is_draft_2020_12_and_names_every_field() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert sorted(SCHEMA["required"]) == sorted(FIELDS) == sorted(SCHEMA["properties"])
    assert tuple(SCHEMA["properties"]["section"]["enum"]) == SECTIONS
    assert tuple(SCHEMA["properties"]["trust"]["enum"]) == TRUST_LABELS


@pytest.mark.parametrize("case", RECORD_RULES, ids=lambda c: c.name)
def test_a_record_ingest_refuses_is_invalid_under_the_schema(case: Rule) -> None:
    if case.name in NOT_IN_A_SCHEMA:
        # Still refused by ingest's own check: the table above only names why the
        # schema cannot say it.
        with pytest.raises(Exception):  # noqa: B017 - InputError or StrictJSONError
            validate_chunk(loads_strict(case.text), allow_nul=False)
        return
    assert not VALIDATOR.is_valid(json.loads(case.text)), case.name


@pytest.mark.parametrize("record", BOUNDARY_RECORDS, ids=lambda r: r["id"])
def test_a_record_ingest_accepts_on_the_edge_is_valid_under_the_schema(
    record: dict[str, object],
) -> None:
    stored = validate_chunk(record, allow_nul=False).to_json()  # stripped as ingest stores it
    errors = [e.message for e in VALIDATOR.iter_errors(stored)]
    assert errors == []


def test_the_schema_tells_a_valid_record_from_one_changed_field() -> None:
    assert VALIDATOR.is_valid(chunk())
    assert not VALIDATOR.is_valid({**chunk(), "body": "x"})
    assert not VALIDATOR.is_valid(chunk(effective_from="2026-02-30"))
