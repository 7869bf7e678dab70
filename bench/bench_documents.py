"""Benchmark `ledger ingest PATH --rules`: a generated Markdown tree, first run and unchanged.

A tree of 10,000 Markdown files (fixed seed; 4 folders deep; each file 2-6
sections of paragraphs, lists and a code fence, about 1.5 KB) is ingested
through `ledger.api.ingest_documents` into a fresh migrated SQLite file: first
(walk, read, hash, parse with markdown-it-py, count cl100k_base tokens, id,
validate, store, seal), then unchanged (walk, read, hash, compare with the
stored file state: nothing parsed, no entry). The baseline is the raw floor of
the unchanged run: walking the same tree in sorted order, reading every file and
hashing it with SHA-256, in the same process.

Times are this process's CPU time (`time.process_time`): the machine is shared,
and wall time there measured the neighbours (a first run of 2,000 files took 4.9 s
of CPU in 30 s of wall time). Wall times are in the note. Targets: the unchanged
run within 4 times the raw read-and-hash (it also opens a transaction, checks
the rules and reads the stored file state); the first run at least 2,000 chunks/s.

    .venv/bin/python bench/bench_documents.py            # 10,000 files
    .venv/bin/python bench/bench_documents.py --quick    # 2,000 files
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from table import run_main  # noqa: E402

SEED = 15
UNCHANGED_RATIO = 4.0
FIRST_RATE = 2_000
WORDS = (
    "ledger chunk token request response model schema router depends security oauth2 "
    "middleware cors header cookie body query path field validator database session "
    "async await background task test client deploy docker worker"
).split()
RULES = """
[source]
name = "bench"
uri = "https://docs.example/{version}/{path}"
version = "content"
effective_from = "2026-07-01"
snapshot = true

[[rule]]
match = "section-0/**"
section = "policy"
trust = "application-policy"
required_permission = "policy-read"
priority = 70

[[rule]]
match = "**"
section = "evidence"
trust = "approved-source"
required_permission = "docs-read"
priority = 50
dedupe = "content"
"""


def _para(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n)).capitalize() + "."


def write_tree(root: Path, files: int, seed: int = SEED) -> None:
    """`files` Markdown files under `root`, deterministic for a seed."""
    rnd = random.Random(seed)
    for i in range(files):
        folder = root / f"section-{i % 4}" / f"part-{i % 25}" / f"group-{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"# Topic {i} {{ #topic-{i} }}", "", _para(rnd, 30), ""]
        for s in range(rnd.randint(2, 6)):
            lines += [
                f"## {rnd.choice(WORDS).title()} {s}",
                "",
                _para(rnd, rnd.randint(10, 60)),
                "",
            ]
            if s % 2 == 0:
                lines += [f"- {_para(rnd, 6)}" for _ in range(3)] + [""]
            if s == 1:
                lines += ["```python", f"def handler_{i}():", "    return {'ok': True}", "```", ""]
        (folder / f"page-{i}.md").write_text("\n".join(lines), encoding="utf-8")


def raw_read_and_hash(root: Path) -> tuple[float, int]:
    """The floor: sorted walk, read every file, SHA-256 it."""
    t0 = time.process_time()
    n = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            with open(os.path.join(dirpath, name), "rb") as f:
                hashlib.sha256(f.read()).hexdigest()
            n += 1
    return time.process_time() - t0, n


def _engine(db: Path) -> Any:
    from ledger.store.engine import make_engine
    from ledger.store.migrate import upgrade_to_head

    engine = make_engine("sqlite:///" + str(db), create=True)
    upgrade_to_head(engine)
    return engine


def rows(quick: bool) -> list[dict[str, Any]]:
    """The rows for bench/run.py's table."""
    from ledger.api.ingest import ingest_documents

    files = 2_000 if quick else 10_000
    with tempfile.TemporaryDirectory(prefix="ledger-bench-docs-") as d:
        tmp = Path(d)
        root = tmp / "docs"
        write_tree(root, files)
        rules = tmp / "rules.toml"
        rules.write_text(RULES, encoding="utf-8")
        engine = _engine(tmp / "ledger.db")
        try:
            raw_s, n = raw_read_and_hash(root)  # also warms the page cache for both runs
            raw_s, n = raw_read_and_hash(root)
            assert n == files
            w0, t0 = time.perf_counter(), time.process_time()
            first = ingest_documents(engine, [str(root)], str(rules))
            first_s, first_wall = time.process_time() - t0, time.perf_counter() - w0
            w0, t0 = time.perf_counter(), time.process_time()
            again = ingest_documents(engine, [str(root)], str(rules))
            again_s, again_wall = time.process_time() - t0, time.perf_counter() - w0
        finally:
            engine.dispose()
    assert first.new == first.read and again.batch is None and again.parsed_files == 0
    rate = first.read / first_s
    ratio = again_s / raw_s
    return [
        {
            "bench": f"ingest --rules: {files:,} Markdown files, first run",
            "ours": rate,
            "baseline": None,
            "unit": "chunks/s",
            "target": f">= {FIRST_RATE:,} chunks/s",
            "ok": rate >= FIRST_RATE,
            "note": f"{first.read:,} chunks in {first_s:.1f} s CPU ({first_wall:.1f} s wall)",
        },
        {
            "bench": f"ingest --rules: {files:,} files unchanged",
            "ours": again_s,
            "baseline": raw_s,
            "unit": "s",
            "target": f"ratio <= {UNCHANGED_RATIO:g}",
            "ok": ratio <= UNCHANGED_RATIO,
            "note": "baseline: sorted walk, read and SHA-256 of every file; "
            f"no file parsed, no entry ({again.read:,} chunks unchanged; {again_wall:.2f} s wall)",
        },
    ]


if __name__ == "__main__":
    run_main(__doc__, rows)
