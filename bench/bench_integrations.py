"""Start-up with the integrations in the tree: `ledger --help` and `ledger pack`,
whole processes, against the same commands of the tree before them.

"Before" is the code at BEFORE (default: the merge base with the `search` branch,
the tree this branch started from; `LEDGER_BENCH_BEFORE=REV` to choose), taken with
`git archive` and run by the same interpreter with the same installed packages
(the integration frameworks included), so only our code differs.

    .venv/bin/python bench/bench_integrations.py [--quick]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The repository's folders under the names the wheel installs them as.
PACKAGES = {"ledger": "ledger", "ledger_cli": "cli", "ledger_fixtures": "fixtures",
            "ledger_migrations": "migrations"}  # fmt: skip


def before_rev() -> str:
    rev = os.environ.get("LEDGER_BENCH_BEFORE")
    if rev:
        return rev
    for ref in ("search", "main"):
        proc = subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", ref],
                              capture_output=True, text=True)  # fmt: skip
        if proc.returncode == 0:
            return proc.stdout.strip()
    raise SystemExit("no merge base with search or main; set LEDGER_BENCH_BEFORE=REV")


def tree_of(rev: str | None, into: Path) -> Path:
    """A folder whose `ledger`, `ledger_cli`, ... are the code at `rev` (None: this tree)."""
    src = ROOT
    if rev is not None:
        src = into / "src"
        src.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *PACKAGES.values()],
                                 capture_output=True, check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    path = into / "path"
    path.mkdir()
    for name, folder in PACKAGES.items():
        (path / name).symlink_to(src / folder)
    return path


def command(path: Path, args: list[str]) -> tuple[list[str], dict[str, str]]:
    # The folder goes first on sys.path, ahead of the editable install's finder.
    return [sys.executable, "-s", "-m", "ledger_cli", *args], {
        **os.environ,
        "PYTHONPATH": str(path),
    }


def medians(trees: list[Path], args: list[str], runs: int) -> list[float]:
    """The median start-up of `ledger ARGS` in each tree, runs interleaved so that
    a busy moment of the (shared) machine hits every tree alike."""
    cmds = [command(t, args) for t in trees]
    for cmd, env in cmds:  # warm the file cache and write the .pyc files
        subprocess.run(cmd, env=env, capture_output=True, check=True)
    times: list[list[float]] = [[] for _ in trees]
    for _ in range(runs):
        for i, (cmd, env) in enumerate(cmds):
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, capture_output=True, check=True)
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def rows(quick: bool) -> list[dict[str, Any]]:
    runs = 9 if quick else 31
    rev = before_rev()
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "before").mkdir()
        (Path(tmp) / "after").mkdir()
        before = tree_of(rev, Path(tmp) / "before")
        after = tree_of(None, Path(tmp) / "after")
        for args in (["--help"], ["pack"]):
            b, a = medians([before, after], args, runs)
            out.append({
                "bench": f"ledger {' '.join(args)} start-up with the integrations (median)",
                "ours": a, "baseline": b, "unit": "s", "target": "<= before + 5%",
                "ok": a <= b * 1.05,
                "note": f"baseline: the same command at {rev[:10]} (before the integrations)",
            })  # fmt: skip
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from table import run_main

    run_main(__doc__, rows)
