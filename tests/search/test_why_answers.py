"""`why` about the fact asked, with hints that are true (issue 39).

For generated corpora with history and retrieval packs built for other
questions: every chunk's status agrees with a direct evaluation of the gates at
the pack's own inputs, and every hint marked as admitting, applied literally
through the public API, admits the chunk.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ledger
from ledger.core.select import standing
from ledger.store.candidates import load_candidates
from ledger.store.engine import read_transaction
from ledger.store.inputs import inputs_of
from ledger.store.packs import pack_header
from ledger.tokens import ESTIMATED
from tests.conftest import chunk

WORDS = ["harbor", "pilot", "refund", "window", "tax", "ship", "cargo", "storm", "fee", "port"]
DATES = ["2026-01-01", "2026-03-01", "2026-05-01", "2026-07-01"]
PERMISSIONS = ["public-read", "public-read", "public-read", "staff-read"]
TRUST = ["approved-source", "approved-source", "approved-source", "unverified"]


def corpus(rnd: random.Random, batch: int) -> list[dict[str, Any]]:
    out = []
    for i in range(14):
        if batch and rnd.random() < 0.5:
            continue
        start = rnd.choice(DATES[:3])
        expires = rnd.choice([None, None, None, rnd.choice(DATES[1:])])
        if expires is not None and expires <= start:
            expires = None
        out.append(
            chunk(
                id=f"c{i:02d}",
                source_version=f"v{batch}",
                section="evidence",
                dedupe_key=f"c{i:02d}",
                effective_from=start,
                expires_on=expires,
                required_permission=rnd.choice(PERMISSIONS),
                trust=rnd.choice(TRUST),
                estimated_tokens=rnd.randrange(10, 60),
                content=" ".join(rnd.choices(WORDS, k=rnd.randrange(3, 8)))
                + f" unique{i:02d}v{batch}",
            )
        )
    return out


def make_ledger(path: Path, seed: int) -> str:
    rnd = random.Random(seed)
    with ledger.open(str(path), create=True) as lg:
        lg.ingest_records(corpus(rnd, 0))
        lg.ingest_records(corpus(rnd, 1))
        lg.retract([f"c{rnd.randrange(14):02d}"], from_date=rnd.choice(DATES))
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=90)
    return str(path)


def packs(db: str, rnd: random.Random) -> Iterator[int]:
    with ledger.open(db) as lg:
        for _ in range(3):
            query = " ".join(rnd.sample(WORDS, 2))
            yield lg.build(rnd.choice(DATES), query=query, top=rnd.randrange(2, 5)).number


def expected_status(db: str, pack: int, lead: dict[str, Any]) -> tuple[str, str | None]:
    """The status `why` must give the lead version: from the pack's own
    decisions, or the gates evaluated directly at the pack's inputs."""
    chunk_id, version = lead["id"], lead["source_version"]
    with ledger.open(db) as lg:
        shown = lg.show(pack).to_json()
        for item in shown["admitted"]:
            if (item["id"], item["source_version"]) == (chunk_id, version):
                return "admitted", None
        for item in shown["evicted"]:
            if (item["id"], item["source_version"]) == (chunk_id, version):
                return "evicted", item["reason"]
        with read_transaction(lg._engine) as conn:
            inputs = inputs_of(pack_header(conn, pack), conn)
            cands, _ = load_candidates(conn, inputs.mark, ESTIMATED, inputs.scope)
    live, out = standing([c for c in cands if c.id == chunk_id], inputs.request())
    if any(c.source_version == version for c in live):
        return "not_candidate", "not_retrieved"
    assert not live or live[0].source_version not in lead.get("_matched", ()), lead
    return "not_candidate", next(e.reason for e in out if e.candidate.source_version == version)


def apply(db: str, pack: int, hint: dict[str, Any]) -> set[str]:
    """The hint's steps applied literally through the API to a copy of the ledger:
    the admitted (id, version) pairs of the build that follows them."""
    with ledger.open(db) as lg:
        shown = lg.show(pack).to_json()
        build: dict[str, Any] = {"as_of": shown["as_of"], "ledger_at": shown["ledger_mark"]}
        retrieval = shown["retrieval"]
        if retrieval is not None:
            build["query"], build["top"] = retrieval["query"], retrieval["top"]
        for step in hint["steps"]:
            kind = step["kind"]
            if kind == "grant":
                lg.grant("default", step["permission"])
            elif kind == "allow_trust":
                lg.set_policy(allow_trust=["approved-source", step["trust"]])
            elif kind in ("as_of", "retracted", "superseded_by"):
                build["as_of"] = step["as_of"]
            elif kind == "budget":
                build["budget"] = step["budget"]
            elif kind == "retrieve":
                build["query"], build["top"] = step["query"], step["top"]
            elif kind == "reinstate":
                lg.reinstate([step["id"]], from_date=step["from"])
            else:
                raise AssertionError(f"a step this test cannot apply: {step}")
        if any(s["kind"] in ("grant", "allow_trust", "reinstate") for s in hint["steps"]):
            build["ledger_at"] = None  # the grant is a new entry: build after it
            build.setdefault("budget", shown["budget"])
        rebuilt = lg.build(**{k: v for k, v in build.items() if v is not None}).to_json()
    return {(a["id"], a["source_version"]) for a in rebuilt["admitted"]}


