"""A long Claude Code session, generated: the equivalent of the real ones in
fixtures/transcripts/SOURCES.md ("Long sessions") that are too large to keep here.

Its shape is theirs: bookkeeping records (`queue-operation`,
`file-history-snapshot`, `system` `turn_duration`) between exchanges; short
exchanges of a prompt, thinking, tool calls and their results; and one
"continue" prompt followed by hours of tool use, a single exchange of more than
2 MB (tool results with whole files in them, non-ASCII text, backtick fences,
`<system-reminder>` text inside results), with the tool's own records inside it
(a `<task-notification>` when a background command finishes, hook feedback).
Record fields and nesting follow `exports_factory` (taken from the real files).
Deterministic: the same arguments give the same bytes.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

SESSION = "7d1e2c3b-4a5f-4e6d-8c7b-9a0f1e2d3c4b"
_WORDS = (
    "ledger",
    "context",
    "budget",
    "exchange",
    "refund",
    "policy",
    "über",
    "café",
    "日本語",
    "naïve",
    "`code`",
    "```",
    "tool",
    "result",
    "def",
    "return",
    "import",
    "\\n",
    '"quoted"',
    "😀",
)


def _dump(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


@dataclass
class _Writer:
    """Appends records with consecutive uuids and timestamps; remembers where
    each exchange's prompt is (line numbers from 1)."""

    session: str
    rng: random.Random
    out: list[bytes] = field(default_factory=list)
    size: int = 0
    clock: int = 0
    prompts: list[int] = field(default_factory=list)
    last_uuid: str | None = None

    def add(self, record: dict[str, Any]) -> None:
        data = _dump(record)
        self.out.append(data)
        self.size += len(data)

    def stamp(self) -> str:
        self.clock += 7
        h, rest = divmod(self.clock, 3600)
        m, s = divmod(rest, 60)
        return f"2026-03-0{1 + h // 24}T{h % 24:02d}:{m:02d}:{s:02d}.000Z"

    def message(self, kind: str, content: Any, **extra: Any) -> None:
        uuid = f"{self.session[:8]}-{len(self.out):06d}-4000-8000-{self.clock:012d}"
        record: dict[str, Any] = {
            "parentUuid": self.last_uuid,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/user/project",
            "sessionId": self.session,
            "version": "2.1.30",
            "gitBranch": "main",
            "type": kind,
            "message": {"role": kind, "content": content},
            "uuid": uuid,
            "timestamp": self.stamp(),
        }
        record.update(extra)
        self.last_uuid = uuid
        self.add(record)

    def text(self, words: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(words))

    def bookkeeping(self) -> None:
        self.add(
            {
                "type": "file-history-snapshot",
                "messageId": f"m-{len(self.out)}",
                "snapshot": {
                    "messageId": f"m-{len(self.out)}",
                    "trackedFileBackups": {},
                    "timestamp": self.stamp(),
                },
                "isSnapshotUpdate": False,
            }
        )

    def prompt(self, text: str) -> None:
        self.add(
            {
                "type": "queue-operation",
                "operation": "dequeue",
                "timestamp": self.stamp(),
                "sessionId": self.session,
            }
        )
        self.bookkeeping()
        self.prompts.append(len(self.out) + 1)
        self.message("user", text, origin={"kind": "human"})

    def tool_turn(self, call: str, result_words: int) -> None:
        self.message(
            "assistant",
            [{"type": "thinking", "thinking": self.text(20), "signature": "sig"}],
        )
        self.message(
            "assistant",
            [{"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "cat a.py"}}],
        )
        body = self.text(result_words)
        if self.rng.random() < 0.2:
            body += "\n\n<system-reminder>\nThe file changed on disk.\n</system-reminder>\n"
        self.message(
            "user",
            [{"tool_use_id": call, "type": "tool_result", "content": body, "is_error": False}],
            toolUseResult={"stdout": body[:200], "stderr": "", "interrupted": False},
        )

    def answer(self, words: int) -> None:
        self.message("assistant", [{"type": "text", "text": self.text(words)}])
        self.add(
            {
                "parentUuid": self.last_uuid,
                "isSidechain": False,
                "type": "system",
                "subtype": "turn_duration",
                "durationMs": 1000 + self.clock,
                "sessionId": self.session,
                "timestamp": self.stamp(),
                "uuid": f"sys-{len(self.out)}",
            }
        )

    def injected(self) -> None:
        """What the tool writes into a long turn by itself."""
        self.message(
            "user",
            "<task-notification>\n<task-id>b7x2k9</task-id>\n<status>completed</status>\n"
            '<summary>Background command "npm test" completed (exit code 0)</summary>\n'
            "</task-notification>",
            origin={"kind": "task-notification"},
        )
        self.message("user", "PostToolUse:Bash hook succeeded: formatted 3 files", isMeta=True)


def long_claude_session(
    total_bytes: int = 3_200_000,
    big_exchange_bytes: int = 2_100_000,
    *,
    session: str = SESSION,
    seed: int = 40,
) -> tuple[bytes, list[int]]:
    """A Claude Code session of about `total_bytes`, whose exchange 3 (a
    "continue" prompt and the tool use after it) holds about `big_exchange_bytes`;
    returns the bytes and the line number of every prompt (one per exchange)."""
    w = _Writer(session, random.Random(seed))
    w.add(
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": w.stamp(),
            "sessionId": session,
            "content": "set up the project",
        }
    )
    call = 0
    for n in range(2):
        w.prompt(f"task {n}: " + w.text(40))
        for _ in range(3):
            call += 1
            w.tool_turn(f"toolu_{call:05d}", 300)
        w.answer(80)
    w.prompt("continue")
    start = w.size
    turns = 0
    while w.size - start < big_exchange_bytes:
        call += 1
        turns += 1
        w.tool_turn(f"toolu_{call:05d}", 1500)
        if turns % 40 == 0:
            w.injected()
    w.answer(200)
    n = 3
    while w.size < total_bytes:
        w.prompt(f"task {n}: " + w.text(40))
        for _ in range(4):
            call += 1
            w.tool_turn(f"toolu_{call:05d}", 600)
        w.answer(80)
        n += 1
    return b"".join(w.out), w.prompts
