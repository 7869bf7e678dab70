"""Benchmark `ledger check`: 1,000 retrieval cases against 100,000 chunks.

The ledger is bench_search's (evidence chunks of 40 words, one "topic" word
shared by about 50 chunks). Each case is a retrieval build (`query`: two topic
words, `top` 20) expecting one chunk; one case in ten expects a chunk its query
does not retrieve, so it fails and is explained (its pack recorded in a
rehearsal transaction, `why` asked, rolled back), as a CI run with a few
failures would be.

The same 1,000 queries are run again with every case passing (what a green
CI run costs: no explanation). These queries match about 100 versions each,
so a case's fixed costs (judging, gates, digests) weigh most against the
baseline. A third run asks as people write: a topic word and three words of
the common vocabulary (about 1,700 matches each; the cases whose expected
topic is outranked fail and are explained). Baseline, in the same run: a raw
FTS5 loop over the same texts (the standard library's sqlite3, one table
`fts5(content)`, `MATCH` with `bm25` top 20 for each case's query), which
retrieves and does nothing else.

Targets: at most 60 s, and at most 8x the baseline.

    .venv/bin/python bench/bench_check.py [--quick]
"""

from __future__ import annotations

import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_search import COMMON, PER_TOPIC, records, setup  # noqa: E402

AS_OF = "2026-06-15"


def cases_for(n: int, count: int, seed: int = 35, failing: bool = True) -> list[dict[str, Any]]:
    """`count` retrieval cases: a query of two topic words expecting a chunk
    that holds the first (with `failing`, every tenth expects a third topic,
    which fails)."""
    rnd = random.Random(seed)
    topics = max(1, n // PER_TOPIC)
    out = []
    for k in range(count):
        a, b = rnd.randrange(topics), rnd.randrange(topics)
        expected = (a + b + 1) % topics if failing and k % 10 == 0 else a
        out.append(
            {
                "name": f"case {k}",
                "as_of": AS_OF,
                "query": f"topic{a} topic{b}",
                "top": 20,
                "admit": [{"text": f"topic{expected}"}],
            }
        )
    return out


def worded_cases(n: int, count: int, seed: int = 36) -> list[dict[str, Any]]:
    """`count` retrieval cases asking for a topic with three common words (any
    of the vocabulary, so mostly rarer ones), expecting a chunk of the topic."""
    rnd = random.Random(seed)
    topics = max(1, n // PER_TOPIC)
    out = []
    for k in range(count):
        topic = rnd.randrange(topics)
        words = [f"topic{topic}", *(rnd.choice(COMMON) for _ in range(3))]
        out.append(
            {
                "name": f"case {k}",
                "as_of": AS_OF,
                "query": " ".join(words),
                "top": 20,
                "admit": [{"text": f"topic{topic}"}],
            }
        )
    return out


def raw_fts(n: int, tmp: Path) -> sqlite3.Connection:
    """The baseline's table: the same texts in a plain FTS5 table."""
    conn = sqlite3.connect(tmp / "raw.db")
    conn.execute("CREATE VIRTUAL TABLE fts USING fts5(content)")
    conn.executemany("INSERT INTO fts(content) VALUES (?)", ((r["content"],) for r in records(n)))
    conn.commit()
    return conn


def raw_fts_seconds(conn: sqlite3.Connection, cases: list[dict[str, Any]]) -> float:
    """The baseline: each case's query top 20 on the plain FTS5 table."""
    sql = "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 20"
    t0 = time.perf_counter()
    for case in cases:
        words = case["query"].split()
        conn.execute(sql, (" OR ".join(f'"{w}"' for w in words),)).fetchall()
    return time.perf_counter() - t0


def bench(n: int, count: int, tmp: Path) -> list[dict[str, Any]]:
    import ledger

    url_file = tmp / "check.db"
    setup(f"sqlite:///{url_file}", tmp / "check.jsonl", n)
    runs = []
    raw = raw_fts(n, tmp)
    with ledger.open(str(url_file)) as lg:
        lg.check(cases_for(n, 5, seed=1))  # warm: imports, the first connection
        # The same queries twice: one case in ten failing (each explained),
        # then every case passing (what a green CI run costs); then queries
        # as people write them.
        runs_of = [
            ("two topic words", cases_for(n, count)),
            ("two topic words", cases_for(n, count, failing=False)),
            ("four words", worded_cases(n, count)),
        ]
        for words, cases in runs_of:
            baseline = raw_fts_seconds(raw, cases)
            t0 = time.perf_counter()
            result = lg.check(cases)
            seconds = time.perf_counter() - t0
            runs.append({"seconds": seconds, "baseline": baseline, "passed": result.passed,
                         "failed": result.failed, "words": words})  # fmt: skip
    raw.close()
    return runs


def rows(quick: bool) -> list[dict[str, Any]]:
    n, count = (20_000, 200) if quick else (100_000, 1_000)
    with tempfile.TemporaryDirectory() as d:
        runs = bench(n, count, Path(d))
    out = []
    for r in runs:
        ratio = r["seconds"] / r["baseline"]
        out.append(
            {
                "bench": f"check: {count:,} retrieval cases on {n:,} chunks, "
                f"{r['words']} ({r['passed']} pass, {r['failed']} fail)",
                "ours": r["seconds"],
                "baseline": r["baseline"],
                "unit": "s",
                "target": "<= 60 s and <= 8x raw FTS5 top-20",
                "ok": r["seconds"] <= 60 and ratio <= 8,
                "note": f"{ratio:.2f}x",
            }
        )
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from table import print_table

    print_table(rows("--quick" in sys.argv))
