"""Records in the shapes Claude Code and Codex write, for generated export cases.

Field names and nesting follow the real files in fixtures/transcripts/ (see
SOURCES.md there); every helper returns one record (a dict) for `lines()`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .factory import FIXTURES

# The real exports (fixtures/transcripts/SOURCES.md): every file of each folder.
REAL_CLAUDE = sorted((FIXTURES / "claude-code").glob("*.jsonl"))
REAL_CODEX = sorted((FIXTURES / "codex").glob("*.jsonl"))

SESSION = "5e0c1a2b-0000-4000-8000-000000000001"


def jsonl(*records: dict[str, Any]) -> bytes:
    """JSON Lines as the tools write them: compact, one record a line."""
    return b"".join(
        (json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n").encode() for r in records
    )


def file_lines(path: Path | bytes) -> list[bytes]:
    """The original lines with their line endings (1-based: index + 1)."""
    data = path if isinstance(path, bytes) else path.read_bytes()
    return data.splitlines(keepends=True)


# -- Claude Code ------------------------------------------------------------------------


def _cc(kind: str, content: Any, *, ts: str, session: str, **extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/repo",
        "sessionId": session,
        "version": "2.0.76",
        "type": kind,
        "message": {"role": kind, "content": content},
        "uuid": f"u-{abs(hash((kind, json.dumps(content), ts))) % 10**12}",
        "timestamp": ts,
    }
    rec.update(extra)
    return rec


def cc_prompt(
    text: str, *, ts: str = "2026-01-21T09:00:00.000Z", session: str = SESSION, **extra: Any
) -> dict[str, Any]:
    return _cc("user", text, ts=ts, session=session, **extra)


def cc_text(
    text: str, *, ts: str = "2026-01-21T09:00:01.000Z", session: str = SESSION, **extra: Any
) -> dict[str, Any]:
    return _cc("assistant", [{"type": "text", "text": text}], ts=ts, session=session, **extra)


def cc_thinking(*, ts: str = "2026-01-21T09:00:01.000Z") -> dict[str, Any]:
    return _cc(
        "assistant",
        [{"type": "thinking", "thinking": "hmm", "signature": "x"}],
        ts=ts,
        session=SESSION,
    )


def cc_tool_use(call: str, *, ts: str = "2026-01-21T09:00:02.000Z", **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "ls"}}
    return _cc("assistant", [block], ts=ts, session=SESSION, **extra)


def cc_tool_result(
    call: str,
    text: str = "out",
    *,
    ts: str = "2026-01-21T09:00:03.000Z",
    extra_blocks: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"tool_use_id": call, "type": "tool_result", "content": text, "is_error": False}
    ]
    blocks += extra_blocks or []
    return _cc("user", blocks, ts=ts, session=SESSION, toolUseResult={"stdout": text}, **extra)


def cc_summary(text: str = "Session summary") -> dict[str, Any]:
    return {"type": "summary", "summary": text, "leafUuid": "leaf-1"}


def cc_queue(
    operation: str = "enqueue", content: str | None = "typed while busy"
) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "type": "queue-operation",
        "operation": operation,
        "timestamp": "2026-01-21T09:00:04.000Z",
        "sessionId": SESSION,
    }
    if content is not None:
        rec["content"] = content
    return rec


def cc_snapshot() -> dict[str, Any]:
    return {
        "type": "file-history-snapshot",
        "messageId": "m-1",
        "snapshot": {
            "messageId": "m-1",
            "trackedFileBackups": {},
            "timestamp": "2026-01-21T09:00:00.000Z",
        },
        "isSnapshotUpdate": False,
    }


def cc_system(subtype: str, content: str | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "parentUuid": None,
        "isSidechain": False,
        "type": "system",
        "subtype": subtype,
        "sessionId": SESSION,
        "timestamp": "2026-01-21T09:00:05.000Z",
        "uuid": f"s-{subtype}",
    }
    if content is not None:
        rec["content"] = content
        rec["level"] = "info"
    else:
        rec["durationMs"] = 1234
    return rec


# -- Codex --------------------------------------------------------------------------------


def cx(kind: str, payload: dict[str, Any], ts: str = "2026-05-11T10:00:00.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def cx_meta(
    session: str = "019e1695-0522-7c83-8b39-0dd379793f80", ts: str = "2026-05-11T10:00:00.000Z"
) -> dict[str, Any]:
    return cx(
        "session_meta",
        {
            "id": session,
            "timestamp": ts,
            "cwd": "/repo",
            "originator": "codex_cli_rs",
            "cli_version": "0.128.0",
        },
        ts,
    )


def cx_turn_context() -> dict[str, Any]:
    return cx("turn_context", {"turn_id": "t1", "cwd": "/repo", "model": "gpt-5.5"})


def cx_event(ptype: str, ts: str = "2026-05-11T10:00:01.000Z", **fields: Any) -> dict[str, Any]:
    return cx("event_msg", {"type": ptype, **fields}, ts)


def cx_user_item(text: str, ts: str = "2026-05-11T10:00:01.000Z") -> dict[str, Any]:
    return cx(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        ts,
    )


def cx_prompt(text: str, ts: str = "2026-05-11T10:00:01.000Z") -> list[dict[str, Any]]:
    """A prompt as Codex writes it: the response item, then the event echoing it."""
    return [cx_user_item(text, ts), cx_event("user_message", ts, message=text, images=[])]


def cx_developer(text: str = "<permissions instructions>sandboxed") -> dict[str, Any]:
    return cx(
        "response_item",
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": text}]},
    )


def cx_answer(text: str, ts: str = "2026-05-11T10:00:03.000Z") -> dict[str, Any]:
    return cx(
        "response_item",
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        },
        ts,
    )


def cx_reasoning() -> dict[str, Any]:
    return cx("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"})


def cx_call(call: str, kind: str = "function_call") -> dict[str, Any]:
    payload: dict[str, Any] = {"type": kind, "name": "exec_command", "call_id": call}
    payload["arguments" if kind == "function_call" else "input"] = '{"cmd":"ls"}'
    return cx("response_item", payload)


def cx_output(call: str, kind: str = "function_call_output") -> dict[str, Any]:
    return cx("response_item", {"type": kind, "call_id": call, "output": "ok"})
