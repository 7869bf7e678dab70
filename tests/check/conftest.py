"""What the check tests share: a seeded ledger (entries 1-3, no pack) made
once per module, a copy of it per test, and the ledger's whole state."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.seeded import seed_ledger


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("check") / "ledger.db"
    seed_ledger(db, init=True, build=False)
    return db


@pytest.fixture
def db(base: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ledger.db"
    copy.write_bytes(base.read_bytes())
    return copy


def state(db: Path) -> list[Any]:
    """Every row of every table: what "the ledger is unchanged" compares."""
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [
            (t, sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"')))) for t in sorted(tables)
        ]
