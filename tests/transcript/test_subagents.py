"""Claude Code subagents beside their parent session (issue 40).

Claude Code writes a session's subagents to `<session>/subagents/agent-<id>.jsonl`,
every record with the parent's `sessionId` (and the agent's `agentId`). Ingested
beside the parent, their exchanges are named by session and agent
(`<session>-<agent id>-e001`), so nothing collides; and each subagent chunk's
`source_uri` names the parent's exchange that launched the agent (the tool
result whose `toolUseResult.agentId`, or `agentId: ...` line, is the agent's),
when the parent file is where Claude Code writes it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.core.exports import export_slug, read_export
from tests import dbtools
from tests.conftest import ledger_json, run_ledger

from .exports_factory import SESSION, cc_prompt, cc_text, cc_tool_use, file_lines, jsonl

SYNC_AGENT = "a1b2c3d"  # a Task run in the foreground: its result is the agent's answer
ASYNC_AGENT = "a05d358b0666d872d"  # launched in the background, reported by a notification


def launch_result(call: str, agent: str, *, background: bool) -> dict[str, Any]:
    """The tool result of a `Task` call, as Claude Code writes it."""
    text = (
        f"Async agent launched successfully.\nagentId: {agent} (internal ID - do not mention "
        "to user. Use SendMessage with to: '{agent}' to continue this agent.)"
        if background
        else f"The report is ready.\nagentId: {agent} (for resuming to continue this agent's work)"
    )
    result: dict[str, Any] = (
        {"isAsync": True, "status": "async_launched", "agentId": agent}
        if background
        else {"status": "completed", "agentId": agent, "totalTokens": 5120}
    )
    record = cc_prompt("x")
    record["message"]["content"] = [
        {"tool_use_id": call, "type": "tool_result", "content": [{"type": "text", "text": text}]}
    ]
    record["toolUseResult"] = result
    return record


def parent_session() -> bytes:
    return jsonl(
        cc_prompt("review the CLI with a subagent"),
        cc_tool_use("task1"),
        launch_result("task1", SYNC_AGENT, background=False),
        cc_text("The subagent's review is in."),
        cc_prompt("now write the poems in the background", ts="2026-01-21T10:00:00.000Z"),
        cc_tool_use("task2", ts="2026-01-21T10:00:01.000Z"),
        launch_result("task2", ASYNC_AGENT, background=True),
        cc_text("Started; I will tell you when it is done.", ts="2026-01-21T10:00:03.000Z"),
        cc_prompt(
            f"<task-notification>\n<task-id>{ASYNC_AGENT}</task-id>\n<status>completed</status>\n"
            "</task-notification>",
            ts="2026-01-21T10:05:00.000Z",
            origin={"kind": "task-notification"},
        ),
        cc_text("The poems are ready.", ts="2026-01-21T10:05:04.000Z"),
    )


def subagent(agent: str, session: str = SESSION) -> bytes:
    side = {"isSidechain": True, "agentId": agent}
    return jsonl(
        cc_prompt(f"work for the parent ({agent})", session=session, **side),
        cc_text("Searching.", session=session, **side),
        cc_tool_use("s1", isSidechain=True, agentId=agent),
        cc_text("Done: three findings.", ts="2026-01-21T09:00:09.000Z", session=session, **side),
    )


def layout(root: Path, session: str = SESSION) -> tuple[Path, Path, Path]:
    """The parent and its two subagents, where Claude Code writes them."""
    project = root / "-home-user-repo"
    folder = project / session / "subagents"
    folder.mkdir(parents=True)
    parent = project / f"{session}.jsonl"
    parent.write_bytes(parent_session())
    sync = folder / f"agent-{SYNC_AGENT}.jsonl"
    sync.write_bytes(subagent(SYNC_AGENT, session))
    background = folder / f"agent-{ASYNC_AGENT}.jsonl"
    background.write_bytes(subagent(ASYNC_AGENT, session))
    return parent, sync, background


def test_the_parent_says_which_exchange_launched_each_agent() -> None:
    t = read_export(parent_session(), "claude-code")
    assert t.export is not None and t.export.agent_id is None
    assert dict(t.export.launches) == {SYNC_AGENT: "e001", ASYNC_AGENT: "e002"}
    # The notification that the background agent finished is not a prompt.
    assert [(e.first_line, e.last_line) for e in t.exchanges] == [(1, 4), (5, 10)]
    assert export_slug(t) == SESSION


def test_a_subagents_own_file_is_named_by_session_and_agent() -> None:
    t = read_export(subagent(ASYNC_AGENT), "claude-code")
    assert t.export is not None and t.export.session_id == SESSION
    assert t.export.agent_id == ASYNC_AGENT and t.export.launches == {}
    assert export_slug(t) == f"{SESSION}-{ASYNC_AGENT}"
    assert [e.marks for e in t.exchanges] == [("interrupted",)]


def test_the_same_agent_id_in_two_sessions_names_two_things() -> None:
    other = "9f8e7d6c-0000-4000-8000-000000000002"
    a = read_export(subagent(SYNC_AGENT), "claude-code")
    b = read_export(subagent(SYNC_AGENT, other), "claude-code")
    assert export_slug(a) != export_slug(b) and export_slug(b) == f"{other}-{SYNC_AGENT}"


def test_subagents_ingest_beside_their_parent_linked_to_the_launching_exchange(
    db_url: str, tmp_path: Path
) -> None:
    parent, sync, background = layout(tmp_path)
    for path in (parent, sync, background):
        got = ledger_json(
            "ingest", "--format", "transcript", "--from", "claude-code", str(path), db=db_url
        )
        assert got["new"] == got["read"]  # nothing collides, nothing is "unchanged"
    notes = run_ledger(
        "ingest", "--format", "transcript", "--from", "claude-code", str(parent), db=db_url
    ).stderr
    assert f"launched subagents {SYNC_AGENT} in e001, {ASYNC_AGENT} in e002" in notes
    rows = dbtools.query(db_url, "SELECT chunk_id, source_uri, content FROM chunk_versions")
    by_id = {r[0]: (r[1], r[2]) for r in rows}
    assert sorted(by_id) == sorted(
        [f"{SESSION}-e001", f"{SESSION}-e002"]
        + [f"{SESSION}-{a}-e001" for a in (SYNC_AGENT, ASYNC_AGENT)]
    )
    for agent, launcher in ((SYNC_AGENT, "e001"), (ASYNC_AGENT, "e002")):
        uri, content = by_id[f"{SESSION}-{agent}-e001"]
        assert f"?agent={agent}&launched-by={SESSION}-{launcher}#e001" in uri
        _parent_uri, parent_content = by_id[f"{SESSION}-{launcher}"]
        assert f"agentId: {agent}" in parent_content  # the launch is in that exchange
        path = sync if agent == SYNC_AGENT else background
        assert content.encode() == b"".join(file_lines(path.read_bytes()))
    pack = ledger_json(
        "build",
        "--transcript",
        str(background),
        "--from",
        "claude-code",
        "--budget",
        "100000",
        db=db_url,
    )
    assert pack["subject"] == f"transcript:{SESSION}-{ASYNC_AGENT}"
    assert [a["id"] for a in pack["admitted"]] == [f"{SESSION}-{ASYNC_AGENT}-e001"]
    assert ledger_json("verify", db=db_url)["ok"] is True


def test_a_subagent_without_its_parent_keeps_its_name_and_a_version_of_its_own(
    tmp_path: Path,
) -> None:
    parent, sync, _background = layout(tmp_path)
    alone = tmp_path / "copied" / sync.name
    alone.parent.mkdir()
    alone.write_bytes(sync.read_bytes())
    db = tmp_path / "l.db"
    run_ledger("init", db=db, check=True)
    proc = run_ledger(
        "ingest", "--format", "transcript", "--from", "claude-code", str(alone), db=db
    )
    assert proc.returncode == 0 and "launched by not found" in proc.stderr
    run_ledger(
        "ingest", "--format", "transcript", "--from", "claude-code", str(sync), db=db, check=True
    )
    rows = dbtools.query(db, "SELECT chunk_id, source_version, source_uri FROM chunk_versions")
    assert {r[0] for r in rows} == {f"{SESSION}-{SYNC_AGENT}-e001"}
    versions = {r[1]: r[2] for r in rows}
    assert len(versions) == 2  # the link is part of the annotation its version names
    uris = list(versions.values())
    assert sorted("launched-by=" in u for u in uris) == [False, True]
    assert all(f"?agent={SYNC_AGENT}" in u for u in uris)


def test_a_broken_parent_is_named_in_one_line(tmp_path: Path) -> None:
    parent, sync, _background = layout(tmp_path)
    parent.write_bytes(b'{"type":"user","message":"not an object"}\n')
    db = tmp_path / "l.db"
    run_ledger("init", db=db, check=True)
    before = dbtools.snapshot(db)
    proc = run_ledger("ingest", "--format", "transcript", "--from", "claude-code", str(sync), db=db)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: {sync}: its parent session {parent} cannot be read (")
    assert dbtools.snapshot(db) == before


@pytest.mark.parametrize("agent", ["Agent_7", "a" * 30])
def test_an_agent_id_that_is_not_id_safe_gets_a_stable_short_name(agent: str) -> None:
    t = read_export(subagent(agent), "claude-code")
    slug = export_slug(t)
    assert slug is not None and slug.startswith(f"{SESSION}-a") and len(slug) <= 56
    assert slug == export_slug(read_export(subagent(agent), "claude-code"))


def test_an_older_launch_that_names_the_agent_only_in_its_text_is_found() -> None:
    record = launch_result("task1", SYNC_AGENT, background=False)
    del record["toolUseResult"]
    data = jsonl(cc_prompt("review it"), cc_tool_use("task1"), record, cc_text("Reviewed."))
    t = read_export(data, "claude-code")
    assert t.export is not None and dict(t.export.launches) == {SYNC_AGENT: "e001"}


def test_annotate_json_names_the_agent_and_the_launches(tmp_path: Path) -> None:
    parent, sync, _background = layout(tmp_path)
    docs = []
    for path in (parent, sync):
        proc = run_ledger(
            "transcript",
            "annotate",
            "--from",
            "claude-code",
            str(path),
            str(tmp_path / f"{path.stem}.p.json"),
            "--json",
        )
        assert proc.returncode == 0, proc.stderr
        docs.append(json.loads(proc.stdout))
    assert (docs[0]["agent"], docs[0]["launches"]) == (
        None,
        {SYNC_AGENT: "e001", ASYNC_AGENT: "e002"},
    )
    assert (docs[1]["agent"], docs[1]["launches"]) == (SYNC_AGENT, {})


# -- a real session and one of its subagents (fixtures/transcripts/SOURCES.md) ----------

REAL_PARENT = (
    Path(__file__).resolve().parents[2]
    / "fixtures/transcripts/claude-code/session-share/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
)
REAL_SESSION = REAL_PARENT.stem
REAL_AGENT = REAL_PARENT.with_suffix("") / "subagents" / "agent-a9cad17.jsonl"


def test_a_real_parent_names_the_exchange_of_each_background_agent() -> None:
    t = read_export(REAL_PARENT.read_bytes(), "claude-code", name=REAL_PARENT.name)
    assert t.export is not None and dict(t.export.launches) == {
        "a9cad17": "e001",  # lines 8-10: the first three Task results
        "aa5ef13": "e001",
        "ac27727": "e001",
        "afbbf75": "e004",  # lines 53-54: launched again after "/publish-session"
        "a5bdbc1": "e004",
    }


def test_a_real_subagent_ingests_beside_its_parent_linked_to_its_launch(db_url: str) -> None:
    for path in (REAL_PARENT, REAL_AGENT):
        got = ledger_json(
            "ingest", "--format", "transcript", "--from", "claude-code", str(path), db=db_url
        )
        assert got["new"] == got["read"]
    rows = dbtools.query(db_url, "SELECT chunk_id, source_uri, content FROM chunk_versions")
    by_id = {r[0]: (r[1], r[2]) for r in rows}
    assert len(by_id) == 8  # the parent's seven exchanges and the agent's one
    uri, content = by_id[f"{REAL_SESSION}-a9cad17-e001"]
    assert uri.endswith(f"?agent=a9cad17&launched-by={REAL_SESSION}-e001#e001")
    assert content.encode("utf-8") == REAL_AGENT.read_bytes()  # lines 1-6, the whole file
    assert "agentId: a9cad17" in by_id[f"{REAL_SESSION}-e001"][1]
    assert ledger_json("verify", db=db_url)["ok"] is True
