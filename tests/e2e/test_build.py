"""`ledger build`, `show`, `packs`, `export` end to end, as a user runs them.

Every command runs in a subprocess, on each backend: a real SQLite file and a
database on the throwaway PostgreSQL server, both made by `ledger init` (the real
migrations). Expected values come from SPEC's rules applied by hand to the
fixture's numbers (the arithmetic is in the comments) or from an independent
computation: digests with `rfc8785` and `hashlib`, never with the project's code.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import stat
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from tests import dbtools
from tests.conftest import FIXTURE, chunk, ledger_json, run_ledger, write_jsonl
from tests.seeded import REQUEST, SEED, trust_flags

CHUNKS = {c["id"]: c for c in SEED["chunks"]}
TEXT_FIELDS = (
    "id",
    "section",
    "source_uri",
    "source_version",
    "effective_from",
    "expires_on",
    "required_permission",
    "trust",
    "dedupe_key",
)

# SPEC "JSON shapes".
PACK_KEYS = {
    "pack",
    "entry",
    "pack_digest",
    "input_digest",
    "as_of",
    "subject",
    "budget",
    "used",
    "remaining",
    "admitted",
    "evicted",
}
ADMITTED_KEYS = {
    "id",
    "source_version",
    "section",
    "tokens",
    "required",
    "record_digest",
    "content_digest",
}
EVICTED_KEYS = {
    "id",
    "source_version",
    "reason",
    "detail",
    "tokens",
    "record_digest",
    "content_digest",
}
PACKS_ITEM_KEYS = {"pack", "entry", "pack_digest", "as_of", "subject", "budget", "used"}


# --------------------------------------------------------------------------
# helpers (independent of the project's code)
# --------------------------------------------------------------------------


def stored(rec: dict[str, Any]) -> dict[str, Any]:
    """SPEC "What is stored": text fields stripped, content exactly as given."""
    out = dict(rec)
    for key in TEXT_FIELDS:
        if isinstance(out[key], str):
            out[key] = out[key].strip()
    return out


def record_digest(rec: dict[str, Any]) -> str:
    """SHA-256 of the record's RFC 8785 canonical JSON."""
    return hashlib.sha256(rfc8785.dumps(stored(rec))).hexdigest()


def content_digest(rec: dict[str, Any]) -> str:
    return hashlib.sha256(rec["content"].encode("utf-8")).hexdigest()


def ref(rec: dict[str, Any]) -> dict[str, str]:
    """How `by` and `kept` name a version."""
    return {
        "id": rec["id"],
        "source_version": rec["source_version"],
        "record_digest": record_digest(rec),
    }


def build(db: str, *args: str) -> dict[str, Any]:
    return ledger_json("build", *args, db=db)


def head(db: str) -> str:
    return run_ledger("head", db=db, check=True).stdout.strip()


def snapshot(db: str) -> tuple[dbtools.Snapshot, str]:
    """Every row and the schema (tests/dbtools.py), and `ledger head`: what
    "unchanged" means."""
    return dbtools.snapshot(db), head(db)


def keys_sorted(value: Any) -> bool:
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(keys_sorted(v) for v in value.values())
    if isinstance(value, list):
        return all(keys_sorted(v) for v in value)
    return True


def by_id(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for i in items}


def versioned(base: str, **changes: Any) -> dict[str, Any]:
    """Another version of a fixture chunk."""
    rec = dict(CHUNKS[base])
    rec.update(changes)
    return rec


# --------------------------------------------------------------------------
# the seed-001 result from the ledger
# --------------------------------------------------------------------------

SEED_ADMITTED = ["policy", "task-state", "current-refund-policy", "refund-faq", "current-input"]
SEED_EVICTED = [
    ("forum-claim", "trust_denied"),
    ("future-refund-policy", "not_yet_effective"),
    ("legal-note", "permission_denied"),
    ("mirror-refund-policy", "duplicate"),
    ("old-refund-policy", "expired"),
    ("shipping-note", "budget"),
]


