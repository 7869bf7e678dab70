"""A policy row changed behind the ledger's back is an integrity error (exit 4,
one line) wherever it is read, as `verify` says it (issue 38: a text budget
made `ledger build` crash with a TypeError)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import dbtools
from tests.conftest import run_ledger
from tests.seeded import seed_ledger


@pytest.mark.parametrize("budget", ["'lots'", "1.5", "-3", "x'00'"])
@pytest.mark.parametrize(
    "argv", [("build", "--as-of", "2026-07-21"), ("policy", "show"), ("verify",)]
)
def test_a_tampered_budget_is_exit_4_in_one_line(
    tmp_path: Path, budget: str, argv: tuple[str, ...]
) -> None:
    db = str(tmp_path / "ledger.db")
    seed_ledger(db, init=True, build=False)
    with dbtools.connect(db) as con:
        con.execute(f"UPDATE policies SET budget = {budget}")
        con.commit()
    proc = run_ledger(*argv, db=db)
    assert proc.returncode == 4, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 1
