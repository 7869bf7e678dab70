"""The audit answers end to end: why-evicted (with its admission hints), diff, replay.

One history is built through the CLI on each backend (a SQLite file and a
database on the throwaway PostgreSQL server; the module runs once per backend)
and only read by most tests:

    entry  1  ingest the seed-001 fixture
           2  grant default policy-read, state-read, user-input, public-read
           3  policy: the fixture's four trust labels, budget 170
           4  pack 1  as of 2026-07-21
           5  ingest current-refund-policy 2026-08 (effective 2026-08-01, 40 tokens)
           6  grant default legal-read
           7  pack 2  as of 2026-07-21
           8  policy: budget 200
           9  pack 3  as of 2026-09-15
          10  pack 4  as of 2026-09-15 --budget 150
          11  revoke default legal-read
          12  ingest late-note (new chunk, 10 tokens, priority 40)
          13  pack 5  as of 2026-09-15
          14  pack 6  as of 2026-09-15 --ledger-at 11 (before late-note)
          15  policy: also allow unverified
          16  pack 7  as of 2026-09-15
          17  ingest after-note (no pack has seen it)

Expected answers are SPEC's rules applied by hand to the fixture's numbers; the
arithmetic is written next to each one. Required chunks always cost 80
(policy 32 + task-state 30 + current-input 18).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import dbtools
from tests.conftest import chunk, ledger_json, run_ledger, write_jsonl
from tests.e2e.test_build import (
    CHUNKS,
    CRP_V2,
    build,
    content_digest,
    record_digest,
    ref,
)
from tests.seeded import REQUEST, seed_ledger, trust_flags

LATE_NOTE = chunk(
    id="late-note",
    source_version="1",
    effective_from="2026-01-01",
    estimated_tokens=10,
    priority=40,
    dedupe_key="late-note",
    content="A note ingested late.",
)
AFTER_NOTE = chunk(
    id="after-note",
    source_version="1",
    effective_from="2026-01-01",
    estimated_tokens=5,
    priority=10,
    dedupe_key="after-note",
    content="A note no pack has seen.",
)
CRP_V1 = CHUNKS["current-refund-policy"]
REASONS = {
    "permission_denied",
    "trust_denied",
    "not_yet_effective",
    "expired",
    "superseded",
    "duplicate",
    "budget",
}


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory, module_backend: str) -> Iterator[str]:
    """The ledger of the module docstring, on this module run's backend. Tests only read it."""
    folder = tmp_path_factory.mktemp("history")
    db = dbtools.new_ledger(folder, module_backend)

    def ok(*args: str) -> None:
        run_ledger(*args, db=db, check=True)

    seed_ledger(db)  # 1-3, 4: pack 1
    ok("ingest", str(write_jsonl(folder / "v2.jsonl", [CRP_V2])))  # 5
    ok("subject", "grant", "default", "legal-read")  # 6
    ok("build", "--as-of", "2026-07-21")  # 7: pack 2
    ok("policy", "set", "--budget", "200")  # 8
    ok("build", "--as-of", "2026-09-15")  # 9: pack 3
    ok("build", "--as-of", "2026-09-15", "--budget", "150")  # 10: pack 4
    ok("subject", "revoke", "default", "legal-read")  # 11
    ok("ingest", str(write_jsonl(folder / "late.jsonl", [LATE_NOTE])))  # 12
    ok("build", "--as-of", "2026-09-15")  # 13: pack 5
    ok("build", "--as-of", "2026-09-15", "--ledger-at", "11")  # 14: pack 6
    ok("policy", "set", *trust_flags(REQUEST["allowed_trust"] + ["unverified"]))  # 15
    ok("build", "--as-of", "2026-09-15")  # 16: pack 7
    ok("ingest", str(write_jsonl(folder / "after.jsonl", [AFTER_NOTE])))  # 17
    assert run_ledger("head", db=db, check=True).stdout.startswith("17:")
    yield db
    dbtools.drop(db)


def show(db: str, pack: int) -> dict[str, Any]:
    return ledger_json("show", str(pack), db=db)


def why(db: str, *args: str) -> dict[str, Any]:
    return ledger_json("why-evicted", *args, db=db)


