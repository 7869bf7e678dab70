"""Real Claude Code and Codex exports (fixtures/transcripts/, see SOURCES.md there)
read as they are, end to end through the CLI and the library.

For each file: `transcript annotate --from` (lines, marks, skipped counts, the
file's SHA-256), `transcript export --from` (every exchange verbatim in
continuation.md, byte for byte from the original lines), `ingest --format
transcript --from` (each exchange stored as its original lines, under an id
named by the session) and `build --transcript --from` (the pack labelled with
the transcript's date and session). Nothing is dropped silently: every line of
the file lies in an exchange or is a record of a type the `skipped` counts
name, and those counts equal a tally of the file's own lines made here with
`json`. The expected exchanges and counts were read off the files by hand.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ledger.core.exports import read_export, read_transcript
from ledger.core.transcript import TranscriptError
from tests import dbtools
from tests.conftest import ledger_json, run_ledger

from .exports_factory import file_lines
from .factory import FIXTURES
from .test_exports import blocks, record_type

CLAUDE = FIXTURES / "claude-code" / "codemie-incremental-simple-turn-1.jsonl"
SUBAGENTS = FIXTURES / "claude-code" / "codemie-incremental-subagents-turn-1.jsonl"
CODEX = FIXTURES / "codex" / "simonw-sample_codex_session.jsonl"
SHARED = FIXTURES / "claude-code" / "session-share" / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"


# path, --from, session, date, exchanges (lines, marks), skipped
REAL: list[tuple[Path, str, str, str, list[tuple[list[int], list[str]]], dict[str, int]]] = [
    (
        # The prompt (line 3), a thinking and a text block (7, 12); the summaries the
        # tool wrote between them (4-6, 8-11) are inside the exchange's lines and
        # counted as skipped; the stop hook's summary (14) closes nothing.
        CLAUDE,
        "claude-code",
        "3fb74381-1bf4-475e-8c6f-442d872b1bcf",
        "2026-01-15",
        [([3, 12], [])],
        {"file-history-snapshot": 1, "summary": 15, "system:stop_hook_summary": 1},
    ),
    (
        # One prompt (3) and a long turn: a Task call to a subagent and its result
        # (6, 7), five Bash calls with their results, thinking between them; the file
        # ends on a sixth Bash call (25) that never got its result: cut off, so the
        # exchange is kept whole and marked interrupted.
        SUBAGENTS,
        "claude-code",
        "e9fb405b-169f-40eb-9396-7e75076f045d",
        "2026-01-14",
        [([3, 25], ["interrupted"])],
        {"file-history-snapshot": 1, "summary": 1},
    ),
    (
        # Three background subagents launched from the first prompt (2); their
        # task notifications (22, 60, 66) are the tool's records, injected into the
        # exchange in progress (2-36 and 44-68), never prompts. Two `/plugin` slash
        # commands (37, 41) typed by the person, with their local output, get no
        # model answer; `/publish-session` (44) does. The tool result of line 79
        # is answered only after the next prompt (82): interrupted; the
        # "[Request interrupted by user]" of line 83 marks the last one.
        SHARED,
        "claude-code",
        "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68",
        "2026-01-22",
        [
            ([2, 36], ["injected"]),
            ([37, 40], ["injected", "unanswered"]),
            ([41, 42], ["injected", "unanswered"]),
            ([44, 68], ["injected"]),
            ([70, 72], ["injected"]),
            ([74, 79], ["interrupted"]),
            ([82, 85], ["injected", "interrupted"]),
        ],
        {
            "file-history-snapshot": 10,
            "progress": 1,
            "queue-operation": 14,
            "summary": 1,
            "system:api_error": 9,
            "system:turn_duration": 2,
        },
    ),
    (
        # AGENTS.md (2) and the environment context (3) are injected, the prompt (4)
        # is written twice (5), six turn contexts follow and no answer ever comes.
        CODEX,
        "codex",
        "019b64e5-57fa-7463-b644-fba7e456f905",
        "2025-12-28",
        [([2, 5], ["injected", "unanswered"])],
        {"session_meta": 1, "turn_context": 6},
    ),
]
IDS = [p.name for p, *_ in REAL]


def annotate(source: Path, fmt: str, sidecar: Path) -> Any:
    proc = run_ledger("transcript", "annotate", "--from", fmt, str(source), str(sidecar), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def tally(data: bytes, fmt: str) -> Counter[str]:
    """Record type -> number of lines of the file, by `json` alone."""
    return Counter(record_type(line, fmt) for line in file_lines(data) if line.strip())


@pytest.mark.parametrize(("path", "fmt", "session", "day", "exchanges", "skipped"), REAL, ids=IDS)
def test_annotate_reads_every_line_and_counts_what_it_skips(
    tmp_path: Path,
    path: Path,
    fmt: str,
    session: str,
    day: str,
    exchanges: list[tuple[list[int], list[str]]],
    skipped: dict[str, int],
) -> None:
    data = path.read_bytes()
    doc = annotate(path, fmt, tmp_path / "p.json")
    assert doc["format"] == fmt and doc["session"] == session and doc["dates"] == [day, day]
    assert doc["sourceSha256"] == hashlib.sha256(data).hexdigest()
    assert [(e["lines"], e["marks"]) for e in doc["exchanges"]] == exchanges
    assert doc["skipped"] == skipped
    # Nothing dropped silently: the skipped counts are every line of those types,
    # and every line outside the exchanges is one of them.
    types = tally(data, fmt)
    assert {t: types[t] for t in doc["skipped"]} == doc["skipped"]
    inside = {n for e in doc["exchanges"] for n in range(e["lines"][0], e["lines"][1] + 1)}
    lines = file_lines(data)
    outside = [n for n in range(1, len(lines) + 1) if n not in inside]
    assert outside and all(record_type(lines[n - 1], fmt) in doc["skipped"] for n in outside)
    assert sum(doc["skipped"].values()) >= len(outside)
    # The plain output says what was skipped, on stderr.
    proc = run_ledger("transcript", "annotate", "--from", fmt, str(path), str(tmp_path / "q.json"))
    assert proc.returncode == 0 and proc.stdout.startswith(f"{len(exchanges)} exchanges (")
    assert all(f"{t} {n}" in proc.stderr for t, n in skipped.items())


@pytest.mark.parametrize(("path", "fmt", "session", "day", "exchanges", "skipped"), REAL, ids=IDS)
def test_export_holds_every_exchange_verbatim_and_says_what_was_skipped(
    tmp_path: Path,
    path: Path,
    fmt: str,
    session: str,
    day: str,
    exchanges: list[tuple[list[int], list[str]]],
    skipped: dict[str, int],
) -> None:
    before = path.read_bytes()
    sidecar = tmp_path / "p.json"
    doc = annotate(path, fmt, sidecar)
    out = tmp_path / "out"
    proc = run_ledger(
        "transcript", "export", "--from", fmt, str(path), str(sidecar), str(10**8), str(out)
    )
    assert proc.returncode == 0, proc.stderr
    original = file_lines(before)
    continuation = (out / "continuation.md").read_bytes()
    found = blocks(continuation)
    assert list(found) == [e["id"] for e in doc["exchanges"]]
    for e in doc["exchanges"]:
        first, last = e["lines"]
        assert found[e["id"]] == (
            (first, last),
            e["marks"],
            b"".join(original[first - 1 : last]),
        )
    manifest = json.loads((out / "omissions.json").read_text(encoding="utf-8"))
    assert manifest["skipped"] == skipped
    assert manifest["sourceSha256"] == hashlib.sha256(before).hexdigest()
    assert [(e["lines"], e["marks"], e["status"]) for e in manifest["exchanges"]] == [
        (lines, marks, "selected") for lines, marks in exchanges
    ]
    assert len(continuation) == manifest["used"]
    assert path.read_bytes() == before


@pytest.mark.parametrize(("path", "fmt", "session", "day", "exchanges", "skipped"), REAL, ids=IDS)
def test_ingest_and_build_keep_the_original_lines_under_session_ids(
    db_url: str,
    path: Path,
    fmt: str,
    session: str,
    day: str,
    exchanges: list[tuple[list[int], list[str]]],
    skipped: dict[str, int],
) -> None:
    got = ledger_json("ingest", "--format", "transcript", "--from", fmt, str(path), db=db_url)
    assert got["new"] == got["read"] == len(exchanges)
    ids = [f"{session}-e{n:03d}" for n in range(1, len(exchanges) + 1)]
    assert sorted(c["id"] for c in ledger_json("chunks", db=db_url)["chunks"]) == ids
    original = file_lines(path.read_bytes())
    stored = dict(dbtools.query(db_url, "SELECT chunk_id, content FROM chunk_versions"))
    for chunk_id, (lines, _marks) in zip(ids, exchanges, strict=True):
        assert stored[chunk_id].encode("utf-8") == b"".join(original[lines[0] - 1 : lines[1]])
    pack = ledger_json(
        "build", "--transcript", str(path), "--from", fmt, "--budget", str(10**7), db=db_url
    )
    assert (pack["as_of"], pack["subject"]) == (day, "transcript:" + session)
    assert [a["id"] for a in pack["admitted"]] == ids and pack["evicted"] == []
    listing = run_ledger("packs", db=db_url, check=True).stdout
    assert day in listing and session in listing and "1970-01-01" not in listing
    assert run_ledger("replay", str(pack["pack"]), db=db_url).returncode == 0
    assert ledger_json("verify", db=db_url)["ok"] is True


@pytest.mark.parametrize(("path", "fmt", "session", "day", "exchanges", "skipped"), REAL, ids=IDS)
def test_the_library_reads_the_same_and_the_strict_contract_still_refuses(
    path: Path,
    fmt: str,
    session: str,
    day: str,
    exchanges: list[tuple[list[int], list[str]]],
    skipped: dict[str, int],
) -> None:
    data = path.read_bytes()
    t = read_export(data, fmt, name=path.name)
    assert t.export is not None and t.export.session_id == session
    assert dict(t.export.skipped) == skipped
    original = file_lines(data)
    for ex, (lines, marks) in zip(t.exchanges, exchanges, strict=True):
        assert ([ex.first_line, ex.last_line], list(ex.marks)) == (lines, marks)
        assert t.payload(ex) == b"".join(original[lines[0] - 1 : lines[1]])
    with pytest.raises(TranscriptError) as err:
        read_transcript(data, None, name=path.name)
    assert err.value.line == 1 and "metadata record" in str(err.value)
    assert str(err.value).endswith(f": use --from {fmt}")