def test_seed001_result_from_the_ledger(seeded: str) -> None:
    data = build(seeded, "--as-of", "2026-07-21")

    # SPEC's three lines: budget=170 used=162 remaining=8, and the two lists.
    assert (data["budget"], data["used"], data["remaining"]) == (170, 162, 8)
    assert [a["id"] for a in data["admitted"]] == SEED_ADMITTED
    assert [(e["id"], e["reason"]) for e in data["evicted"]] == SEED_EVICTED
    # The figures agree with the fixture's own numbers: 32 + 30 + 48 + 34 + 18.
    assert sum(CHUNKS[i]["estimated_tokens"] for i in SEED_ADMITTED) == 162
    assert (data["pack"], data["entry"], data["as_of"], data["subject"]) == (
        1,
        4,
        "2026-07-21",
        "default",
    )

    for item in data["admitted"]:
        rec = CHUNKS[item["id"]]
        assert item == {
            "id": rec["id"],
            "source_version": rec["source_version"],
            "section": rec["section"],
            "tokens": rec["estimated_tokens"],
            "required": rec["required"],
            "record_digest": record_digest(rec),
            "content_digest": content_digest(rec),
        }
    # Every eviction's detail object, from SPEC's list and the fixture's fields.
    shipping = CHUNKS["shipping-note"]
    expected_detail = {
        "forum-claim": {"trust": "unverified"},
        "future-refund-policy": {"effective_from": "2026-09-01"},
        "legal-note": {"required_permission": "legal-read"},
        "mirror-refund-policy": {"kept": ref(CHUNKS["current-refund-policy"])},
        "old-refund-policy": {"expires_on": "2026-04-01"},
        # needed: its 24 tokens; remaining: 170 - 162 admitted before it = 8.
        "shipping-note": {"needed": shipping["estimated_tokens"], "remaining": 170 - 162},
    }
    for item in data["evicted"]:
        rec = CHUNKS[item["id"]]
        assert item["detail"] == expected_detail[item["id"]], item["id"]
        assert item["tokens"] == rec["estimated_tokens"]
        assert item["source_version"] == rec["source_version"]
        assert item["record_digest"] == record_digest(rec)
        assert item["content_digest"] == content_digest(rec)


def test_pack_json_shapes_build_show_and_packs(seeded: str) -> None:
    built = build(seeded, "--as-of", "2026-07-21")
    shown = ledger_json("show", "1", db=seeded)
    by_prefix = ledger_json("show", built["pack_digest"][:10], db=seeded)
    assert built == shown == by_prefix
    assert PACK_KEYS <= set(built)
    assert all(ADMITTED_KEYS <= set(a) for a in built["admitted"])
    assert all(EVICTED_KEYS <= set(e) for e in built["evicted"])
    evicted_order = [(e["id"], e["source_version"]) for e in built["evicted"]]
    assert evicted_order == sorted(evicted_order)
    assert re.fullmatch(r"[0-9a-f]{64}", built["pack_digest"])
    assert re.fullmatch(r"[0-9a-f]{64}", built["input_digest"])

    build(seeded, "--as-of", "2026-07-22", "--budget", "120")
    listing = ledger_json("packs", db=seeded)
    assert set(listing) == {"packs"}
    assert [p["pack"] for p in listing["packs"]] == [1, 2]  # oldest first
    assert all(PACKS_ITEM_KEYS <= set(p) for p in listing["packs"])
    first, second = listing["packs"]
    assert {k: first[k] for k in PACKS_ITEM_KEYS} == {k: built[k] for k in PACKS_ITEM_KEYS}
    assert (second["entry"], second["as_of"], second["budget"]) == (5, "2026-07-22", 120)

    # Keys sorted at every level, data alone on stdout.
    for args in (("show", "1"), ("packs",), ("build", "--as-of", "2026-07-21")):
        proc = run_ledger(*args, "--json", db=seeded, check=True)
        assert keys_sorted(json.loads(proc.stdout)), args


def test_identical_builds_share_the_pack_digest_not_the_number(seeded: str) -> None:
    one = build(seeded, "--as-of", "2026-07-21")
    two = build(seeded, "--as-of", "2026-07-21")
    assert (one["pack"], two["pack"]) == (1, 2)
    assert (one["entry"], two["entry"]) == (4, 5)
    assert one["pack_digest"] == two["pack_digest"]
    assert one["input_digest"] == two["input_digest"]
    other = build(seeded, "--as-of", "2026-07-21", "--budget", "171")
    assert other["pack_digest"] != one["pack_digest"]
    assert other["input_digest"] != one["input_digest"]