def decisions(version: dict[str, Any]) -> list[tuple[int, bool, str | None]]:
    return [(d["pack"], d["admitted"], d["reason"]) for d in version["decisions"]]


# --------------------------------------------------------------------------
# the packs of the history (the ground the other answers stand on)
# --------------------------------------------------------------------------

# pack: (budget, used, admitted ids in output order)
PACKS = {
    1: (170, 162, ["policy", "task-state", "current-refund-policy", "refund-faq", "current-input"]),
    # 90 optional: crp 48 -> 42, legal-note 28 -> 14; refund-faq 34, shipping 24 out.
    2: (170, 156, ["policy", "task-state", "current-refund-policy", "legal-note", "current-input"]),
    # 120: future 46 -> 74, crp 2026-08 40 -> 34, legal 28 -> 6; faq, shipping out.
    3: (
        200,
        194,
        [
            "policy",
            "task-state",
            "future-refund-policy",
            "current-refund-policy",
            "legal-note",
            "current-input",
        ],
    ),
    # 70: future 46 -> 24; crp 40, legal 28, faq 34 out; shipping 24 -> 0.
    4: (
        150,
        150,
        ["policy", "task-state", "future-refund-policy", "shipping-note", "current-input"],
    ),
    # legal revoked. 120: future -> 74, crp -> 34, faq 34 -> 0; shipping, late-note out.
    5: (
        200,
        200,
        [
            "policy",
            "task-state",
            "future-refund-policy",
            "current-refund-policy",
            "refund-faq",
            "current-input",
        ],
    ),
    6: (
        200,
        200,
        [
            "policy",
            "task-state",
            "future-refund-policy",
            "current-refund-policy",
            "refund-faq",
            "current-input",
        ],
    ),
    # unverified allowed. 120: future -> 74, crp -> 34, forum 25 -> 9; faq, shipping, late out.
    7: (
        200,
        191,
        [
            "policy",
            "task-state",
            "future-refund-policy",
            "current-refund-policy",
            "forum-claim",
            "current-input",
        ],
    ),
}


def test_history_packs_are_as_the_rules_say(history: str) -> None:
    seen_reasons: set[str] = set()
    for n, (budget, used, admitted) in PACKS.items():
        data = show(history, n)
        got = (data["budget"], data["used"], [a["id"] for a in data["admitted"]])
        assert got == (budget, used, admitted), n
        seen_reasons |= {e["reason"] for e in data["evicted"]}
    assert seen_reasons == REASONS  # every reason code appears somewhere
    assert [show(history, n)["entry"] for n in PACKS] == [4, 7, 9, 10, 13, 14, 16]
    assert show(history, 6)["ledger_mark"] == 11
    assert "late-note" not in {i["id"] for i in show(history, 6)["evicted"]}


def test_every_pack_of_the_history_replays(history: str) -> None:
    for n in PACKS:
        proc = run_ledger("replay", str(n), "--json", db=history)
        assert proc.returncode == 0, proc.stdout
        out = json.loads(proc.stdout)
        assert out["identical"] is True
        assert (
            out["recorded_pack_digest"]
            == out["replayed_pack_digest"]
            == show(history, n)["pack_digest"]
        )
        assert out["first_difference"] is None
    assert run_ledger("verify", db=history).returncode == 0


# --------------------------------------------------------------------------
# why-evicted
# --------------------------------------------------------------------------


