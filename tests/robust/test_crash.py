"""Crashes: `ledger ingest` and `ledger build` killed with SIGKILL at random moments.

After every kill the database opens, verifies clean (every digest and the whole
chain), and each run is wholly present or wholly absent: all 20,000 chunk
versions of an ingest file or none of them, one pack (or every pack of a
`--batch`) or none, and one ledger entry per recorded run, numbered without
gaps. The ledger then takes the next write as if nothing had happened.

Kill moments are seeded (LEDGER_CRASH_SEED, default 8) and spread three ways:
uniform over the run, late in the run (where the commit is), and, on SQLite,
when the write-ahead log reaches a random size (in the middle of the writing).
Durations are measured on this machine first, so the moments scale with it.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.clitools import (
    clean_env,
    cli_verify_ok,
    count_versions,
    ledger_cmd,
    pack_numbers,
    run,
    sqlite_url,
    verify_ok,
    write_generated,
    write_lines,
)

SEED = int(os.environ.get("LEDGER_CRASH_SEED", "8"))
LINES = 20_000
# 24 + 18 + 2 x 4 = 50 kills on SQLite, 8 on PostgreSQL.
INGEST_TRIALS = 24  # SQLite, a fresh copy of a seeded ledger each
BUILD_TRIALS = 18  # SQLite, one ledger that accumulates packs
BACKEND_TRIALS = 4  # per kind (ingest, build) and backend, SQLite and PostgreSQL
BACKEND_LINES = 5_000
CANDIDATES = 3_000
BACKEND_CANDIDATES = 1_000
BATCH = [
    b'{"subject": "default", "as_of": "2026-05-15"}',
    b'{"subject": "default", "as_of": "2026-08-01", "budget": 3000}',
    b'{"subject": "other", "as_of": "2026-09-30"}',
]


@dataclass
class Outcome:
    killed: bool  # False: the run ended by itself before the kill moment
    returncode: int
    at: float  # seconds after start
    stderr: str


def run_and_kill(
    cmd: list[str],
    *,
    after: float | None = None,
    wal: Path | None = None,
    wal_bytes: int | None = None,
    limit: float = 120,
) -> Outcome:
    """Start `cmd`; SIGKILL it `after` seconds in, or once `wal` holds `wal_bytes`."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=clean_env())
    try:
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
                return Outcome(False, proc.returncode, time.monotonic() - start, err)
            elapsed = time.monotonic() - start
            if after is not None and elapsed >= after:
                break
            if wal is not None and wal_bytes is not None and _size(wal) >= wal_bytes:
                break
            assert elapsed < limit, f"{cmd} still running after {limit}s"
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        return Outcome(True, proc.returncode, time.monotonic() - start, "")
    finally:
        if proc.poll() is None:  # a failed assertion above: do not leave it running
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def calibrate(cmd: list[str], wal: Path | None = None) -> tuple[float, int]:
    """Run `cmd` to completion; return its duration and the largest WAL size seen."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=clean_env())
    biggest = 0
    while proc.poll() is None:
        if wal is not None:
            biggest = max(biggest, _size(wal))
        time.sleep(0.002)
    duration = time.monotonic() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    assert proc.returncode == 0, err
    return duration, biggest


def kill_moment(rng: random.Random, trial: int, duration: float, wal_max: int) -> dict[str, float]:
    """The trial's kill moment: uniform, late (around the commit) or at a WAL size."""
    kind = trial % 3
    if kind == 0:
        return {"after": rng.uniform(0.05, 1.0) * duration}
    if kind == 1 or wal_max == 0:
        return {"after": rng.uniform(0.85, 1.1) * duration}
    return {"wal_bytes": rng.uniform(0.0, 1.02) * wal_max}


def integrity_check(path: Path) -> None:
    import sqlite3

    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        con.close()


