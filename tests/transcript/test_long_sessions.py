"""Long agent sessions through the ledger (issue 40), on both backends.

The real long Claude Code sessions (fixtures/transcripts/SOURCES.md, "Long
sessions") are too large to keep here; `long_session.long_claude_session`
generates their equivalent, fetching nothing: about 3.2 MB, and one "continue"
exchange of 2.1 MB, more than the 1,000,000 characters the ledger used to hold.
Every exchange must ingest and build whole, byte for byte; the tool's own
records in it are injected, not prompts; an exchange the ledger cannot hold as
one chunk is refused by name, in bytes; and a transcript pack's subject is
never taken as is from the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.core.exports import read_export
from ledger.core.transcript import budget_unit
from tests import dbtools
from tests.conftest import ledger_json, run_ledger
from tests.seeded import seed_ledger

from .exports_factory import file_lines
from .long_session import SESSION, long_claude_session

OLD_CAP = 1_000_000  # characters: what the ledger held before 16 Mi


@pytest.fixture(scope="module")
def long_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    data, prompts = long_claude_session()
    path = tmp_path_factory.mktemp("long") / f"{SESSION}.jsonl"
    path.write_bytes(data)
    return path, prompts


def test_the_generated_session_is_as_long_as_the_real_ones(
    long_session: tuple[Path, list[int]],
) -> None:
    path, prompts = long_session
    data = path.read_bytes()
    assert 3_000_000 < len(data) < 3_500_000
    t = read_export(data, "claude-code", name=path.name)
    assert t.export is not None and t.export.session_id == SESSION
    # One exchange per prompt the person typed, each starting at its prompt: the
    # task notifications and hook feedback inside the long turn open none.
    assert [e.first_line for e in t.exchanges] == prompts
    big = t.exchanges[2]
    assert len(t.payload(big).decode("utf-8")) > 1.5 * OLD_CAP
    assert big.marks == ("injected",) and t.export.injected == 8


def test_every_exchange_ingests_and_builds_byte_for_byte(
    db_url: str, long_session: tuple[Path, list[int]]
) -> None:
    path, prompts = long_session
    got = ledger_json(
        "ingest", "--format", "transcript", "--from", "claude-code", str(path), db=db_url
    )
    assert got["read"] == got["new"] == len(prompts)
    original = file_lines(path.read_bytes())
    ends = [p - 1 for p in prompts[1:]] + [len(original)]
    stored = dict(dbtools.query(db_url, "SELECT chunk_id, content FROM chunk_versions"))
    assert len(stored) == len(prompts)
    t = read_export(path.read_bytes(), "claude-code")
    for e in t.exchanges:
        body = stored[f"{SESSION}-{e.id}"].encode("utf-8")
        assert body == b"".join(original[e.first_line - 1 : e.last_line])
        assert e.first_line == prompts[e.index - 1] and e.last_line <= ends[e.index - 1]
    assert max(len(v) for v in stored.values()) > 1.5 * OLD_CAP
    total = sum(len(v.encode("utf-8")) for v in stored.values())
    # Everything admitted with room to spare; then a budget the long exchange
    # does not fit in: it is evicted by budget, the others are admitted.
    pack = ledger_json(
        "build",
        "--transcript",
        str(path),
        "--from",
        "claude-code",
        "--budget",
        str(2 * total),
        db=db_url,
    )
    assert len(pack["admitted"]) == len(prompts) and pack["evicted"] == []
    assert pack["subject"] == f"transcript:{SESSION}"
    small = ledger_json(
        "build",
        "--transcript",
        str(path),
        "--from",
        "claude-code",
        "--budget",
        "1500000",
        db=db_url,
    )
    assert [e["id"] for e in small["evicted"]] == [f"{SESSION}-e003"]
    assert small["evicted"][0]["reason"] == "budget"
    assert run_ledger("replay", str(small["pack"]), db=db_url).returncode == 0
    assert ledger_json("verify", db=db_url)["ok"] is True


def test_peak_memory_of_a_long_session_and_a_16_mib_record(
    tmp_path: Path, long_session: tuple[Path, list[int]]
) -> None:
    """Issue 40's bar: under 1 GB, for the long session and for a record at the cap
    (bench/bench_sessions.py measures the same with time)."""
    path, _prompts = long_session
    record = {
        "id": "cap-record",
        "section": "evidence",
        "source_uri": "https://example.org/cap",
        "source_version": "v1",
        "effective_from": "2026-01-01",
        "expires_on": None,
        "required_permission": "public-read",
        "trust": "approved-source",
        "dedupe_key": "cap-record",
        "estimated_tokens": 4_000_000,
        "priority": 50,
        "required": False,
        "content": ("ledger context budget exchange " * 600_000)[: 16 * 1024 * 1024],
    }
    (tmp_path / "cap.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    run_ledger("init", db=tmp_path / "l.db", check=True)
    peaks = []
    for args in (
        ("ingest", "cap.jsonl"),
        ("ingest", "--format", "transcript", "--from", "claude-code", str(path)),
    ):
        code = (
            "import resource, sys, runpy; sys.argv = ['ledger', '--db', 'l.db', *sys.argv[1:]];"
            "\ntry:\n    runpy.run_module('ledger_cli', run_name='__main__')\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, *args], cwd=tmp_path, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr[-500:]
        peaks.append(int(proc.stdout.split()[-1]) / 1024)
    stored = dict(dbtools.query(tmp_path / "l.db", "SELECT chunk_id, content FROM chunk_versions"))
    assert len(stored["cap-record"]) == 16 * 1024 * 1024
    assert all(peak < 1024 for peak in peaks), peaks


def test_an_exchange_the_ledger_cannot_hold_is_refused_by_name_in_bytes(
    tmp_path: Path,
) -> None:
    data, _prompts = long_claude_session(total_bytes=10_500_000, big_exchange_bytes=10_100_000)
    path = tmp_path / "huge.jsonl"
    path.write_bytes(data)
    db = tmp_path / "l.db"
    run_ledger("init", db=db, check=True)
    before = dbtools.snapshot(db)
    proc = run_ledger("ingest", "--format", "transcript", "--from", "claude-code", str(path), db=db)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()[-1:]
    assert line.startswith(f"error: {path}: e003 (lines ")
    assert "bytes framed" in line and "10,000,000 bytes" in line and "tokens" not in line
    assert dbtools.snapshot(db) == before
    # The continuation itself has no such limit.
    sidecar, out = tmp_path / "p.json", tmp_path / "out"
    run_ledger(
        "transcript", "annotate", "--from", "claude-code", str(path), str(sidecar), check=True
    )
    run_ledger(
        "transcript",
        "export",
        "--from",
        "claude-code",
        str(path),
        str(sidecar),
        "20000000",
        str(out),
        check=True,
    )
    assert (out / "continuation.md").stat().st_size > 10_100_000


def test_a_session_id_never_becomes_the_document_packs_subject(tmp_path: Path) -> None:
    """Issue 38 item 16: a session id `default` made `ledger why` answer about the
    transcript pack. A transcript pack's subject is `transcript:<session>`."""
    db = tmp_path / "l.db"
    seed_ledger(db, init=True)  # pack 1: the documents, subject `default`
    data, _prompts = long_claude_session(200_000, 50_000, session="default")
    path = tmp_path / "default.jsonl"
    path.write_bytes(data)
    run_ledger(
        "ingest", "--format", "transcript", "--from", "claude-code", str(path), db=db, check=True
    )
    pack = ledger_json(
        "build", "--transcript", str(path), "--from", "claude-code", "--budget", "10000000", db=db
    )
    assert pack["pack"] == 2 and pack["subject"] == "transcript:default"
    why = ledger_json("why", "refund", db=db)
    assert why["pack"] == 1 and "subject default)" in why["sentence"]
    listing = {p["pack"]: p["subject"] for p in ledger_json("packs", db=db)["packs"]}
    assert listing == {1: "default", 2: "transcript:default"}
    # Its budget and counts are bytes; the document pack's are tokens.
    assert budget_unit(pack["scope"]) == "bytes"
    assert budget_unit(ledger_json("show", "1", db=db).get("scope")) == "tokens"
