"""`--from claude-code|codex` end to end, in subprocesses, as a user runs them:
`transcript annotate|export`, `ingest --format transcript`, `build --transcript`,
and what `why-evicted` then says about exchanges of real sessions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ledger_json, run_ledger

from .exports_factory import (
    SESSION,
    cc_prompt,
    cc_summary,
    cc_text,
    cc_tool_result,
    cc_tool_use,
    cx_answer,
    cx_call,
    cx_meta,
    cx_output,
    cx_prompt,
    cx_turn_context,
    file_lines,
    jsonl,
)
from .test_exports import blocks

ROLLOUT_SESSION = "019e1695-0522-7c83-8b39-0dd379793f80"  # cx_meta's session id


def sample_session(path: Path) -> Path:
    """A Claude Code session: a leading summary, then the issue's interrupted turn
    (a new prompt right after a tool result, lines 2-4), then an answered prompt."""
    path.write_bytes(
        jsonl(
            cc_summary(),
            cc_prompt("list the files"),
            cc_tool_use("t1"),
            cc_tool_result("t1", "a.txt b.txt"),
            cc_prompt("never mind, explain the README", ts="2026-01-21T09:01:00.000Z"),
            cc_text("The README explains the build.", ts="2026-01-21T09:01:05.000Z"),
        )
    )
    return path


def three_turns(path: Path) -> Path:
    """A Claude Code session of three answered exchanges of different sizes."""
    records: list[dict[str, Any]] = [cc_summary()]
    for n in range(3):
        records += [
            cc_prompt(f"task {n} " + "detail " * (30 * (n + 1)), ts=f"2026-01-21T09:0{n}:00Z"),
            cc_tool_use(f"t{n}", ts=f"2026-01-21T09:0{n}:10Z"),
            cc_tool_result(f"t{n}", "result " * (20 * (n + 1)), ts=f"2026-01-21T09:0{n}:20Z"),
            cc_text(f"done {n}", ts=f"2026-01-21T09:0{n}:30Z"),
        ]
    path.write_bytes(jsonl(*records))
    return path


def rollout(path: Path) -> Path:
    """A Codex rollout of three exchanges: prompts written twice, a tool call."""
    records: list[dict[str, Any]] = [cx_meta(), cx_turn_context()]
    for n in range(3):
        records += cx_prompt(f"prompt {n}", ts=f"2026-05-11T10:0{n}:01.000Z")
        records += [cx_call(f"c{n}"), cx_output(f"c{n}")]
        records.append(cx_answer(f"answer {n}", ts=f"2026-05-11T10:0{n}:03.000Z"))
    path.write_bytes(jsonl(*records))
    return path


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: "), stderr
    return stderr


def annotate_json(*args: str | Path) -> Any:
    proc = run_ledger("transcript", "annotate", *map(str, args), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# -- transcript annotate | export ---------------------------------------------------------


def test_annotate_json_carries_lines_marks_and_skipped(tmp_path: Path) -> None:
    source = sample_session(tmp_path / "s.jsonl")
    doc = annotate_json("--from", "claude-code", source, tmp_path / "p.json", "e002=pinned")
    assert doc["skipped"] == {"summary": 1} and doc["format"] == "claude-code"
    assert doc["session"] == SESSION and doc["dates"] == ["2026-01-21", "2026-01-21"]
    assert [(e["id"], e["lines"], e["marks"], e["priority"]) for e in doc["exchanges"]] == [
        ("e001", [2, 4], ["interrupted"], "normal"),
        ("e002", [5, 6], [], "pinned"),
    ]
    sidecar = json.loads((tmp_path / "p.json").read_text())
    assert sidecar["priorities"] == {"e001": "normal", "e002": "pinned"}
    # The plain output names what was skipped, on stderr.
    proc = run_ledger(
        "transcript", "annotate", "--from", "claude-code", str(source), str(tmp_path / "q.json")
    )
    assert proc.returncode == 0 and proc.stdout.startswith("2 exchanges (0 pinned, 2 normal")
    assert "summary 1" in proc.stderr


@pytest.mark.parametrize(
    ("make", "fmt"),
    [(sample_session, "claude-code"), (three_turns, "claude-code"), (rollout, "codex")],
    ids=["sample", "three-turns", "rollout"],
)
def test_export_is_verbatim_and_lists_every_exchange(tmp_path: Path, make: Any, fmt: str) -> None:
    source = make(tmp_path / "s.jsonl")
    before = source.read_bytes()
    sidecar = tmp_path / "p.json"
    doc = annotate_json("--from", fmt, source, sidecar)
    proc = run_ledger(
        "transcript",
        "export",
        "--from",
        fmt,
        str(source),
        str(sidecar),
        str(10**8),
        str(tmp_path / "out"),
    )
    assert proc.returncode == 0, proc.stderr
    original = file_lines(before)
    out = (tmp_path / "out" / "continuation.md").read_bytes()
    found = blocks(out)
    assert list(found) == [e["id"] for e in doc["exchanges"]] and len(found) >= 2
    for e in doc["exchanges"]:
        first, last = e["lines"]
        assert found[e["id"]] == ((first, last), e["marks"], b"".join(original[first - 1 : last]))
    manifest = json.loads((tmp_path / "out" / "omissions.json").read_text())
    assert manifest["skipped"] == doc["skipped"] and manifest["sourceSha256"] == doc["sourceSha256"]
    assert [(e["lines"], e["marks"], e["status"]) for e in manifest["exchanges"]] == [
        (e["lines"], e["marks"], "selected") for e in doc["exchanges"]
    ]
    assert len(out) == manifest["used"]
    assert source.read_bytes() == before


def test_export_within_a_budget_omits_whole_exchanges_and_says_which(tmp_path: Path) -> None:
    source = three_turns(tmp_path / "s.jsonl")
    sidecar = tmp_path / "p.json"
    annotate_json("--from", "claude-code", source, sidecar, "e003=pinned")
    run_ledger(
        "transcript",
        "export",
        "--from",
        "claude-code",
        str(source),
        str(sidecar),
        str(10**8),
        str(tmp_path / "all"),
        check=True,
    )
    everything = json.loads((tmp_path / "all" / "omissions.json").read_text())
    costs = {e["id"]: e["framedBytes"] for e in everything["exchanges"]}
    budget = everything["framingBytes"] + sum(costs.values()) - 1  # one byte short
    run_ledger(
        "transcript",
        "export",
        "--from",
        "claude-code",
        str(source),
        str(sidecar),
        str(budget),
        str(tmp_path / "out"),
        check=True,
    )
    manifest = json.loads((tmp_path / "out" / "omissions.json").read_text())
    status = {e["id"]: (e["status"], e["reason"]) for e in manifest["exchanges"]}
    # e003 is pinned and taken first; the normal ones oldest first: e001 fits, and
    # e002 finds one byte too few.
    assert status == {
        "e001": ("selected", "selected"),
        "e002": ("omitted", "budget"),
        "e003": ("selected", "selected"),
    }
    assert len((tmp_path / "out" / "continuation.md").read_bytes()) == budget + 1 - costs["e002"]
    assert manifest["exchanges"][1]["detail"] == {
        "needed": costs["e002"],
        "remaining": costs["e002"] - 1,
    }


def test_scriptable_reannotation_keeps_the_refusal_to_overwrite(tmp_path: Path) -> None:
    source = rollout(tmp_path / "r.jsonl")
    first = tmp_path / "p1.json"
    annotate_json("--from", "codex", source, first, "e001=pinned", "e003=aside")
    # From the old sidecar to a new one, changing only what is named.
    doc = annotate_json(
        "--from", "codex", source, tmp_path / "p2.json", "--base", first, "e002=aside"
    )
    assert [e["priority"] for e in doc["exchanges"]] == ["pinned", "aside", "aside"]
    # The old sidecar, edited by a script, from standard input.
    edited = json.loads(first.read_text())
    edited["priorities"]["e001"] = "normal"
    proc = run_ledger(
        "transcript",
        "annotate",
        "--from",
        "codex",
        str(source),
        str(tmp_path / "p3.json"),
        "--base",
        "-",
        "--json",
        input=json.dumps(edited).encode(),
    )
    assert proc.returncode == 0, proc.stderr
    assert [e["priority"] for e in json.loads(proc.stdout)["exchanges"]] == [
        "normal",
        "normal",
        "aside",
    ]
    # Writing over an existing sidecar without a terminal is still refused.
    before = (tmp_path / "p2.json").read_bytes()
    refused = run_ledger(
        "transcript",
        "annotate",
        "--from",
        "codex",
        str(source),
        str(tmp_path / "p2.json"),
        "--base",
        str(first),
        "e002=pinned",
    )
    assert refused.returncode == 1 and "refusing to replace without a terminal" in one_error_line(
        refused.stderr
    )
    assert (tmp_path / "p2.json").read_bytes() == before
    # In place (the base is the output) is refused as aliasing the input.
    inplace = run_ledger(
        "transcript",
        "annotate",
        "--from",
        "codex",
        str(source),
        str(first),
        "--base",
        str(first),
        "e002=pinned",
    )
    assert inplace.returncode == 1 and "same path as the input" in one_error_line(inplace.stderr)
    # A base sidecar of other source bytes is refused as stale.
    other = tmp_path / "s.json"
    annotate_json("--from", "claude-code", sample_session(tmp_path / "s.jsonl"), other)
    stale = run_ledger(
        "transcript",
        "annotate",
        "--from",
        "codex",
        str(source),
        str(tmp_path / "p4.json"),
        "--base",
        str(other),
    )
    assert stale.returncode == 1 and "source changed" in one_error_line(stale.stderr)
    assert not (tmp_path / "p4.json").exists()


def test_without_from_the_strict_contract_refuses_the_export(tmp_path: Path) -> None:
    source = sample_session(tmp_path / "s.jsonl")
    proc = run_ledger("transcript", "annotate", str(source), str(tmp_path / "p.json"))
    assert proc.returncode == 1 and "line 1: metadata record" in one_error_line(proc.stderr)
    assert not (tmp_path / "p.json").exists()
    bad = run_ledger(
        "transcript", "annotate", "--from", "gemini", str(source), str(tmp_path / "p.json")
    )
    assert bad.returncode == 2


# -- through the ledger ---------------------------------------------------------------------


def _ingest(db: str, source: Path, fmt: str, sidecar: Path | None = None) -> Any:
    args = ["ingest", "--format", "transcript", "--from", fmt, str(source)]
    if sidecar is not None:
        args += ["--priorities", str(sidecar)]
    return ledger_json(*args, db=db)


def _build(db: str, source: Path, fmt: str, sidecar: Path | None, budget: int) -> Any:
    args = ["build", "--transcript", str(source), "--from", fmt, "--budget", str(budget)]
    if sidecar is not None:
        args += ["--priorities", str(sidecar)]
    return ledger_json(*args, db=db)


def _session_file(path: Path, session: str, day: str, words: str) -> Path:
    """A Claude Code session named like the issue's files, with its own session id."""
    records = [cc_summary()]
    for n in range(3):
        records += [
            cc_prompt(
                f"{words} {n} " + "context " * (40 * (n + 1)),
                ts=f"{day}T09:0{n}:00Z",
                session=session,
            ),
            cc_tool_use(f"{session}-t{n}", ts=f"{day}T09:0{n}:10Z", sessionId=session),
            cc_tool_result(f"{session}-t{n}", ts=f"{day}T09:0{n}:20Z", sessionId=session),
            cc_text(f"done {n}", ts=f"{day}T09:0{n}:30Z", session=session),
        ]
    path.write_bytes(jsonl(*records))
    return path


