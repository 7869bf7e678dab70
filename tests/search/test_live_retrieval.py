"""The built-in retriever ranks only what the subject could be given: on
generated evolving corpora (texts that change, retractions, expiries,
permissions), every ranked version is its id's live version for the build, and
the ranking is a plain re-scoring of the live versions' own texts."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ledger
from ledger.core.query import parse_query
from ledger.core.select import standing
from ledger.store.candidates import load_candidates
from ledger.store.engine import read_transaction
from ledger.store.fulltext import search_versions
from ledger.store.inputs import resolve_inputs
from ledger.store.retriever import retrieve_query
from ledger.tokens import ESTIMATED
from tests.conftest import chunk

WORDS = ["harbor", "pilot", "refund", "window", "tax", "ship", "cargo", "storm"]
DATES = ["2026-01-01", "2026-03-01", "2026-05-01", "2026-07-01"]


def evolving_corpus(seed: int) -> tuple[list[list[dict[str, object]]], list[tuple[str, str]]]:
    """Three ingests of 12 ids whose texts, dates and permissions change, and
    retractions between them."""
    rnd = random.Random(seed)
    batches = []
    for b in range(3):
        batch = []
        for i in range(12):
            if b and rnd.random() < 0.5:
                continue  # not every id changes every time
            expires = rnd.choice([None, None, DATES[rnd.randrange(1, 4)]])
            start = DATES[rnd.randrange(0, 3)]
            if expires is not None and expires <= start:
                expires = None
            batch.append(
                chunk(
                    id=f"c{i:02d}",
                    source_version=f"v{b}",
                    section="evidence",
                    dedupe_key=f"c{i:02d}",
                    effective_from=start,
                    expires_on=expires,
                    required_permission=rnd.choice(["public-read", "public-read", "staff-read"]),
                    content=" ".join(rnd.choices(WORDS, k=rnd.randrange(3, 9))),
                )
            )
        batches.append(batch)
    retractions = [(f"c{rnd.randrange(12):02d}", DATES[rnd.randrange(0, 4)]) for _ in range(3)]
    return batches, retractions


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = []
    for seed in range(4):
        path = tmp_path_factory.mktemp(f"live{seed}") / "ledger.db"
        with ledger.open(str(path), create=True) as lg:
            batches, retractions = evolving_corpus(seed)
            for i, batch in enumerate(batches):
                lg.ingest_records(batch)
                if i < len(retractions):
                    chunk_id, day = retractions[i]
                    lg.retract([chunk_id], from_date=day)
            lg.grant("default", "public-read")
            lg.grant("staff", "public-read", "staff-read")
            lg.set_policy(allow_trust=["approved-source"], budget=1000)
        out.append(str(path))
    return out


def plain_ranking(conn: object, query: str, top: int, inputs: object) -> list[tuple[str, str]]:
    """The rule, plainly: every matching version, kept when it is its id's live
    version (gates 1-6 over all the id's versions), by score then id."""
    candidates, vid_of = load_candidates(conn, inputs.mark, ESTIMATED, inputs.scope)  # type: ignore[attr-defined]
    live, _ = standing(candidates, inputs.request())  # type: ignore[attr-defined]
    live_vids = {vid_of[c.record_digest] for c in live if c.section == "evidence"}
    hits = search_versions(conn, parse_query(query), limit=10_000, mark=inputs.mark,  # type: ignore[arg-type, attr-defined]
                           section="evidence", documents_only=True)  # fmt: skip
    # search_versions orders by the engine's score, then id (the scores shown
    # are rounded, so they can tie where the engine's do not).
    kept = [h for h in hits if h.vid in live_vids]
    return [(h.chunk_id, h.source_version) for h in kept[:top]]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    which=st.integers(0, 3),
    as_of=st.sampled_from(DATES),
    subject=st.sampled_from(["default", "staff"]),
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    top=st.integers(1, 8),
)
def test_only_live_versions_are_ranked_and_the_ranking_is_the_plain_rule(
    ledgers: list[str], which: int, as_of: str, subject: str, words: list[str], top: int
) -> None:
    with ledger.open(ledgers[which]) as lg, read_transaction(lg._engine) as conn:
        inputs = resolve_inputs(conn, as_of, subject)
        record = retrieve_query(conn, " ".join(words), top, inputs)
        got = [(r.id, r.source_version) for r in record.ranked]
        assert got == plain_ranking(conn, " ".join(words), top, inputs)
        assert [r.rank for r in record.ranked] == list(range(1, len(got) + 1))
        # No dead text: each ranked version passes gates 1-6 for this build.
        candidates, _ = load_candidates(conn, inputs.mark, ESTIMATED, inputs.scope)
        live, _ = standing(candidates, inputs.request())
        assert set(got) <= {(c.id, c.source_version) for c in live}


