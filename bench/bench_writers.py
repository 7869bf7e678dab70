"""Benchmark writers side by side: packs built per second by 1, 2, 4 and 8 processes.

One ledger of 20,000 evidence chunks (`--quick`: 5,000; bench_search's bodies),
a grant and a policy. Each process opens the ledger and builds retrieval packs
(`--query` of two topic words, `top` 20) in a loop for a fixed time; all start
together. The rate of one process is the baseline of the others: a build
selects without the write lock and takes it only to append, so two processes
on this 2-core machine should build at least 1.5x the packs of one. Then
`verify` must pass and the entries must be numbered without a gap.
SQLite (WAL) and PostgreSQL (a throwaway server on 127.0.0.1).

    .venv/bin/python bench/bench_writers.py [--quick]
"""

from __future__ import annotations

import multiprocessing
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench_search import PER_TOPIC, setup  # noqa: E402

AS_OF = "2026-06-15"
SECONDS = 6.0
PROCESSES = (1, 2, 4, 8)


def _worker(url: str, n: int, seed: int, start_at: float, seconds: float, out: Any) -> None:
    import random

    import ledger

    rnd = random.Random(seed)
    topics = max(1, n // PER_TOPIC)
    built = 0
    with ledger.open(url) as lg:
        lg.build(as_of=AS_OF, query="topic1 topic2", top=20)  # warm: imports, connection
        while time.time() < start_at:
            time.sleep(0.001)
        end = start_at + seconds
        while time.time() < end:
            q = f"topic{rnd.randrange(topics)} topic{rnd.randrange(topics)}"
            lg.build(as_of=AS_OF, query=q, top=20)
            built += 1
    out.put(built)


def rate(url: str, n: int, processes: int, seconds: float = SECONDS) -> float:
    """Packs per second built by `processes` processes together."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 3.0 + 0.3 * processes  # after every process has warmed up
    procs = [
        ctx.Process(target=_worker, args=(url, n, 100 + i, start_at, seconds, out))
        for i in range(processes)
    ]
    for p in procs:
        p.start()
    total = sum(out.get() for _ in procs)
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a writer exited with {p.exitcode}")
    return total / seconds


def check_chain(url: str) -> str:
    import ledger

    with ledger.open(url) as lg:
        result = lg.verify()
        if not result.ok:
            raise RuntimeError(f"verify failed after the parallel builds: {result.to_json()}")
        packs = lg.packs().to_json()["packs"]
        numbers = sorted(p["pack"] for p in packs)
        if numbers != list(range(1, len(numbers) + 1)):
            raise RuntimeError("pack numbers have a gap")
        return f"verify ok, {len(numbers)} packs"


def bench_backend(label: str, url: str, n: int, tmp: Path) -> list[dict[str, Any]]:
    setup(url, tmp / f"writers-{label}.jsonl", n)
    rates = {k: rate(url, n, k) for k in PROCESSES}
    note = check_chain(url)
    rows = []
    for k in PROCESSES:
        rows.append(
            {
                "bench": f"{label}: builds/s by {k} process{'es' if k > 1 else ''} "
                f"({n:,} chunks, --query --top 20)",
                "ours": rates[k],
                "baseline": rates[1],
                "unit": "/s",
                "target": ">= 1.5x of one" if k == 2 else "",
                "ok": rates[2] >= 1.5 * rates[1] if k == 2 else True,
                "note": f"{rates[k] / rates[1]:.2f}x of one" + (f"; {note}" if k == 8 else ""),
            }
        )
    return rows


def rows(quick: bool) -> list[dict[str, Any]]:
    from tests import pgserver

    n = 5_000 if quick else 20_000
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out += bench_backend("sqlite", f"sqlite:///{tmp / 'writers.db'}", n, tmp)
        server = pgserver.start()
        try:
            url = pgserver.create_database(server, "bench_writers")
            out += bench_backend("pg", url, n, tmp)
        finally:
            pgserver.stop(server)
    return out


if __name__ == "__main__":
    from table import print_table

    print_table(rows("--quick" in sys.argv))