def test_why_evicted_lists_every_pack_newest_first_with_details(history: str) -> None:
    result = why(history, "shipping-note")
    assert result["ref"] == "shipping-note"
    (version,) = result["versions"]
    shipping = CHUNKS["shipping-note"]
    assert {k: version[k] for k in ("id", "source_version", "content_digest", "record_digest")} == {
        "id": "shipping-note",
        "source_version": shipping["source_version"],
        "content_digest": content_digest(shipping),
        "record_digest": record_digest(shipping),
    }
    assert decisions(version) == [
        (7, False, "budget"),
        (6, False, "budget"),
        (5, False, "budget"),
        (4, True, None),
        (3, False, "budget"),
        (2, False, "budget"),
        (1, False, "budget"),
    ]
    # remaining = budget - what was admitted before it (see PACKS).
    remaining = {7: 9, 6: 0, 5: 0, 3: 6, 2: 14, 1: 8}
    for d in version["decisions"]:
        if d["admitted"]:
            assert d["detail"] is None
        else:
            assert d["detail"] == {"needed": 24, "remaining": remaining[d["pack"]]}, d["pack"]
        assert {"pack", "pack_digest", "as_of", "subject", "admitted", "reason", "detail"} <= set(d)
        assert d["pack_digest"] == show(history, d["pack"])["pack_digest"]
        assert d["subject"] == "default"
    # The hint comes with the newest eviction only (by default).
    hinted = [d["pack"] for d in version["decisions"] if "would_admit" in d]
    assert hinted == [7]
    hint = version["decisions"][0]["would_admit"]
    # Pack 7: 24 needed, 9 remaining -> 15 more, budget 215. Ahead of it in
    # preference order and admitted: future (99), crp 2026-08 (95), forum (70).
    assert hint["admits"] is True
    assert hint["steps"] == [
        {
            "kind": "budget",
            "budget": 215,
            "extra": 15,
            "displaced_by": [
                {"id": "future-refund-policy", "source_version": "2026-09"},
                {"id": "current-refund-policy", "source_version": "2026-08"},
                {"id": "forum-claim", "source_version": "post-1042"},
            ],
        }
    ]


def test_why_evicted_covers_every_version_of_an_id(history: str) -> None:
    result = why(history, "current-refund-policy")
    assert [(v["source_version"], v["record_digest"]) for v in result["versions"]] == [
        ("2026-04", record_digest(CRP_V1)),
        ("2026-08", record_digest(CRP_V2)),
    ]
    old, new = result["versions"]
    assert decisions(old) == [
        (7, False, "superseded"),
        (6, False, "superseded"),
        (5, False, "superseded"),
        (4, False, "superseded"),
        (3, False, "superseded"),
        (2, True, None),
        (1, True, None),
    ]
    assert all(d["detail"] == {"by": ref(CRP_V2)} for d in old["decisions"] if not d["admitted"])
    # Pack 1 ran before the new version existed: it is not among its decisions.
    assert decisions(new) == [
        (7, True, None),
        (6, True, None),
        (5, True, None),
        (4, False, "budget"),
        (3, True, None),
        (2, False, "not_yet_effective"),
    ]
    assert new["decisions"][-1]["detail"] == {"effective_from": "2026-08-01"}
    # For the superseded version: the winner, and the last day before it took effect.
    assert old["decisions"][0]["would_admit"] == {
        "target": ref(CRP_V1),
        "steps": [{"kind": "superseded_by", "by": ref(CRP_V2), "as_of": "2026-07-31"}],
        "admits": True,
    }


def test_why_evicted_hint_for_a_revoked_permission(history: str) -> None:
    (legal,) = why(history, "legal-note")["versions"]
    assert decisions(legal) == [
        (7, False, "permission_denied"),
        (6, False, "permission_denied"),
        (5, False, "permission_denied"),
        (4, False, "budget"),
        (3, True, None),
        (2, True, None),
        (1, False, "permission_denied"),
    ]
    assert legal["decisions"][0]["detail"] == {"required_permission": "legal-read"}
    # Pack 7 with legal-read: 120 optional: future -> 74, crp -> 34, legal 28 -> 6.
    assert legal["decisions"][0]["would_admit"]["steps"] == [
        {"kind": "grant", "permission": "legal-read"}
    ]
    assert legal["decisions"][0]["would_admit"]["admits"] is True


