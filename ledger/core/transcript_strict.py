"""The strict transcript reader: the seed-003 input contract, fail closed.

Pure: bytes in, a `Transcript` out (`ledger.core.transcript_model`). The input
contract (a strict subset of exported chat logs, not a universal importer):
UTF-8 JSON Lines, one message a line, no byte-order mark, no blank lines, no
duplicate keys, no NaN/Infinity. Two record shapes are read, also mixed:

- plain: ``{"role": "user"|"assistant"|"tool", ...}``; assistant tool calls in
  ``tool_calls: [{"id": ...}]`` (OpenAI shape), answered by ``{"role": "tool",
  "tool_call_id": ...}``;
- message-wrapped: ``{"type": "user"|"assistant", "message": {"role": ...,
  "content": "text" | [blocks]}}``, with ``tool_use`` blocks (``id``) answered by
  ``tool_result`` blocks (``tool_use_id``).

An exchange starts at a user prompt and ends with the assistant's response before
the next prompt. Result-only user records and tool records belong to the ongoing
exchange, and every tool call must get its result inside its exchange. Orphaned
results, outstanding calls, a prompt without a response, a user record mixing
tool results with other content, unsupported roles and metadata records fail
closed, naming the file and line (and, in a Claude Code session or a Codex
rollout, the `--from` that reads it: `ledger.core.exports`). Exchanges are
numbered e001, e002, ... in source order (e1000 follows e999). An exchange keeps
the exact source bytes of its lines.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ledger.core.transcript_model import (
    BOM,
    Exchange,
    Transcript,
    TranscriptError,
    decode_line,
    exchange_name,
    loads_strict,
    show_value,
    split_lines,
)

_PROMPT, _ASSISTANT, _RESULT = "prompt", "assistant", "result"


class _Fail(Exception):
    """A record-level problem; the caller adds file and line."""


def _blocks(content: list[Any], role: str) -> list[dict[str, Any]]:
    for number, block in enumerate(content, 1):
        if not isinstance(block, dict):
            raise _Fail(f"{role} content block {number} is not a JSON object")
        if not isinstance(block.get("type"), str):
            raise _Fail(f"{role} content block {number} has no string 'type'")
    return content


def _call_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise _Fail(f"{what} must be a non-empty string, got {show_value(value)}")
    return value


def _user(content: Any) -> tuple[str, tuple[str, ...]]:
    if isinstance(content, str):
        return _PROMPT, ()
    if not isinstance(content, list):
        raise _Fail("user content must be a string or a list of content blocks")
    if not content:
        raise _Fail("user content is an empty list")
    results: list[str] = []
    others = 0
    for block in _blocks(content, "user"):
        kind = block["type"]
        if kind == "tool_result":
            results.append(_call_id(block.get("tool_use_id"), "tool_result 'tool_use_id'"))
        elif kind == "tool_use":
            raise _Fail("user record holds a tool_use block; tool calls belong to the assistant")
        else:
            others += 1
    if results and others:
        raise _Fail(
            "user record mixes tool_result blocks with other content blocks; "
            "put tool results and the next prompt in separate records"
        )
    if results:
        return _RESULT, tuple(results)
    return _PROMPT, ()


def _assistant(content: Any, tool_calls: Any) -> tuple[str, tuple[str, ...]]:
    calls: list[str] = []
    if isinstance(content, list):
        for block in _blocks(content, "assistant"):
            kind = block["type"]
            if kind == "tool_use":
                calls.append(_call_id(block.get("id"), "tool_use 'id'"))
            elif kind == "tool_result":
                raise _Fail(
                    "assistant record holds a tool_result block; results belong to the user"
                )
    elif content is not None and not isinstance(content, str):
        raise _Fail("assistant content must be a string, a list of content blocks or null")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise _Fail("assistant 'tool_calls' must be a list")
        for number, call in enumerate(tool_calls, 1):
            if not isinstance(call, dict):
                raise _Fail(f"assistant tool call {number} is not a JSON object")
            calls.append(_call_id(call.get("id"), f"assistant tool call {number} 'id'"))
    return _ASSISTANT, tuple(calls)


def _classify(record: Any) -> tuple[str, tuple[str, ...]]:
    """Return (kind, tool call ids) of one record, or raise _Fail."""
    if not isinstance(record, dict):
        raise _Fail(f"line is a JSON {type(record).__name__}, not an object")
    if "message" in record:
        kind = record.get("type")
        message = record["message"]
        if kind not in ("user", "assistant"):
            raise _Fail(
                f"unsupported record type {show_value(kind)}; only 'user' and 'assistant' "
                "records are read"
            )
        if not isinstance(message, dict):
            raise _Fail("'message' is not a JSON object")
        role = message.get("role")
        if role != kind:
            raise _Fail(
                f"message role {show_value(role)} does not match record type {show_value(kind)}"
            )
        if "content" not in message:
            raise _Fail("message has no 'content'")
        if kind == "user":
            return _user(message["content"])
        return _assistant(message["content"], message.get("tool_calls"))
    if "role" in record:
        role = record["role"]
        if role == "user":
            if "content" not in record:
                raise _Fail("user record has no 'content'")
            return _user(record["content"])
        if role == "assistant":
            return _assistant(record.get("content"), record.get("tool_calls"))
        if role == "tool":
            return _RESULT, (_call_id(record.get("tool_call_id"), "tool 'tool_call_id'"),)
        raise _Fail(
            f"unsupported role {show_value(role)}; only 'user', 'assistant' and 'tool' are read"
        )
    if "type" in record:
        raise _Fail(
            f"metadata record (type {show_value(record['type'])}) is not a message; "
            "keep only user, assistant and tool messages"
        )
    raise _Fail("record has neither 'role' nor 'message'; not a transcript message")


def parse_transcript(data: bytes, *, name: str = "<transcript>") -> Transcript:
    """Parse transcript bytes into exchanges; fail closed on anything unexpected.

    `name` is how errors name the file. Reads `data` once, line by line; the
    exchanges keep byte offsets into it, not copies. A refusal in a file that
    one of the export readers reads (a Claude Code session, a Codex rollout)
    names the `--from` that reads it.

    >>> t = parse_transcript(b'{"role":"user","content":"hi"}\\n'
    ...                      b'{"role":"assistant","content":"hello"}\\n')
    >>> [(e.id, e.first_line, e.last_line) for e in t.exchanges]
    [('e001', 1, 2)]
    """

    if not data:
        raise TranscriptError(name, 1, "empty file; expected JSON Lines, one message a line")
    if data.startswith(BOM):
        raise TranscriptError(
            name, 1, "starts with a UTF-8 byte-order mark; save the file as UTF-8 without BOM"
        )
    exchanges = _StrictExchanges(name)
    lineno = 0
    export: str | None = None  # the export format the records so far look like
    try:
        for lineno, pos, _end, line in split_lines(data):
            if not line or line.isspace():
                raise TranscriptError(
                    name, lineno, "blank line; one message a line, no blank lines"
                )
            try:
                record = loads_strict(decode_line(line))
                export = export or export_format_of(record)
                kind, ids = _classify(record)
            except (ValueError, _Fail) as exc:
                raise TranscriptError(name, lineno, str(exc)) from None
            exchanges.add(kind, ids, lineno, pos)
        exchanges.finish(lineno, len(data))
    except TranscriptError as exc:
        if export is None:
            raise
        raise TranscriptError(name, exc.line, exc.reason + from_hint(export)) from None
    return Transcript(name, data, hashlib.sha256(data).hexdigest(), tuple(exchanges.done))


# What the records of a real export carry that a strict transcript's do not.
_CLAUDE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "attachment",
        "summary",
        "queue-operation",
        "file-history-snapshot",
        "progress",
        "last-prompt",
        "custom-title",
        "agent-name",
        "tag",
        "pr-link",
    }
)
_CLAUDE_KEYS = ("sessionId", "uuid", "parentUuid", "leafUuid", "messageId", "isSidechain")
_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_EXPORT_NAMES = {"claude-code": "a Claude Code session", "codex": "a Codex rollout"}


def export_format_of(record: Any) -> str | None:
    """ "claude-code" or "codex" when a record has the shape of that tool's export
    (its record types and bookkeeping keys), else None.

    >>> export_format_of({"type": "file-history-snapshot", "messageId": "m"})
    'claude-code'
    >>> export_format_of({"type": "event_msg", "payload": {"type": "token_count"}})
    'codex'
    >>> export_format_of({"role": "user", "content": "hi"}) is None
    True
    """
    if not isinstance(record, dict):
        return None
    kind = record.get("type")
    if not isinstance(kind, str):
        return None
    if kind in _CODEX_TYPES and isinstance(record.get("payload"), dict):
        return "codex"
    if kind in _CLAUDE_TYPES and any(key in record for key in _CLAUDE_KEYS):
        return "claude-code"
    return None


def from_hint(fmt: str) -> str:
    """The end of a strict refusal in an export's file: which `--from` reads it."""
    return f"; this is {_EXPORT_NAMES[fmt]}: use --from {fmt}"