# --------------------------------------------------------------------------
# versions: supersession on valid time, --ledger-at on ledger time
# --------------------------------------------------------------------------

CRP_V2 = versioned(
    "current-refund-policy",
    source_version="2026-08",
    effective_from="2026-08-01",
    source_uri="internal://refund-policy/2026-08",
    estimated_tokens=40,
    content="Summary of the refund policy in force from August 2026.",
)


def test_later_version_supersedes_from_its_date_only(seeded: str, tmp_path: Path) -> None:
    assert head(seeded).startswith("3:")
    run_ledger("ingest", str(write_jsonl(tmp_path / "v2.jsonl", [CRP_V2])), db=seeded, check=True)
    v1 = CHUNKS["current-refund-policy"]

    # Before 2026-08-01 the new version is not yet effective; the old one is in.
    early = build(seeded, "--as-of", "2026-07-31")
    assert by_id(early["admitted"])["current-refund-policy"]["source_version"] == "2026-04"
    old_side = [e for e in early["evicted"] if e["id"] == "current-refund-policy"]
    assert old_side == [
        {
            "id": "current-refund-policy",
            "source_version": "2026-08",
            "reason": "not_yet_effective",
            "detail": {"effective_from": "2026-08-01"},
            "tokens": 40,
            "record_digest": record_digest(CRP_V2),
            "content_digest": content_digest(CRP_V2),
        }
    ]
    assert early["used"] == 162

    # From 2026-08-01 (inclusive) the new version supersedes the old one.
    late = build(seeded, "--as-of", "2026-08-01")
    admitted = by_id(late["admitted"])
    assert admitted["current-refund-policy"]["source_version"] == "2026-08"
    assert admitted["current-refund-policy"]["record_digest"] == record_digest(CRP_V2)
    superseded = [e for e in late["evicted"] if e["id"] == "current-refund-policy"]
    assert [(e["source_version"], e["reason"], e["detail"]) for e in superseded] == [
        ("2026-04", "superseded", {"by": ref(CRP_V2)})
    ]
    assert superseded[0]["record_digest"] == record_digest(v1)
    # The dedupe group now keeps the new version.
    mirror = by_id(late["evicted"])["mirror-refund-policy"]
    assert (mirror["reason"], mirror["detail"]) == ("duplicate", {"kept": ref(CRP_V2)})
    # Required 80, leaving 90: crp 2026-08 (40) -> 50, refund-faq (34) -> 16,
    # shipping-note (24) does not fit: budget {24, 16}.
    assert late["used"] == 80 + 40 + 34
    assert by_id(late["evicted"])["shipping-note"]["detail"] == {"needed": 24, "remaining": 16}

    # The ledger as it stood at entry 3 (before the new version's ingest at 4).
    past = build(seeded, "--as-of", "2026-08-15", "--ledger-at", "3")
    everything = past["admitted"] + past["evicted"]
    assert [
        (i["id"], i["source_version"]) for i in everything if i["id"] == "current-refund-policy"
    ] == [("current-refund-policy", "2026-04")]
    assert by_id(past["admitted"])["current-refund-policy"]["source_version"] == "2026-04"
    assert len(everything) == len(CHUNKS) == past["candidates"]
    assert past["ledger_mark"] == 3
    assert len(late["admitted"]) + len(late["evicted"]) == len(CHUNKS) + 1


