"""`ledger pack` in the library: the seed-001 rules, words and results."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest

from ledger.core.errors import InputError
from ledger.core.fixture import PackError, build_fixture_pack, parse_fixture

SEED_LINES = (
    "budget=170 used=162 remaining=8",
    "selected: policy, task-state, current-refund-policy, refund-faq, current-input",
    "excluded: forum-claim(trust_denied), future-refund-policy(not_yet_effective), "
    "legal-note(permission_denied), mirror-refund-policy(duplicate), "
    "old-refund-policy(expired), shipping-note(budget)",
)


def encode(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8")


def chunk(fixture: dict[str, Any], chunk_id: str) -> dict[str, Any]:
    return next(c for c in fixture["chunks"] if c["id"] == chunk_id)


def test_seed_fixture_gives_the_reference_lines(fixture_bytes: bytes) -> None:
    assert build_fixture_pack(fixture_bytes).lines == SEED_LINES


def test_seed_fixture_lines_follow_from_the_rules(fixture_dict: dict[str, Any]) -> None:
    """Derive the expected lines from SPEC's rules, independently of the selector."""
    req = fixture_dict["request"]
    as_of, budget = req["as_of"], req["pack_budget_tokens"]
    reasons: dict[str, str] = {}
    survivors = []
    for c in fixture_dict["chunks"]:
        if c["required_permission"] not in req["granted_permissions"]:
            reasons[c["id"]] = "permission_denied"
        elif c["trust"] not in req["allowed_trust"]:
            reasons[c["id"]] = "trust_denied"
        elif c["effective_from"] > as_of:
            reasons[c["id"]] = "not_yet_effective"
        elif c["expires_on"] is not None and as_of >= c["expires_on"]:
            reasons[c["id"]] = "expired"
        else:
            survivors.append(c)

    def preference(c: dict[str, Any]) -> tuple[Any, ...]:
        # priority high, effective_from newest (negate the yyyymmdd number), tokens, id
        newest = -int(c["effective_from"].replace("-", ""))
        return (-c["priority"], newest, c["estimated_tokens"], c["id"])

    kept: dict[str, dict[str, Any]] = {}
    for c in sorted(survivors, key=preference):
        if c["dedupe_key"] in kept:
            reasons[c["id"]] = "duplicate"
        else:
            kept[c["dedupe_key"]] = c
    admitted = [c for c in kept.values() if c["required"]]
    used = sum(c["estimated_tokens"] for c in admitted)
    for c in sorted((c for c in kept.values() if not c["required"]), key=preference):
        if used + c["estimated_tokens"] <= budget:
            admitted.append(c)
            used += c["estimated_tokens"]
        else:
            reasons[c["id"]] = "budget"
    sections = ["policy", "state", "evidence", "current-input"]
    admitted.sort(
        key=lambda c: (sections.index(c["section"]), not c["required"], -c["priority"], c["id"])
    )
    expected = (
        f"budget={budget} used={used} remaining={budget - used}",
        "selected: " + ", ".join(c["id"] for c in admitted),
        "excluded: " + ", ".join(f"{i}({reasons[i]})" for i in sorted(reasons)),
    )
    assert build_fixture_pack(encode(fixture_dict)).lines == expected
    # Each of the six seed reasons appears exactly once in the seed fixture.
    assert sorted(reasons.values()) == sorted(
        ["permission_denied", "trust_denied", "not_yet_effective", "expired", "duplicate", "budget"]
    )


def test_pack_has_exactly_the_spec_keys(fixture_bytes: bytes) -> None:
    pack = build_fixture_pack(fixture_bytes).pack
    assert list(pack) == [
        "fixture_version",
        "selector_version",
        "as_of",
        "budget_tokens",
        "used_tokens",
        "remaining_tokens",
        "selected",
        "excluded",
    ]
    assert set(pack["selected"][0]) == {
        "id",
        "section",
        "source_uri",
        "source_version",
        "effective_from",
        "expires_on",
        "trust",
        "required",
        "estimated_tokens",
        "content",
    }
    assert [e["id"] for e in pack["excluded"]] == sorted(e["id"] for e in pack["excluded"])
    assert all(set(e) == {"id", "reason"} for e in pack["excluded"])
    assert pack["used_tokens"] == sum(s["estimated_tokens"] for s in pack["selected"])


