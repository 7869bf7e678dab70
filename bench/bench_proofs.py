"""Benchmark proofs and checkpoints on a ledger of 1,000,000 entries (SQLite).

- checkpoint and prove in process (target < 50 ms each), and `ledger checkpoint`
  as a whole command; baseline: raw `sqlite3` reading the newest entry (what
  `ledger head` reads), and the whole `ledger head` command (the same start-up:
  a checkpoint should cost no more than reading the head).
- verify --since a checkpoint, after 1,000 new entries written through the
  store's own path; baseline: the full verify of the same ledger. Proportional
  to the new entries means about 1,000 / 1,000,000 of the full verify's work
  plus O(log n) node reads.

The million entries are written in the setup with raw SQL (policy entries
alternating between two budgets, their policy rows and the tree's nodes), with
the store's own formulas; an ingest, grants and a pack go through the store as
a user's would. `--quick`: 100,000 entries.

    .venv/bin/python bench/bench_proofs.py [--quick]
"""

from __future__ import annotations

import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen import ALLOWED, setup_ledger  # noqa: E402


def _time(fn: Any, repeat: int = 7) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _bulk_policy_entries(db_file: Path, count: int) -> None:
    """Append `count` policy entries after the current head, with raw SQL: entries,
    policy rows and every Merkle node they complete, as sealing would write them."""
    from ledger.core.canonical import canonical_json
    from ledger.core.chain import entry_hash
    from ledger.core.merkle import CompactRange, entry_leaf, range_nodes
    from ledger.store.access import Policy, policy_payload

    con = sqlite3.connect(db_file)
    seq, prev = con.execute(
        "SELECT seq, entry_hash FROM entries ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    stored = dict(
        ((lv, ix), bytes.fromhex(h))
        for lv, ix, h in con.execute("SELECT level, idx, hash FROM merkle_nodes")
    )
    frontier = CompactRange(seq, [stored[n] for n in range_nodes(0, seq)])
    trust = canonical_json(sorted(ALLOWED))
    budgets = (170, 171)
    payloads = [policy_payload(Policy(tuple(sorted(ALLOWED)), b)) for b in budgets]
    stamp = "2026-12-01T00:00:00+00:00"
    entries, policies, nodes = [], [], []
    for i in range(count):
        seq += 1
        payload = payloads[i % 2]
        h = entry_hash(seq, "policy", payload, prev)
        entries.append((seq, "policy", payload, prev, h, stamp))
        policies.append((seq, trust, budgets[i % 2]))
        nodes.extend(frontier.append(entry_leaf(h)))
        prev = h
        if len(entries) >= 50_000:
            _flush(con, entries, policies, nodes)
    _flush(con, entries, policies, nodes)
    con.close()


def _flush(con: sqlite3.Connection, entries: list, policies: list, nodes: list) -> None:
    con.executemany(
        "INSERT INTO entries (seq, kind, payload_digest, prev_hash, entry_hash, recorded_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        entries,
    )
    con.executemany(
        "INSERT INTO policies (entry_seq, allowed_trust, budget) VALUES (?, ?, ?)", policies
    )
    con.executemany(
        "INSERT INTO merkle_nodes (level, idx, hash) VALUES (?, ?, ?)",
        [(lv, ix, h.hex()) for lv, ix, h in nodes],
    )
    con.commit()
    entries.clear()
    policies.clear()
    nodes.clear()