class _StrictExchanges:
    """The strict transcript's records grouped into exchanges, one at a time: a
    user prompt opens an exchange, and every tool call in it must get its
    result, and the assistant the last word, before the next prompt."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.done: list[Exchange] = []
        # The ongoing exchange.
        self.open = False
        self.start = self.first_line = 0
        self.last_kind = ""
        self.last_line = 0
        self.pending: dict[str, int] = {}  # tool call id -> line of the call
        self.called: set[str] = set()

    def fail(self, line: int, message: str) -> TranscriptError:
        return TranscriptError(self.name, line, message)

    def add(self, kind: str, ids: tuple[str, ...], lineno: int, pos: int) -> None:
        if kind == _PROMPT:
            if self.open:
                self._close(lineno)
                self._append(lineno - 1, pos)
            self.open = True
            self.start, self.first_line = pos, lineno
            self.pending.clear()
            self.called.clear()
        elif not self.open:
            if kind == _RESULT:
                raise self.fail(
                    lineno,
                    f"tool result for {show_value(ids[0])} comes before the first user prompt "
                    "(orphaned result)",
                )
            raise self.fail(lineno, "assistant record comes before the first user prompt")
        elif kind == _ASSISTANT:
            self._calls(ids, lineno)
        else:
            self._results(ids, lineno)
        self.last_kind, self.last_line = kind, lineno

    def _calls(self, ids: tuple[str, ...], lineno: int) -> None:
        for call_id in ids:
            if call_id in self.called:
                raise self.fail(
                    lineno, f"tool call id {show_value(call_id)} is repeated in this exchange"
                )
            self.called.add(call_id)
            self.pending[call_id] = lineno

    def _results(self, ids: tuple[str, ...], lineno: int) -> None:
        for call_id in ids:
            if self.pending.pop(call_id, None) is None:
                raise self.fail(
                    lineno,
                    f"tool result for {show_value(call_id)} matches no outstanding tool call "
                    "in this exchange (orphaned result)",
                )

    def _close(self, at: int | None) -> None:
        """Refuse an exchange that ends (at the prompt on line `at`, or at the
        end of the file) with a call unanswered or without the assistant's word."""
        where = "the end of the file" if at is None else f"the next user prompt (line {at})"
        if self.pending:
            call_id, call_line = min(self.pending.items(), key=lambda item: item[1])
            raise self.fail(
                call_line,
                f"tool call {show_value(call_id)} has no result before {where} (outstanding call)",
            )
        if self.last_kind == _PROMPT:
            if at is None:
                raise self.fail(self.last_line, "final user prompt has no assistant response")
            raise self.fail(self.last_line, f"user prompt has no assistant response before {where}")
        if self.last_kind == _RESULT:
            raise self.fail(
                self.last_line,
                f"exchange ends with a tool result; the assistant response before {where} "
                "is missing",
            )

    def _append(self, last_line: int, end: int) -> None:
        index = len(self.done) + 1
        self.done.append(
            Exchange(exchange_name(index), index, self.first_line, last_line, self.start, end)
        )

    def finish(self, lineno: int, size: int) -> None:
        self._close(None)
        self._append(lineno, size)
