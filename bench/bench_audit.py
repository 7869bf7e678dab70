"""Benchmark the audit commands on a large ledger.

- why-evicted on a ledger of 500 packs of 20,000 candidates (10 million
  decisions; `--quick`: 10 packs): in-process lookup (no hints, and with the
  default hint, which re-runs the core on one pack), baseline raw `sqlite3`
  reading the same decision rows; and the whole `ledger why-evicted` command
  against a `ledger --help` process (issue 21: at most +300 ms).
- database command start-up: `ledger head` against `python -c "import
  sqlalchemy"` (issue 21: at most +150 ms).
- verify of that ledger; baseline: raw `sqlite3` reading every row and hashing
  every body (issue 21: at most 3 times).
- diff of two 100,000-candidate packs; baseline: raw `sqlite3` reading both
  packs' decision rows.

    .venv/bin/python bench/bench_audit.py [--quick]
"""

from __future__ import annotations

import gc
import hashlib
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen import diff_packs, setup_ledger  # noqa: E402

from ledger.core.reasons import BUDGET, DUPLICATE, NOT_YET_EFFECTIVE, SUPERSEDED  # noqa: E402


def _many_packs(url: str, tmp: Path, packs: int, candidates: int) -> None:
    from ledger.store.batch import run_batch
    from ledger.store.engine import make_engine

    setup_ledger(url, tmp / "audit.jsonl", candidates, 20_000)
    engine = make_engine(url)
    done = 0
    while done < packs:
        n = min(100, packs - done)
        lines = [
            f'{{"subject": "default", "as_of": "2026-{1 + (done + i) % 12:02d}-'
            f'{1 + (done + i) % 28:02d}", '
            f'"budget": {10_000 + 137 * (done + i)}}}'.encode()
            for i in range(n)
        ]
        run_batch(engine, "bench", lines, "estimated_tokens", False)
        done += n
    engine.dispose()


def _time(fn: Any, repeat: int = 7) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _interleaved(commands: dict[str, list[str]], runs: int, tmp: Path) -> dict[str, float]:
    """The median wall time of each command as a whole process, run in turns (so
    that a busy moment of the machine falls on all of them alike).

    With bytecode caching on, as a user's installation has it: the environment
    of this machine may set PYTHONDONTWRITEBYTECODE, which would make every start
    compile the editable tree's sources. The caches go to a folder of the bench
    (PYTHONPYCACHEPREFIX, for the baseline's packages too), filled by one
    untimed round."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    samples: dict[str, list[float]] = {k: [] for k in commands}
    for i in range(runs + 1):
        for name, cmd in commands.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=env)
            if i:
                samples[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in samples.items()}


def raw_verify_floor(con: sqlite3.Connection) -> float:
    """Seconds for raw `sqlite3` to read every row verify reads and hash every body:
    the entries, every version with a SHA-256 of its content, every decision with
    its version's record digest (in pack order), the packs, grants and policies."""
    t0 = time.perf_counter()
    con.execute("SELECT * FROM entries ORDER BY seq").fetchall()
    for row in con.execute("SELECT content, content_digest, record_digest FROM chunk_versions"):
        hashlib.sha256(row[0].encode()).hexdigest()
    for table in ("packs", "grants", "policies", "batches"):
        con.execute(f"SELECT * FROM {table}").fetchall()
    for _ in con.execute(
        "SELECT d.pack_no, d.status, d.tokens, d.position, d.remaining, d.ref_vid, "
        "v.record_digest FROM decisions d JOIN chunk_versions v ON v.vid = d.vid "
        "ORDER BY d.pack_no"
    ):
        pass
    return time.perf_counter() - t0


HINT_REASONS = (DUPLICATE, BUDGET, SUPERSEDED, NOT_YET_EFFECTIVE)


def _evicted_for(con: sqlite3.Connection, reason: str) -> str:
    """The first chunk (by version id) the newest pack evicted for `reason`."""
    from ledger.core.reasons import REASON_CODES

    row = con.execute(
        "SELECT v.chunk_id FROM decisions d JOIN chunk_versions v ON v.vid = d.vid "
        "WHERE d.pack_no = (SELECT max(pack_no) FROM packs) AND d.status = ? "
        "ORDER BY v.vid LIMIT 1",
        (REASON_CODES[reason],),
    ).fetchone()
    if row is None:
        raise RuntimeError(f"the bench's newest pack evicted nothing for {reason}")
    return str(row[0])


