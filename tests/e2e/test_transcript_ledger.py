"""Transcripts through the ledger: the same selection as `transcript export`, and
`why-evicted` / `diff` / `replay` explaining exchanges like any chunk."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import ledger_json, run_ledger
from tests.seeded import seed_ledger
from tests.transcript.factory import ExchangeSpec, build_transcript

PRIORITIES = ["e001=pinned", "e004=pinned", "e003=aside", "e007=aside", "e010=aside"]


def _transcript(tmp_path: Path) -> Path:
    specs = []
    for i in range(12):
        specs.append(
            ExchangeSpec(
                shape="plain" if i % 2 else "wrapped",
                text=f"exchange {i} " + "détail ``` " * (3 + (i * 7) % 11),
                tools=i % 3,
                eol="\r\n" if i % 4 == 1 else "\n",
            )
        )
    data, _ = build_transcript(specs)
    path = tmp_path / "chat.jsonl"
    path.write_bytes(data)
    return path


@pytest.fixture
def annotated(tmp_path: Path) -> tuple[Path, Path]:
    src = _transcript(tmp_path)
    sidecar = tmp_path / "chat.priorities.json"
    run_ledger("transcript", "annotate", str(src), str(sidecar), *PRIORITIES, check=True)
    return src, sidecar


def _export(src: Path, sidecar: Path, budget: int, out: Path) -> dict:
    run_ledger("transcript", "export", str(src), str(sidecar), str(budget), str(out), check=True)
    return json.loads((out / "omissions.json").read_text(encoding="utf-8"))


def test_ledger_selection_equals_export_and_why_evicted_explains(
    db_url: str, annotated: tuple[Path, Path], tmp_path: Path
) -> None:
    src, sidecar = annotated
    full = _export(src, sidecar, 10**7, tmp_path / "all")
    total = full["used"]
    budget = total * 3 // 5  # some normal and aside exchanges must go
    omissions = _export(src, sidecar, budget, tmp_path / "out")
    selected = [e["id"] for e in omissions["exchanges"] if e["status"] == "selected"]
    omitted = {e["id"]: e for e in omissions["exchanges"] if e["status"] != "selected"}
    assert omitted and len(selected) > 2

    ing = ledger_json(
        "ingest", "--format", "transcript", str(src), "--priorities", str(sidecar), db=db_url
    )
    assert ing["new"] == 12 and ing["read"] == 12
    pack = ledger_json(
        "build",
        "--transcript",
        str(src),
        "--priorities",
        str(sidecar),
        "--budget",
        str(budget),
        db=db_url,
    )
    admitted = [a["id"] for a in pack["admitted"]]
    assert admitted == ["chat-" + e for e in selected]  # same set, same (source) order
    assert sorted(e["id"] for e in pack["evicted"]) == sorted("chat-" + e for e in omitted)
    assert all(e["reason"] == "budget" for e in pack["evicted"])
    # The pack's used bytes plus the fixed header are exactly continuation.md's size.
    header = budget - pack["budget"]
    assert pack["used"] + header == omissions["used"]
    assert pack["used"] + header == len((tmp_path / "out" / "continuation.md").read_bytes())

    gone = sorted(omitted)[0]
    why = ledger_json("why-evicted", "chat-" + gone, db=db_url)
    decision = why["versions"][0]["decisions"][0]
    assert decision["reason"] == "budget" and decision["admitted"] is False
    assert decision["detail"]["needed"] == omitted[gone]["framedBytes"]
    assert decision["detail"]["needed"] > decision["detail"]["remaining"]
    hint = decision["would_admit"]
    assert hint["admits"] is True and hint["steps"][0]["kind"] == "budget"
    plain = run_ledger("why-evicted", "chat-" + gone, db=db_url, check=True).stdout
    assert plain.splitlines()[0].startswith(f"chat-{gone}@") and "budget" in plain.splitlines()[0]

    # A transcript pack's counts are bytes, and every text says so (never "tokens").
    assert decision["unit"] == "bytes" and pack["unit"] == "bytes"
    needed, left = decision["detail"]["needed"], decision["detail"]["remaining"]
    assert f"it needed {needed} bytes but only {left} remained" in plain.splitlines()[0]
    texts = {
        "why-evicted": plain,
        "show": run_ledger("show", str(pack["pack"]), db=db_url, check=True).stdout,
        "why": run_ledger("why", "exchange", "--pack", str(pack["pack"]), db=db_url).stdout,
        "export": run_ledger(
            "export", str(pack["pack"]), "--format", "markdown", db=db_url, check=True
        ).stdout,
    }
    report = tmp_path / "report.html"
    run_ledger("report", str(pack["pack"]), "-o", str(report), db=db_url, check=True)
    page = report.read_text(encoding="utf-8")
    page = re.sub(r"<script.*?</script>|<style.*?</style>", "", page, flags=re.S)
    texts["report"] = re.sub(r"<[^>]*>", " ", page)  # the words a reader sees
    for name, text in texts.items():
        assert "bytes" in text, name
        assert "tokens" not in text.replace("estimated_tokens", ""), name
    assert "UTF-8 bytes of continuation.md" in texts["show"]

    # Applying the hint (more bytes for the whole file) really admits it.
    bigger = pack["budget"] + header + hint["steps"][0]["extra"]
    again = ledger_json(
        "build",
        "--transcript",
        str(src),
        "--priorities",
        str(sidecar),
        "--budget",
        str(bigger),
        db=db_url,
    )
    assert "chat-" + gone in [a["id"] for a in again["admitted"]]
    changes = ledger_json("diff", str(pack["pack"]), str(again["pack"]), db=db_url)["changes"]
    assert any(c["id"] == "chat-" + gone and c["cause"] == "budget change" for c in changes)

    assert ledger_json("verify", db=db_url)["ok"] is True
    for n in (pack["pack"], again["pack"]):
        assert run_ledger("replay", str(n), db=db_url).returncode == 0


def test_exchanges_are_not_document_candidates_and_reannotation_adds_versions(
    db_url: str, annotated: tuple[Path, Path], tmp_path: Path
) -> None:
    src, sidecar = annotated
    seed_ledger(
        db_url,
        build=False,
        also_ingest=[["--format", "transcript", str(src), "--priorities", str(sidecar)]],
        extra_grants=["transcript-read"],
    )
    doc = ledger_json("build", "--as-of", "2026-07-21", db=db_url)
    assert doc["candidates"] == 11  # the fixture's chunks only, pinned exchanges do not fail it
    assert not any(a["id"].startswith("chat-") for a in doc["admitted"] + doc["evicted"])

    # A new annotation: new versions of every exchange; the stored ones stay.
    other = tmp_path / "other.priorities.json"
    run_ledger("transcript", "annotate", str(src), str(other), "e002=pinned", check=True)
    again = ledger_json(
        "ingest", "--format", "transcript", str(src), "--priorities", str(other), db=db_url
    )
    assert again["new"] == 12 and again["unchanged"] == 0
    same = ledger_json(
        "ingest", "--format", "transcript", str(src), "--priorities", str(sidecar), db=db_url
    )
    assert same["new"] == 0 and same["unchanged"] == 12
    versions = ledger_json("chunks", "--id", "chat-e002", db=db_url)["chunks"]
    assert len(versions) == 2 and {v["required"] for v in versions} == {True, False}


def test_transcript_pack_refusals_leave_the_ledger_unchanged(
    db_url: str, annotated: tuple[Path, Path], tmp_path: Path
) -> None:
    src, sidecar = annotated
    missing = run_ledger(
        "build",
        "--transcript",
        str(src),
        "--priorities",
        str(sidecar),
        "--budget",
        "9999",
        db=db_url,
    )
    assert missing.returncode == 1 and "ingest --format transcript" in missing.stderr
    run_ledger(
        "ingest",
        "--format",
        "transcript",
        str(src),
        "--priorities",
        str(sidecar),
        db=db_url,
        check=True,
    )
    head = run_ledger("head", db=db_url, check=True).stdout
    tiny = run_ledger(
        "build",
        "--transcript",
        str(src),
        "--priorities",
        str(sidecar),
        "--budget",
        "400",
        db=db_url,
    )
    assert tiny.returncode == 1
    assert (
        tiny.stderr.startswith("error: ")
        and "pinned exchanges plus the Markdown framing" in tiny.stderr
    )
    assert "Traceback" not in tiny.stderr
    assert run_ledger("head", db=db_url, check=True).stdout == head
    no_budget = run_ledger(
        "build", "--transcript", str(src), "--priorities", str(sidecar), db=db_url
    )
    assert no_budget.returncode == 2 and "--budget" in no_budget.stderr
    stale = tmp_path / "stale.jsonl"
    stale.write_bytes(
        src.read_bytes()
        + b'{"role": "user", "content": "more"}\n{"role": "assistant", "content": "x"}\n'
    )
    refused = run_ledger(
        "ingest", "--format", "transcript", str(stale), "--priorities", str(sidecar), db=db_url
    )
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert run_ledger("head", db=db_url, check=True).stdout == head