def test_shuffled_chunks_give_the_identical_pack(fixture_dict: dict[str, Any]) -> None:
    reference = build_fixture_pack(encode(fixture_dict)).pack
    rng = random.Random(20260714)
    for _ in range(10):
        rng.shuffle(fixture_dict["chunks"])
        assert build_fixture_pack(encode(fixture_dict)).pack == reference


def test_every_text_field_is_stripped_content_included(fixture_dict: dict[str, Any]) -> None:
    c = chunk(fixture_dict, "refund-faq")
    c["content"] = "  \n Customer-facing text.\t "
    c["source_uri"] = " public://faq/refund "
    c["section"] = " evidence"
    c["effective_from"] = "2026-06-01 "
    pack = build_fixture_pack(encode(fixture_dict)).pack
    selected = next(s for s in pack["selected"] if s["id"] == "refund-faq")
    assert selected["content"] == "Customer-facing text."
    assert selected["source_uri"] == "public://faq/refund"
    assert selected["section"] == "evidence"
    assert selected["effective_from"] == "2026-06-01"


def test_excluded_none_when_everything_fits(fixture_dict: dict[str, Any]) -> None:
    fixture_dict["chunks"] = [chunk(fixture_dict, "policy")]
    assert build_fixture_pack(encode(fixture_dict)).lines[2] == "excluded: none"


Mutation = Callable[[dict[str, Any]], None]


def set_chunk(field: str, value: Any, chunk_id: str = "refund-faq") -> Mutation:
    def mutate(f: dict[str, Any]) -> None:
        chunk(f, chunk_id)[field] = value

    return mutate


def set_request(field: str, value: Any) -> Mutation:
    def mutate(f: dict[str, Any]) -> None:
        f["request"][field] = value

    return mutate


def drop_chunk_field(field: str) -> Mutation:
    def mutate(f: dict[str, Any]) -> None:
        del chunk(f, "refund-faq")[field]

    return mutate


def add_chunk_field(field: str) -> Mutation:
    def mutate(f: dict[str, Any]) -> None:
        chunk(f, "refund-faq")[field] = 1

    return mutate


def set_root(field: str, value: Any) -> Mutation:
    def mutate(f: dict[str, Any]) -> None:
        f[field] = value

    return mutate


def drop_root(field: str) -> Mutation:
    def mutate(f: dict[str, Any]) -> None:
        del f[field]

    return mutate


def share_key(first: str, second: str, **changes: Any) -> Mutation:
    def mutate(f: dict[str, Any]) -> None:
        chunk(f, second)["dedupe_key"] = chunk(f, first)["dedupe_key"]
        chunk(f, second).update(changes)

    return mutate


