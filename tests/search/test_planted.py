"""Planted facts: a generated corpus where distinctive phrases sit in chunks that
meet every fate, asked about with `ledger why "PHRASE" --json` as a user would,
on SQLite and PostgreSQL. Every hint is then applied (grant, policy, date,
budget, retrieval) to a copy of the ledger, and a new build really admits it.

The ledger (entries):
 1 ingest: filler evidence + the planted chunks   2 grant public-read
 3 policy: approved-source, budget 90             4 pack 1: plain build as of 2026-07-21
 5 pack 2: retrieval build, --query "tide", --top 3 (mark 4)
 6 ingest: a chunk planted after both packs
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import dbtools
from tests.conftest import chunk, run_ledger, write_jsonl

AS_OF = "2026-07-21"
# Filler words: none of them is a planted word, nor shares its first three letters.
FILLER = [
    "apple", "bridge", "candle", "doctor", "engine", "forest", "garden", "hammer", "island",
    "jacket", "kettle", "ladder", "mirror", "needle", "orange", "pencil", "rabbit", "saddle",
    "tunnel", "violin", "window", "yellow",
]  # fmt: skip


def planted() -> list[dict[str, Any]]:
    """One chunk per fate, each holding its own phrase."""
    ev = {"section": "evidence", "required_permission": "public-read", "priority": 50}
    return [
        chunk(id="p-admitted", dedupe_key="p-admitted", content="The amber otter sleeps.", **ev),
        chunk(
            id="p-permission", dedupe_key="p-permission", content="The basalt heron waits.",
            **{**ev, "required_permission": "secret-read"},
        ),
        chunk(
            id="p-trust", dedupe_key="p-trust", trust="unverified",
            content="A cobalt lynx was seen.", **ev,
        ),
        chunk(
            id="p-future", dedupe_key="p-future", effective_from="2026-09-01",
            content="The dune marten arrives.", **ev,
        ),
        chunk(
            id="p-expired", dedupe_key="p-expired", effective_from="2026-01-01",
            expires_on="2026-06-01", content="The ember quail left.", **ev,
        ),
        chunk(
            id="p-versioned", dedupe_key="p-versioned", source_version="1",
            effective_from="2026-01-01", content="The glacier ibex climbs.", **ev,
        ),
        chunk(
            id="p-versioned", dedupe_key="p-versioned", source_version="2",
            effective_from="2026-05-01", content="Rewritten: nothing about that animal.", **ev,
        ),
        chunk(
            id="p-kept", dedupe_key="p-dup", content="Harbor rules, first copy.",
            **{**ev, "priority": 60},
        ),
        chunk(
            id="p-dropped", dedupe_key="p-dup", content="The indigo jackal copy.",
            **{**ev, "priority": 40},
        ),
        chunk(
            id="p-budget", dedupe_key="p-budget", estimated_tokens=45,
            content="The juniper koala is large.", **{**ev, "priority": 10},
        ),
        # The retrieval pack asks "tide": three chunks say it often, one once in a long text.
        chunk(id="p-tide-1", dedupe_key="p-tide-1", content="tide tide tide pool", **ev),
        chunk(id="p-tide-2", dedupe_key="p-tide-2", content="tide tide marsh", **ev),
        chunk(id="p-tide-3", dedupe_key="p-tide-3", content="tide tide reef", **ev),
        chunk(
            id="p-unretrieved", dedupe_key="p-unretrieved",
            content="The kelp lemur, far from any tide, " + " ".join(FILLER * 3) + ".", **ev,
        ),
        # A word close to the never-ingested one, for the closest terms.
        chunk(
            id="p-near", dedupe_key="p-near", content="A xylophonic tune.",
            **{**ev, "priority": 5},
        ),
    ]  # fmt: skip


def filler(n: int = 40) -> list[dict[str, Any]]:
    rng = random.Random(16)
    return [
        chunk(
            id=f"filler-{i:03d}", dedupe_key=f"filler-{i:03d}", priority=1, estimated_tokens=1,
            content=" ".join(rng.choice(FILLER) for _ in range(12)),
        )
        for i in range(n)
    ]  # fmt: skip


# Priority 2, one token: behind every planted chunk, so it changes no other fate.
LATER = chunk(
    id="p-later", dedupe_key="p-later", priority=2, estimated_tokens=1,
    content="The lagoon mink came late.",
)  # fmt: skip


@pytest.fixture(scope="module")
def planted_db(tmp_path_factory: pytest.TempPathFactory, module_backend: str) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("planted")
    db = dbtools.new_ledger(folder, module_backend)

    def ok(*args: str) -> None:
        run_ledger(*args, db=db, check=True)

    ok("ingest", str(write_jsonl(folder / "corpus.jsonl", filler() + planted())))
    ok("subject", "grant", "default", "public-read")
    ok("policy", "set", "--allow-trust", "approved-source", "--budget", "90")
    ok("build", "--as-of", AS_OF)  # pack 1
    ok("build", "--as-of", AS_OF, "--query", "tide", "--top", "3")  # pack 2
    ok("ingest", str(write_jsonl(folder / "later.jsonl", [LATER])))
    yield db
    dbtools.drop(db)


def why(db: str, text: str, *args: str) -> dict[str, Any]:
    proc = run_ledger("why", text, *args, "--json", db=db)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return dict(json.loads(proc.stdout))


def ids_of(db: str, pack: str) -> dict[str, str]:
    """id -> "admitted" or its eviction reason, in a pack."""
    data = json.loads(run_ledger("show", pack, "--json", db=db, check=True).stdout)
    out = {a["id"]: "admitted" for a in data["admitted"]}
    for e in data["evicted"]:
        out.setdefault(e["id"], e["reason"])
    return out


def new_pack(db: str, *args: str) -> dict[str, Any]:
    proc = run_ledger("build", *args, "--json", db=db)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def admitted(pack: dict[str, Any], chunk_id: str, version: str = "1") -> bool:
    return any(a["id"] == chunk_id and a["source_version"] == version for a in pack["admitted"])


def test_admitted(planted_db: str) -> None:
    a = why(planted_db, "amber otter", "--pack", "1")
    assert (a["verdict"], a["pack"]) == ("admitted", 1)
    m = a["matches"][0]
    assert (m["id"], m["status"], m["reason"], m["detail"], m["hint"]) == (
        "p-admitted", "admitted", None, None, None,
    )  # fmt: skip
    assert a["sentence"].startswith("p-admitted@1 was admitted to pack 1")


def test_the_default_pack_is_the_subjects_newest(planted_db: str) -> None:
    assert why(planted_db, "amber otter")["pack"] == 2


# (phrase, id, reason, detail, the command that applies the hint, build arguments)
EVICTIONS = [
    ("basalt heron", "p-permission", "permission_denied", {"required_permission": "secret-read"}),
    ("cobalt lynx", "p-trust", "trust_denied", {"trust": "unverified"}),
    ("dune marten", "p-future", "not_yet_effective", {"effective_from": "2026-09-01"}),
    ("ember quail", "p-expired", "expired", {"expires_on": "2026-06-01"}),
    ("juniper koala", "p-budget", "budget", {"needed": 45, "remaining": 20}),
]


@pytest.mark.parametrize(("phrase", "chunk_id", "reason", "detail"), EVICTIONS)
def test_each_eviction_and_its_hint_admits_it(
    planted_db: str, tmp_path: Path, phrase: str, chunk_id: str, reason: str, detail: dict[str, Any]
) -> None:
    a = why(planted_db, f'"{phrase}"', "--pack", "1")
    assert a["verdict"] == "evicted"
    m = a["matches"][0]
    assert (m["id"], m["status"], m["reason"], m["detail"]) == (chunk_id, "evicted", reason, detail)
    assert f"by {reason}" in a["sentence"] and "to admit it" in a["sentence"]
    hint = m["hint"]
    assert hint["admits"] is True
    # Apply every step to a copy of the ledger and build again.
    db = dbtools.copy_ledger(planted_db, tmp_path / "copy.db")
    build = ["--as-of", AS_OF]
    for step in hint["steps"]:
        if step["kind"] == "grant":
            run_ledger("subject", "grant", "default", step["permission"], db=db, check=True)
        elif step["kind"] == "allow_trust":
            run_ledger(
                "policy", "set", "--allow-trust", "approved-source",
                "--allow-trust", step["trust"], db=db, check=True,
            )  # fmt: skip
        elif step["kind"] == "as_of":
            build = ["--as-of", step["as_of"]]
        elif step["kind"] == "budget":
            build += ["--budget", str(step["budget"])]
        else:
            raise AssertionError(f"unexpected step {step}")
    assert admitted(new_pack(db, *build), chunk_id)
    dbtools.drop(db)


def test_budget_hint_names_the_smallest_budget(planted_db: str) -> None:
    m = why(planted_db, "juniper koala", "--pack", "1")["matches"][0]
    (step,) = m["hint"]["steps"]
    assert step["kind"] == "budget" and step["extra"] == 45 - 20 and step["budget"] == 90 + 25


def test_superseded_lists_the_current_version_and_its_date_hint_admits(
    planted_db: str, tmp_path: Path
) -> None:
    a = why(planted_db, "glacier ibex", "--pack", "1")
    # The words are only in version 1: the id leads as the pack saw it (version
    # 2, admitted), and version 1 is under it, superseded, with its hint.
    lead, m = a["matches"][:2]
    assert (lead["id"], lead["source_version"], lead["status"]) == ("p-versioned", "2", "admitted")
    assert lead["score"] == 0.0
    assert "The words asked are in its version 1, left out by superseded" in a["sentence"]
    assert (m["id"], m["source_version"], m["status"], m["reason"]) == (
        "p-versioned", "1", "evicted", "superseded",
    )  # fmt: skip
    assert m["detail"]["by"]["source_version"] == "2"
    step = m["hint"]["steps"][0]
    assert step["kind"] == "superseded_by" and step["as_of"] == "2026-04-30"
    assert m["hint"]["admits"] is True
    db = dbtools.copy_ledger(planted_db, tmp_path / "copy.db")
    assert admitted(new_pack(db, "--as-of", step["as_of"]), "p-versioned")
    dbtools.drop(db)


def test_duplicate_names_the_kept_chunk(planted_db: str) -> None:
    m = why(planted_db, "indigo jackal", "--pack", "1")["matches"][0]
    assert (m["status"], m["reason"]) == ("evicted", "duplicate")
    assert m["detail"]["kept"]["id"] == "p-kept"
    assert m["hint"]["admits"] is False  # no request change beats a higher priority
    assert m["hint"]["steps"][0]["kind"] == "outranked_by"


def test_not_retrieved_compares_scores_and_its_hint_retrieves_it(
    planted_db: str, tmp_path: Path
) -> None:
    pack2 = json.loads(run_ledger("show", "2", "--json", db=planted_db, check=True).stdout)
    assert [r["id"] for r in pack2["retrieval"]["ranked"]] == ["p-tide-1", "p-tide-2", "p-tide-3"]
    assert "p-unretrieved" not in ids_of(planted_db, "2")
    a = why(planted_db, "kelp lemur", "--pack", "2")
    assert a["verdict"] == "not_candidate"
    m = a["matches"][0]
    assert (m["id"], m["status"], m["reason"]) == (
        "p-unretrieved",
        "not_candidate",
        "not_retrieved",
    )
    d = m["detail"]
    assert (d["query"], d["top"]) == ("tide", 3)
    lowest = min(r["score"] for r in pack2["retrieval"]["ranked"])
    assert d["lowest_retrieved"] == lowest and 0 < d["score"] < lowest
    assert "did not offer it" in a["sentence"]
    step = m["hint"]["steps"][0]
    assert step == {"kind": "retrieve", "query": "tide", "top": 4}
    assert m["hint"]["admits"] is True
    db = dbtools.copy_ledger(planted_db, tmp_path / "copy.db")
    pack = new_pack(db, "--as-of", AS_OF, "--query", step["query"], "--top", str(step["top"]))
    assert admitted(pack, "p-unretrieved")
    dbtools.drop(db)


def test_ingested_after_the_pack(planted_db: str) -> None:
    a = why(planted_db, "lagoon mink", "--pack", "1")
    m = a["matches"][0]
    assert (m["status"], m["reason"], m["detail"]) == (
        "not_candidate", "ingested_later", {"batch": 6, "mark": 3},
    )  # fmt: skip
    assert m["hint"]["steps"] == [{"kind": "rebuild", "mark": 6}] and m["hint"]["admits"] is True
    assert "after the pack" in a["sentence"]
    # After a retrieval pack whose query does not match it: build again, retrieving it.
    m = why(planted_db, "lagoon mink", "--pack", "2")["matches"][0]
    assert m["detail"] == {"batch": 6, "mark": 4}
    assert m["hint"]["steps"] == [
        {"kind": "rebuild", "mark": 6},
        {"kind": "retrieve", "query": "lagoon mink", "top": 3},
    ]
    assert m["hint"]["admits"] is True


def test_never_ingested_names_the_closest_terms(planted_db: str) -> None:
    a = why(planted_db, "xylophone", "--pack", "1")
    assert (a["verdict"], a["matches"]) == ("never_ingested", [])
    assert a["closest_terms"][0] == "xylophonic"
    assert "never ingested" in a["sentence"] and "xylophonic" in a["sentence"]


def test_a_retrieval_pack_records_only_its_candidates(planted_db: str) -> None:
    data = json.loads(run_ledger("show", "2", "--json", db=planted_db, check=True).stdout)
    evidence = {a["id"] for a in data["admitted"] if a["section"] == "evidence"}
    evidence |= {e["id"] for e in data["evicted"]}
    assert evidence == {"p-tide-1", "p-tide-2", "p-tide-3"}
    assert run_ledger("verify", db=planted_db).returncode == 0
    replay = run_ledger("replay", "2", db=planted_db)
    assert replay.returncode == 0, replay.stdout + replay.stderr


def test_search_ranks_the_planted_best_match_first(planted_db: str) -> None:
    data = json.loads(
        run_ledger("search", "tide", "--json", "--limit", "3", db=planted_db, check=True).stdout
    )
    assert [r["id"] for r in data["results"]] == ["p-tide-1", "p-tide-2", "p-tide-3"]
    scores = [r["score"] for r in data["results"]]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