def bench_why(tmp: Path, packs: int, candidates: int) -> list[dict[str, Any]]:
    from ledger.store.engine import make_engine, read_transaction
    from ledger.store.verify import verify
    from ledger.store.why_evicted import why_evicted

    db_file = tmp / "audit.db"
    url = f"sqlite:///{db_file}"
    t0 = time.perf_counter()
    _many_packs(url, tmp, packs, candidates)
    setup_s = time.perf_counter() - t0
    con = sqlite3.connect(db_file)
    n_dec = con.execute("SELECT count(*) FROM decisions").fetchone()[0]
    refs = [r[0] for r in con.execute("SELECT chunk_id FROM chunk_versions ORDER BY vid")]
    rnd = random.Random(3)
    sample = [rnd.choice(refs) for _ in range(7)]
    engine = make_engine(url)
    it = iter(sample * 3)

    def lookup(hints: str) -> None:
        with read_transaction(engine) as conn:
            why_evicted(conn, next(it), None, hints)

    ours_none = _time(lambda: lookup("none"))
    ours_hint = _time(lambda: lookup("newest"), repeat=5)
    it2 = iter(sample * 3)

    def raw() -> None:
        vids = [
            v
            for (v,) in con.execute(
                "SELECT vid FROM chunk_versions WHERE chunk_id = ?", (next(it2),)
            )
        ]
        for vid in vids:
            con.execute(
                "SELECT d.pack_no, d.status, d.tokens, d.remaining, p.pack_digest, p.as_of, "
                "p.subject "
                "FROM decisions d JOIN packs p ON p.pack_no = d.pack_no WHERE d.vid = ? "
                "ORDER BY d.pack_no DESC",
                (vid,),
            ).fetchall()

    base = _time(raw)
    ledger_cmd = [sys.executable, "-m", "ledger_cli", "--db", str(db_file)]
    why_cmd = [*ledger_cmd, "why-evicted", "--json"]
    # The default hint's cost depends on the reason: a duplicate's is decided
    # among its rivals, a budget eviction's among the pack's survivors, and a
    # hint that moves as_of (not yet effective, superseded) re-runs the selector
    # on every candidate that could then pass. One chunk evicted for each
    # reason from the newest pack (the first by version id: no choice of ours).
    hinted = {reason: _evicted_for(con, reason) for reason in HINT_REASONS}
    whole = _interleaved(
        {
            "help": [*ledger_cmd, "--help"],
            **{f"why {reason}": [*why_cmd, ref] for reason, ref in hinted.items()},
            "why_none": [*why_cmd, "--hints", "none", hinted[BUDGET]],
            "head": [*ledger_cmd, "head"],
            "sqlalchemy": [sys.executable, "-c", "import sqlalchemy"],
        },
        7,
        tmp,
    )

    # The cyclic collector paused around the call, as the command line pauses it
    # at the program's edge (verify reads one object per decision and version).
    t0 = time.perf_counter()
    gc.disable()
    try:
        with read_transaction(engine) as conn:
            result = verify(conn)
    finally:
        gc.enable()
    verify_s = time.perf_counter() - t0
    floor = raw_verify_floor(con)
    engine.dispose()
    con.close()
    size_mb = db_file.stat().st_size / 1e6
    note = (
        f"{packs:,} packs x {candidates:,}: {n_dec:,} decisions, {size_mb:,.0f} MB, "
        f"built in {setup_s:.0f} s"
    )

    def plus(ours: float, baseline: float, bar_ms: int, what: str) -> dict[str, Any]:
        extra = (ours - baseline) * 1000
        return {
            "ours": ours,
            "baseline": baseline,
            "unit": "s",
            "target": f"<= +{bar_ms} ms",
            "ok": extra <= bar_ms,
            "note": f"{extra:+.0f} ms over {what} (median of 7, interleaved)",
        }

    return [
        {
            "bench": "why-evicted in-process, no hint",
            "ours": ours_none,
            "baseline": base,
            "unit": "s",
            "target": "< 50 ms",
            "ok": ours_none < 0.05,
            "note": note,
        },
        {
            "bench": "why-evicted in-process, newest hint",
            "ours": ours_hint,
            "baseline": base,
            "unit": "s",
            "target": "reported",
            "ok": True,
            "note": f"hint re-runs the core on one {candidates:,}-candidate pack",
        },
        {
            "bench": "why-evicted whole command, no hint",
            **plus(whole["why_none"], whole["help"], 300, "`ledger --help`"),
            "target": "reported",
            "ok": True,
        },
        *(
            {
                "bench": f"why-evicted whole command, default hint, {reason} ({candidates:,})",
                **plus(whole[f"why {reason}"], whole["help"], 300, "`ledger --help`"),
            }
            for reason in HINT_REASONS
        ),
        {
            "bench": "database command start-up (`ledger head`)",
            **plus(whole["head"], whole["sqlalchemy"], 150, '`python -c "import sqlalchemy"`'),
        },
        {
            "bench": "verify",
            "ours": verify_s,
            "baseline": floor,
            "unit": "s",
            "target": "ratio <= 3",
            "ok": result.ok and verify_s / floor <= 3,
            "note": f"{result.decisions:,} decisions, {result.decisions / verify_s:,.0f}/s; "
            "baseline: raw sqlite3 reads every row + sha256 of every body",
        },
    ]


def bench_diff(tmp: Path, candidates: int) -> list[dict[str, Any]]:
    from ledger.store.diff import diff
    from ledger.store.engine import read_transaction

    db_file = tmp / "diff.db"
    engine, a, b = diff_packs(f"sqlite:///{db_file}", tmp / "diff.jsonl", candidates)

    def ours() -> None:
        with read_transaction(engine) as conn:
            diff(conn, a, b)

    with read_transaction(engine) as conn:
        changes = len(diff(conn, a, b)["changes"])
    t = _time(ours, 3)
    con = sqlite3.connect(db_file)

    def raw() -> None:
        for p in (a, b):
            con.execute(
                "SELECT d.vid, d.status, v.chunk_id, v.source_version FROM decisions d "
                "JOIN chunk_versions v ON v.vid = d.vid WHERE d.pack_no = ?",
                (p,),
            ).fetchall()

    base = _time(raw, 3)
    con.close()
    engine.dispose()
    return [
        {
            "bench": f"diff of two {candidates:,}-candidate packs",
            "ours": t,
            "baseline": base,
            "unit": "s",
            "target": "< 1 s",
            "ok": t < 1.0,
            "note": f"{changes:,} changes",
        }
    ]


def rows(quick: bool) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as d:
        tmp = Path(d)
        out = bench_diff(tmp, 20_000 if quick else 100_000)
        # Packs of 20,000 candidates (issue 21's why-evicted row); the full ledger
        # keeps the 10,000,000 decisions of the earlier in-process targets.
        out += bench_why(tmp, 10 if quick else 500, 20_000)
        return out


def main() -> None:
    from table import run_main

    run_main(__doc__, rows)


if __name__ == "__main__":
    main()
