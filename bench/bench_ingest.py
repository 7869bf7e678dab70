"""Benchmark `ledger ingest`: throughput against raw SQLite, and peak memory.

Throughput: 100,000 generated chunks as JSON Lines, in two data shapes (issue
21: the gap depends on the data): `records` (about 400-byte contents, dedupe
groups of three, second versions) and `short` (40-120 characters, one chunk per
dedupe group, 1 % required, longer ids, so per-row costs dominate). Ours:
`ledger.api.ingest.ingest_files` into a fresh migrated SQLite file (read, strict
parse, validate, digest, store, dedupe check, seal the entry). Baseline, in the
same run: a raw `sqlite3` `executemany` of the same rows with a SHA-256 per content
computed in the timed loop (the record digests are values of the rows, computed
beforehand) into a second file with the same schema, created by the real
migration, with the same pragmas, then the full-text index of those contents
as the ledger keeps it (one `INSERT ... SELECT` of every body into the
migration's FTS5 table), in one `BEGIN IMMEDIATE` transaction: the work the
ledger must do, done by SQLite alone.
Target (issue 21): ours takes at most 2 times the baseline, for each shape.

Memory: the peak resident set (ru_maxrss) of a subprocess running `ledger ingest`
on 1,000,000 lines. Target: under 300 MB.

    .venv/bin/python bench/bench_ingest.py            # 100,000 and 1,000,000 (a few minutes)
    .venv/bin/python bench/bench_ingest.py --quick    # 10,000 and 100,000
    .venv/bin/python bench/bench_ingest.py --profile  # also cProfile the ingest run
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen import write_jsonl  # noqa: E402

from ledger.store.fulltext import TABLE as INDEX  # noqa: E402 - the full-text index's table
from ledger.store.ingest import _ROW_COLUMNS as COLUMNS  # noqa: E402 - the columns ingest writes, in order

ROOT = Path(__file__).resolve().parent.parent
SEED = 1
RATIO_TARGET = 2.0
MEMORY_TARGET_MB = 300


def _migrated(path: Path) -> str:
    from ledger.store.engine import make_engine
    from ledger.store.migrate import upgrade_to_head

    url = "sqlite:///" + str(path)
    engine = make_engine(url, create=True)
    upgrade_to_head(engine)
    engine.dispose()
    return url


def _rows(jsonl: Path) -> list[tuple[Any, ...]]:
    """The rows ingest stores, in `COLUMNS` order but without the content digest
    (`with_content_digest` adds it inside the baseline's timer)."""
    from ledger.core.canonical import digest_value

    rows = []
    with jsonl.open("rb") as f:
        for line in f:
            rec = json.loads(line)
            rows.append(
                (
                    rec["id"],
                    rec["source_version"],
                    rec["section"],
                    rec["source_uri"],
                    rec["effective_from"],
                    rec["expires_on"],
                    rec["required_permission"],
                    rec["trust"],
                    rec["dedupe_key"],
                    rec["estimated_tokens"],
                    rec["priority"],
                    rec["required"],
                    rec["content"],
                    digest_value(rec),
                    1,
                    None,  # scope: a document version has none
                )
            )
    return rows


_CONTENT = COLUMNS.index("content")


def with_content_digest(rows: list[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """`rows` as stored: the SHA-256 of each content inserted after it (issue 21's
    "executemany + sha256"; timed by the baselines)."""
    i = _CONTENT + 1
    for row in rows:
        yield (*row[:i], hashlib.sha256(row[_CONTENT].encode("utf-8")).hexdigest(), *row[i:])


def _baseline(db_file: Path, rows: list[tuple[Any, ...]]) -> float:
    """Seconds for a raw executemany of `rows` in one transaction, same pragmas as
    ledger.store.engine."""
    from ledger.store.engine import BUSY_TIMEOUT_MS

    con = sqlite3.connect(db_file, isolation_level=None)
    con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    con.execute("PRAGMA foreign_keys = ON")
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = FULL")
    marks = ", ".join("?" * len(COLUMNS))
    sql = f"INSERT INTO chunk_versions ({', '.join(COLUMNS)}) VALUES ({marks})"
    t0 = time.perf_counter()
    con.execute("BEGIN IMMEDIATE")
    con.execute(
        "INSERT INTO entries (seq, kind, payload_digest, prev_hash, entry_hash, recorded_at) "
        "VALUES (1, 'ingest', ?, ?, ?, '')",
        ("0" * 64, "0" * 64, "1" * 64),
    )
    con.execute(
        "INSERT INTO batches (seq, read_count, new_count, unchanged_count, sources) "
        "VALUES (1, 0, 0, 0, '[]')"
    )
    con.executemany(sql, with_content_digest(rows))
    con.execute(f"INSERT INTO {INDEX} (rowid, terms) SELECT vid, content FROM chunk_versions")
    con.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    con.close()
    return elapsed


def _ours(db_file: Path, jsonl: Path, profile: bool) -> float:
    from ledger.api.ingest import ingest_files as ingest
    from ledger.store.engine import make_engine

    engine = make_engine("sqlite:///" + str(db_file))
    profiler = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    summary = ingest(engine, [str(jsonl)])
    if profiler is not None:
        profiler.disable()
    elapsed = time.perf_counter() - t0
    engine.dispose()
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue(), file=sys.stderr)
    assert summary.new == summary.read, summary
    return elapsed


def bench_throughput(
    n: int, tmp: Path, profile: bool = False, shape: str = "records"
) -> dict[str, Any]:
    jsonl = write_jsonl(tmp / f"chunks-{shape}-{n}.jsonl", n, seed=SEED, shape=shape)
    ours_db, base_db = tmp / f"ours-{shape}-{n}.db", tmp / f"base-{shape}-{n}.db"
    _migrated(ours_db)
    _migrated(base_db)
    rows = _rows(jsonl)
    base_s = _baseline(base_db, rows)
    ours_s = _ours(ours_db, jsonl, profile)
    ratio = ours_s / base_s
    what = {"records": "400 B", "short": "short, 1 % required", "prose": "600 B prose, non-ASCII"}[
        shape
    ]
    return {
        "bench": f"ingest {n:,} chunks (JSONL, {what})",
        "ours": n / ours_s,
        "baseline": n / base_s,
        "unit": "chunks/s",
        # Small tables are cheaper per row for the raw baseline: the target is set
        # at 100,000 chunks.
        "target": f"ratio <= {RATIO_TARGET:g}" + ("" if n >= 100_000 else " at 100k"),
        "ok": ratio <= RATIO_TARGET,
        "note": f"ours {ours_s:.2f} s, raw executemany {base_s:.2f} s",
    }


# The peak is read by a small launcher process: a child's ru_maxrss also counts
# what it inherited at fork (Linux keeps the pre-exec high-water mark), so a child
# of this bench, which holds 100,000 rows by then, would report the bench's size.
_LAUNCHER = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True)
sys.stderr.buffer.write(proc.stderr)
sys.stdout.buffer.write(proc.stdout)
print("MAXRSS_KB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(proc.returncode)
"""


def bench_memory(n: int, tmp: Path) -> dict[str, Any]:
    jsonl = write_jsonl(tmp / f"mem-{n}.jsonl", n, seed=SEED + 1)
    db_file = tmp / f"mem-{n}.db"
    _migrated(db_file)
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    cmd = [sys.executable, "-m", "ledger_cli", "--db", str(db_file), "ingest", "--json", str(jsonl)]
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *cmd], capture_output=True, text=True, env=env
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"ledger ingest exited {proc.returncode}: {proc.stderr[-500:]}")
    peak_mb = int(proc.stderr.split("MAXRSS_KB")[-1]) / 1024
    summary = json.loads(proc.stdout)
    return {
        "bench": f"ledger ingest {n:,} lines: peak RSS",
        "ours": peak_mb,
        "baseline": None,
        "unit": "MB",
        "target": f"< {MEMORY_TARGET_MB} MB",
        "ok": peak_mb < MEMORY_TARGET_MB,
        "peak_mb": peak_mb,
        "note": f"{summary['new']:,} new in {elapsed:.0f} s "
        f"({jsonl.stat().st_size / 1e6:,.0f} MB file)",
    }


def rows(quick: bool, profile: bool = False) -> list[dict[str, Any]]:
    """The rows for bench/run.py's table."""
    with tempfile.TemporaryDirectory(prefix="ledger-bench-ingest-") as d:
        tmp = Path(d)
        n = 10_000 if quick else 100_000
        out = [bench_throughput(n, tmp, profile, shape) for shape in ("records", "short", "prose")]
        out.append(bench_memory(100_000 if quick else 1_000_000, tmp))
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 chunks and 100,000 lines")
    parser.add_argument("--profile", action="store_true", help="cProfile the ingest run (stderr)")
    args = parser.parse_args()
    from table import print_table

    print_table(rows(args.quick, args.profile))


if __name__ == "__main__":
    main()
