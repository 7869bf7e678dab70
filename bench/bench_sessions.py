"""Benchmark ingest of big records: one 16 MiB record, and a long agent session.

Two inputs, each ingested by the real command line in a fresh migrated SQLite
ledger, in a child process whose peak resident memory is its own (ru_maxrss from
os.wait4):

- one JSON Lines record whose content is 16 Mi characters, the ledger's cap;
- a Claude Code session of 3.2 MB whose "continue" exchange holds 2.1 MB
  (`tests/transcript/long_session.py`, the generated equivalent of the real
  long sessions of fixtures/transcripts/SOURCES.md), with `--from claude-code`.

Baseline, in the same run: a Python process that reads the same file, parses
it (each JSON line; for the session, each exchange's lines joined), hashes each
body with SHA-256 and inserts it with `sqlite3` into a plain table of a new
file: the floor any ingest of that input pays, without validation, the chain,
the digests or the full-text index.
Targets (issue 40): each ingest under 10 s and under 1 GB of peak memory.

    .venv/bin/python bench/bench_sessions.py
    .venv/bin/python bench/run.py --only sessions
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.transcript.long_session import long_claude_session  # noqa: E402

TARGET_SECONDS = 10.0
TARGET_MB = 1024.0
CAP = 16 * 1024 * 1024

BASELINE = r"""
import hashlib, json, sqlite3, sys
path, db, mode = sys.argv[1:4]
con = sqlite3.connect(db)
con.execute("CREATE TABLE bodies (id TEXT PRIMARY KEY, sha256 TEXT, content TEXT)")
with open(path, "rb") as f:
    data = f.read()
if mode == "record":
    bodies = [(r["id"], r["content"]) for r in map(json.loads, data.splitlines())]
else:  # a session: one body per exchange, the lines from one prompt to the next
    lines, bodies, start = data.splitlines(keepends=True), [], 0
    for n, line in enumerate(lines):
        record = json.loads(line)
        prompt = record.get("type") == "user" and record.get("origin") == {"kind": "human"}
        if prompt and n > start:
            bodies.append((f"e{len(bodies) + 1:03d}", b"".join(lines[start:n]).decode()))
            start = n
    bodies.append((f"e{len(bodies) + 1:03d}", b"".join(lines[start:]).decode()))
with con:
    con.executemany(
        "INSERT INTO bodies VALUES (?, ?, ?)",
        [(i, hashlib.sha256(c.encode()).hexdigest(), c) for i, c in bodies],
    )
print(len(bodies))
"""


def measure(args: list[str], cwd: Path) -> tuple[float, float, str]:
    """Run a child process; return (wall seconds, peak RSS in MB, stdout). A
    failure raises with its stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        out.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{' '.join(args[:6])} failed: {err.read().decode()[-400:]}")
        # ru_maxrss is in KiB on Linux, bytes on macOS.
        scale = 1 if sys.platform == "darwin" else 1024
        return wall, usage.ru_maxrss * scale / 1e6, out.read().decode()


def ledger(*args: str) -> list[str]:
    return [sys.executable, "-m", "ledger_cli", "--db", "ledger.db", *args]


def big_record(path: Path) -> int:
    """One chunk record whose content is exactly the cap, 16 Mi characters."""
    words = "ledger context budget exchange über café 日本語 `code` "
    content = (words * (CAP // len(words) + 1))[:CAP]
    record = {
        "id": "big-record",
        "section": "evidence",
        "source_uri": "https://example.org/big",
        "source_version": "v1",
        "effective_from": "2026-01-01",
        "expires_on": None,
        "required_permission": "public-read",
        "trust": "approved-source",
        "dedupe_key": "big-record",
        "estimated_tokens": 5_000_000,
        "priority": 50,
        "required": False,
        "content": content,
    }
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    return path.stat().st_size


def one(name: str, source: Path, mode: str, args: list[str], note: str) -> list[dict[str, object]]:
    """Rows for one input: ingest time and peak memory against the baseline's."""
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        work = Path(tmp)
        measure(ledger("init"), work)
        wall, peak, out = measure(ledger(*args, str(source)), work)
        base_wall, base_peak, _ = measure(
            [sys.executable, "-c", BASELINE, str(source), str(work / "base.db"), mode], work
        )
    size = source.stat().st_size / 1e6
    return [
        {
            "bench": f"ingest {name} ({size:.1f} MB)",
            "ours": wall,
            "baseline": base_wall,
            "unit": "s",
            "target": f"< {TARGET_SECONDS:.0f} s",
            "ok": wall < TARGET_SECONDS,
            "note": f"{note}; {out.strip()}",
            "peak_mb": peak,
        },
        {
            "bench": f"ingest {name}: peak memory",
            "ours": peak,
            "baseline": base_peak,
            "unit": "MB",
            "target": "< 1 GB",
            "ok": peak < TARGET_MB,
            "note": "the ingest process alone; baseline: read, parse, sha256, sqlite3 insert",
            "peak_mb": peak,
        },
    ]


def make_inputs(folder: Path) -> int:
    """Write the two inputs into `folder`; return the session's exchange count."""
    big_record(folder / "big-record.jsonl")
    data, prompts = long_claude_session()
    (folder / "long-session.jsonl").write_bytes(data)
    return len(prompts)


def rows(quick: bool) -> list[dict[str, object]]:
    """bench/run.py's rows (`--only sessions`); the same sizes with `--quick`."""
    with tempfile.TemporaryDirectory(prefix="bench-sessions-in-") as tmp:
        folder = Path(tmp)
        # The inputs are made by a child process: a child forked from a driver
        # that held them would count the driver's pages in its own peak.
        _, _, made = measure([sys.executable, __file__, "--make", str(folder)], folder)
        exchanges = int(made.split()[-1])
        out = one(
            "one 16 MiB record",
            folder / "big-record.jsonl",
            "record",
            ["ingest"],
            "one JSON Lines record",
        )
        out += one(
            "a Claude Code session",
            folder / "long-session.jsonl",
            "session",
            ["ingest", "--format", "transcript", "--from", "claude-code"],
            f"{exchanges} exchanges, the largest 2.1 MB",
        )
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--make"]:
        print(make_inputs(Path(sys.argv[2])))
        raise SystemExit(0)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from table import run_main

    run_main(__doc__, rows)
