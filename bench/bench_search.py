"""Benchmark search: retrieval builds, `ledger why`, and the index's cost on ingest.

Ledgers of 10,000 and 1,000,000 evidence chunks (`--quick`: 10,000 and 100,000)
whose bodies mix a common vocabulary with one "topic" word per chunk, a topic
shared by about 50 chunks whatever the ledger's size: a question names a
topic, as a user's question names a few distinctive words.

- `build --query --top 20`: in process (`ledger.store.build.build_pack`, the
  best of 3) and the whole command (`ledger build ... --json` in a fresh
  process), with the decisions written. Targets: in process under 100 ms on the
  largest ledger and within 1.5x of the 10,000 case (a retrieval build reads
  and records its candidates only, so its cost must not grow with the ledger).
- `why` in process on the largest ledger (`ledger.store.search.why` on the
  retrieval pack, the best of 3): under 50 ms.
- FTS cost on ingest: ingest of 100,000 chunks (`--quick`: 20,000) with the
  index, against the same ingest with the index step switched off.

    .venv/bin/python bench/bench_search.py [--quick]
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

AS_OF = "2026-06-15"
COMMON = [f"word{i}" for i in range(2000)]
PER_TOPIC = 50


def records(n: int, seed: int = 16) -> Iterator[dict[str, Any]]:
    """`n` evidence chunks, ~40 words each: 39 common words and one topic word."""
    rnd = random.Random(seed)
    topics = max(1, n // PER_TOPIC)
    for i in range(n):
        words = [COMMON[int(rnd.paretovariate(1.2)) % len(COMMON)] for _ in range(39)]
        words.insert(rnd.randrange(40), f"topic{i % topics}")
        yield {
            "id": f"e{i:07d}",
            "section": "evidence",
            "source_uri": f"doc://bench/{i}",
            "source_version": "v1",
            "effective_from": "2026-01-01",
            "expires_on": None,
            "required_permission": "public-read",
            "trust": "approved-source",
            "dedupe_key": f"e{i:07d}",
            "estimated_tokens": rnd.randrange(20, 400),
            "priority": rnd.randrange(0, 101),
            "required": False,
            "content": " ".join(words),
        }


def write_jsonl(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for rec in records(n):
            f.write(json.dumps(rec) + "\n")
    return path


def ingest_time(url: str, path: Path, with_index: bool) -> float:
    """Seconds to ingest `path` into a new ledger, with or without the index step."""
    import ledger.store.ingest as store_ingest
    from ledger.api.ingest import ingest_files
    from ledger.store.engine import make_engine
    from ledger.store.migrate import upgrade_to_head

    engine = make_engine(url, create=True)
    upgrade_to_head(engine)
    saved = store_ingest.index_batch, store_ingest.wants_index_payloads
    if not with_index:
        # No index step after the last slice (SQLite) and none slice by slice,
        # nor its rows made by a reader process (PostgreSQL).
        store_ingest.index_batch = lambda conn, seq, unindexed=False: 0  # type: ignore[assignment]
        store_ingest.wants_index_payloads = lambda engine: False  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        ingest_files(engine, [str(path)])
        return time.perf_counter() - t0
    finally:
        store_ingest.index_batch, store_ingest.wants_index_payloads = saved
        engine.dispose()


def setup(url: str, path: Path, n: int) -> float:
    """A ledger of `n` chunks, a grant and a policy; returns the ingest seconds."""
    from ledger.store.access import change_grants, set_policy
    from ledger.store.engine import make_engine

    seconds = ingest_time(url, write_jsonl(path, n), with_index=True)
    engine = make_engine(url)
    change_grants(engine, "default", ["public-read"], "grant")
    set_policy(engine, ["approved-source"], 4000)
    engine.dispose()
    return seconds


def query_for(n: int) -> str:
    topics = max(1, n // PER_TOPIC)
    return f"topic{topics // 3} topic{topics // 2}"


def bench_size(n: int, tmp: Path) -> dict[str, Any]:
    from ledger.store.build import build_pack
    from ledger.store.engine import make_engine, read_transaction
    from ledger.store.search import why

    db_file = tmp / f"search{n}.db"
    url = f"sqlite:///{db_file}"
    setup(url, tmp / f"search{n}.jsonl", n)
    engine = make_engine(url)
    q = query_for(n)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        pack_no = build_pack(engine, AS_OF, query=q, top=20)
        times.append(time.perf_counter() - t0)
    with read_transaction(engine) as conn:
        from ledger.store.packs import pack_header

        decisions = pack_header(conn, pack_no).candidate_count
    why_times = []
    for _ in range(3):
        with read_transaction(engine) as conn:
            t0 = time.perf_counter()
            answer = why(conn, q, pack_no)
            why_times.append(time.perf_counter() - t0)
    engine.dispose()
    env = {**os.environ, "LEDGER_DB": str(db_file)}
    cmd = [sys.executable, "-m", "ledger_cli", "build", "--as-of", AS_OF, "--query", q,
           "--top", "20", "--json"]  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    whole = time.perf_counter() - t0
    return {
        "n": n,
        "build": min(times),
        "whole": whole,
        "decisions": decisions,
        "why": min(why_times),
        "verdict": answer.verdict,
    }


def index_cost(url_for: Callable[[str], str], path: Path) -> tuple[float, float]:
    """Seconds to ingest `path` with the index step and without it: one untimed
    ingest first, so that neither side pays the first call's imports, then the
    two in turns, three times each; the median of each. `url_for(name)` gives a
    new empty database."""
    ingest_time(url_for("fts_warm"), write_jsonl(path.with_name("warm.jsonl"), 100), True)
    times: dict[bool, list[float]] = {True: [], False: []}
    for i in range(3):
        for indexed in (True, False):
            times[indexed].append(ingest_time(url_for(f"fts_{indexed}_{i}"), path, indexed))
    return statistics.median(times[True]), statistics.median(times[False])


def bench_ingest_cost(n: int, tmp: Path) -> dict[str, Any]:
    path = write_jsonl(tmp / f"ingest{n}.jsonl", n)
    with_index, without = index_cost(lambda name: f"sqlite:///{tmp / name}.db", path)
    return {
        "bench": f"ingest {n:,} chunks with the FTS index",
        "ours": with_index,
        "baseline": without,
        "unit": "s",
        "target": "ratio <= 1.3",  # issue 21
        "ok": with_index / without <= 1.3,
        "note": "baseline: the same ingest without the index step (median of 3, in turns)",
    }


def rows(quick: bool) -> list[dict[str, Any]]:
    big = 100_000 if quick else 1_000_000
    with tempfile.TemporaryDirectory(prefix="ledger-bench-search-") as d:
        tmp = Path(d)
        small = bench_size(10_000, tmp)
        large = bench_size(big, tmp)
        out = []
        for r in (small, large):
            target = "< 100 ms" if r is small else "< 100 ms, <= 1.5x the 10,000 case"
            ok = r["build"] < 0.1 and (r is small or r["build"] <= 1.5 * small["build"])
            out.append({
                "bench": f"build --query --top 20, {r['n']:,} evidence chunks",
                "ours": r["build"],
                "baseline": small["build"] if r is large else None,
                "unit": "s",
                "target": target,
                "ok": ok,
                "note": f"{r['decisions']} decisions written; "
                f"whole command {r['whole'] * 1000:.0f} ms",
            })  # fmt: skip
        out.append({
            "bench": f"why in process, {big:,} evidence chunks",
            "ours": large["why"],
            "baseline": small["why"],
            "unit": "s",
            "target": "< 50 ms",
            "ok": large["why"] < 0.05,
            "note": f"baseline: the same on 10,000; verdict {large['verdict']}",
        })  # fmt: skip
        out.append(bench_ingest_cost(20_000 if quick else 100_000, tmp))
        return out


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from table import run_main

    run_main(__doc__, rows)


if __name__ == "__main__":
    main()