def test_required_chunk_is_decided_per_id_across_versions(new_db: Any, tmp_path: Path) -> None:
    """An old required version that expired is an ordinary eviction when a newer
    version of the id passes; the build fails only when no version passes."""
    db = new_db()
    rules_v1 = chunk(
        id="house-rules",
        section="policy",
        source_version="1",
        required=True,
        effective_from="2026-01-01",
        expires_on="2026-07-01",
        dedupe_key="house-rules",
        required_permission="policy-read",
        trust="application-policy",
        content="Rules v1.",
    )
    rules_v2 = dict(
        rules_v1,
        source_version="2",
        effective_from="2026-07-01",
        expires_on=None,
        content="Rules v2.",
    )
    extra = chunk(id="note", effective_from="2025-06-01")
    run_ledger(
        "ingest",
        str(write_jsonl(tmp_path / "rules.jsonl", [rules_v1, rules_v2, extra])),
        db=db,
        check=True,
    )
    run_ledger("subject", "grant", "default", "policy-read", "public-read", db=db, check=True)
    run_ledger(
        "policy",
        "set",
        "--allow-trust",
        "application-policy",
        "--allow-trust",
        "approved-source",
        "--budget",
        "100",
        db=db,
        check=True,
    )

    july = build(db, "--as-of", "2026-07-21")  # v1 expired on 2026-07-01
    assert [(a["id"], a["source_version"]) for a in july["admitted"]] == [
        ("house-rules", "2"),
        ("note", "1"),
    ]
    assert [(e["id"], e["source_version"], e["reason"]) for e in july["evicted"]] == [
        ("house-rules", "1", "expired")
    ]
    june = build(db, "--as-of", "2026-06-15")  # v2 starts on 2026-07-01
    assert [(a["id"], a["source_version"]) for a in june["admitted"]] == [
        ("house-rules", "1"),
        ("note", "1"),
    ]
    assert [(e["id"], e["source_version"], e["reason"]) for e in june["evicted"]] == [
        ("house-rules", "2", "not_yet_effective")
    ]
    before = snapshot(db)
    proc = run_ledger("build", "--as-of", "2025-12-01", db=db)  # no version yet
    assert proc.returncode == 1
    line = _one_error_line(proc)
    assert "'house-rules'" in line and "not_yet_effective" in line
    assert snapshot(db) == before


# --------------------------------------------------------------------------
# grants are history: revoking changes later packs, not earlier ones
# --------------------------------------------------------------------------


def test_revoke_changes_later_packs_not_earlier_ones(seeded: str) -> None:
    run_ledger("subject", "grant", "default", "legal-read", db=seeded, check=True)  # entry 4
    before = build(seeded, "--as-of", "2026-07-21")  # pack 1, entry 5
    granted = sorted(REQUEST["granted_permissions"] + ["legal-read"])
    assert before["grants"] == granted
    # Required 80, leaving 90: crp (48) -> 42, legal-note (28) -> 14,
    # refund-faq (34) and shipping-note (24) do not fit.
    assert by_id(before["admitted"]).keys() == {
        "policy",
        "task-state",
        "current-refund-policy",
        "legal-note",
        "current-input",
    }
    assert before["used"] == 80 + 48 + 28

    revoke = run_ledger("subject", "revoke", "default", "legal-read", db=seeded, check=True)
    assert "entry 6" in revoke.stdout
    after = build(seeded, "--as-of", "2026-07-21")  # pack 2
    assert after["grants"] == sorted(REQUEST["granted_permissions"])
    assert by_id(after["evicted"])["legal-note"]["reason"] == "permission_denied"
    assert [a["id"] for a in after["admitted"]] == SEED_ADMITTED

    # The old pack keeps what it was built with.
    old = ledger_json("show", "1", db=seeded)
    assert old == before
    assert old["grants"] == granted
    for pack in ("1", "2"):
        proc = run_ledger("replay", pack, db=seeded)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "reproduces" in proc.stdout
    shown = ledger_json("subject", "show", "default", db=seeded)
    assert "legal-read" not in shown["permissions"]
    history = [(h["entry"], h["action"]) for h in shown["history"]]
    assert history == [(2, "grant"), (4, "grant"), (6, "revoke")]
    assert run_ledger("verify", db=seeded).returncode == 0


# --------------------------------------------------------------------------
# failures record nothing
# --------------------------------------------------------------------------


def _one_error_line(proc: Any) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    return lines[0]


GATE_PROBES = {
    "permission_denied": {"required_permission": "secret-read"},
    "trust_denied": {"trust": "unverified"},
    "not_yet_effective": {"effective_from": "2026-07-22"},
    # As of 2026-07-21, a chunk expiring that day is expired (on or after).
    "expired": {"effective_from": "2026-01-01", "expires_on": "2026-07-21"},
}


