"""Benchmark the pure selector core and the `ledger pack` process.

    .venv/bin/python bench/bench_core.py          # 10,000 / 100,000 / 1,000,000
    .venv/bin/python bench/bench_core.py --quick  # 1,000 / 10,000 / 100,000

Part 1 times `ledger.core.select.select` over generated in-memory candidates (fixed
seed; candidate generation is not timed) and compares the growth with n log n.
Part 2 times whole `ledger pack` processes on the reference fixture against a bare
`python -c pass` in the same run (median of 20 each).
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import statistics
import subprocess
import sys
import time
from typing import Any

from ledger.core.select import Candidate, Request, select

SECTIONS = ("policy", "state", "evidence", "current-input")


def generate(n: int, seed: int = 20260714) -> list[Candidate]:
    """n candidates: ~2 versions per id, shared dedupe keys, every gate exercised."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        month, day = rng.randint(1, 12), rng.randint(1, 28)
        out.append(
            Candidate(
                id=f"chunk-{i // 2:07d}",
                source_version=f"v{i % 2}",
                section=rng.choice(SECTIONS),
                effective_from=f"2026-{month:02d}-{day:02d}",
                expires_on=rng.choice((None, None, None, "2026-09-01")),
                required_permission=rng.choice(("read", "read", "read", "read", "legal")),
                trust=rng.choice(("approved-source",) * 6 + ("unverified",)),
                dedupe_key=f"key-{rng.randrange(max(1, n // 3))}",
                tokens=rng.randint(1, 800),
                priority=rng.randint(0, 100),
                required=False,
                record_digest=f"{rng.getrandbits(256):064x}",
                content_digest=f"{rng.getrandbits(256):064x}",
                ingest_rank=i,
            )
        )
    rng.shuffle(out)
    return out


def best_of(candidates: list[Candidate], request: Request, repeats: int) -> tuple[float, Any]:
    """The best time of `repeats` selections, each with the cyclic collector
    paused as the command line runs them (the selector makes no reference
    cycles; left on, it walks the heap again at each burst of allocations)."""
    gc.collect()
    best = math.inf
    context = None
    for _ in range(repeats):
        # The previous run's result is freed first: held, it would make every
        # run grow the heap anew (a million evictions, 0.3 s of page faults).
        context = None
        gc.disable()
        try:
            start = time.perf_counter()
            context = select(candidates, request)
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best, context


def bench_select(sizes: list[int], repeats: int) -> None:
    print(f"select(): in-memory candidates, best of {repeats}; input shuffled, or in id order")
    header = (
        f"{'n':>10} {'shuffled s':>11} {'us/cand':>8} {'id order s':>11} {'admitted':>9} "
        f"{'evicted':>9} {'t/(n log n) vs first':>21}"
    )
    print(header)
    print("-" * len(header))
    first_ratio = None
    for n in sizes:
        candidates = generate(n)
        request = Request(
            as_of="2026-07-01",
            granted=frozenset({"read"}),
            allowed_trust=frozenset({"approved-source"}),
            budget=n * 40,  # about a third of the survivors fit
        )
        shuffled, context = best_of(candidates, request, repeats)
        candidates.sort(key=lambda c: (c.id, c.source_version))
        ordered, again = best_of(candidates, request, repeats)
        if again != context:
            raise SystemExit("the input order changed the result")
        ratio = shuffled / (n * math.log(n))
        if first_ratio is None:
            first_ratio = ratio
        print(
            f"{n:>10,} {shuffled:>11.3f} {shuffled / n * 1e6:>8.2f} {ordered:>11.3f} "
            f"{len(context.items):>9,} {len(context.evicted):>9,} {ratio / first_ratio:>21.2f}"
        )
        del candidates, context, again
    print("(a last column near 1.0 means O(n log n) growth; it also shows cache effects)")


def median_run(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_process(runs: int) -> None:
    print()
    print(f"whole process, median of {runs} runs")
    baseline = median_run([sys.executable, "-c", "pass"], runs)
    pack = median_run([sys.executable, "-m", "ledger_cli", "pack"], runs)
    print(f"{'python -c pass':<28} {baseline * 1000:>8.1f} ms")
    print(f"{'ledger pack (reference)':<28} {pack * 1000:>8.1f} ms   x{pack / baseline:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer runs")
    args = parser.parse_args()
    if args.quick:
        bench_select([1_000, 10_000, 100_000], repeats=3)
        bench_process(runs=5)
    else:
        bench_select([10_000, 100_000, 1_000_000], repeats=2)
        bench_process(runs=20)


if __name__ == "__main__":
    main()


def rows(quick: bool) -> list[dict[str, Any]]:
    """The rows of bench/run.py's table: select() at each size (best of three)
    against sorting the same candidates (the n log n floor), and `ledger pack`
    against a bare start."""
    sizes = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
    out: list[dict[str, Any]] = []
    first = None
    for n in sizes:
        candidates = generate(n)
        request = Request(
            as_of="2026-07-01",
            granted=frozenset({"read"}),
            allowed_trust=frozenset({"approved-source"}),
            budget=n * 40,
        )
        # Best of three: this host's speed drifts by up to a tenth over minutes
        # (the same code measured 2.37-2.55 s at a million in one minute).
        t, context = best_of(candidates, request, 3)
        # The floor sorts with the collector paused, as select runs: with it on,
        # the million key tuples cost the sort more than the sort itself.
        gc.disable()
        try:
            start = time.perf_counter()
            sorted(candidates, key=lambda c: (-c.priority, c.effective_from, c.tokens, c.id))
            floor = time.perf_counter() - start
        finally:
            gc.enable()
        growth = t / (n * math.log(n))
        first = first or growth
        # Issue 21: 1,000,000 candidates in at most 2.5 s.
        target = "<= 2.5 s" if n == 1_000_000 else "n log n growth"
        ok = (t <= 2.5) if n == 1_000_000 else growth / first < 2.0
        out.append(
            {
                "bench": f"select {n:,} in-memory candidates",
                "ours": t,
                "baseline": floor,
                "unit": "s",
                "target": target,
                "ok": ok,
                "note": f"baseline: one sort; t/(n log n) x{growth / first:.2f} vs 10k",
            }
        )
        del candidates, context
    runs = 5 if quick else 20
    base = median_run([sys.executable, "-c", "pass"], runs)
    pack = median_run([sys.executable, "-m", "ledger_cli", "pack"], runs)
    out.append(
        {
            "bench": "ledger pack, whole process (median)",
            "ours": pack,
            "baseline": base,
            "unit": "s",
            "target": "< 150 ms",
            "ok": pack < 0.150,
            "note": "baseline: python -c pass",
        }
    )
    return out
