"""Generated chunk sets for the benchmarks: every gate has work to do.

Ids come in dedupe groups of three that share section, permission and trust;
about a tenth of the ids get a second, later version; dates spread over two
years, some expire; one permission and one trust label are never granted.
Deterministic for a seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PERMISSIONS = ("policy-read", "state-read", "public-read", "team-read", "legal-read")
GRANTED = PERMISSIONS[:4]
TRUST = ("application-policy", "confirmed-state", "approved-source", "user-input", "unverified")
ALLOWED = TRUST[:4]
SECTIONS = ("policy", "state", "evidence", "current-input")
WORDS = (
    "refund policy order carrier delay window customer region evidence summary state note".split()
)


def records(n: int, seed: int = 1, content_bytes: int = 400) -> Iterator[dict[str, Any]]:
    """About `n` chunk records (ids plus second versions)."""
    rnd = random.Random(seed)
    ids = max(1, int(n / 1.1))
    made = 0
    for i in range(ids):
        g = i // 3
        grnd = random.Random(g * 7919 + seed)
        section = SECTIONS[grnd.randrange(4)]
        perm = PERMISSIONS[grnd.randrange(5)]
        trust = TRUST[grnd.randrange(5)]
        day = rnd.randrange(0, 700)
        versions = 2 if rnd.random() < 0.1 and made + 2 <= n else 1
        for v in range(versions):
            if made >= n:
                return
            start = day + v * 60
            y, rest = divmod(start, 365)
            m, d = divmod(rest % 336, 28)
            eff = f"{2025 + y:04d}-{m + 1:02d}-{d + 1:02d}"
            expires = None
            if rnd.random() < 0.15:
                expires = f"{2026 + y:04d}-{m + 1:02d}-{d + 1:02d}"
            words = []
            size = 0
            while size < content_bytes:
                w = WORDS[rnd.randrange(len(WORDS))]
                words.append(w)
                size += len(w) + 1
            yield {
                "id": f"c{i:07d}",
                "section": section,
                "source_uri": f"doc://bench/{i}",
                "source_version": f"v{v + 1}",
                "effective_from": eff,
                "expires_on": expires,
                "required_permission": perm,
                "trust": trust,
                "dedupe_key": f"g{g:07d}",
                "estimated_tokens": rnd.randrange(20, 400),
                "priority": rnd.randrange(0, 101),
                "required": False,
                "content": " ".join(words),
            }
            made += 1


def short_records(n: int, seed: int = 2) -> Iterator[dict[str, Any]]:
    """A second data shape: `n` single-version chunks with short contents (40-120
    characters, so per-row costs dominate), each its own dedupe group, every trust
    label and section, 1 % required, longer ids and URIs, many distinct versions."""
    rnd = random.Random(seed)
    for i in range(n):
        size = rnd.randrange(40, 121)
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < size:
            words.append(WORDS[rnd.randrange(len(WORDS))])
        yield {
            "id": f"note-{i:08d}-{rnd.randrange(10**6):06d}",
            "section": SECTIONS[i % 4],
            "source_uri": f"https://wiki.example.com/space/{i % 97}/page/{i}",
            "source_version": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00",
            "effective_from": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}",
            "expires_on": None if rnd.random() < 0.7 else "2027-12-31",
            "required_permission": PERMISSIONS[rnd.randrange(5)],
            "trust": TRUST[i % 5],
            "dedupe_key": f"note-{i:08d}",
            "estimated_tokens": rnd.randrange(5, 40),
            "priority": rnd.randrange(0, 101),
            "required": i % 100 == 0,
            "content": " ".join(words),
        }


# Words as people write them: accents, typographic quotes and dashes, units.
PROSE = ["café", "naïve", "“refund”", "—", "résumé", "Zürich", "10 €", "déjà", "über", "straße"]


def prose_records(n: int, seed: int = 3) -> Iterator[dict[str, Any]]:
    """A third data shape: documentation prose, ~600 characters of which about
    one word in eight is not ASCII (accents, typographic quotes and dashes), as
    a team's docs have; one version each."""
    rnd = random.Random(seed)
    for i in range(n):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < 600:
            pool = PROSE if rnd.random() < 0.125 else WORDS
            words.append(pool[rnd.randrange(len(pool))])
        yield {
            "id": f"doc-{i:07d}",
            "section": "evidence",
            "source_uri": f"https://docs.example.com/guide/page-{i % 400}/",
            "source_version": "2026-03-01",
            "effective_from": "2026-03-01",
            "expires_on": None,
            "required_permission": PERMISSIONS[i % 5],
            "trust": TRUST[0],
            "dedupe_key": f"doc-{i:07d}",
            "estimated_tokens": rnd.randrange(100, 200),
            "priority": 50,
            "required": False,
            "content": " ".join(words),
        }


SHAPES = {"records": records, "short": short_records, "prose": prose_records}


def write_jsonl(
    path: Path, n: int, seed: int = 1, content_bytes: int = 400, shape: str = "records"
) -> Path:
    """`n` generated chunk records of one shape (`SHAPES`) as JSON Lines."""
    gen = records(n, seed, content_bytes) if shape == "records" else SHAPES[shape](n, seed)
    with path.open("w", encoding="utf-8") as f:
        for rec in gen:
            f.write(json.dumps(rec) + "\n")
    return path


def setup_ledger(url: str, path: Path, n: int, budget: int) -> None:
    """A migrated ledger holding `n` generated chunks, grants and a policy."""
    from ledger.api.ingest import ingest_files as ingest
    from ledger.store.access import change_grants, set_policy
    from ledger.store.engine import make_engine
    from ledger.store.migrate import upgrade_to_head

    engine = make_engine(url, create=True)
    upgrade_to_head(engine)
    ingest(engine, [str(write_jsonl(path, n))])
    change_grants(engine, "default", list(GRANTED), "grant")
    set_policy(engine, list(ALLOWED), budget)
    engine.dispose()


def diff_packs(url: str, path: Path, n: int) -> tuple[Any, int, int]:
    """A ledger of `n` candidates with the two packs the diff benchmarks compare
    (six months apart, the second with a smaller budget); (engine, a, b)."""
    from ledger.store.build import build_pack
    from ledger.store.engine import make_engine

    setup_ledger(url, path, n, n * 20)
    engine = make_engine(url)
    return engine, build_pack(engine, "2026-03-01"), build_pack(engine, "2026-09-01", budget=n * 15)