def ingest_small(url: str, path: Path, expected_seq: int) -> None:
    """After a crash the ledger takes the next write: its entry follows without a gap."""
    from ledger.api.ingest import ingest_files as ingest
    from ledger.store.engine import open_engine

    engine = open_engine(url)
    try:
        summary = ingest(engine, [str(path)])
    finally:
        engine.dispose()
    assert summary.batch == expected_seq


def test_sigkill_during_ingest_leaves_all_or_nothing(
    seeded_sqlite_base: Path, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    big = write_generated(tmp_path / "big.jsonl", LINES, "crash-", "Crash-test body " * 8)
    base_entries = verify_ok(sqlite_url(seeded_sqlite_base))
    follow = write_generated(tmp_path / "follow.jsonl", 3, "follow-")

    def fresh(trial: int) -> tuple[Path, str]:
        db = tmp_path / f"trial-{trial}.db"
        shutil.copyfile(seeded_sqlite_base, db)
        return db, sqlite_url(db)

    db, url = fresh(0)
    duration, wal_max = calibrate(ledger_cmd("ingest", str(big), db=url), Path(str(db) + "-wal"))
    assert count_versions(url, "crash-") == LINES
    db.unlink()

    results = []
    for trial in range(INGEST_TRIALS):
        db, url = fresh(trial)
        moment = kill_moment(rng, trial, duration, wal_max)
        outcome = run_and_kill(
            ledger_cmd("ingest", str(big), db=url), wal=Path(str(db) + "-wal"), **moment
        )
        assert outcome.killed or outcome.returncode == 0, outcome.stderr
        # The database opens (schema current), verifies, and holds the run whole or not at all.
        entries = verify_ok(url)
        stored = count_versions(url, "crash-")
        assert stored in (0, LINES), (trial, moment, stored)
        assert entries == base_entries + (1 if stored else 0), (trial, entries, stored)
        integrity_check(db)
        if trial % 5 == 4:
            cli_verify_ok(url)
        ingest_small(url, follow, entries + 1)
        results.append((outcome.killed, stored == LINES))
        for leftover in (db, Path(str(db) + "-wal"), Path(str(db) + "-shm")):
            leftover.unlink(missing_ok=True)

    killed = sum(1 for k, _ in results if k)
    committed = sum(1 for _, c in results if c)
    print(
        f"ingest: {len(results)} trials, {killed} killed, {committed} committed, "
        f"run {duration:.2f}s"
    )
    assert killed >= INGEST_TRIALS // 2, results


@pytest.fixture(scope="module")
def candidates_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite ledger with a few thousand candidates, grants and a policy."""
    folder = tmp_path_factory.mktemp("candidates")
    path = folder / "ledger.db"
    url = sqlite_url(path)
    run("init", db=url, check=True)
    run("ingest", str(write_generated(folder / "c.jsonl", CANDIDATES, "cand-")), db=url, check=True)
    run("subject", "grant", "default", "public-read", "state-read", db=url, check=True)
    run(
        "policy",
        "set",
        "--allow-trust",
        "approved-source",
        "--allow-trust",
        "user-input",
        "--allow-trust",
        "confirmed-state",
        "--budget",
        "5000",
        db=url,
        check=True,
    )
    return path


def build_trials(
    url: str, batch: Path, trials: int, rng: random.Random, wal: Path | None
) -> list[bool]:
    """Kill `build` (one pack) and `build --batch` (three packs, one transaction)."""
    single = ledger_cmd("build", "--as-of", "2026-07-21", db=url)
    many = ledger_cmd("build", "--batch", str(batch), db=url)
    # Each timed by the fastest of three runs: a duration too long (the first
    # run's cold caches, a busy moment of the other test workers) puts the kill
    # moments after the run's end, while one too short only kills earlier.
    timing = {}
    for kind, cmd in (("single", single), ("batch", many)):
        runs = [calibrate(cmd, wal) for _ in range(3)]
        timing[kind] = (min(d for d, _ in runs), max(w for _, w in runs))
    expected = {"single": 1, "batch": len(BATCH)}
    outcomes = []
    entries = verify_ok(url)
    for trial in range(trials):
        kind = "single" if trial % 2 == 0 else "batch"
        before_packs = pack_numbers(url)
        duration, wal_max = timing[kind]
        moment = kill_moment(rng, trial // 2, duration, wal_max)
        outcome = run_and_kill(single if kind == "single" else many, wal=wal, **moment)
        assert outcome.killed or outcome.returncode == 0, outcome.stderr
        packs = pack_numbers(url)
        # Pack numbers stay 1..n, and a run adds all of its packs or none.
        assert packs == list(range(1, len(packs) + 1)), packs
        added = len(packs) - len(before_packs)
        assert added in (0, expected[kind]), (trial, kind, moment, added)
        before_entries, entries = entries, verify_ok(url)  # every pack verifies; no gaps
        assert entries == before_entries + added
        outcomes.append(outcome.killed)
    # The newest pack (the calibration runs recorded some) replays exactly.
    from ledger.store.engine import open_engine, read_transaction
    from ledger.store.replay import replay

    engine = open_engine(url)
    try:
        with read_transaction(engine) as conn:
            assert replay(conn, pack_numbers(url)[-1]).identical
    finally:
        engine.dispose()
    return outcomes


def test_sigkill_during_build_leaves_whole_packs_or_none(
    candidates_db: Path, tmp_path: Path
) -> None:
    url = sqlite_url(candidates_db)
    batch = write_lines(tmp_path / "batch.jsonl", BATCH)
    killed = build_trials(
        url, batch, BUILD_TRIALS, random.Random(SEED + 1), Path(str(candidates_db) + "-wal")
    )
    integrity_check(candidates_db)
    cli_verify_ok(url)
    print(f"build: {len(killed)} trials, {sum(killed)} killed")
    assert sum(killed) >= BUILD_TRIALS // 2


def test_sigkill_on_both_backends(db_url: str, tmp_path: Path) -> None:
    """Fewer trials, one ledger per backend that accumulates what survives."""
    rng = random.Random(SEED + 2)
    candidates = write_generated(tmp_path / "c.jsonl", BACKEND_CANDIDATES, "cand-")
    run("ingest", str(candidates), db=db_url, check=True)
    run("subject", "grant", "default", "public-read", "state-read", db=db_url, check=True)
    run(
        "policy",
        "set",
        "--allow-trust",
        "approved-source",
        "--budget",
        "5000",
        db=db_url,
        check=True,
    )
    files = [
        write_generated(tmp_path / f"k{t}.jsonl", BACKEND_LINES, f"k{t}-", "Backend body " * 8)
        for t in range(BACKEND_TRIALS + 1)
    ]
    duration, _ = calibrate(ledger_cmd("ingest", str(files[-1]), db=db_url))
    killed = 0
    for trial in range(BACKEND_TRIALS):
        before = verify_ok(db_url)
        moment = kill_moment(rng, trial * 3 % 2, duration, 0)  # uniform, then late
        outcome = run_and_kill(ledger_cmd("ingest", str(files[trial]), db=db_url), **moment)
        assert outcome.killed or outcome.returncode == 0, outcome.stderr
        killed += outcome.killed
        stored = count_versions(db_url, f"k{trial}-")
        assert stored in (0, BACKEND_LINES), (trial, moment, stored)
        assert verify_ok(db_url) == before + (1 if stored else 0)
    batch = write_lines(tmp_path / "batch.jsonl", BATCH)
    killed += sum(build_trials(db_url, batch, BACKEND_TRIALS, rng, None))
    cli_verify_ok(db_url)
    if db_url.startswith("sqlite"):
        from ledger.store.engine import make_engine

        engine = make_engine(db_url)
        try:
            with engine.connect() as conn:
                assert conn.execute(text("PRAGMA integrity_check")).scalar_one() == "ok"
        finally:
            engine.dispose()
    assert killed >= BACKEND_TRIALS
