"""Canonical JSON and digests, checked against the independent `rfc8785` package."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.canonical import (
    canonical_bytes,
    canonical_json,
    content_digest,
    digest_trusted,
    digest_value,
)
from ledger.core.records import flat_record_digest, record_digest, validate_chunk
from tests.conftest import chunk

MAX_SAFE = 2**53 - 1


def reference_digest(value: Any) -> str:
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()


VECTORS: list[tuple[str, Any]] = [
    ("empty object", {}),
    ("empty array", []),
    ("null", None),
    ("booleans", [True, False]),
    ("integers", [0, -0, 1, -1, 42, 10_000_000, MAX_SAFE, -MAX_SAFE]),
    ("ascii key order", {"b": 1, "a": 2, "A": 3, "_": 4, "aa": 5, "": 6}),
    # U+E000 sorts after U+1F600 by code point, but before it by UTF-16 code
    # units (0xE000 > 0xD83D): RFC 8785 sorts by UTF-16.
    ("utf-16 key order", {"\ue000": 1, "\U0001f600": 2}),
    (
        "utf-16 key order, more",
        {"\uffff": 1, "\U00010000": 2, "\u00e9": 3, "z": 4, "\U0010ffff": 5},
    ),
    ("key prefix order", {"ab": 1, "a": 2, "a\u0000": 3, "abc": 4}),
    ("unicode text", {"text": "é ß 日本語 \U0001f600 \u2028 \u2029 \ufeff"}),
    ("control characters", {"c": "".join(chr(i) for i in range(0x20)) + "\x7f"}),
    ("quotes and backslashes", {"q": 'say "hi" \\ back\\slash / slash'}),
    ("control characters in keys", {"\n": 1, "\t": 2, "\u001f": 3, "\x7f": 4}),
    (
        "nested",
        {"z": {"y": [1, {"b": None, "a": [[], {}]}], "x": "v"}, "a": [True, [False, [None]]]},
    ),
    (
        "chunk record",
        chunk(content="  Body with\ttab, newline\n and é  ", expires_on="2027-01-01"),
    ),
]


@pytest.mark.parametrize("value", [v for _, v in VECTORS], ids=[n for n, _ in VECTORS])
def test_canonical_json_matches_rfc8785(value: Any) -> None:
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_json(value).encode("utf-8") == rfc8785.dumps(value)
    assert digest_value(value) == reference_digest(value)


def test_utf16_key_order_differs_from_code_point_order() -> None:
    value = {"\ue000": 1, "\U0001f600": 2}
    # The vector is only meaningful if the two orders disagree.
    assert sorted(value) == ["\ue000", "\U0001f600"]
    assert canonical_json(value) == '{"\U0001f600":2,"\ue000":1}'


def test_control_characters_use_ecmascript_escapes() -> None:
    assert canonical_json("\b\t\n\f\r\x00\x1f\x7f") == '"\\b\\t\\n\\f\\r\\u0000\\u001f\x7f"'


@pytest.mark.parametrize("value", [MAX_SAFE + 1, -MAX_SAFE - 1, 2**64])
def test_integers_outside_the_safe_range_are_refused(value: int) -> None:
    with pytest.raises(ValueError):
        canonical_json(value)
    with pytest.raises(rfc8785.IntegerDomainError):
        rfc8785.dumps(value)


@pytest.mark.parametrize("value", [1.5, {"a": 0.0}, float("nan")])
def test_floats_are_refused(value: Any) -> None:
    with pytest.raises(TypeError):
        canonical_json(value)


@pytest.mark.parametrize("value", [{1: "a"}, {"a": 1, 2: "b"}, {None: 1}])
def test_non_string_keys_are_refused(value: Any) -> None:
    with pytest.raises(TypeError, match="is not a string"):
        canonical_json(value)


def test_lone_surrogates_cannot_be_hashed() -> None:
    with pytest.raises(UnicodeEncodeError):
        digest_value({"a": "\ud800"})
    with pytest.raises(rfc8785.CanonicalizationError):
        rfc8785.dumps({"a": "\ud800"})


# No lone surrogates: the ledger refuses them before hashing.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers(-MAX_SAFE, MAX_SAFE) | TEXT
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5),
    max_leaves=30,
)
ASCII_KEYS = st.text(st.characters(max_codepoint=0x7F), max_size=8)
ASCII_KEYED_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(ASCII_KEYS, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES)
def test_any_json_value_matches_rfc8785(value: Any) -> None:
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert digest_value(value) == reference_digest(value)


@settings(max_examples=400, deadline=None)
@given(ASCII_KEYED_VALUES)
def test_digest_trusted_equals_digest_value_on_ascii_keys(value: Any) -> None:
    assert digest_trusted(value) == digest_value(value)


def test_digest_trusted_would_differ_on_utf16_key_order() -> None:
    # Why digest_trusted is only for ASCII keys: json.dumps sorts by code point.
    value = {"\ue000": 1, "\U0001f600": 2}
    assert digest_trusted(value) != digest_value(value)


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=50))
def test_content_digest_is_sha256_of_utf8(text: str) -> None:
    assert content_digest(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()


CONTENT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda s: s.strip() != ""
)


@settings(max_examples=200, deadline=None)
@given(
    content=CONTENT,
    source_version=st.text(
        st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20
    ).filter(lambda s: s.strip() != ""),
    tokens=st.integers(1, 10_000_000),
    priority=st.integers(0, 100),
    required=st.booleans(),
    expires=st.sampled_from([None, "2026-01-02", "2999-12-31"]),
)
def test_ingest_record_digest_is_rfc8785(
    content: str, source_version: str, tokens: int, priority: int, required: bool, expires: Any
) -> None:
    """Ingest hashes records with the C fast path; it must equal RFC 8785 exactly."""
    rec = validate_chunk(
        chunk(
            content=content,
            source_version=source_version,
            estimated_tokens=tokens,
            priority=priority,
            required=required,
            expires_on=expires,
        )
    )
    expected = reference_digest(rec.to_json())
    assert record_digest(rec) == expected
    assert rec.record_digest == expected


# Strings the record digest takes as they are (printable, no quote or
# backslash) and strings it escapes: each must hash as RFC 8785 writes it.
_ESCAPED_OR_NOT = [
    "plain text, é and 漢字",
    'a "quoted" word',
    "a back\\slash",
    "line\nbreak and\ttab",
    "\x00\x1f controls",
    "\x7f and \u2028 and \u00a0 (not printable, not escaped)",
]


@pytest.mark.parametrize("field", ["content", "id", "source_version", "section", "trust"])
@pytest.mark.parametrize("text", _ESCAPED_OR_NOT)
def test_record_digest_is_rfc8785_whether_or_not_a_string_needs_escapes(
    field: str, text: str
) -> None:
    """A record's strings are hashed as they are when none needs an escape (the
    body, and the other strings together): an escape needed in any one must
    still be written."""
    rec = validate_chunk(chunk(content="body"))
    rec = replace(rec, **{field: text})
    assert record_digest(rec) == reference_digest(rec.to_json())


def test_flat_record_digest_refuses_a_field_that_is_no_string() -> None:
    """A tampered row's integer where a string belongs fails in the escaper (verify
    then asks the record), as it did before the fast path."""
    fields = ["body", "k", "2026-01-01", 3, None, "id", 1, False, "p", None, "s", "u", "v", "t"]
    for at in (0, 1, 5, 13):
        with pytest.raises(TypeError):
            flat_record_digest(*fields[:at], 7, *fields[at + 1 :])


def test_pack_digest_is_rfc8785_of_its_manifest() -> None:
    """The pack manifest is encoded without sorting (its objects are built sorted):
    the digest must still be RFC 8785's, on a real decision with every reason."""
    import hashlib

    import rfc8785

    from ledger.core.select import Candidate, select
    from ledger.store.access import Policy
    from ledger.store.inputs import Inputs
    from ledger.store.recording import context_digests, input_digest, pack_manifest

    def cand(i: str, **kw: object) -> Candidate:
        base = dict(
            id=i,
            source_version="v1",
            section="evidence",
            effective_from="2026-01-01",
            expires_on=None,
            required_permission="read",
            trust="approved-source",
            dedupe_key=i,
            tokens=10,
            priority=50,
            required=False,
            record_digest=hashlib.sha256(i.encode()).hexdigest(),
            content_digest=hashlib.sha256(b"c" + i.encode()).hexdigest(),
            ingest_rank=1,
        )
        base.update(kw)
        return Candidate(**base)  # type: ignore[arg-type]

    cands = [
        cand("a"),
        cand("b", required_permission="secret"),
        cand("c", trust="unverified"),
        cand("d", effective_from="2027-01-01"),
        cand("e", expires_on="2026-02-01"),
        cand("f", dedupe_key="a", priority=10),
        cand("g", tokens=95),
        cand(
            "a",
            source_version="v0",
            effective_from="2025-06-01",
            record_digest=hashlib.sha256(b"a0").hexdigest(),
        ),
    ]
    inputs = Inputs(
        as_of="2026-07-01",
        subject="ünï",
        grants=("read",),
        policy=Policy(("approved-source",), 100),
        budget=100,
        counter="estimated_tokens",
        mark=3,
    )
    ctx = select(cands, inputs.request(), inputs.order())
    assert {e.reason for e in ctx.evicted} == {
        "permission_denied",
        "trust_denied",
        "not_yet_effective",
        "expired",
        "superseded",
        "duplicate",
        "budget",
    }
    ind, pd = context_digests(inputs, cands, ctx)
    assert ind == input_digest(inputs, (c.record_digest for c in cands))
    manifest = pack_manifest(
        inputs,
        ind,
        [(c.record_digest, c.tokens) for c in ctx.items],
        [(e.candidate.record_digest, e.reason, e.detail, e.candidate.tokens) for e in ctx.evicted],
    )
    assert pd == hashlib.sha256(rfc8785.dumps(manifest)).hexdigest()