@pytest.mark.parametrize("gate", list(GATE_PROBES))
def test_required_chunk_failing_a_gate_fails_the_build(
    seeded: str, tmp_path: Path, gate: str
) -> None:
    fields = {
        "id": "must-have",
        "section": "state",
        "required": True,
        "dedupe_key": "must-have",
        "required_permission": "state-read",
        "trust": "confirmed-state",
        **GATE_PROBES[gate],
    }
    probe = chunk(**fields)
    run_ledger("ingest", str(write_jsonl(tmp_path / "probe.jsonl", [probe])), db=seeded, check=True)
    before = snapshot(seeded)
    proc = run_ledger("build", "--as-of", "2026-07-21", db=seeded)
    assert proc.returncode == 1
    line = _one_error_line(proc)
    assert "'must-have'" in line and gate in line, line
    assert snapshot(seeded) == before


def test_required_chunks_over_budget_fail_and_exactly_fitting_pass(seeded: str) -> None:
    required = sum(c["estimated_tokens"] for c in SEED["chunks"] if c["required"])
    assert required == 80  # policy 32 + task-state 30 + current-input 18
    before = snapshot(seeded)
    proc = run_ledger("build", "--as-of", "2026-07-21", "--budget", str(required - 1), db=seeded)
    assert proc.returncode == 1
    line = _one_error_line(proc)
    assert "required" in line and "budget" in line
    assert snapshot(seeded) == before
    exact = build(seeded, "--as-of", "2026-07-21", "--budget", str(required))
    assert (exact["used"], exact["remaining"]) == (80, 0)
    reasons = {e["id"]: e["reason"] for e in exact["evicted"]}
    assert reasons["current-refund-policy"] == reasons["refund-faq"] == "budget"


def test_build_without_a_policy_records_nothing(new_db: Any) -> None:
    db = new_db()
    run_ledger("ingest", str(FIXTURE), db=db, check=True)
    run_ledger("subject", "grant", "default", *REQUEST["granted_permissions"], db=db, check=True)
    before = snapshot(db)
    proc = run_ledger("build", "--as-of", "2026-07-21", db=db)
    assert proc.returncode == 1
    assert "policy" in _one_error_line(proc)
    assert snapshot(db) == before


def test_build_on_an_empty_ledger_records_nothing(new_db: Any) -> None:
    db = new_db()
    before = snapshot(db)
    proc = run_ledger("build", "--as-of", "2026-07-21", db=db)
    assert proc.returncode == 1
    _one_error_line(proc)
    assert snapshot(db) == before


@pytest.mark.parametrize(
    "args",
    [
        ("--as-of", "2026-02-30"),
        ("--as-of", "2026-7-21"),
        ("--as-of", "20260721"),
        ("--as-of", "2026-07-21T00:00"),
        ("--as-of", " 2026-07-21"),
        ("--as-of", ""),
        ("--as-of", "2026-07-21", "--ledger-at", "0"),
        ("--as-of", "2026-07-21", "--ledger-at", "4"),
        ("--as-of", "2026-07-21", "--ledger-at", "-1"),
        ("--as-of", "2026-07-21", "--subject", "bad subject"),
        ("--as-of", "2026-07-21", "--subject", "semi;colon"),
        ("--as-of", "2026-07-21", "--subject", "ünïcode"),
        ("--as-of", "2026-07-21", "--subject", ""),
        ("--as-of", "2026-07-21", "--subject", "-dash-first"),
        ("--as-of", "2026-07-21", "--budget", "0"),
    ],
    ids=lambda a: " ".join(a),
)
def test_invalid_build_arguments_record_nothing(seeded: str, args: tuple[str, ...]) -> None:
    # `seeded` holds entries 1-3, so --ledger-at 4 is past the end.
    before = snapshot(seeded)
    proc = run_ledger("build", *args, db=seeded)
    assert proc.returncode == 1, proc.stderr
    _one_error_line(proc)
    assert snapshot(seeded) == before


