"""Concurrent writers: 8 `ledger` processes at once on one database, both backends.

Every process must succeed (writers queue on the ledger's write lock), and the
hash chain must stay one unbroken line: one entry per successful run, numbered
without gaps, `verify` clean.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import chunk, ledger_json, write_jsonl
from tests.seeded import seed_ledger

WRITERS = 8


def _popen(db: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "ledger_cli", "--db", db, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_eight_concurrent_ingests_and_builds_keep_one_chain(db_url: str, tmp_path: Path) -> None:
    seed_ledger(db_url, build=False)
    before = ledger_json("verify", db=db_url)["entries"]
    files = []
    for w in range(WRITERS // 2):
        recs = [
            chunk(id=f"w{w}-c{i:04d}", dedupe_key=f"w{w}-c{i:04d}", source_uri=f"doc://w{w}/{i}")
            for i in range(300)
        ]
        files.append(write_jsonl(tmp_path / f"writer{w}.jsonl", recs))
    procs = [_popen(db_url, "ingest", "--json", str(f)) for f in files]
    procs += [
        _popen(db_url, "build", "--as-of", "2026-07-21", "--json") for _ in range(WRITERS // 2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    codes = [p.returncode for p in procs]
    assert codes == [0] * WRITERS, [err.decode()[-500:] for _, err in outputs]

    ingests = [json.loads(out) for out, _ in outputs[: WRITERS // 2]]
    assert sorted(i["new"] for i in ingests) == [300] * (WRITERS // 2)
    builds = [json.loads(out) for out, _ in outputs[WRITERS // 2 :]]
    assert len({b["pack"] for b in builds}) == WRITERS // 2  # no pack number reused

    verified = ledger_json("verify", db=db_url)
    assert verified["ok"] is True, verified
    assert verified["entries"] == before + WRITERS  # no lost or forked entries
    # Every entry a process reported exists once, and the numbering has no gaps.
    seen = sorted([i["batch"] for i in ingests] + [b["entry"] for b in builds])
    assert seen == list(range(before + 1, before + WRITERS + 1))
    chunks = ledger_json("chunks", db=db_url)["chunks"]
    assert len(chunks) == 11 + 300 * (WRITERS // 2)
    # Each pack saw a consistent ledger: its candidates are exactly the versions
    # ingested at or before its ledger mark.
    for b in builds:
        shown = ledger_json("show", str(b["pack"]), db=db_url)
        visible = [c for c in chunks if c["batch"] <= shown["ledger_mark"]]
        assert shown["candidates"] == len(visible)
        assert len(shown["admitted"]) + len(shown["evicted"]) == len(visible)
