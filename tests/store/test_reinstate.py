"""`ledger reinstate`: a retraction undone from a date on, as one chained entry,
on each backend; verify covers its rows, replays are unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ledger
from tests import dbtools
from tests.clitools import run
from tests.conftest import chunk, run_ledger, write_jsonl


@pytest.fixture
def db(backend: str, request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    if backend == "postgresql":
        request.getfixturevalue("pg_server")
    path = dbtools.new_ledger(tmp_path / "db", backend)
    records = [
        chunk(id="faq", dedupe_key="faq", section="evidence", content="Refunds within 30 days."),
        chunk(id="guide", dedupe_key="guide", section="evidence", content="Shipping guide."),
    ]
    run_ledger("ingest", str(write_jsonl(tmp_path / "c.jsonl", records)), db=path, check=True)
    run_ledger("subject", "grant", "default", "public-read", db=path, check=True)
    run_ledger("policy", "set", "--allow-trust", "approved-source", "--budget", "500", db=path,
               check=True)  # fmt: skip
    yield path
    dbtools.drop(path)


def ids(pack: dict[str, Any]) -> list[str]:
    return [a["id"] for a in pack["admitted"]]


def test_a_reinstatement_undoes_a_retraction_from_its_date(db: str) -> None:
    with ledger.open(db) as lg:
        lg.retract(["faq"], from_date="2026-03-01", reason="removed by mistake")
        retracted = lg.build("2026-07-01").to_json()
        result = lg.reinstate(["faq"], from_date="2026-06-01", reason="restored")
        assert result.to_json()["ids"] == ["faq"] and result.from_date == "2026-06-01"
        before = lg.build("2026-05-01").to_json()  # before the reinstatement's date
        after = lg.build("2026-07-01").to_json()
        lg.retract(["faq"], from_date="2026-08-01")  # withdrawn again
        again = lg.build("2026-09-01").to_json()
        assert "faq" not in ids(retracted)
        assert "faq" not in ids(before)
        assert "faq" in ids(after)
        assert "faq" not in ids(again)
        # Every pack replays exactly, the one before the reinstatement included.
        for pack in (retracted, before, after, again):
            assert lg.replay(pack["pack"]).identical
        assert lg.verify().ok


def test_the_command_line_refuses_unknown_and_never_retracted_ids(db: str) -> None:
    before = run_ledger("head", "--json", db=db).stdout
    unknown = run("reinstate", "nope", "--from", "2026-06-01", db=db)
    assert unknown.returncode == 3 and "'nope' is not in the ledger" in unknown.stderr
    never = run("reinstate", "guide", "--from", "2026-06-01", db=db)
    assert never.returncode == 1 and "'guide' was never retracted" in never.stderr
    assert "Traceback" not in unknown.stderr + never.stderr
    assert run_ledger("head", "--json", db=db).stdout == before  # nothing written
    run_ledger("retract", "faq", "--from", "2026-03-01", db=db, check=True)
    done = run("reinstate", "faq", "--from", "2026-06-01", "--json", db=db)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ids"] == ["faq"]


def test_a_tampered_reinstatement_fails_verify(db: str) -> None:
    with ledger.open(db) as lg:
        lg.retract(["faq"], from_date="2026-03-01")
        entry = lg.reinstate(["faq"], from_date="2026-06-01").entry
    with dbtools.connect(db) as con:
        dbtools.execute(
            con, db, "UPDATE reinstatements SET from_date = '2026-01-01' WHERE entry_seq = ?",
            (entry,),
        )  # fmt: skip
    result = run("verify", db=db)
    assert result.returncode == 4
    assert f"entry {entry}" in result.stdout + result.stderr