def test_batch_without_keep_going_is_all_or_nothing(seeded: str, tmp_path: Path) -> None:
    batch = tmp_path / "nightly.jsonl"
    write_jsonl(
        batch,
        [
            {"subject": "default", "as_of": "2026-07-21"},
            {"subject": "default", "as_of": "2026-13-01"},
            {"subject": "default", "as_of": "2026-07-21", "budget": 200},
        ],
    )
    before = snapshot(seeded)
    proc = run_ledger("build", "--batch", str(batch), db=seeded)
    assert proc.returncode == 1
    line = _one_error_line(proc)
    assert f"{batch}:2" in line
    assert snapshot(seeded) == before


def test_batch_with_keep_going_records_the_good_lines(seeded: str, tmp_path: Path) -> None:
    batch = tmp_path / "nightly.jsonl"
    write_jsonl(
        batch,
        [
            {"subject": "default", "as_of": "2026-07-21"},
            {"subject": "default", "as_of": "2026-13-01"},
            {"subject": "default", "as_of": "2026-07-21", "budget": 200},
            {"subject": "nobody", "as_of": "2026-07-21"},  # holds nothing: required chunks fail
            {"subject": "default", "as_of": "2026-07-21", "bogus": 1},
        ],
    )
    proc = run_ledger("build", "--batch", str(batch), "--keep-going", "--json", db=seeded)
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert [f["line"] for f in out["failed"]] == [f"{batch}:2", f"{batch}:4", f"{batch}:5"]
    assert "permission_denied" in out["failed"][1]["error"]
    for n in (2, 4, 5):
        assert f"{batch}:{n}" in proc.stderr
    assert [(p["pack"], p["budget"]) for p in out["packs"]] == [(1, 170), (2, 200)]
    listing = ledger_json("packs", db=seeded)["packs"]
    assert [(p["pack"], p["subject"], p["as_of"], p["budget"]) for p in listing] == [
        (1, "default", "2026-07-21", 170),
        (2, "default", "2026-07-21", 200),
    ]
    # Each recorded pack is whole: it verifies and replays.
    assert run_ledger("verify", db=seeded).returncode == 0
    assert run_ledger("replay", "2", db=seeded).returncode == 0
    # A batch pack equals a single build of the same line.
    single = build(seeded, "--as-of", "2026-07-21", "--budget", "200")
    assert single["pack_digest"] == listing[1]["pack_digest"]


@pytest.mark.parametrize(
    "extra",
    [("--budget", "300"), ("--subject", "alice"), ("--as-of", "2026-07-21"), ("--ledger-at", "2")],
    ids=lambda a: a[0],
)
def test_batch_refuses_options_its_lines_would_override(
    seeded: str, tmp_path: Path, extra: tuple[str, str]
) -> None:
    batch = write_jsonl(tmp_path / "b.jsonl", [{"subject": "default", "as_of": "2026-07-21"}])
    before = snapshot(seeded)
    proc = run_ledger("build", "--batch", str(batch), *extra, db=seeded)
    assert proc.returncode == 2
    assert extra[0] in proc.stderr
    assert snapshot(seeded) == before


# --------------------------------------------------------------------------
# order independence
# --------------------------------------------------------------------------

EXTRA = [
    CRP_V2,
    versioned(
        "refund-faq",
        source_version="2026-07",
        effective_from="2026-07-01",
        estimated_tokens=30,
        content="Refund questions, July 2026 edition.",
    ),
    versioned(
        "old-refund-policy",
        source_version="2024-06",
        effective_from="2024-06-01",
        expires_on="2025-01-01",
        content="An even older refund policy.",
    ),
    chunk(
        id="warranty-note",
        source_version="a",
        effective_from="2026-05-01",
        estimated_tokens=12,
        priority=58,
        dedupe_key="warranty",
        content="Warranty terms, short.",
    ),
    chunk(
        id="warranty-copy",
        source_version="a",
        effective_from="2026-05-01",
        estimated_tokens=12,
        priority=58,
        dedupe_key="warranty",
        content="Warranty terms, copied.",
    ),
]
ALL_RECORDS = SEED["chunks"] + EXTRA