def test_why_evicted_pack_option_and_hints_choice(history: str) -> None:
    (only_4,) = why(history, "shipping-note", "--pack", "4")["versions"]
    assert decisions(only_4) == [(4, True, None)]
    (only_1,) = why(history, "shipping-note", "--pack", show(history, 1)["pack_digest"][:12])[
        "versions"
    ]
    assert decisions(only_1) == [(1, False, "budget")]
    # Pack 1: 24 needed, 8 left: 16 more (186); ahead: crp 2026-04 (95), refund-faq (60).
    assert only_1["decisions"][0]["would_admit"]["steps"] == [
        {
            "kind": "budget",
            "budget": 186,
            "extra": 16,
            "displaced_by": [
                {"id": "current-refund-policy", "source_version": "2026-04"},
                {"id": "refund-faq", "source_version": "2026-06"},
            ],
        }
    ]
    (every,) = why(history, "shipping-note", "--hints", "all")["versions"]
    assert [d["pack"] for d in every["decisions"] if "would_admit" in d] == [7, 6, 5, 3, 2, 1]
    (none,) = why(history, "shipping-note", "--hints", "none")["versions"]
    assert not any("would_admit" in d for d in none["decisions"])
    # A version the given pack did not consider.
    (late,) = why(history, "late-note", "--pack", "1")["versions"]
    assert late["decisions"] == []
    assert "pack 1" in late["not_considered"]


def test_why_evicted_version_ingested_after_the_newest_pack(history: str) -> None:
    (after,) = why(history, "after-note")["versions"]
    assert after["decisions"] == []
    # Ingested at entry 17; the newest pack (7) saw the ledger up to entry 15.
    assert "17" in after["not_considered"] and "pack" in after["not_considered"]
    assert "build" in after["not_considered"]
    plain = run_ledger("why-evicted", "after-note", db=history, check=True).stdout
    assert "never considered" in plain and "17" in plain


def test_why_evicted_plain_output_leads_with_the_answer(history: str) -> None:
    plain = run_ledger("why-evicted", "legal-note", db=history, check=True).stdout
    first = plain.splitlines()[0]
    assert "legal-note" in first and "pack 7" in first and "permission_denied" in first
    assert "legal-read" in plain and "grant" in plain


# REF forms -----------------------------------------------------------------


def test_why_evicted_ref_forms(history: str) -> None:
    legal = CHUNKS["legal-note"]
    by_id = why(history, "legal-note")
    forms = {
        "content digest": content_digest(legal),
        "record digest": record_digest(legal),
        "record prefix": record_digest(legal)[:8],
        "content prefix": content_digest(legal)[:10],
        "upper-case prefix": record_digest(legal)[:12].upper(),
    }
    for name, form in forms.items():
        result = why(history, form)
        assert result["ref"] == form, name
        assert result["versions"] == by_id["versions"], name
    # Every digest in the ledger, to be sure the prefixes above are unique.
    all_digests = [
        d
        for rec in list(CHUNKS.values()) + [CRP_V2, LATE_NOTE, AFTER_NOTE]
        for d in (record_digest(rec), content_digest(rec))
    ]
    assert sum(d.startswith(record_digest(legal)[:8]) for d in all_digests) == 1


@pytest.mark.parametrize(
    "ref_text", ["no-such-chunk", "cafe", "deadbeef00", "0" * 64, "Not An Id!"]
)
def test_why_evicted_no_match_exits_3(history: str, ref_text: str) -> None:
    all_digests = [
        d
        for rec in list(CHUNKS.values()) + [CRP_V2, LATE_NOTE, AFTER_NOTE]
        for d in (record_digest(rec), content_digest(rec))
    ]
    assert not any(d.startswith(ref_text) for d in all_digests)
    proc = run_ledger("why-evicted", ref_text, db=history)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith("error: ") and len(proc.stderr.strip().splitlines()) == 1


def _colliding_contents() -> tuple[str, str, str]:
    """Two texts whose SHA-256 share the first 8 hex characters (a birthday search)."""
    seen: dict[str, str] = {}
    i = 0
    while True:
        text = f"collision probe {i}"
        prefix = hashlib.sha256(text.encode()).hexdigest()[:8]
        if prefix in seen:
            return seen[prefix], text, prefix
        seen[prefix] = text
        i += 1


