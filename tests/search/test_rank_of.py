"""`rank_of` gives a chunk's place among a query's live matches, as walking
them would, and says None without the walk when its live version does not
match (or it has none)."""

from __future__ import annotations

import random

import pytest

import ledger
from ledger.core.query import parse_query
from ledger.store.chain import read_head
from ledger.store.engine import read_transaction
from ledger.store.inputs import resolve_inputs
from ledger.store.retriever import live_hits, rank_of
from tests.check.test_check_reads import DATES, WORDS, make_ledger


def walked(conn: object, query: object, chunk_id: str, inputs: object) -> object:
    """The rule: the chunk's place in the walk over every live match."""
    for rank, hit in enumerate(live_hits(conn, query, inputs), 1):  # type: ignore[arg-type]
        if hit.chunk_id == chunk_id:
            return rank, hit.score
    return None


@pytest.mark.parametrize("seed", range(4))
def test_rank_of_is_the_walks_answer(db_url: str, seed: int) -> None:
    db = make_ledger(db_url, seed)
    rnd = random.Random(seed)
    ids = [f"c{i:02d}" for i in range(18)]  # two never ingested
    answers = set()
    with ledger.open(db) as lg, read_transaction(lg._engine) as conn:
        mark = read_head(conn).seq
        for _ in range(25):
            inputs = resolve_inputs(
                conn, rnd.choice(DATES), rnd.choice(["default", "staff"]), ledger_at=mark
            )
            query = parse_query(" ".join(rnd.sample(WORDS, rnd.randrange(1, 3))))
            for chunk_id in ids:
                got = rank_of(conn, query, chunk_id, inputs)
                assert got == walked(conn, query, chunk_id, inputs), (chunk_id, query)
                answers.add(got is None)
    assert answers == {True, False}  # both kinds of answer were checked
