"""The retriever reads a query's matches by score bands (`hits_band`): laid
end to end, the bands are `hits_page`'s one list of every match (score, then
id, then version id), on generated ledgers where scores tie often (short texts
of few words), versions of other sections and of a transcript match too, and
later batches lie beyond an older mark."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import ledger
from ledger.core.query import parse_query
from ledger.store.chain import read_head
from ledger.store.engine import read_transaction
from ledger.store.fulltext import After, Hit, hits_band, hits_page, search_versions
from ledger.store.inputs import resolve_inputs
from ledger.store.retriever import live_hits, live_versions
from tests.conftest import chunk
from tests.transcript.factory import ExchangeSpec, build_transcript

WORDS = ["harbor", "pilot", "refund", "window", "tax", "ship"]
SECTIONS = ["evidence", "evidence", "evidence", "policy", "state"]


def batch(rnd: random.Random, n: int, version: str) -> list[dict[str, Any]]:
    return [
        chunk(
            id=f"c{i:03d}",
            source_version=version,
            section=SECTIONS[i % len(SECTIONS)],  # an id keeps its section
            dedupe_key=f"c{i:03d}",
            # Two to four words of six: many versions score alike.
            content=" ".join(rnd.choices(WORDS, k=rnd.randrange(2, 5))),
        )
        for i in range(n)
    ]


def make_ledger(url: str, tmp: Path, seed: int) -> None:
    rnd = random.Random(seed)
    with ledger.open(url) as lg:
        lg.ingest_records(batch(rnd, 60, "v1"))
        talk = [ExchangeSpec("plain", " ".join(rnd.choices(WORDS, k=3))) for _ in range(8)]
        data, _ = build_transcript(talk)
        (tmp / "chat.jsonl").write_bytes(data)
        lg.ingest_paths([tmp / "chat.jsonl"], format="transcript")
        lg.ingest_records(batch(rnd, 60, "v2"))


def banded(conn: Any, query: Any, mark: int, size: int) -> list[Hit]:
    out: list[Hit] = []
    after: After | None = None
    while True:
        band, after = hits_band(conn, query, mark, after, size)
        assert len(band) <= size
        out += band
        if after is None:
            return out


@pytest.mark.parametrize("seed", range(3))
def test_the_bands_end_to_end_are_the_one_sorted_list(
    db_url: str, tmp_path: Path, seed: int
) -> None:
    make_ledger(db_url, tmp_path, seed)
    rnd = random.Random(seed)
    sizes_seen = set()
    with ledger.open(db_url) as lg, read_transaction(lg._engine) as conn:
        head = read_head(conn).seq
        for _ in range(30):
            query = parse_query(" ".join(rnd.sample(WORDS, rnd.randrange(1, 4))))
            mark = rnd.choice([head, head - 1, 1])
            size = rnd.choice([1, 2, 3, 8, 40])
            plain = hits_page(conn, query, mark, 0, 10**6)
            got = banded(conn, query, mark, size)
            assert got == plain, (query, mark, size)
            sizes_seen.add(len(plain) > size)
    assert sizes_seen == {True, False}  # queries of one band and of many were read


def test_a_band_of_tied_matches_goes_on_after_its_last(db_url: str, tmp_path: Path) -> None:
    # Four versions hold the same words and score alike; one other scores lower.
    same = [chunk(id=f"same-{i}", content="harbor pilot") for i in range(4)]
    with ledger.open(db_url) as lg:
        lg.ingest_records([*same, chunk(id="other", content="pilot tax tax tax tax tax")])
    with ledger.open(db_url) as lg, read_transaction(lg._engine) as conn:
        mark = read_head(conn).seq
        query = parse_query("pilot")
        band, after = hits_band(conn, query, mark, None, 3)
        assert [h.chunk_id for h in band] == ["same-0", "same-1", "same-2"]
        assert after is not None and after.chunk_id == "same-2"  # inside the tie
        band, after = hits_band(conn, query, mark, after, 3)
        assert [h.chunk_id for h in band] == ["same-3"]  # the rest of the tie
        assert after is not None and after.chunk_id is None  # then below its score
        band, after = hits_band(conn, query, mark, after, 3)
        assert ([h.chunk_id for h in band], after) == (["other"], None)


@pytest.mark.parametrize("seed", range(2))
def test_the_live_hits_read_by_bands_are_the_plain_walks(
    db_url: str, tmp_path: Path, seed: int
) -> None:
    """`live_hits` (by bands, judged a step at a time) is the rule read
    plainly: of every match in `hits_page`'s order, those that are their id's
    live version."""
    make_ledger(db_url, tmp_path, seed)
    rnd = random.Random(seed)
    with ledger.open(db_url) as lg:
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=100)
        lg.retract(["c004", "c009"], from_date="2026-03-01")
    with ledger.open(db_url) as lg, read_transaction(lg._engine) as conn:
        head = read_head(conn).seq
        for _ in range(20):
            mark = rnd.choice([head, head - 1])  # with the retraction, and before it
            inputs = resolve_inputs(
                conn, rnd.choice(["2026-01-01", "2026-06-01"]), "default", ledger_at=mark
            )
            query = parse_query(" ".join(rnd.sample(WORDS, rnd.randrange(1, 4))))
            every = hits_page(conn, query, mark, 0, 10**6)
            live = live_versions(conn, inputs, sorted({h.chunk_id for h in every}))
            plain = [h for h in every if live[h.chunk_id] == h.vid]
            first, step = rnd.choice([1, 3, 8]), rnd.choice([None, 1, 2, 5])
            got = list(live_hits(conn, query, inputs, first=first, step=step))
            assert got == plain, (query, mark)
            assert len(got) < len(every)  # versions that are not live were read and left


@pytest.mark.parametrize("seed", range(2))
def test_the_scores_of_named_versions_are_their_scores_among_all_matches(
    db_url: str, tmp_path: Path, seed: int
) -> None:
    """`search_versions(vids=...)` looks the versions up in the index: each
    score is the one it has among every match (bm25 weighs a word by the whole
    index), and the versions are those of the whole search that are named."""
    make_ledger(db_url, tmp_path, seed)
    rnd = random.Random(seed)
    with ledger.open(db_url) as lg, read_transaction(lg._engine) as conn:
        for _ in range(20):
            query = parse_query(" ".join(rnd.sample(WORDS, rnd.randrange(1, 4))))
            every = search_versions(conn, query, limit=10**6)
            named = rnd.sample(range(1, 140), 12)  # some match, some do not
            limit = rnd.choice([3, 12])
            got = search_versions(conn, query, limit=limit, vids=named)
            assert got == [h for h in every if h.vid in named][:limit]
            assert got  # some named versions matched
