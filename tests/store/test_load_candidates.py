"""A build's candidates as `load_candidates` reads them (one row of JSON arrays,
a column each), on each backend: the same Candidates a plain query of the
stored versions makes, each version's id, and none at all for an empty pool."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import false, select

import ledger
from ledger.core.context import Candidate
from ledger.store.candidates import load_candidates
from ledger.store.chain import read_head
from ledger.store.engine import make_engine, read_transaction
from ledger.store.schema import versions
from tests.conftest import FIXTURE, chunk


def _records() -> list[dict[str, Any]]:
    """The seed-001 chunks, two more versions of one of them (one required, one
    with an expiry), and text that JSON must escape."""
    records: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["chunks"]
    return [
        *records,
        chunk(id="quoted", source_version='v"2\\\u00e9', dedupe_key="q2", content="Second."),
        chunk(
            id="quoted",
            source_version="v3",
            dedupe_key="q3",
            required=True,
            expires_on="2027-01-01",
            content="Third.",
        ),
    ]


@pytest.fixture
def stored(db_url: str) -> str:
    with ledger.open(db_url) as lg:
        lg.ingest_records(_records())
    return db_url


def test_candidates_are_the_stored_versions(stored: str) -> None:
    engine = make_engine(stored)
    try:
        with read_transaction(engine) as conn:
            mark = read_head(conn).seq
            candidates, vid_of = load_candidates(conn, mark, "estimated_tokens")
            c = versions.c
            rows = conn.execute(
                select(
                    c.vid,
                    c.chunk_id,
                    c.source_version,
                    c.section,
                    c.effective_from,
                    c.expires_on,
                    c.required_permission,
                    c.trust,
                    c.dedupe_key,
                    c.estimated_tokens,
                    c.priority,
                    c.required,
                    c.record_digest,
                    c.content_digest,
                    c.batch_seq,
                ).where(c.scope.is_(None))
            ).all()
            none, no_vids = load_candidates(conn, mark, "estimated_tokens", where=false())
    finally:
        engine.dispose()
    expected = {r.record_digest: Candidate(*r[1:11], bool(r.required), *r[12:15]) for r in rows}
    assert len(candidates) == len(rows) == len(_records())
    assert {c.record_digest: c for c in candidates} == expected
    assert all(type(c.required) is bool for c in candidates)
    assert vid_of == {r.record_digest: r.vid for r in rows}
    assert sum(c.source_version == 'v"2\\\u00e9' for c in candidates) == 1
    required = next(c for c in candidates if c.source_version == "v3")
    assert (required.required, required.expires_on) == (True, "2027-01-01")
    assert (none, no_vids) == ([], {})
