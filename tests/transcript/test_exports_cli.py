"""`--from claude-code|codex` end to end, in subprocesses, as a user runs them:
`transcript annotate|export`, `ingest --format transcript`, `build --transcript`,
and what `why-evicted` then says about exchanges of real sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import ledger_json, run_ledger

from .exports_factory import (
    cc_prompt,
    cc_summary,
    cc_text,
    cc_tool_result,
    cc_tool_use,
    jsonl,
)


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: "), stderr
    return stderr


def annotate_json(*args: str | Path) -> Any:
    proc = run_ledger("transcript", "annotate", *map(str, args), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# -- transcript annotate | export ---------------------------------------------------------


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
    assert all(d["subject"] == e3.rsplit("-e", 1)[0] for d in why["versions"][0]["decisions"])

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
