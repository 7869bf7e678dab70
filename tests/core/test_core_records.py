"""Chunk records in ledger mode: what is stored, digests, dedupe groups over versions."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.core.records import (
    EXCHANGE_SCOPE,
    FIELDS,
    SECTIONS,
    TRUST_LABELS,
    ChunkRecord,
    RecordError,
    check_dedupe_groups,
    validate_chunk,
)


def raw(**overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "refund-faq",
        "section": "evidence",
        "source_uri": "public://faq/refund",
        "source_version": "2026-06",
        "effective_from": "2026-06-01",
        "expires_on": None,
        "required_permission": "public-read",
        "trust": "approved-source",
        "dedupe_key": "refund-faq",
        "estimated_tokens": 34,
        "priority": 60,
        "required": False,
        "content": "Customer-facing explanation.",
    }
    record.update(overrides)
    return record


def test_constants() -> None:
    assert len(FIELDS) == 13 and set(FIELDS) == set(raw())
    assert SECTIONS == ("policy", "state", "evidence", "current-input")
    assert TRUST_LABELS == (
        "application-policy",
        "confirmed-state",
        "approved-source",
        "user-input",
        "unverified",
    )
    # The 13 record fields, then the two a document version adds and an exchange's
    # scope (optional, hashed when set).
    fields = [f.name for f in dataclasses.fields(ChunkRecord)]
    assert fields == [*FIELDS, "title", "path", "scope"]


def test_ledger_mode_keeps_content_exactly_and_strips_the_rest() -> None:
    record = validate_chunk(
        raw(
            content="  body with edges \n",
            source_version=" 7 ",
            id=" refund-faq",
            trust="approved-source ",
        )
    )
    assert record.content == "  body with edges \n"
    assert (record.source_version, record.id, record.trust) == (
        "7",
        "refund-faq",
        "approved-source",
    )
    assert record.content_digest == hashlib.sha256(b"  body with edges \n").hexdigest()


def test_fixture_mode_strips_content() -> None:
    record = validate_chunk(raw(content="  body \n"), max_content=10_000, strip_content=True)
    assert record.content == "body"


def test_the_ledger_caps_the_content_it_stores_and_the_fixture_the_stripped_text() -> None:
    # The ledger stores content as given, so the cap counts every stored character
    # (issue 14: 'x' + 5,000,000 spaces was stored); `ledger pack` strips first.
    # 16 Mi characters in the ledger (a real agent session's exchange can pass 2 MB).
    cap = 16 * 1024 * 1024
    validate_chunk(raw(content=" " + "x" * (cap - 2) + " "))
    with pytest.raises(RecordError, match=f"content exceeds {cap} characters"):
        validate_chunk(raw(content=" " + "x" * cap + " "))
    with pytest.raises(RecordError, match=f"content exceeds {cap} characters"):
        validate_chunk(raw(content="x" + " " * cap))
    with pytest.raises(RecordError, match=f"content exceeds {cap} characters"):
        validate_chunk(raw(content="x" * (cap + 1)))
    validate_chunk(raw(content=" " + "x" * 10 + " "), max_content=10, strip_content=True)
    with pytest.raises(RecordError, match="content exceeds 10 characters"):
        validate_chunk(raw(content="x" * 11), max_content=10)


def test_record_digest_is_sha256_of_rfc8785_json() -> None:
    record = validate_chunk(raw(content='é \u2028 \x00 quotes " and \\'))
    expected = hashlib.sha256(rfc8785.dumps(record.to_json())).hexdigest()
    assert record.record_digest == expected
    assert list(record.to_json()) == list(FIELDS)


@pytest.mark.parametrize(
    ("overrides", "field", "rule"),
    [
        ({"estimated_tokens": True}, "estimated_tokens", "must be an integer"),
        ({"estimated_tokens": 3.0}, "estimated_tokens", "must be an integer"),
        ({"priority": 1e2}, "priority", "must be an integer"),
        ({"priority": 101}, "priority", "must be between 0 and 100"),
        ({"required": None}, "required", "must be a boolean"),
        ({"effective_from": "2026-7-1"}, "effective_from", "must use YYYY-MM-DD"),
        ({"effective_from": "2026-07-01T00:00"}, "effective_from", "must use YYYY-MM-DD"),
        ({"expires_on": "2027-01-01Z"}, "expires_on", "must use YYYY-MM-DD"),
        ({"expires_on": "2026-06-01"}, "expires_on", "must be later than effective_from"),
        ({"source_uri": "relative/path"}, "source_uri", "must be an absolute URI"),
        ({"section": "notes"}, "section", "is unsupported: 'notes'"),
        ({"trust": "gossip"}, "trust", "is unsupported: 'gossip'"),
        ({"content": "   "}, "content", "must be a non-blank string"),
        ({"content": "a\ud800b"}, "content", "must not contain a lone surrogate"),
        ({"id": 12}, "id", "must be a non-blank string"),
    ],
)
def test_record_error_names_field_and_rule(
    overrides: dict[str, Any], field: str, rule: str
) -> None:
    with pytest.raises(RecordError) as caught:
        validate_chunk(raw(**overrides))
    error = caught.value
    assert (error.field, error.rule) == (field, rule)
    assert str(error) == f"{field} {rule}"
    assert error.located("chunks.jsonl:7") == f"chunks.jsonl:7.{field} {rule}"
    assert isinstance(error, InputError)


def test_invalid_fields_names_missing_and_unknown() -> None:
    record = raw(body="x")
    del record["content"]
    with pytest.raises(RecordError) as caught:
        validate_chunk(record)
    assert caught.value.field is None
    assert str(caught.value) == "chunk has invalid fields: missing=['content'], unknown=['body']"
    with pytest.raises(RecordError, match="must be a JSON object"):
        validate_chunk(["not", "an", "object"])


def record(**overrides: Any) -> ChunkRecord:
    return validate_chunk(raw(**overrides))


def test_dedupe_groups_count_distinct_ids() -> None:
    # Versions of one id are not each other's duplicates, even when they differ.
    check_dedupe_groups(
        [
            record(source_version="1", required=True),
            record(source_version="2", trust="unverified"),
        ]
    )


def test_required_chunks_cannot_share_a_dedupe_key() -> None:
    with pytest.raises(RecordError) as caught:
        check_dedupe_groups(
            [
                record(id="faq-a", dedupe_key="faq"),
                record(id="faq-b", dedupe_key="faq", source_version="2", required=True),
            ]
        )
    message = str(caught.value)
    assert message.startswith("required chunks cannot share a dedupe_key: 'faq'")
    assert "'faq-a'" in message and "'faq-b'" in message
    assert caught.value.rule == "required chunks cannot share a dedupe_key"


@pytest.mark.parametrize(
    ("attribute", "value"),
    [("section", "state"), ("required_permission", "staff-read"), ("trust", "unverified")],
)
def test_dedupe_group_crossing_boundaries(attribute: str, value: str) -> None:
    with pytest.raises(RecordError) as caught:
        check_dedupe_groups(
            [
                record(id="faq-a", dedupe_key="faq"),
                record(id="faq-b", dedupe_key="faq", **{attribute: value}),
            ]
        )
    assert str(caught.value).startswith(f"dedupe_key 'faq' crosses {attribute} boundaries")


def test_a_version_that_crosses_the_boundary_breaks_the_group() -> None:
    with pytest.raises(RecordError, match="crosses trust boundaries"):
        check_dedupe_groups(
            [
                record(id="faq-a", dedupe_key="faq"),
                record(id="faq-b", dedupe_key="faq"),
                record(id="faq-b", dedupe_key="faq", source_version="3", trust="unverified"),
            ]
        )


def test_lowest_dedupe_key_reported_first() -> None:
    with pytest.raises(RecordError, match="dedupe_key 'aa-key' crosses trust"):
        check_dedupe_groups(
            [
                record(id="z-one", dedupe_key="zz-key"),
                record(id="z-two", dedupe_key="zz-key", trust="unverified"),
                record(id="a-one", dedupe_key="aa-key"),
                record(id="a-two", dedupe_key="aa-key", trust="unverified"),
            ]
        )


@settings(max_examples=300, deadline=None)
@given(
    content=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1).filter(
        lambda t: t.strip()
    ),
    version=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80).filter(
        lambda t: t.strip()
    ),
)
def test_record_digest_is_rfc8785_for_any_text(content: str, version: str) -> None:
    """The fast record digest (C encoder, sorted keys) equals an independent RFC 8785."""
    rec = validate_chunk(raw(content=content, source_version=version))
    assert rec.record_digest == hashlib.sha256(rfc8785.dumps(rec.to_json())).hexdigest()
    exchange = dataclasses.replace(rec, scope=EXCHANGE_SCOPE)
    assert exchange.record_digest == hashlib.sha256(rfc8785.dumps(exchange.to_json())).hexdigest()


def test_a_scope_is_hashed_only_when_set() -> None:
    """An exchange's scope is in its record digest; a record without one keeps
    the digest of SPEC's 13 fields (the seed-001 fixture's digests hold)."""
    rec = validate_chunk(raw())
    exchange = dataclasses.replace(rec, scope=EXCHANGE_SCOPE)
    assert "scope" not in rec.to_json() and exchange.to_json()["scope"] == "transcript"
    assert rec.record_digest == hashlib.sha256(rfc8785.dumps(dict(raw()))).hexdigest()
    assert exchange.record_digest != rec.record_digest
    with pytest.raises(RecordError, match=r"unknown=\['scope'\]"):
        validate_chunk({**raw(), "scope": "transcript"})


# Values near every rule's edge: valid ones, and ones each rule refuses (wrong type,
# blank, padded, control and non-ASCII characters, out-of-range numbers, odd dates).
_TEXTS = st.one_of(
    st.sampled_from(
        [
            "public-read",
            "evidence",
            "policy",
            "approved-source",
            "unverified",
            "a",
            "ab",
            "A-b",
            " ab",
            "ab ",
            "a b",
            "-ab",
            "ab\x00",
            "ab\x7f",
            "ab\t",
            "é-b",
            "",
            "   ",
        ]
    ),
    st.text(max_size=12),
)
_URIS = st.one_of(
    st.sampled_from(
        [
            "public://faq/refund",
            "https://x.example/a b",
            "Https://x",
            "x://",
            " x://a",
            "x://a\x01",
            "x://\u00e9",
            "x://" + "a" * 300,
            "mailto:a",
            "x+y.z-w://a",
        ]
    ),
    st.text(max_size=12),
)
_DATES = st.one_of(
    st.sampled_from(
        [
            "2026-06-01",
            "2026-06-02",
            "2026-02-30",
            "20260601",
            "2026-W01-1",
            "2026-06-01 ",
            "2026-6-01",
            "9999-12-31",
            "0001-01-01",
            "2026-06-01T00",
        ]
    ),
    st.none(),
)
_NUMBERS = st.one_of(
    st.integers(-2, 12_000_000), st.sampled_from([True, False, 3.0, "3", None, 100, 101])
)
_CONTENTS = st.one_of(
    st.text(max_size=20), st.sampled_from(["ok", " ok ", "\x00", "\ud800", "a" * 11_000, "\t"])
)


_EDGES: dict[str, Any] = {
    "id": _TEXTS,
    "section": _TEXTS,
    "source_uri": _URIS,
    "source_version": st.one_of(_TEXTS, st.sampled_from(["v" * 80, "v" * 81, "2026 06"])),
    "effective_from": _DATES,
    "expires_on": _DATES,
    "required_permission": _TEXTS,
    "trust": _TEXTS,
    "dedupe_key": _TEXTS,
    "estimated_tokens": _NUMBERS,
    "priority": _NUMBERS,
    "required": st.sampled_from([True, False, 0, 1, None]),
    "content": _CONTENTS,
}
_MODES = [
    {"ledger": True, "allow_nul": False},  # ingest
    {"max_content": 10_000, "strip_content": True},  # ledger pack's fixture
    {},
]


@settings(max_examples=3000, deadline=None)
@given(
    # A valid record with one to three fields at a rule's edge, so that each rule
    # is met alone and in pairs.
    overrides=st.lists(
        st.sampled_from(sorted(_EDGES)), min_size=1, max_size=3, unique=True
    ).flatmap(lambda names: st.fixed_dictionaries({n: _EDGES[n] for n in names})),
    mode=st.sampled_from(_MODES),
)
def test_the_plain_fast_path_accepts_only_what_every_rule_accepts(
    overrides: dict[str, Any], mode: dict[str, Any]
) -> None:
    """Ingest's fast path (`_plain_record`) is a shortcut, not a second set of rules:
    whatever it accepts, the rule-by-rule checks accept as the same record; whatever
    they refuse, it leaves to them (so the error and its message are theirs)."""
    from ledger.core.records import LEDGER_MAX_CONTENT, _checked_record, _plain_record

    obj = raw(**overrides)
    max_content = mode.get("max_content", LEDGER_MAX_CONTENT)
    strip = mode.get("strip_content", False)
    fast = _plain_record(obj, max_content, strip)
    try:
        checked = _checked_record(
            obj, max_content, strip, mode.get("allow_nul", True), mode.get("ledger", False)
        )
    except RecordError:
        assert fast is None
    else:
        assert fast is None or fast == checked


def test_the_plain_fast_path_takes_the_common_record() -> None:
    """The shortcut is taken for an ordinary record (else it would be dead code)."""
    from ledger.core.records import _plain_record

    assert _plain_record(raw(), 1_000_000, False) == validate_chunk(raw(), ledger=True)
    assert _plain_record(raw(source_version="2026 06"), 1_000_000, False) is not None
    assert _plain_record(raw(source_version=" 2026"), 1_000_000, False) is None
