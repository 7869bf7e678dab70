"""Erasure of document versions: the title (metadata) stays searchable and `why`
says the body was erased; ingesting the same file again is no new version and
does not bring the body back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_ledger

RULES = """[source]
name = "kb"
uri = "https://example.com/kb/{version}/{path}"
version = "content"
effective_from = "2026-07-01"

[[rule]]
match = "**"
section = "evidence"
trust = "approved-source"
required_permission = "kb-read"
priority = 50
"""


def _ok(*args: str, db: str) -> Any:
    proc = run_ledger(*args, db=db)
    assert proc.returncode == 0, (args, proc.stderr)
    return json.loads(proc.stdout) if "--json" in args else proc


def test_document_erasure_keeps_the_title_and_is_not_undone_by_a_reingest(
    new_db: Any, tmp_path: Path
) -> None:
    db = new_db("docs")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "refunds.md").write_text(
        "# Refunds\n\nCall Jane Placeholder at 555-0199 about damaged parcels.\n",
        encoding="utf-8",
    )
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    _ok("ingest", str(kb), "--rules", str(rules), "--json", db=db)
    _ok("subject", "grant", "default", "kb-read", db=db)
    _ok("policy", "set", "--allow-trust", "approved-source", "--budget", "500", db=db)
    _ok("build", "--as-of", "2026-07-21", db=db)
    (chunk_id,) = [c["id"] for c in _ok("chunks", "--json", db=db)["chunks"]]

    erased = _ok("erase", chunk_id, "--reason", "personal data", "--json", db=db)
    info = {"entry": erased["entry"], "reason": "personal data"}
    assert _ok("search", "placeholder", "--json", db=db)["results"] == []
    hits = _ok("search", "refunds", "--with-content", "--json", db=db)["results"]
    assert [(h["id"], h["erased"], h["snippet"]) for h in hits] == [(chunk_id, info, None)]
    why = _ok("why", "refunds", "--json", db=db)
    assert why["verdict"] == "admitted" and why["matches"][0]["erased"] == info

    # The file changes elsewhere, so it is parsed again: its erased section is the
    # same text, compared by digest, so no new version and no body comes back.
    with open(kb / "refunds.md", "a", encoding="utf-8") as f:
        f.write("\n## Shipping\n\nFree over 50 EUR.\n")
    again = _ok("ingest", str(kb), "--rules", str(rules), "--json", db=db)
    assert again["new"] == 1 and again["unchanged"] == 1
    chunks = {c["id"]: c for c in _ok("chunks", "--json", db=db)["chunks"]}
    assert len(chunks) == 2 and chunks[chunk_id]["erased"] == info
    assert _ok("verify", "--json", db=db)["ok"] is True
    assert _ok("replay", "1", "--json", db=db)["identical"] is True
