"""Crashes: `ledger erase` killed with SIGKILL at random moments (issue 19).

As for ingest and build (tests/robust/test_crash.py, whose method this copies):
after every kill the database opens and verifies clean, and the erase happened
whole or not at all: every body of the run erased, with its `erasures` row and
one `erase` entry, or none of them. The moments are seeded (LEDGER_CRASH_SEED)
and measured against a full run on this machine: uniform over the run, late
(around the commit), and on SQLite at a random size of the write-ahead log.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tests import dbtools
from tests.clitools import ledger_cmd, run, verify_ok
from tests.conftest import chunk, write_jsonl
from tests.robust.test_crash import SEED, calibrate, integrity_check, kill_moment, run_and_kill

VERSIONS = 1_500
TRIALS = {"sqlite": 9, "postgresql": 3}


def _seed(db: str, tmp_path: Path) -> None:
    records = [
        chunk(
            id=f"gone-{i:05d}",
            dedupe_key=f"gone-{i:05d}",
            expires_on="2026-06-01",
            content=f"Body {i} of a customer record. " + "Lorem ipsum dolor sit amet. " * 60,
        )
        for i in range(VERSIONS)
    ]
    records.append(chunk(id="stays", dedupe_key="stays", content="Still valid."))
    run("ingest", str(write_jsonl(tmp_path / "r.jsonl", records)), db=db, check=True)
    run("subject", "grant", "default", "public-read", db=db, check=True)
    run("policy", "set", "--allow-trust", "approved-source", db=db, check=True)
    run("build", "--as-of", "2026-05-01", "--budget", "100000", db=db, check=True)


def _erased(db: str) -> tuple[int, int, int]:
    """(bodies NULL, erasure rows, erase entries)."""
    nulls = dbtools.query(db, "SELECT count(*) FROM chunk_versions WHERE content IS NULL")
    rows = dbtools.query(db, "SELECT count(*) FROM erasures")
    kinds = dbtools.query(db, "SELECT count(*) FROM entries WHERE kind = 'erase'")
    return int(nulls[0][0]), int(rows[0][0]), int(kinds[0][0])


def _url(db: str) -> str:
    return db if dbtools.is_pg(db) else "sqlite:///" + db


def test_sigkill_during_erase_leaves_all_or_nothing(
    new_db: Any, backend: str, tmp_path: Path
) -> None:
    rng = random.Random(SEED + 19)
    seeded = new_db("seeded")
    _seed(seeded, tmp_path)
    base = verify_ok(_url(seeded))
    args = ("erase", "--ended-before", "2026-07-01", "--reason", "crash test")

    def fresh(trial: int) -> str:
        return dbtools.copy_ledger(seeded, tmp_path / f"trial-{trial}.db")

    def wal(db: str) -> Path | None:
        return None if dbtools.is_pg(db) else Path(db + "-wal")

    db = fresh(-1)
    duration, wal_max = calibrate(ledger_cmd(*args, db=db), wal(db))
    assert _erased(db) == (VERSIONS, VERSIONS, 1)
    dbtools.drop(db)

    killed = 0
    for trial in range(TRIALS[backend]):
        db = fresh(trial)
        moment = kill_moment(rng, trial, duration, 0 if wal(db) is None else wal_max)
        outcome = run_and_kill(ledger_cmd(*args, db=db), wal=wal(db), **moment)
        assert outcome.killed or outcome.returncode == 0, outcome.stderr
        killed += outcome.killed
        entries = verify_ok(_url(db))
        state = _erased(db)
        assert state in ((0, 0, 0), (VERSIONS, VERSIONS, 1)), (trial, moment, state)
        assert entries == base + state[2], (trial, entries, state)
        if not dbtools.is_pg(db):
            integrity_check(Path(db))
        # The ledger takes the erase (again) as if nothing had happened.
        again = run(*args, "--json", db=db, check=True)
        assert _erased(db) == (VERSIONS, VERSIONS, 1), again.stderr
        assert verify_ok(_url(db)) == base + 1
        dbtools.drop(db)
    print(f"erase on {backend}: {TRIALS[backend]} trials, {killed} killed, run {duration:.2f}s")
    assert killed >= TRIALS[backend] // 2
