"""`Ledger.ingest_paths(..., rules=)` and `Ledger.retract`: the same answers as the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

import ledger
from tests import dbtools
from tests.conftest import ledger_json, run_ledger

RULES = """
[source]
name = "kb"
uri = "https://kb.example/{version}/{path}"
version = "v1"
effective_from = "2026-01-01"
snapshot = true

[[rule]]
match = "**"
section = "evidence"
trust = "approved-source"
required_permission = "kb-read"
priority = 50
"""


def test_the_api_and_the_cli_store_the_same_versions_and_say_the_same(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nAlpha.\n\n## B\n\nBeta.\n", encoding="utf-8")
    (docs / "old.md").write_text("# Old\n\nGone later.\n", encoding="utf-8")
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    via_cli = dbtools.new_ledger(tmp_path / "cli", "sqlite")
    via_api = str(tmp_path / "api.db")
    with ledger.open(via_api, create=True) as lg:
        first = lg.ingest_paths([docs], rules=rules)
        assert isinstance(first, ledger.DocumentIngestSummary)
        assert first.to_json() == ledger_json(
            "ingest", str(docs), "--rules", str(rules), db=via_cli
        )
        (docs / "old.md").unlink()
        second = lg.ingest_paths(
            [docs], rules=rules, source_version="v2", effective_from="2026-02-01"
        )
        cli_second = ledger_json(
            "ingest",
            str(docs),
            "--rules",
            str(rules),
            "--source-version",
            "v2",
            "--effective-from",
            "2026-02-01",
            db=via_cli,
        )
        assert second.to_json() == cli_second and len(second.retracted) == 1
        assert lg.chunks().to_json() == ledger_json("chunks", db=via_cli)
        done = lg.retract(["kb-a--a"], from_date="2026-03-01", reason="merged")
        assert isinstance(done, ledger.RetractResult)
        assert done.to_json() == ledger_json(
            "retract", "kb-a--a", "--from", "2026-03-01", "--reason", "merged", db=via_cli
        )
        with pytest.raises(ledger.NotFoundError) as missing:
            lg.retract(["kb-nothing"], from_date="2026-03-01")
        assert missing.value.exit_code == 3
        with pytest.raises(ledger.InputError, match="go with rules"):
            lg.ingest_paths([docs], source_version="v3")
        with pytest.raises(ledger.InputError, match="do not go with rules"):
            lg.ingest_paths([docs], rules=rules, format="jsonl")
        assert lg.verify().ok
    assert run_ledger("verify", db=via_cli).returncode == 0