@settings(max_examples=100, deadline=None)
@given(
    digests=st.lists(st.text(max_size=8), max_size=6),
    scope=st.sampled_from(["documents", "transcript"]),
    retracted=st.dictionaries(
        st.text(max_size=4),
        st.lists(st.tuples(st.integers(1, 99), st.just("2026-01-01")), min_size=1, max_size=2),
        max_size=2,
    ),
)
def test_input_digest_is_rfc8785(digests: list[str], scope: str, retracted: Any) -> None:
    """`input_digest` writes its object member by member around the candidates'
    text (verify reuses that text): it must equal RFC 8785 of SPEC's object."""
    import hashlib

    import rfc8785

    from ledger.store.access import Policy
    from ledger.store.inputs import DOCUMENTS, Inputs
    from ledger.store.recording import input_digest

    inputs = Inputs(
        as_of="2026-07-01",
        subject="ünï",
        grants=("read", "wrïte"),
        policy=Policy(("approved-source",), 100),
        budget=100,
        counter="estimated_tokens",
        mark=3,
        scope=scope,
        retractions={k: tuple(v) for k, v in retracted.items()} if scope == DOCUMENTS else {},
    )
    spec: dict[str, Any] = {
        "as_of": inputs.as_of,
        "budget": inputs.budget,
        "candidates": sorted(digests),
        "counter": inputs.counter,
        "grants": list(inputs.grants),
        "policy": inputs.policy.to_json(),
        "selector_version": inputs.selector_version,
    }
    if scope != DOCUMENTS:
        spec["scope"] = scope
    if inputs.retractions:
        spec["retractions"] = [
            [cid, entry, day]
            for cid, marks in sorted(inputs.retractions.items())
            for entry, day in marks
        ]
    assert input_digest(inputs, digests) == hashlib.sha256(rfc8785.dumps(spec)).hexdigest()


