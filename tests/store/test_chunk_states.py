"""`ledger chunks`: each version's state on a date at the head (issue 39):
current, superseded {by}, retracted {from, entry}, expired, not_yet_effective,
erased {entry}; undone by a reinstatement; per scope for transcripts."""

from __future__ import annotations

from pathlib import Path

import pytest

import ledger
from tests import dbtools
from tests.conftest import chunk, run_ledger


def _records() -> list[dict[str, object]]:
    return [
        chunk(id="faq", dedupe_key="faq", source_version="v1", content="Refunds in 30 days."),
        chunk(
            id="faq",
            dedupe_key="faq",
            source_version="v2",
            effective_from="2026-03-01",
            content="Refunds in 14 days.",
        ),  # fmt: skip
        chunk(id="promo", dedupe_key="promo", expires_on="2026-02-01", content="Winter sale."),
        chunk(id="launch", dedupe_key="launch", effective_from="2026-05-01", content="Launch."),
        chunk(id="guide", dedupe_key="guide", content="Shipping guide."),
        chunk(id="secret", dedupe_key="secret", content="A pasted address."),
    ]


@pytest.fixture
def db(backend: str, request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    if backend == "postgresql":
        request.getfixturevalue("pg_server")
    path = dbtools.new_ledger(tmp_path / "db", backend)
    with ledger.open(path) as lg:
        lg.ingest_records(_records())
        lg.retract(["guide"], from_date="2026-04-01", reason="moved")
        lg.erase(["secret"], reason="pasted by mistake")
    yield path
    dbtools.drop(path)


def states(db: str, as_of: str) -> dict[tuple[str, str], tuple[str, dict[str, object]]]:
    with ledger.open(db) as lg:
        rows = lg.chunks(as_of=as_of).to_json()["chunks"]
    return {(r["id"], r["source_version"]): (r["state"], r["state_detail"]) for r in rows}


def digest_of(db: str, chunk_id: str, version: str) -> str:
    rows = dbtools.query(
        db,
        "SELECT record_digest FROM chunk_versions WHERE chunk_id = ? AND source_version = ?",
        (chunk_id, version),
    )
    return str(rows[0][0])


def test_each_version_has_its_state_on_the_date(db: str) -> None:
    march = states(db, "2026-03-15")
    state, detail = march[("faq", "v1")]
    assert state == "superseded" and detail["by"]["source_version"] == "v2"
    assert detail["by"]["record_digest"] == digest_of(db, "faq", "v2")
    assert march[("faq", "v2")] == ("current", {})
    assert march[("promo", "1")][0] == "expired"
    assert march[("launch", "1")][0] == "not_yet_effective"
    assert march[("guide", "1")] == ("current", {})  # the retraction starts in April
    assert march[("secret", "1")] == ("erased", {"entry": 3})
    june = states(db, "2026-06-01")
    assert june[("guide", "1")] == ("retracted", {"from": "2026-04-01", "entry": 2})
    assert june[("launch", "1")] == ("current", {})
    january = states(db, "2026-01-15")
    assert january[("faq", "v1")] == ("current", {})
    assert january[("faq", "v2")][0] == "not_yet_effective"


def test_a_reinstatement_makes_the_version_current_again(db: str) -> None:
    with ledger.open(db) as lg:
        lg.reinstate(["guide"], from_date="2026-05-01")
    assert states(db, "2026-04-15")[("guide", "1")][0] == "retracted"
    assert states(db, "2026-05-01")[("guide", "1")] == ("current", {})


def test_the_command_line_shows_the_state_and_refuses_a_bad_date(db: str) -> None:
    out = run_ledger("chunks", "--as-of", "2026-06-01", "--id", "guide", db=db, check=True)
    assert "retracted from 2026-04-01 (entry 2)" in out.stdout
    out = run_ledger("chunks", "--as-of", "2026-03-15", "--id", "faq", db=db, check=True)
    assert "superseded by v2" in out.stdout and "current" in out.stdout
    bad = run_ledger("chunks", "--as-of", "March", db=db)
    assert bad.returncode == 1 and "as-of" in bad.stderr and "Traceback" not in bad.stderr
