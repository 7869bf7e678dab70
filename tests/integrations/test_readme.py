"""The README's integration examples run as written against a demo ledger (the
ledger `make demo` starts from), each in a fresh process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURE, ROOT, run_ledger

README = (ROOT / "README.md").read_text("utf-8")


def examples() -> list[str]:
    start = README.index("\n## Integrations\n")
    end = README.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", README[start:end], re.S)


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    db = tmp_path / "demo" / "ledger.db"
    db.parent.mkdir()
    for args in (
        ["init"],
        ["ingest", str(FIXTURE)],
        ["subject", "grant", "default", "policy-read", "state-read", "user-input", "public-read"],
        ["policy", "set", "--allow-trust", "application-policy", "--allow-trust", "confirmed-state",
         "--allow-trust", "approved-source", "--allow-trust", "user-input", "--budget", "170"],
    ):  # fmt: skip
        run_ledger(*args, db=db, check=True)
    return tmp_path


def test_there_is_one_example_per_python_integration() -> None:
    joined = "\n".join(examples())
    assert len(examples()) == 3
    for module in ("langchain", "llamaindex"):
        assert f"ledger.integrations.{module}" in joined
    assert "opentelemetry" in joined


@pytest.mark.parametrize("index", range(3))
def test_each_example_runs_and_records_an_ordinary_pack(demo: Path, index: int) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", examples()[index]], cwd=demo, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    db = demo / "demo" / "ledger.db"
    packs = json.loads(run_ledger("packs", "--json", db=db, check=True).stdout)["packs"]
    assert len(packs) == 1
    assert json.loads(run_ledger("verify", "--json", db=db, check=True).stdout)["ok"] is True
    assert run_ledger("replay", "1", db=db).returncode == 0