def test_two_sessions_never_share_ids_and_why_evicted_tells_them_apart(
    db_url: str, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # The two files, whose names once both became `my-session-e001...`.
    one = _session_file(
        tmp_path / "a" / "My_Session.2026-01-21.jsonl", "My_Session", "2026-01-21", "first"
    )
    two = _session_file(
        tmp_path / "b" / "My_Session.2026-01-22.jsonl", "my-session", "2026-01-22", "second"
    )
    _ingest(db_url, one, "claude-code")
    _ingest(db_url, two, "claude-code")
    ids = sorted(c["id"] for c in ledger_json("chunks", db=db_url)["chunks"])
    assert len(ids) == 6 and len(set(ids)) == 6
    slugs = {i.rsplit("-e", 1)[0] for i in ids}
    assert len(slugs) == 2

    # A pack of the first session evicts its e003; the second session has no pack.
    full = _build(db_url, one, "claude-code", None, 10**7)
    costs = {a["id"]: a["tokens"] for a in full["admitted"]}
    header = 10**7 - full["budget"]
    e1, e2, e3 = sorted(costs)
    budget = header + costs[e1] + costs[e2] + costs[e3] - 1
    pack = _build(db_url, one, "claude-code", None, budget)
    assert [e["id"] for e in pack["evicted"]] == [e3]
    why = ledger_json("why-evicted", e3, db=db_url)
    assert [d["pack"] for d in why["versions"][0]["decisions"]] == [pack["pack"], full["pack"]]
    assert all(
        d["subject"] == "transcript:" + e3.rsplit("-e", 1)[0]
        for d in why["versions"][0]["decisions"]
    )

    # The other session's exchange: never considered, and the reason is true.
    other = next(i for i in ids if not i.startswith(e3.rsplit("-e", 1)[0]))
    never = ledger_json("why-evicted", other, db=db_url)["versions"][0]
    assert never["decisions"] == []
    assert "no pack was built from this transcript annotation" in never["not_considered"]
    plain = run_ledger("why-evicted", other, db=db_url, check=True).stdout
    assert "every pack was built at an earlier ledger time" not in plain


def test_strict_transcripts_named_by_day_get_their_own_ids(db_url: str, tmp_path: Path) -> None:
    from .factory import ExchangeSpec, build_transcript

    for day in ("21", "22"):
        data, _ = build_transcript([ExchangeSpec("plain", f"day {day}")])
        (tmp_path / f"My_Session.2026-01-{day}.jsonl").write_bytes(data)
        run_ledger(
            "ingest",
            "--format",
            "transcript",
            str(tmp_path / f"My_Session.2026-01-{day}.jsonl"),
            db=db_url,
            check=True,
        )
    ids = sorted(c["id"] for c in ledger_json("chunks", db=db_url)["chunks"])
    assert ids == ["my-session-2026-01-21-e001", "my-session-2026-01-22-e001"]


def test_exchange_ids_are_named_by_session_and_the_pack_by_its_date(
    db_url: str, tmp_path: Path
) -> None:
    source = rollout(tmp_path / "r.jsonl")
    got = _ingest(db_url, source, "codex")
    assert got["new"] == 3
    ids = [c["id"] for c in ledger_json("chunks", db=db_url)["chunks"]]
    assert sorted(ids) == [f"{ROLLOUT_SESSION}-e00{n}" for n in (1, 2, 3)]
    pack = _build(db_url, source, "codex", None, 10**7)
    assert pack["as_of"] == "2026-05-11" and pack["subject"] == "transcript:" + ROLLOUT_SESSION
    listing = run_ledger("packs", db=db_url, check=True).stdout
    assert "2026-05-11" in listing and ROLLOUT_SESSION in listing and "1970-01-01" not in listing
    chunk = ledger_json("chunks", "--id", f"{ROLLOUT_SESSION}-e002", db=db_url)["chunks"][0]
    assert chunk["effective_from"] == "2026-05-11"
    assert ledger_json("verify", db=db_url)["ok"] is True
    assert run_ledger("replay", str(pack["pack"]), db=db_url).returncode == 0


def test_the_hinted_budget_of_a_transcript_pack_admits_the_exchange(
    db_url: str, tmp_path: Path
) -> None:
    source = three_turns(tmp_path / "s.jsonl")
    sidecar = tmp_path / "p.json"
    annotate_json("--from", "claude-code", source, sidecar, "e001=pinned")
    _ingest(db_url, source, "claude-code", sidecar)
    full = _build(db_url, source, "claude-code", sidecar, 10**7)
    header = 10**7 - full["budget"]
    assert header > 0  # the packet's framing is part of the budget
    costs = {a["id"]: a["tokens"] for a in full["admitted"]}
    target = sorted(costs)[-1]  # the newest exchange: one byte short, only it is evicted
    pack = _build(db_url, source, "claude-code", sidecar, header + sum(costs.values()) - 1)
    assert [e["id"] for e in pack["evicted"]] == [target]
    hint = ledger_json("why-evicted", target, "--pack", str(pack["pack"]), db=db_url)
    step = hint["versions"][0]["decisions"][0]["would_admit"]["steps"][0]
    assert step["kind"] == "budget" and step["framing"] == header
    # The hinted number is a `--budget` for the whole continuation.md: applied as
    # it is, it admits the exchange (one byte less does not).
    again = _build(db_url, source, "claude-code", sidecar, step["budget"])
    assert target in [a["id"] for a in again["admitted"]]
    short = _build(db_url, source, "claude-code", sidecar, step["budget"] - 1)
    assert target not in [a["id"] for a in short["admitted"]]
    text = run_ledger(
        "why-evicted", target, "--pack", str(pack["pack"]), db=db_url, check=True
    ).stdout
    assert f"to {step['budget']}" in text


def test_from_goes_with_format_transcript(db_url: str, tmp_path: Path) -> None:
    source = rollout(tmp_path / "r.jsonl")
    proc = run_ledger("ingest", "--from", "codex", str(source), db=db_url)
    line = one_error_line(proc.stderr)
    assert proc.returncode == 1 and "format 'transcript' (--format)" in line
    proc = run_ledger("build", "--as-of", "2026-01-01", "--from", "codex", db=db_url)
    assert proc.returncode == 2


def test_python_api_reads_exports_too(tmp_path: Path) -> None:
    import ledger

    source = rollout(tmp_path / "r.jsonl")
    copy = tmp_path / "copy.jsonl"
    shutil.copy(source, copy)
    with ledger.open(str(tmp_path / "api.db"), create=True) as lg:
        got = lg.ingest_paths([copy], format="transcript", source_format="codex")
        assert got.to_json()["new"] == 3
        pack = lg.build_transcript(copy, budget=10**7, source_format="codex").to_json()
    assert pack["as_of"] == "2026-05-11" and pack["subject"] == "transcript:" + ROLLOUT_SESSION
    assert [a["id"] for a in pack["admitted"]] == [f"{ROLLOUT_SESSION}-e00{n}" for n in (1, 2, 3)]
