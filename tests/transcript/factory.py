"""Build transcripts for tests: both record shapes, tool calls, CRLF, backticks."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import run_in_process

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "transcripts"


def encode(record: Any, *, eol: str = "\n", ascii_only: bool = False) -> bytes:
    """One JSON Lines line."""
    return (json.dumps(record, ensure_ascii=ascii_only) + eol).encode("utf-8")


def lines(*records: Any, eol: str = "\n") -> bytes:
    return b"".join(encode(r, eol=eol) for r in records)


def user(text: Any) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: Any = "ok", *calls: str) -> dict[str, Any]:
    rec: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        rec["tool_calls"] = [
            {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for c in calls
        ]
    return rec


def tool(call_id: str, text: str = "result") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def w_user(content: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": content}}


def w_assistant(content: Any) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": content}}


def w_tool_use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}


def w_result(*call_ids: str) -> dict[str, Any]:
    return w_user([{"type": "tool_result", "tool_use_id": c, "content": "out"} for c in call_ids])


@dataclass
class ExchangeSpec:
    """One generated exchange: shape, tool calls, text and line ending."""

    shape: str  # "plain" | "wrapped"
    text: str
    tools: int = 0
    eol: str = "\n"
    ascii_only: bool = False
    records: list[dict[str, Any]] = field(default_factory=list)

    def build(self, number: int) -> list[dict[str, Any]]:
        calls = [f"call_{number}_{k}" for k in range(self.tools)]
        if self.shape == "plain":
            recs = [user(self.text)]
            if calls:
                recs.append(assistant(None, *calls))
                recs += [tool(c, self.text[::-1]) for c in calls]
            recs.append(assistant("answer " + self.text))
        else:
            recs = [w_user(self.text)]
            if calls:
                recs.append(w_assistant([w_tool_use(c) for c in calls]))
                recs.append(w_result(*calls))
            recs.append(w_assistant([{"type": "text", "text": "answer " + self.text}]))
        return recs


def build_transcript(
    specs: list[ExchangeSpec], *, final_newline: bool = True
) -> tuple[bytes, list[bytes]]:
    """Return the transcript bytes and each exchange's exact payload bytes."""
    payloads = []
    for number, spec in enumerate(specs, 1):
        payloads.append(
            b"".join(
                encode(r, eol=spec.eol, ascii_only=spec.ascii_only) for r in spec.build(number)
            )
        )
    if payloads and not final_newline:
        last = payloads[-1]
        payloads[-1] = last[:-2] if last.endswith(b"\r\n") else last[:-1]
    return b"".join(payloads), payloads


_BLOCK = re.compile(
    rb"\n## (e\d{3,}) \((pinned|normal|aside), lines (\d+)-(\d+)\)\n\n(`{3,})jsonl\n"
)


def parse_continuation(data: bytes) -> list[tuple[str, str, bytes]]:
    """Read continuation.md back: (id, priority, payload) per block, in file order.

    Independent of the library: finds each heading, then the closing fence of the
    same length on a line of its own.
    """
    blocks = []
    pos = data.index(b"\n\n## ") + 1 if b"\n## " in data else len(data)
    while pos < len(data):
        match = _BLOCK.match(data, pos)
        assert match, f"no block heading at byte {pos}: {data[pos : pos + 60]!r}"
        fence = match.group(5)
        body_start = match.end()
        close = data.index(b"\n" + fence + b"\n", body_start - 1)
        payload = data[body_start : close + 1]
        blocks.append((match.group(1).decode(), match.group(2).decode(), payload))
        pos = close + len(fence) + 2
    return blocks


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`ledger ARGS...` through its entry point, stdin empty (not a terminal): in
    this process (tests/conftest.py's `run_in_process`); output must be UTF-8.
    The terminal cases, which need a process of their own, use `run_in_pty`."""
    return run_in_process([str(a) for a in args], b"", cwd, None, 300, errors="strict")


def run_in_pty(
    *args: str | Path, answer: str | None, timeout: float = 60.0
) -> tuple[int, str, str]:
    """Run `ledger ARGS...` with stdin and stdout on a pseudo-terminal.

    When the OVERWRITE prompt appears, type `answer` and Enter. Returns (exit
    code, terminal output, stderr).
    """
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger_cli", *map(str, args)],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.PIPE,
        close_fds=True,
    )
    os.close(slave)
    output = b""
    answered = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
                if not answered and answer is not None and b"Type OVERWRITE" in output:
                    os.write(master, answer.encode("utf-8") + b"\n")
                    answered = True
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
            raise AssertionError(f"timed out; terminal so far: {output!r}")
        stderr = proc.stderr.read() if proc.stderr else b""
        code = proc.wait(timeout=timeout)
    finally:
        os.close(master)
        if proc.stderr:
            proc.stderr.close()
    return code, output.decode("utf-8", "replace"), stderr.decode("utf-8")
