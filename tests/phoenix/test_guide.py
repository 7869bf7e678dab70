"""docs/guides/opentelemetry.md as written: its ledger commands make the ledger,
its agent code runs unchanged against the test's Phoenix, Phoenix shows the
evictions the guide names, and its commands back from a span work."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from ledger.integrations import otel
from tests.conftest import ROOT, run_ledger
from tests.phoenix.conftest import Phoenix

GUIDE = ROOT / "docs" / "guides" / "opentelemetry.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def _ledger_commands(block: str) -> list[list[str]]:
    """Each `ledger ...` line of a shell block, as arguments (comments dropped)."""
    lines = [shlex.split(line, comments=True) for line in block.splitlines()]
    return [words[1:] for words in lines if words and words[0] == "ledger"]


def test_the_guide_runs_as_written(phoenix: Phoenix, tmp_path: Path) -> None:
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    setup, back = [cmds for b in _blocks("sh") if (cmds := _ledger_commands(b))]
    for args in setup:
        run_ledger(*args, cwd=tmp_path, check=True)
    (code,) = _blocks("python")
    (tmp_path / "agent.py").write_text(code, encoding="utf-8")
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": phoenix.traces_endpoint,
        "LEDGER_OTEL_EVENTS": "1",
    }
    ran = subprocess.run(
        [sys.executable, "agent.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("pack 1: ")

    spans = {s["name"]: s for s in phoenix.spans("support-agent", 3)}
    assert set(spans) == {"agent.turn", "retrieve", "chat"}
    retrieve = spans["retrieve"]
    assert retrieve["span_kind"] == "RETRIEVER" and spans["chat"]["span_kind"] == "LLM"
    events = [e["attributes"] for e in retrieve["events"]]
    # The two evictions the guide names, in the order it names them.
    assert [
        (e[otel.CHUNK_ID], e[otel.RETRIEVAL_RANK], e[otel.EVICTION_REASON]) for e in events
    ] == [
        ("mirror-refund-policy", 1, "duplicate"),
        ("shipping-note", 3, "budget"),
    ]
    attrs = retrieve["attributes"]
    assert attrs["input.value"] == attrs[otel.RETRIEVAL_QUERY_TEXT]  # the opt-in was on

    # Section 4's commands, its example values replaced by this span's.
    actual = {
        "1": str(attrs[otel.PACK_NUMBER]),
        "5d1f0c2a": events[0][otel.CHUNK_RECORD_DIGEST][:8],
        "4bf92f3577b34da6a3ce929d0e0e4736": retrieve["context"]["trace_id"],
    }
    for example in back:
        args = [actual.get(word, word) for word in example]
        shown = run_ledger(*args, cwd=tmp_path, check=True)
        assert shown.stdout.strip()
    why = run_ledger("--db", "support.db", "why-evicted", actual["5d1f0c2a"], "--pack",
                     actual["1"], "--json", cwd=tmp_path, check=True)  # fmt: skip
    assert '"reason": "duplicate"' in why.stdout