def _finish_and_build(db: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    run_ledger("subject", "grant", "default", *REQUEST["granted_permissions"], db=db, check=True)
    run_ledger(
        "policy",
        "set",
        *trust_flags(REQUEST["allowed_trust"]),
        "--budget",
        "170",
        db=db,
        check=True,
    )
    out = []
    for as_of in ("2026-07-21", "2026-08-15", "2026-09-15"):
        data = build(db, "--as-of", as_of)
        out.append(
            (
                data["pack_digest"],
                data["input_digest"],
                [(a["id"], a["source_version"]) for a in data["admitted"]],
            )
        )
    return out


def test_pack_digest_does_not_depend_on_ingest_order_or_batching(
    new_db: Any, tmp_path: Path
) -> None:
    results = []

    db = new_db("one-file")
    run_ledger("ingest", str(write_jsonl(tmp_path / "all.jsonl", ALL_RECORDS)), db=db, check=True)
    results.append(_finish_and_build(db))

    for seed in (1, 2):
        shuffled = ALL_RECORDS[:]
        random.Random(seed).shuffle(shuffled)
        db = new_db(f"shuffled-{seed}")
        path = tmp_path / f"shuffled-{seed}.json"
        path.write_text(json.dumps(shuffled), encoding="utf-8")  # a JSON array this time
        run_ledger("ingest", str(path), db=db, check=True)
        results.append(_finish_and_build(db))

    # Three files in one run, and three separate runs, in shuffled order.
    shuffled = ALL_RECORDS[:]
    random.Random(3).shuffle(shuffled)
    parts = [write_jsonl(tmp_path / f"part{i}.jsonl", shuffled[i::3]) for i in range(3)]
    db = new_db("three-files")
    run_ledger("ingest", *map(str, parts), db=db, check=True)
    results.append(_finish_and_build(db))
    db = new_db("three-runs")
    for part in reversed(parts):
        run_ledger("ingest", str(part), db=db, check=True)
    results.append(_finish_and_build(db))
    # Every version once more: re-ingesting unchanged records changes nothing.
    run_ledger("ingest", str(tmp_path / "all.jsonl"), db=db, check=True)
    results.append(_finish_and_build(db))

    assert all(r == results[0] for r in results), results
    digests = {r[0] for r in results[0]}
    assert len(digests) == 3  # the three dates really are different packs
    # Sanity on content: as of 2026-09-15 the newest versions are in.
    admitted_sept = dict(results[0][2][2])
    assert admitted_sept["current-refund-policy"] == "2026-08"
    assert admitted_sept["future-refund-policy"] == "2026-09"


def test_versions_tied_on_effective_from_in_one_ingest_do_not_depend_on_line_order(
    new_db: Any, tmp_path: Path
) -> None:
    one = chunk(id="alpha", source_version="1", content="first text")
    two = chunk(id="alpha", source_version="2", content="second text")
    outcomes = []
    for name, records in (("ab", [one, two]), ("ba", [two, one])):
        db = new_db(name)
        run_ledger(
            "ingest", str(write_jsonl(tmp_path / f"{name}.jsonl", records)), db=db, check=True
        )
        run_ledger("subject", "grant", "default", "public-read", db=db, check=True)
        run_ledger(
            "policy",
            "set",
            "--allow-trust",
            "approved-source",
            "--budget",
            "100",
            db=db,
            check=True,
        )
        data = build(db, "--as-of", "2026-07-01")
        outcomes.append(
            (
                data["pack_digest"],
                data["admitted"][0]["source_version"],
                [(e["source_version"], e["reason"]) for e in data["evicted"]],
            )
        )
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][2][0][1] == "superseded"


def test_versions_tied_on_effective_from_later_ingest_wins(new_db: Any, tmp_path: Path) -> None:
    one = chunk(id="alpha", source_version="1", content="first text")
    two = chunk(id="alpha", source_version="2", content="second text")
    for name, order in (("12", [one, two]), ("21", [two, one])):
        db = new_db(name)
        for i, rec in enumerate(order):
            run_ledger(
                "ingest", str(write_jsonl(tmp_path / f"{name}-{i}.jsonl", [rec])), db=db, check=True
            )
        run_ledger("subject", "grant", "default", "public-read", db=db, check=True)
        run_ledger(
            "policy",
            "set",
            "--allow-trust",
            "approved-source",
            "--budget",
            "100",
            db=db,
            check=True,
        )
        data = build(db, "--as-of", "2026-07-01")
        assert [a["source_version"] for a in data["admitted"]] == [order[-1]["source_version"]]
        (evicted,) = data["evicted"]
        assert evicted["reason"] == "superseded"
        assert evicted["detail"] == {"by": ref(order[-1])}