@settings(max_examples=300, deadline=None)
@given(
    detail=st.one_of(
        st.fixed_dictionaries(
            {
                "needed": st.one_of(st.integers(), st.booleans(), st.none(), st.text(max_size=3)),
                "remaining": st.one_of(st.integers(), st.booleans(), st.none()),
            }
        ),
        st.dictionaries(
            st.sampled_from(["needed", "remaining", "trust", "from", "entry"]),
            st.one_of(st.integers(), st.none(), st.text(max_size=3)),
            max_size=3,
        ),
    )
)
def test_detail_json_is_trusted_json(detail: dict[str, Any]) -> None:
    """The pack digest writes a budget detail without the encoder: the same text."""
    from types import MappingProxyType

    from ledger.core.canonical import trusted_json
    from ledger.core.digests import detail_json

    assert detail_json(detail) == trusted_json(detail)
    assert detail_json(MappingProxyType(detail)) == trusted_json(detail)


@settings(max_examples=300, deadline=None)
@given(
    entries=st.lists(
        st.tuples(
            st.sampled_from(['{"detail":{},"reason":"budget","record_digest":', "h"]),
            st.one_of(st.text(max_size=4), st.integers(), st.none(), st.booleans()),
            st.one_of(st.integers(), st.booleans(), st.none(), st.text(max_size=3)),
        ),
        max_size=6,
    )
)
def test_eviction_entries_are_eviction_entry_texts(entries: list[tuple[str, Any, Any]]) -> None:
    """The pack digest writes its evictions' entries a column at a time: the same
    texts as one at a time, whatever a changed database holds (or the same error)."""
    from ledger.core.digests import eviction_entries, eviction_entry

    heads = [h for h, _, _ in entries]
    digests = [d for _, d, _ in entries]
    tokens = [t for _, _, t in entries]
    try:
        expected = [eviction_entry(h, d, t) for h, d, t in entries]
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            eviction_entries(heads, digests, tokens)
        return
    assert eviction_entries(heads, digests, tokens) == expected


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.text(max_size=6),
            st.text(alphabet="0123456789abcdef", min_size=1, max_size=8),
            st.integers(),
            st.none(),
        ),
        max_size=6,
    )
)
def test_strings_json_is_trusted_json(values: list[Any]) -> None:
    """The input digest joins plain candidate digests directly: the same text."""
    from ledger.core.canonical import plain_strings, strings_json, trusted_json

    assert strings_json(values) == trusted_json(values)
    if plain_strings(values):
        assert all(type(v) is str and (v == "" or (v.isascii() and v.isalnum())) for v in values)