def test_why_evicted_ambiguous_prefix_lists_candidates(
    new_db: Callable[..., str], tmp_path: Path
) -> None:
    db = new_db()
    first, second, prefix = _colliding_contents()
    a = chunk(id="twin-a", dedupe_key="twin-a", content=first)
    b = chunk(id="twin-b", dedupe_key="twin-b", content=second)
    run_ledger("ingest", str(write_jsonl(tmp_path / "twins.jsonl", [a, b])), db=db, check=True)
    proc = run_ledger("why-evicted", prefix, db=db)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "ambiguous" in proc.stderr and "twin-a" in proc.stderr and "twin-b" in proc.stderr
    # One more character (or the whole digest) picks one of them.
    full_a = content_digest(a)
    k = next(k for k in range(9, 65) if full_a[:k] != content_digest(b)[:k])
    (only,) = why(db, full_a[:k])["versions"]
    assert only["id"] == "twin-a"
    assert only["decisions"] == []
    assert "no pack" in only["not_considered"]


# --------------------------------------------------------------------------
# diff
# --------------------------------------------------------------------------


def _diff(db: str, a: int, b: int) -> dict[str, Any]:
    return ledger_json("diff", str(a), str(b), db=db)


def _changes(result: dict[str, Any]) -> dict[str, tuple[tuple[Any, ...], tuple[Any, ...], str]]:
    def state(s: dict[str, Any]) -> tuple[Any, ...]:
        return (s["status"], s["source_version"], s["reason"])

    return {c["id"]: (state(c["from"]), state(c["to"]), c["cause"]) for c in result["changes"]}


ABSENT = ("absent", None, None)


def adm(version: str) -> tuple[str, str, None]:
    return ("admitted", version, None)


def ev(version: str, reason: str) -> tuple[str, str, str]:
    return ("evicted", version, reason)


DISPLACED = "displaced by another chunk"

DIFFS = {
    # legal-read granted: legal-note enters and takes refund-faq's room.
    (1, 2): {
        "legal-note": (ev("2026-05", "permission_denied"), adm("2026-05"), "grant change"),
        "refund-faq": (adm("2026-06"), ev("2026-06", "budget"), DISPLACED),
    },
    # Later date: the August version (considered, not yet effective, in pack 2)
    # and the September policy take effect.
    (2, 3): {
        "current-refund-policy": (adm("2026-04"), adm("2026-08"), "validity date"),
        "future-refund-policy": (
            ev("2026-09", "not_yet_effective"),
            adm("2026-09"),
            "validity date",
        ),
    },
    # Pack 1 never saw the August version: a new version.
    (1, 3): {
        "current-refund-policy": (adm("2026-04"), adm("2026-08"), "new version"),
        "future-refund-policy": (
            ev("2026-09", "not_yet_effective"),
            adm("2026-09"),
            "validity date",
        ),
        "legal-note": (ev("2026-05", "permission_denied"), adm("2026-05"), "grant change"),
        # The budget grew (170 -> 200) yet it left: others took the room.
        "refund-faq": (adm("2026-06"), ev("2026-06", "budget"), DISPLACED),
    },
    # Budget 200 -> 150.
    (3, 4): {
        "current-refund-policy": (adm("2026-08"), ev("2026-08", "budget"), "budget change"),
        "legal-note": (adm("2026-05"), ev("2026-05", "budget"), "budget change"),
        "shipping-note": (ev("2026-06", "budget"), adm("2026-06"), DISPLACED),
    },
    # Budget 150 -> 200, legal-read revoked, late-note ingested.
    (4, 5): {
        "current-refund-policy": (ev("2026-08", "budget"), adm("2026-08"), "budget change"),
        "late-note": (ABSENT, ev("1", "budget"), "new candidate"),
        # budget -> permission_denied: the earlier gate is what changed.
        "legal-note": (ev("2026-05", "budget"), ev("2026-05", "permission_denied"), "grant change"),
        "refund-faq": (ev("2026-06", "budget"), adm("2026-06"), "budget change"),
        "shipping-note": (adm("2026-06"), ev("2026-06", "budget"), DISPLACED),
    },
    # Pack 6 is pack 5 as the ledger stood before late-note.
    (5, 6): {"late-note": (ev("1", "budget"), ABSENT, "removed candidate")},
    (6, 5): {"late-note": (ABSENT, ev("1", "budget"), "new candidate")},
    # unverified allowed: forum-claim enters, refund-faq makes room.
    (5, 7): {
        "forum-claim": (ev("post-1042", "trust_denied"), adm("post-1042"), "policy change"),
        "refund-faq": (adm("2026-06"), ev("2026-06", "budget"), DISPLACED),
    },
    (1, 1): {},
}