@pytest.mark.parametrize("seed", range(6))
def test_why_agrees_with_the_gates_and_every_admitting_hint_admits(
    seed: int, tmp_path: Path
) -> None:
    rnd = random.Random(seed)
    db = make_ledger(tmp_path / "ledger.db", seed)
    checked = 0
    for pack in list(packs(db, rnd)):
        for i in range(14):
            with ledger.open(db) as lg:
                answer = lg.why(f"unique{i:02d}v0 unique{i:02d}v1", pack=pack, limit=1).to_json()
            if not answer["matches"]:
                continue
            lead = answer["matches"][0]
            matched = {m["source_version"] for m in answer["matches"] if m["id"] == lead["id"]}
            status, reason = expected_status(db, pack, {**lead, "_matched": matched})
            assert lead["status"] == status, (lead, status, reason)
            if reason is not None:
                assert lead["reason"] == reason, (lead, reason)
            if lead["status"] != "admitted":
                assert lead["hint"] is not None, lead  # every non-admitted match has one
            hint = lead["hint"]
            if hint and hint["admits"]:
                copy = tmp_path / f"copy-{pack}-{i}.db"
                copy.write_bytes(Path(db).read_bytes())
                admitted = apply(str(copy), pack, hint)
                assert (lead["id"], lead["source_version"]) in admitted, (lead, hint)
                checked += 1
    assert checked >= 3  # each seed checks admitting hints by applying them


def test_a_removed_section_asked_against_another_questions_pack_says_retracted(
    tmp_path: Path,
) -> None:
    with ledger.open(str(tmp_path / "l.db"), create=True) as lg:
        lg.ingest_records([
            chunk(id="env-sslkeylog", dedupe_key="env-sslkeylog", section="evidence",
                  content="SSLKEYLOGFILE appends TLS keys to the file for debugging."),
            chunk(id="proxies", dedupe_key="proxies", section="evidence",
                  content="HTTP_PROXY and HTTPS_PROXY route requests through a proxy."),
        ])  # fmt: skip
        lg.retract(["env-sslkeylog"], from_date="2026-05-02", reason="removed from the docs")
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=500)
        pack = lg.build("2026-06-01", query="proxy environment variables", top=1).number
        answer = lg.why("SSLKEYLOGFILE", pack=pack).to_json()
    lead = answer["matches"][0]
    assert (lead["id"], lead["status"], lead["reason"]) == (
        "env-sslkeylog",
        "not_candidate",
        "retracted",
    )
    assert lead["detail"]["from"] == "2026-05-02"
    hint = lead["hint"]
    kinds = [s["kind"] for s in hint["steps"]]
    # First what undoes the retraction, never a budget; then what retrieves it.
    assert kinds[0] == "reinstate" and "budget" not in kinds
    assert (
        "retracted" in answer["sentence"] and "ledger reinstate env-sslkeylog" in answer["sentence"]
    )
    assert hint["admits"] is True
    assert ("env-sslkeylog", "1") in apply(str(tmp_path / "l.db"), pack, hint)


def test_a_text_starting_with_a_dash_and_the_repr_of_answers(tmp_path: Path) -> None:
    from tests.conftest import run_ledger

    db = tmp_path / "l.db"
    with ledger.open(str(db), create=True) as lg:
        lg.ingest_records([
            chunk(id="flags", dedupe_key="flags", section="evidence",
                  content="Run it with --without-hashes to skip the digests."),
        ])  # fmt: skip
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=1)
        lg.build("2026-07-21")
        evicted = lg.why_evicted("flags")
        assert "left out of pack 1" in evicted.sentence
        assert repr(evicted) == f"WhyEvicted(ref='flags', sentence={evicted.sentence!r})"
        assert repr(lg.why("digests")).startswith("WhyAnswer(text='digests', pack=1, verdict=")
    for args in (["why", "--json", "--", "--without-hashes"], ["why", "-without-hashes", "--json"]):
        run = run_ledger(*args, db=db)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["matches"][0]["id"] == "flags"
