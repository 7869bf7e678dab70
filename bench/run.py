"""Run every benchmark and print one table: ours, baseline, ratio, target.

Each bench module exposes `rows(quick) -> list[dict]`; each runs in its own
process so that its peak memory (ru_maxrss) is its own.

    .venv/bin/python bench/run.py            # full sizes (tens of minutes)
    .venv/bin/python bench/run.py --quick    # smaller sizes
    .venv/bin/python bench/run.py --only build,audit
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = [
    "core",
    "ingest",
    "build",
    "audit",
    "transcript",
    "report",
    "pg",
    "search",
    "integrations",
    "documents",
    "proofs",
    "writers",
    "check",
    "sessions",
]

CHILD = r"""
import json, resource, sys
sys.path.insert(0, {here!r})
mod = __import__("bench_" + {name!r})
rows = mod.rows({quick!r})
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
for r in rows:
    r.setdefault("peak_mb", peak)
print("ROWS " + json.dumps(rows))
"""


def run_module(name: str, quick: bool) -> list[dict]:
    code = CHILD.format(here=str(HERE), name=name, quick=quick)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        return [
            {
                "bench": f"{name}: FAILED",
                "ours": None,
                "baseline": None,
                "unit": "",
                "target": "",
                "ok": False,
                "note": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "",
            }
        ]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("ROWS "))
    return json.loads(line[5:])


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the ledger benchmarks and print one table.")
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(MODULES)}")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from table import print_table

    names = args.only.split(",") if args.only else MODULES
    rows: list[dict] = []
    started = time.time()
    for name in names:
        if not (HERE / f"bench_{name}.py").exists():
            continue
        t0 = time.time()
        got = run_module(name, args.quick)
        print(f"# {name}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        rows += got
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M')} on {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {'quick' if args.quick else 'full'} sizes, "
        f"{time.time() - started:.0f} s"
    )
    print_table(rows)
    _ = resource


if __name__ == "__main__":
    main()