@pytest.mark.parametrize("pair", list(DIFFS), ids=lambda p: f"{p[0]}-{p[1]}")
def test_diff_changes_and_causes(history: str, pair: tuple[int, int]) -> None:
    a, b = pair
    result = _diff(history, a, b)
    assert (result["from"], result["to"]) == (a, b)
    assert _changes(result) == DIFFS[pair]
    assert [c["id"] for c in result["changes"]] == sorted(DIFFS[pair])
    assert result["used"] == {"from": PACKS[a][1], "to": PACKS[b][1]}
    assert result["budget"] == {"from": PACKS[a][0], "to": PACKS[b][0]}


def test_diff_plain_output_and_pack_digest_refs(history: str) -> None:
    digest_3 = show(history, 3)["pack_digest"][:12]
    assert _diff(history, 2, 3) == ledger_json("diff", "2", digest_3, db=history)
    plain = run_ledger("diff", "3", "4", db=history, check=True).stdout
    assert "194 -> 150" in plain and "200 -> 150" in plain
    assert "current-refund-policy" in plain and "budget change" in plain
    assert "refund-faq" not in plain  # evicted by budget on both sides: no change
    missing = run_ledger("diff", "1", "99", db=history)
    assert missing.returncode == 3


def test_diff_version_change_caused_by_a_grant(new_db: Callable[..., str], tmp_path: Path) -> None:
    """Two versions needing different permissions: revoking the newer one's
    permission brings back the older version, and the cause is the grant."""
    db = new_db()
    v1 = chunk(
        id="manual",
        source_version="1",
        effective_from="2026-01-01",
        required_permission="public-read",
        content="Manual for everyone.",
    )
    v2 = dict(
        v1,
        source_version="2",
        effective_from="2026-03-01",
        required_permission="staff-read",
        content="Manual for staff.",
    )
    run_ledger("ingest", str(write_jsonl(tmp_path / "m.jsonl", [v1, v2])), db=db, check=True)
    run_ledger("subject", "grant", "default", "public-read", "staff-read", db=db, check=True)
    run_ledger(
        "policy", "set", "--allow-trust", "approved-source", "--budget", "100", db=db, check=True
    )
    first = build(db, "--as-of", "2026-07-01")
    run_ledger("subject", "revoke", "default", "staff-read", db=db, check=True)
    second = build(db, "--as-of", "2026-07-01")
    assert [a["source_version"] for a in first["admitted"]] == ["2"]
    assert [a["source_version"] for a in second["admitted"]] == ["1"]
    assert _changes(_diff(db, 1, 2)) == {"manual": (adm("2"), adm("1"), "grant change")}
    assert _changes(_diff(db, 2, 1)) == {"manual": (adm("1"), adm("2"), "grant change")}


# --------------------------------------------------------------------------
# applying a hint really admits the chunk
# --------------------------------------------------------------------------

PROMO = chunk(
    id="promo-note",
    source_version="summer",
    effective_from="2026-07-15",
    expires_on="2026-07-20",
    estimated_tokens=10,
    priority=65,
    dedupe_key="promo-note",
    content="Summer promotion terms.",
)


def _apply(db: str, steps: list[dict[str, Any]], as_of: str, budget: int | None) -> dict[str, Any]:
    """Do what each step says through the CLI, then rebuild."""
    for step in steps:
        kind = step["kind"]
        if kind == "grant":
            run_ledger("subject", "grant", "default", step["permission"], db=db, check=True)
        elif kind == "allow_trust":
            current = ledger_json("policy", "show", db=db)["policy"]["allowed_trust"]
            run_ledger("policy", "set", *trust_flags(current + [step["trust"]]), db=db, check=True)
        elif kind in ("as_of", "superseded_by"):
            as_of = step["as_of"]
        elif kind == "budget":
            budget = step["budget"]
        else:
            raise AssertionError(f"a step that cannot be applied: {step}")
    args = ["--as-of", as_of] + (["--budget", str(budget)] if budget is not None else [])
    return build(db, *args)