def test_plain_strings_refuses_what_json_escapes() -> None:
    from ledger.core.canonical import plain_strings

    assert plain_strings(["ab12", "ff"])
    for bad in (['a"b'], ["a\\b"], ["a\nb"], ["ä"], ["a b"], [1], [None], ["a", 2], []):
        assert not plain_strings(bad), bad


_REF_VALUE = st.one_of(st.text(max_size=4), st.integers(), st.none())


@settings(max_examples=300, deadline=None)
@given(
    key=st.sampled_from(["by", "kept", "other"]),
    ref=st.one_of(
        st.fixed_dictionaries(
            {"id": _REF_VALUE, "source_version": _REF_VALUE, "record_digest": _REF_VALUE}
        ),
        st.dictionaries(
            st.sampled_from(["id", "source_version", "record_digest", "x"]), _REF_VALUE, max_size=4
        ),
    ),
    frozen=st.booleans(),
)
def test_detail_json_of_a_reference_is_trusted_json(
    key: str, ref: dict[str, Any], frozen: bool
) -> None:
    """Superseded and duplicate details (the version they name) are written
    without the encoder: the same text, whatever they hold."""
    from types import MappingProxyType

    from ledger.core.canonical import trusted_json
    from ledger.core.digests import detail_json

    inner: Any = MappingProxyType(ref) if frozen else ref
    detail = {key: inner}
    assert detail_json(detail) == trusted_json(detail)
    assert detail_json(MappingProxyType(detail)) == trusted_json(detail)