# (name, mutation, words the message must contain): the reference's words.
RULES: list[tuple[str, Mutation, str]] = [
    ("root missing", drop_root("request"), "root has invalid fields: missing=['request']"),
    ("root unknown", set_root("extra", 1), "root has invalid fields: unknown=['extra']"),
    ("chunk missing", drop_chunk_field("content"), "has invalid fields: missing=['content']"),
    ("chunk unknown", add_chunk_field("body"), "has invalid fields: unknown=['body']"),
    ("request missing", lambda f: f["request"].pop("as_of"), "request has invalid fields"),
    ("chunks empty", set_root("chunks", []), "chunks must contain 1 to 500 entries"),
    ("chunks not array", set_root("chunks", {}), "chunks must contain 1 to 500 entries"),
    ("chunks over 500", lambda f: f.update(chunks=f["chunks"] * 46), "1 to 500 entries"),
    ("id pattern", set_chunk("id", "Refund-FAQ"), "chunks[4].id must match"),
    ("id too short", set_chunk("id", "a"), "chunks[4].id must match"),
    ("id number", set_chunk("id", 7), "chunks[4].id must be a non-blank string"),
    ("section", set_chunk("section", "appendix"), "chunks[4].section is unsupported"),
    ("trust", set_chunk("trust", "trusted"), "chunks[4].trust is unsupported"),
    ("uri", set_chunk("source_uri", "faq/refund"), "chunks[4].source_uri must be an absolute URI"),
    ("uri space", set_chunk("source_uri", "public://faq refund"), "must be an absolute URI"),
    ("uri long", set_chunk("source_uri", "a://" + "x" * 297), "exceeds 300 characters"),
    (
        "version blank",
        set_chunk("source_version", "   "),
        "chunks[4].source_version must be a non-blank",
    ),
    ("version long", set_chunk("source_version", "v" * 81), "exceeds 80 characters"),
    (
        "date short",
        set_chunk("effective_from", "2026-7-1"),
        "chunks[4].effective_from must use YYYY-MM-DD",
    ),
    ("date invalid", set_chunk("effective_from", "2026-02-30"), "must use YYYY-MM-DD"),
    ("date basic", set_chunk("effective_from", "20260601"), "must use YYYY-MM-DD"),
    ("date number", set_chunk("effective_from", 20260601), "must be a non-blank string"),
    (
        "expires bad",
        set_chunk("expires_on", "2027/01/01"),
        "chunks[4].expires_on must use YYYY-MM-DD",
    ),
    (
        "expires equal",
        set_chunk("expires_on", "2026-06-01"),
        "expires_on must be later than effective_from",
    ),
    ("expires before", set_chunk("expires_on", "2026-05-31"), "must be later than effective_from"),
    ("required int", set_chunk("required", 0), "chunks[4].required must be a boolean"),
    ("required str", set_chunk("required", "false"), "must be a boolean"),
    (
        "tokens bool",
        set_chunk("estimated_tokens", True),
        "chunks[4].estimated_tokens must be an integer",
    ),
    ("tokens float", set_chunk("estimated_tokens", 34.0), "estimated_tokens must be an integer"),
    ("tokens str", set_chunk("estimated_tokens", "34"), "estimated_tokens must be an integer"),
    (
        "tokens zero",
        set_chunk("estimated_tokens", 0),
        "estimated_tokens must be between 1 and 10000000",
    ),
    ("tokens big", set_chunk("estimated_tokens", 10_000_001), "must be between 1 and 10000000"),
    ("priority over", set_chunk("priority", 101), "chunks[4].priority must be between 0 and 100"),
    ("priority negative", set_chunk("priority", -1), "priority must be between 0 and 100"),
    ("priority float", set_chunk("priority", 1e2), "priority must be an integer"),
    (
        "permission",
        set_chunk("required_permission", "Public Read"),
        "required_permission must match",
    ),
    ("dedupe", set_chunk("dedupe_key", "faq_refund"), "dedupe_key must match"),
    (
        "content blank",
        set_chunk("content", " \n\t "),
        "chunks[4].content must be a non-blank string",
    ),
    ("content long", set_chunk("content", "x" * 10_001), "content exceeds 10000 characters"),
    ("content null", set_chunk("content", None), "content must be a non-blank string"),
    ("chunk not object", lambda f: f["chunks"].append([]), "chunks[11] must be a JSON object"),
    ("ids unique", set_chunk("id", "policy"), "chunk ids must be unique"),
    (
        "required share",
        share_key(
            "policy",
            "refund-faq",
            required_permission="policy-read",
            trust="application-policy",
            section="policy",
        ),
        "required chunks cannot share a dedupe_key",
    ),
    (
        "crosses permission",
        share_key("current-refund-policy", "refund-faq"),
        "dedupe_key 'refund-policy-current' crosses required_permission boundaries",
    ),
    (
        "crosses trust",
        share_key("refund-faq", "forum-claim"),
        "dedupe_key 'refund-faq' crosses trust boundaries",
    ),
    (
        "crosses sect",
        share_key("refund-faq", "shipping-note", section="state"),
        "dedupe_key 'refund-faq' crosses section boundaries",
    ),
    ("fixture_version", set_root("fixture_version", "Context Pack"), "fixture_version must match"),
    ("selector_version", set_root("selector_version", ""), "selector_version must be a non-blank"),
    ("request not object", set_root("request", []), "request must be a JSON object"),
    ("as_of", set_request("as_of", "2026-13-01"), "request.as_of must use YYYY-MM-DD"),
    (
        "budget bool",
        set_request("pack_budget_tokens", False),
        "request.pack_budget_tokens must be an integer",
    ),
    (
        "budget float",
        set_request("pack_budget_tokens", 170.0),
        "pack_budget_tokens must be an integer",
    ),
    (
        "budget zero",
        set_request("pack_budget_tokens", 0),
        "pack_budget_tokens must be between 1 and 10000000",
    ),
    (
        "grants empty",
        set_request("granted_permissions", []),
        "request.granted_permissions must be a non-empty array",
    ),
    (
        "grants string",
        set_request("granted_permissions", "policy-read"),
        "must be a non-empty array",
    ),
    (
        "grants unique",
        set_request("granted_permissions", ["a-b", "a-b"]),
        "granted_permissions values must be unique",
    ),
    (
        "grant pattern",
        set_request("granted_permissions", ["Policy"]),
        "granted_permissions[0] must match",
    ),
    (
        "trust empty",
        set_request("allowed_trust", []),
        "request.allowed_trust must be a non-empty array",
    ),
    (
        "trust unique",
        set_request("allowed_trust", ["user-input", "user-input"]),
        "allowed_trust values must be unique",
    ),
    (
        "trust unsupported",
        set_request("allowed_trust", ["verified"]),
        "allowed_trust contains unsupported values",
    ),
]


