"""The frameworks load only when an integration is used: `import ledger`, the CLI
and a plain build pay nothing for them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, chunk, write_jsonl

FRAMEWORKS = ("langchain_core", "llama_index", "opentelemetry", "mcp", "pydantic")


def loaded_after(code: str, cwd: Path = ROOT) -> list[str]:
    probe = (
        f"{code}\nimport sys, json\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({FRAMEWORKS!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, check=True
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_importing_ledger_and_its_cli_loads_no_framework() -> None:
    assert loaded_after("import ledger, ledger.api, ledger_cli.main, ledger.integrations") == []


def test_the_cli_help_and_a_plain_build_load_no_framework(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    src = write_jsonl(tmp_path / "c.jsonl", [chunk()])
    code = f"""
import ledger
from ledger_cli.main import main
for argv in (["--help"], ["build", "--help"], ["mcp", "--help"]):
    try:
        main(argv)
    except SystemExit:
        pass
with ledger.open({str(db)!r}, create=True) as lg:
    lg.ingest_paths([{str(src)!r}])
    lg.grant("default", "public-read")
    lg.set_policy(allow_trust=["approved-source"], budget=50)
    lg.build("2026-07-21", candidates=["alpha"])
    lg.build("2026-07-21", trace_id="4bf92f3577b34da6a3ce929d0e0e4736")
"""
    assert loaded_after(code) == []


def test_each_integration_loads_its_own_framework_and_no_other() -> None:
    # otel imports OpenTelemetry only in a build, and only when the application has.
    assert loaded_after("import ledger.integrations.otel") == []
    # (langchain-core brings OpenTelemetry and pydantic itself: not ours to avoid.)
    assert {"llama_index", "mcp"}.isdisjoint(loaded_after("import ledger.integrations.langchain"))
    assert {"langchain_core", "mcp"}.isdisjoint(
        loaded_after("import ledger.integrations.llamaindex")
    )
    assert {"langchain_core", "llama_index"}.isdisjoint(
        loaded_after("import ledger.integrations.mcp")
    )