def test_a_retracted_text_never_takes_a_slot_from_a_live_one(tmp_path: Path) -> None:
    with ledger.open(str(tmp_path / "l.db"), create=True) as lg:
        lg.ingest_records([
            chunk(id="removed", dedupe_key="removed", section="evidence",
                  content="harbor pilot harbor pilot harbor pilot"),
            chunk(id="answer", dedupe_key="answer", section="evidence",
                  content="the harbor pilot boards at dawn, with many other words"),
        ])  # fmt: skip
        lg.retract(["removed"], from_date="2026-06-01")
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=1000)
        before = lg.build("2026-05-01", query="harbor pilot", top=1).to_json()
        after = lg.build("2026-07-01", query="harbor pilot", top=1).to_json()
    assert [r["id"] for r in before["retrieval"]["ranked"]] == ["removed"]
    assert [r["id"] for r in after["retrieval"]["ranked"]] == ["answer"]
    assert [a["id"] for a in after["admitted"]] == ["answer"]


def test_diff_names_an_id_that_fell_out_of_the_top_k_as_not_retrieved(tmp_path: Path) -> None:
    with ledger.open(str(tmp_path / "l.db"), create=True) as lg:
        lg.ingest_records([
            chunk(id="best", dedupe_key="best", section="evidence", content="harbor pilot harbor"),
            chunk(id="next", dedupe_key="next", section="evidence", content="harbor pilot boards"),
            chunk(id="tax", dedupe_key="tax", section="evidence", content="quarterly tax forms"),
        ])  # fmt: skip
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=1000)
        two = lg.build("2026-07-01", query="harbor pilot", top=2).number
        one = lg.build("2026-07-01", query="harbor pilot", top=1).number
        plain = lg.build("2026-07-01").number
        causes = {c["id"]: c["cause"] for c in lg.diff(two, one).to_json()["changes"]}
        back = {c["id"]: c["cause"] for c in lg.diff(one, two).to_json()["changes"]}
        # A plain pack that took "tax" against a retrieval pack that did not rank it.
        to_plain = {c["id"]: c["cause"] for c in lg.diff(one, plain).to_json()["changes"]}
    assert causes == {"next": "not retrieved by this query"}
    assert back == {"next": "not retrieved by this query"}
    assert to_plain["tax"] == "not retrieved by this query"


def test_a_retrieval_pack_gives_its_chunks_in_rank_order_in_show_and_export(
    tmp_path: Path,
) -> None:
    """Selector version 2: output order is section, required, rank, priority, id;
    the best-ranked chunk comes first in what the model is given (it was 9th of
    14 in id order)."""
    texts = {
        "a-weak": "harbor",
        "b-best": "harbor pilot harbor pilot harbor pilot",
        "c-mid": "harbor pilot",
        "d-none": "storm",
    }
    with ledger.open(str(tmp_path / "l.db"), create=True) as lg:
        lg.ingest_records(
            [chunk(id=k, dedupe_key=k, section="evidence", content=v) for k, v in texts.items()]
        )
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=1000)
        built = lg.build("2026-05-01", query="harbor pilot", top=3).to_json()
        ranked = [r["id"] for r in built["retrieval"]["ranked"]]
        assert ranked == ["b-best", "c-mid", "a-weak"]  # by BM25 over the texts above
        assert [a["id"] for a in built["admitted"]] == ranked
        assert [a["id"] for a in lg.show(built["pack"]).to_json()["admitted"]] == ranked
        markdown = lg.export(built["pack"], format="markdown")
    at = [markdown.index(f"### {i}\n") for i in ranked]
    assert at == sorted(at)
