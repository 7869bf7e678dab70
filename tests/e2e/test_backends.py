"""The same inputs give the same digests on SQLite and on PostgreSQL: records,
packs, inputs and the whole hash chain."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import chunk, ledger_json, run_ledger, write_jsonl
from tests.seeded import seed_ledger


def _history(db: str, tmp_path: Path) -> dict[str, object]:
    """One ledger history, the same on any backend; returns every digest it made."""
    seed_ledger(db, build=False)
    first = ledger_json("build", "--as-of", "2026-07-21", db=db)
    update = write_jsonl(
        tmp_path / "update.jsonl",
        [
            chunk(
                id="refund-faq",
                source_version="2026-08",
                effective_from="2026-08-01",
                source_uri="public://faq/refund",
                dedupe_key="refund-faq",
                estimated_tokens=36,
                content="Revised FAQ: refunds within 30 days. ünïcödé ✓",
            ),
        ],
    )
    run_ledger("ingest", str(update), db=db, check=True)
    run_ledger("subject", "revoke", "default", "public-read", db=db, check=True)
    second = ledger_json("build", "--as-of", "2026-09-02", "--budget", "200", db=db)
    third = ledger_json("build", "--as-of", "2026-09-02", "--counter", "cl100k_base", db=db)
    verified = ledger_json("verify", db=db)
    assert verified["ok"] is True
    return {
        "chunks": [
            (c["id"], c["source_version"], c["record_digest"], c["content_digest"])
            for c in ledger_json("chunks", db=db)["chunks"]
        ],
        "packs": [(p["pack_digest"], p["input_digest"], p["used"]) for p in (first, second, third)],
        "decisions": [(p["admitted"], p["evicted"]) for p in (first, second, third)],
        "head": verified["head"],
        "entries": verified["entries"],
        # The Merkle tree over the entries (its origin, a random ledger id, differs).
        "tree": {
            k: v for k, v in ledger_json("checkpoint", db=db).items() if k in ("size", "root")
        },
        "proofs": (
            ledger_json("prove", "2", db=db)["path"],
            ledger_json("prove", "--consistency", "3", db=db)["path"],
        ),
    }


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_sqlite_and_postgresql_give_identical_digests(
    db_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from ledger.store.engine import make_engine
    from ledger.store.migrate import upgrade_to_head

    sqlite_url = "sqlite:///" + str(tmp_path / "twin.db")
    engine = make_engine(sqlite_url, create=True)
    upgrade_to_head(engine)
    engine.dispose()
    on_pg = _history(db_url, tmp_path)
    on_sqlite = _history(sqlite_url, tmp_path)
    assert on_pg == on_sqlite
    assert len(on_pg["packs"]) == 3 and len(set(on_pg["packs"])) == 3  # three different packs
