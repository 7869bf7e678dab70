"""`fetch_tuples_fast` (a statement compiled once, run on the driver's cursor)
gives `fetch_tuples`' rows, on both backends: textual statements with named
values used more than once, None, numbers and text; statements SQLAlchemy
builds with typed values; the first statement of a transaction; and a
failing statement raises SQLAlchemy's error without its values."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import bindparam, select, text
from sqlalchemy.exc import DBAPIError

import ledger
from ledger.store.engine import fetch_tuples, fetch_tuples_fast, read_transaction
from ledger.store.schema import versions
from tests.conftest import chunk

# Each value is used twice, and compared as a number, as text and with NULL.
TEXTUAL = text(
    "SELECT vid, chunk_id, CAST(:low AS DOUBLE PRECISION) AS low FROM chunk_versions "
    "WHERE (CAST(:low AS DOUBLE PRECISION) IS NULL OR vid >= CAST(:low AS DOUBLE PRECISION)) "
    "AND (CAST(:word AS VARCHAR) IS NULL OR chunk_id > CAST(:word AS VARCHAR)) "
    "ORDER BY vid LIMIT :size"
)
TYPED = (
    select(versions.c.vid, versions.c.chunk_id, versions.c.source_version)
    .where(versions.c.vid > bindparam("after"), versions.c.section == "evidence")
    .order_by(versions.c.vid)
)


def values(rnd: random.Random) -> dict[str, object]:
    return {
        "low": rnd.choice([None, 0, 3, 7.5, 40]),
        "word": rnd.choice([None, "", "c010", "c05", "zzz"]),
        "size": rnd.choice([0, 1, 5, 100]),
    }


@pytest.mark.parametrize("seed", range(3))
def test_the_fast_rows_are_fetch_tuples_rows(db_url: str, seed: int) -> None:
    rnd = random.Random(seed)
    sections = ["evidence", "policy", "state"]
    records = [
        chunk(id=f"c{i:03d}", section=sections[i % 3], dedupe_key=f"c{i:03d}") for i in range(30)
    ]
    with ledger.open(db_url) as lg:
        lg.ingest_records(records)
        with read_transaction(lg._engine) as conn:
            for _ in range(40):
                params = values(rnd)
                assert fetch_tuples_fast(conn, TEXTUAL, params) == fetch_tuples(
                    conn, TEXTUAL, params
                ), params
                after = {"after": rnd.randrange(0, 32)}
                fast = fetch_tuples_fast(conn, TYPED, after)
                assert fast == fetch_tuples(conn, TYPED, after), after
        # Not yet in a transaction: the first statement begins it, as any other.
        with lg._engine.connect() as conn:
            params = {"low": 5, "word": None, "size": 3}
            rows = fetch_tuples_fast(conn, TEXTUAL, params)
            assert conn.in_transaction()
            assert [r[0] for r in rows] == [5, 6, 7]


def test_a_failing_statement_raises_sqlalchemys_error_without_its_values(db_url: str) -> None:
    bad = text("SELECT no_such_column FROM chunk_versions WHERE chunk_id = :secret")
    with ledger.open(db_url) as lg:
        lg.ingest_records([chunk(id="c001")])
        with read_transaction(lg._engine) as conn:
            fetch_tuples(conn, TEXTUAL, values(random.Random(1)))  # begun
            with pytest.raises(DBAPIError) as caught:
                fetch_tuples_fast(conn, bad, {"secret": "body-of-a-chunk"})
    assert "no_such_column" in str(caught.value)
    assert "body-of-a-chunk" not in str(caught.value)