# --------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------


@pytest.fixture
def seed_pack(seeded: str) -> str:
    build(seeded, "--as-of", "2026-07-21")
    return seeded


def test_export_json_manifest_has_provenance_and_no_bodies(seed_pack: str) -> None:
    proc = run_ledger("export", "1", "--format", "json", db=seed_pack, check=True)
    manifest = json.loads(proc.stdout)
    assert PACK_KEYS <= set(manifest)
    assert [a["id"] for a in manifest["admitted"]] == SEED_ADMITTED
    for item in manifest["admitted"]:
        rec = CHUNKS[item["id"]]
        for field in (
            "source_uri",
            "source_version",
            "effective_from",
            "expires_on",
            "trust",
            "section",
        ):
            assert item[field] == rec[field], (item["id"], field)
        assert item["record_digest"] == record_digest(rec)
        assert item["content_digest"] == content_digest(rec)
        assert "content" not in item
    for rec in SEED["chunks"]:
        assert rec["content"] not in proc.stdout

    full = json.loads(
        run_ledger(
            "export", "1", "--format", "json", "--with-content", db=seed_pack, check=True
        ).stdout
    )
    assert [a["content"] for a in full["admitted"]] == [CHUNKS[i]["content"] for i in SEED_ADMITTED]
    assert all("content" not in e for e in full["evicted"])
    assert full["pack_digest"] == manifest["pack_digest"]


def _markdown_chunks(text: str) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """The `## section` headings in order, and per `### id` its section and block."""
    sections: list[str] = []
    blocks: dict[str, tuple[str, list[str]]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append(line[3:])
            current = None
        elif line.startswith("### "):
            current = []
            blocks[line[4:]] = (sections[-1], current)
        elif current is not None:
            current.append(line)
    return sections, {k: (sec, "\n".join(lines)) for k, (sec, lines) in blocks.items()}


def test_export_markdown_sections_in_order_with_source_and_version(seed_pack: str) -> None:
    text = run_ledger("export", "1", "--format", "markdown", db=seed_pack, check=True).stdout
    sections, blocks = _markdown_chunks(text)
    assert sections == ["policy", "state", "evidence", "current-input"]
    assert list(blocks) == SEED_ADMITTED  # admitted only, in output order
    for rec_id, (section, block) in blocks.items():
        rec = CHUNKS[rec_id]
        assert section == rec["section"]
        assert rec["source_uri"] in block and rec["source_version"] in block
    for rec in SEED["chunks"]:
        assert rec["content"] not in text

    with_bodies = run_ledger(
        "export", "1", "--format", "markdown", "--with-content", db=seed_pack, check=True
    ).stdout
    _sections, blocks = _markdown_chunks(with_bodies)
    for rec_id, (_section, block) in blocks.items():
        assert CHUNKS[rec_id]["content"] in block
    for rec_id, _reason in SEED_EVICTED:
        assert CHUNKS[rec_id]["content"] not in with_bodies


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_export_to_a_file_is_owner_only(seed_pack: str, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"context.{fmt}"
    target.write_text("old, world-readable\n", encoding="utf-8")
    os.chmod(target, 0o644)
    proc = run_ledger(
        "export", "1", "--format", fmt, "--with-content", "-o", str(target), db=seed_pack
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert str(target.resolve()) in proc.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    expected = run_ledger(
        "export", "1", "--format", fmt, "--with-content", db=seed_pack, check=True
    ).stdout
    assert target.read_text(encoding="utf-8") == expected
    fresh = tmp_path / f"new.{fmt}"
    run_ledger("export", "1", "--format", fmt, "-o", str(fresh), db=seed_pack, check=True)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