@pytest.mark.parametrize(("mutation", "words"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_input_rules_use_the_reference_words(
    fixture_dict: dict[str, Any], mutation: Mutation, words: str
) -> None:
    assert chunk(fixture_dict, "refund-faq") is fixture_dict["chunks"][4]
    mutation(fixture_dict)
    with pytest.raises(PackError) as caught:
        build_fixture_pack(encode(fixture_dict))
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b'{"fixture_version": "a1", "fixture_version": "a2"}', "duplicate JSON key"),
        (b'{"x": NaN}', "non-finite JSON number"),
        (b"\xef\xbb\xbf{}", "byte-order mark"),
        (b"", "empty JSON text"),
        (b"[1, 2", "invalid JSON at line 1"),
        (b"[]", "root must be a JSON object"),
        (b'"\xff"', "invalid UTF-8"),
    ],
)
def test_json_level_errors(data: bytes, words: str) -> None:
    with pytest.raises(PackError, match=words):
        parse_fixture(data)


def test_pack_error_is_an_input_error() -> None:
    assert issubclass(PackError, InputError)


@pytest.mark.parametrize(
    ("chunk_id", "mutation", "reason"),
    [
        ("policy", set_chunk("required_permission", "admin-read", "policy"), "permission_denied"),
        ("task-state", set_chunk("trust", "unverified", "task-state"), "trust_denied"),
        (
            "current-input",
            set_chunk("effective_from", "2026-07-15", "current-input"),
            "not_yet_effective",
        ),
        ("policy", set_chunk("expires_on", "2026-07-14", "policy"), "expired"),
    ],
)
def test_required_chunk_failing_a_gate_fails_the_build(
    fixture_dict: dict[str, Any], chunk_id: str, mutation: Mutation, reason: str
) -> None:
    mutation(fixture_dict)
    with pytest.raises(PackError) as caught:
        build_fixture_pack(encode(fixture_dict))
    assert str(caught.value) == f"required chunk '{chunk_id}' failed gate: {reason}"


def test_lowest_failing_required_id_is_reported(fixture_dict: dict[str, Any]) -> None:
    chunk(fixture_dict, "task-state")["trust"] = "unverified"
    chunk(fixture_dict, "policy")["required_permission"] = "admin-read"
    with pytest.raises(PackError, match="required chunk 'policy' failed gate: permission_denied"):
        build_fixture_pack(encode(fixture_dict))


def test_required_over_budget_fails_the_build(fixture_dict: dict[str, Any]) -> None:
    required = sum(c["estimated_tokens"] for c in fixture_dict["chunks"] if c["required"])
    fixture_dict["request"]["pack_budget_tokens"] = required - 1
    with pytest.raises(PackError) as caught:
        build_fixture_pack(encode(fixture_dict))
    assert str(caught.value).startswith("required chunks exceed the pack budget")
    fixture_dict["request"]["pack_budget_tokens"] = required
    lines = build_fixture_pack(encode(fixture_dict)).lines
    assert lines[0] == f"budget={required} used={required} remaining=0"