CRP_V1_NAME = {"id": "current-refund-policy", "source_version": "2026-04"}
FAQ_NAME = {"id": "refund-faq", "source_version": "2026-06"}

# (extra records, budget, as_of, target id, target version, expected steps)
HINT_CASES = {
    "grant": (
        [],
        170,
        "2026-07-21",
        "legal-note",
        "2026-05",
        [{"kind": "grant", "permission": "legal-read"}],
    ),
    "allow_trust": (
        [],
        170,
        "2026-07-21",
        "forum-claim",
        "post-1042",
        [{"kind": "allow_trust", "trust": "unverified"}],
    ),
    # Its effective_from.
    "not_yet_effective": (
        [],
        170,
        "2026-07-21",
        "future-refund-policy",
        "2026-09",
        [{"kind": "as_of", "as_of": "2026-09-01"}],
    ),
    # The day before it expires (2026-07-20); the required chunks began 07-14.
    "expired": (
        [PROMO],
        170,
        "2026-07-21",
        "promo-note",
        "summer",
        [{"kind": "as_of", "as_of": "2026-07-19"}],
    ),
    # 24 needed, 8 left: 16 more.
    "budget": (
        [],
        170,
        "2026-07-21",
        "shipping-note",
        "2026-06",
        [{"kind": "budget", "budget": 186, "extra": 16, "displaced_by": [CRP_V1_NAME, FAQ_NAME]}],
    ),
    # The day before the winning version took effect (2026-08-01).
    "superseded": (
        [CRP_V2],
        170,
        "2026-09-15",
        "current-refund-policy",
        "2026-04",
        [{"kind": "superseded_by", "by": ref(CRP_V2), "as_of": "2026-07-31"}],
    ),
    # Two causes. With legal-read at 130: 50 optional, crp 48 -> 2, legal needs 28: 26 more.
    "grant then budget": (
        [],
        130,
        "2026-07-21",
        "legal-note",
        "2026-05",
        [
            {"kind": "grant", "permission": "legal-read"},
            {"kind": "budget", "budget": 156, "extra": 26, "displaced_by": [CRP_V1_NAME]},
        ],
    ),
}


@pytest.mark.parametrize("case", list(HINT_CASES))
def test_applying_the_hint_admits_the_chunk(
    new_db: Callable[..., str], tmp_path: Path, case: str
) -> None:
    extra, budget, as_of, target, version, steps = HINT_CASES[case]
    db = new_db()
    seed_ledger(db, budget=budget, build=False)
    if extra:
        run_ledger("ingest", str(write_jsonl(tmp_path / "extra.jsonl", extra)), db=db, check=True)
    before = build(db, "--as-of", as_of)
    assert (target, version) not in {(a["id"], a["source_version"]) for a in before["admitted"]}

    result = why(db, target)
    (found,) = [v for v in result["versions"] if v["source_version"] == version]
    newest = found["decisions"][0]
    assert newest["pack"] == before["pack"] and newest["admitted"] is False
    hint = newest["would_admit"]
    assert hint["steps"] == steps
    assert hint["admits"] is True
    assert hint["target"] == {
        "id": target,
        "source_version": version,
        "record_digest": found["record_digest"],
    }

    after = _apply(db, hint["steps"], as_of, None)
    assert (target, version) in {(a["id"], a["source_version"]) for a in after["admitted"]}, after[
        "evicted"
    ]


def test_hint_that_cannot_admit_says_so(new_db: Callable[..., str]) -> None:
    """mirror-refund-policy loses its dedupe group on priority: no change of the
    request admits it, and the hint names the chunk that was kept."""
    db = new_db()
    seed_ledger(db)
    (mirror,) = why(db, "mirror-refund-policy")["versions"]
    hint = mirror["decisions"][0]["would_admit"]
    assert hint["admits"] is False
    assert hint["steps"] == [{"kind": "outranked_by", "kept": ref(CRP_V1)}]
    # old-refund-policy expired before the required chunks began: no date admits it.
    (old,) = why(db, "old-refund-policy")["versions"]
    assert old["decisions"][0]["would_admit"]["admits"] is False