def rows(quick: bool) -> list[dict[str, Any]]:
    size = 100_000 if quick else 1_000_000
    new = 1_000
    tmp = Path(tempfile.mkdtemp(prefix="bench-proofs-"))
    try:
        return _rows(tmp, size, new)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _rows(tmp: Path, size: int, new: int) -> list[dict[str, Any]]:
    from ledger.core.checkpoint import Checkpoint
    from ledger.store.access import set_policy
    from ledger.store.build import build_pack
    from ledger.store.engine import make_engine, read_transaction
    from ledger.store.tree import checkpoint, prove_pack
    from ledger.store.verify import verify

    db_file = tmp / "proofs.db"
    url = f"sqlite:///{db_file}"
    t0 = time.perf_counter()
    setup_ledger(url, tmp / "chunks.jsonl", 2_000, 40_000)  # entries 1-3
    _bulk_policy_entries(db_file, size - 4)
    engine = make_engine(url)
    pack = build_pack(engine, "2026-07-01")  # entry `size`, through the store
    setup_s = time.perf_counter() - t0

    def take_checkpoint() -> Checkpoint:
        with read_transaction(engine) as conn:
            return checkpoint(conn)

    def prove() -> None:
        with read_transaction(engine) as conn:
            prove_pack(conn, pack)

    held = take_checkpoint()
    assert held.size == size, held.size
    ours_cp = _time(take_checkpoint)
    ours_prove = _time(prove)
    con = sqlite3.connect(db_file)
    raw_head = _time(
        lambda: con.execute(
            "SELECT seq, entry_hash FROM entries ORDER BY seq DESC LIMIT 1"
        ).fetchone()
    )
    cmd = [sys.executable, "-m", "ledger_cli", "--db", str(db_file), "checkpoint"]
    whole_cp = _time(lambda: subprocess.run(cmd, check=True, capture_output=True), 5)
    head_cmd = [sys.executable, "-m", "ledger_cli", "--db", str(db_file), "head"]
    whole_head = _time(lambda: subprocess.run(head_cmd, check=True, capture_output=True), 5)

    # 1,000 new entries through the store (each its own transaction and seal).
    t0 = time.perf_counter()
    for i in range(new):
        set_policy(engine, None, 500 + i)
    append_s = (time.perf_counter() - t0) / new

    def since() -> Any:
        with read_transaction(engine) as conn:
            return verify(conn, since=held)

    result = since()
    assert result.ok and result.checked == new, result.to_json()
    ours_since = _time(since, repeat=5)
    t0 = time.perf_counter()
    with read_transaction(engine) as conn:
        full = verify(conn, tree_checkpoint=held)
    full_s = time.perf_counter() - t0
    assert full.ok, full.to_json()
    engine.dispose()
    con.close()
    mb = db_file.stat().st_size / 1e6
    note = f"{size:,} entries, {mb:,.0f} MB, built in {setup_s:.0f} s"
    share = ours_since / full_s
    # Proportional: per new entry, no dearer than twice the full verify's cost per
    # entry, plus a fixed 50 ms for the O(log n) node reads and the queries.
    bound = 2 * full_s * new / (size + new) + 0.05
    return [
        {
            "bench": "checkpoint in-process",
            "ours": ours_cp,
            "baseline": raw_head,
            "unit": "s",
            "target": "< 50 ms",
            "ok": ours_cp < 0.05,
            "note": note + "; baseline: raw head read",
        },
        {
            "bench": "prove PACK in-process",
            "ours": ours_prove,
            "baseline": raw_head,
            "unit": "s",
            "target": "< 50 ms",
            "ok": ours_prove < 0.05,
            "note": "inclusion proof of the newest pack",
        },
        {
            "bench": "checkpoint whole command",
            "ours": whole_cp,
            "baseline": whole_head,
            "unit": "s",
            "target": "< 1.2x ledger head",
            "ok": whole_cp < 1.2 * whole_head,
            "note": "baseline: the whole `ledger head` command (same start-up)",
        },
        {
            "bench": f"verify --since, {new:,} new entries",
            "ours": ours_since,
            "baseline": full_s,
            "unit": "s",
            "target": f"< {bound * 1000:.0f} ms (2x per entry)",
            "ok": ours_since < bound,
            "note": f"baseline: full verify --checkpoint of {size + new:,} entries; "
            f"{share:.3%} of it",
        },
        {
            "bench": "seal one entry (tree included)",
            "ours": append_s,
            "baseline": None,
            "unit": "s",
            "target": "reported",
            "ok": True,
            "note": "policy set through the store, per entry",
        },
    ]


if __name__ == "__main__":
    from table import run_main

    run_main(__doc__, rows)
