"""Transcript continuation: keep critical exchanges verbatim within a byte budget.

Pure: bytes and values in, values out. No file system, clock, randomness or click;
`ledger_cli.transcript_cmd` reads the files and `ledger.safeio` writes them.

Input contract (a strict subset of exported chat logs, not a universal importer):
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
closed, naming the file and line. Exchanges are numbered e001, e002, ... in source
order (e1000 follows e999). An exchange keeps the exact source bytes of its lines.

continuation.md, byte for byte (the budget counts every byte of it)::

    # Continuation
    <blank line>
    Source SHA-256: <64 hex digits>
    Complete exchanges in source order, each verbatim in a JSON Lines fence; ...
    -- then for each selected exchange, in source order: --
    <blank line>
    ## e003 (pinned, lines 7-9)
    <blank line>
    ```jsonl
    <the exchange's source lines, byte-exact, CRLF kept>
    ```

The fence is one backtick longer than the longest backtick run in the payload (at
least three). When the source's last line has no line ending, a newline is added
after it, before the closing fence. An exchange's framed cost is the byte length
of its block (blank line, heading, fences, payload); the fixed header is counted
once.

Selection runs on the project's selector core, `ledger.core.select.select`, with its own
preference order (`TRANSCRIPT_ORDER`): pinned exchanges are required, then normal
ones oldest first, then asides oldest first, each whole exchange taken only if it
still fits; output in source order.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.core.errors import InputError, RefusedError
from ledger.core.select import (
    Candidate,
    Order,
    Request,
    RequiredOverBudgetError,
    candidate_of,
    select,
)
from ledger.core.strictjson import DECODER, DuplicateKeyError, NonFiniteError

PRIORITIES: tuple[str, ...] = ("pinned", "normal", "aside")
DEFAULT_PRIORITY = "normal"
SIDECAR_VERSION = 1
MANIFEST_VERSION = 1

# How an exchange maps onto a ledger candidate (see `exchange_candidates`).
PRIORITY_VALUES: Mapping[str, int] = {"pinned": 100, "normal": 50, "aside": 0}
TRANSCRIPT_SECTION = "evidence"
TRANSCRIPT_PERMISSION = "transcript-read"
TRANSCRIPT_TRUST = "user-input"
TRANSCRIPT_EFFECTIVE_FROM = "1970-01-01"

_BOM = b"\xef\xbb\xbf"
_BACKTICKS = re.compile(rb"`+")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_EXCHANGE_ID = re.compile(r"e([0-9]{3,})")


# -- errors -------------------------------------------------------------------------


class TranscriptError(InputError):
    """A transcript breaks the input contract; names the file and the line."""

    def __init__(self, name: str, line: int, message: str) -> None:
        self.name = name
        self.line = line
        self.reason = message
        super().__init__(f"{name} line {line}: {message}")


class SidecarError(InputError):
    """The priorities sidecar is not a valid sidecar for its source."""


class StaleSidecarError(RefusedError):
    """The sidecar was written for other source bytes (the source changed)."""


class AssignmentError(InputError):
    """An `ID=PRIORITY` argument is malformed or names no exchange."""


class BudgetTooSmallError(RefusedError):
    """The byte budget cannot hold the pinned exchanges plus the Markdown framing."""


# -- parsing ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Exchange:
    """One exchange: its id, source position and the byte range of its lines."""

    id: str
    index: int  # 1-based position in the source
    first_line: int
    last_line: int
    start: int  # byte offset of its first line in the source
    end: int  # byte offset just past its last line, line ending included
    marks: tuple[str, ...] = ()  # export readers only: "interrupted", "unanswered", ...


@dataclass(frozen=True, slots=True)
class ExportInfo:
    """What an export reader (`ledger.core.exports`) learnt besides the exchanges."""

    format: str  # "claude-code" | "codex"
    session_id: str | None
    first_date: str | None  # YYYY-MM-DD of the first timestamp, as written (UTC)
    last_date: str | None
    skipped: Mapping[str, int]  # record type -> count of records that carry no message
    injected: int  # injected message records attached to exchanges


@dataclass(frozen=True, slots=True, eq=False)
class Transcript:
    """A parsed transcript: the source bytes, their SHA-256 and the exchanges."""

    name: str
    data: bytes
    sha256: str
    exchanges: tuple[Exchange, ...]
    export: ExportInfo | None = None  # None: the strict transcript contract

    def payload(self, exchange: Exchange) -> bytes:
        """The exact source bytes of an exchange's lines."""
        return self.data[exchange.start : exchange.end]

    def exchange(self, exchange_id: str) -> Exchange | None:
        """The exchange with this id (`e001`, ...), or None."""
        match = _EXCHANGE_ID.fullmatch(exchange_id)
        if match is None:
            return None
        index = int(match.group(1))
        if exchange_id != exchange_name(index) or not 1 <= index <= len(self.exchanges):
            return None
        return self.exchanges[index - 1]


def exchange_name(index: int) -> str:
    """The id of the `index`-th exchange (1-based): e001 ... e999, e1000, ..."""
    return f"e{index:03d}"


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def loads_strict(text: str) -> Any:
    """Parse JSON text refusing duplicate keys and non-finite numbers.

    Raises ValueError with a short message (no position prefix). Nesting deeper
    than the interpreter's recursion limit and integers of more than 4300 digits
    are refused too (the decoder raises RecursionError, or a ValueError with a
    hint about `sys.set_int_max_str_digits`, for those).
    """
    try:
        return DECODER.decode(text)
    except DuplicateKeyError as exc:
        raise ValueError(f"duplicate JSON key {_show(exc.value)}") from None
    except NonFiniteError as exc:
        raise ValueError(f"non-finite JSON number {exc.value}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:
        if "digits" in str(exc):  # int() refuses more than 4300 digits
            raise ValueError("JSON integer has more than 4300 digits") from None
        raise
    except RecursionError:
        raise ValueError("JSON nesting too deep (about 1,000 levels at most)") from None


def split_lines(data: bytes) -> Iterator[tuple[int, int, int, bytes]]:
    """The lines of a JSON Lines export: (number from 1, offset of its first byte,
    offset after its newline, the line without the newline)."""
    size = len(data)
    pos = 0
    lineno = 0
    find = data.find
    while pos < size:
        lineno += 1
        newline = find(b"\n", pos)
        end = size if newline == -1 else newline + 1
        yield lineno, pos, end, data[pos : size if newline == -1 else newline]
        pos = end


def decode_line(line: bytes) -> str:
    """One line as UTF-8 text; ValueError naming the first bad byte (1-based)."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid UTF-8 at byte {exc.start + 1} of the line") from None


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
        raise _Fail(f"{what} must be a non-empty string, got {_show(value)}")
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
                f"unsupported record type {_show(kind)}; only 'user' and 'assistant' "
                "records are read"
            )
        if not isinstance(message, dict):
            raise _Fail("'message' is not a JSON object")
        role = message.get("role")
        if role != kind:
            raise _Fail(f"message role {_show(role)} does not match record type {_show(kind)}")
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
        raise _Fail(f"unsupported role {_show(role)}; only 'user', 'assistant' and 'tool' are read")
    if "type" in record:
        raise _Fail(
            f"metadata record (type {_show(record['type'])}) is not a message; "
            "keep only user, assistant and tool messages"
        )
    raise _Fail("record has neither 'role' nor 'message'; not a transcript message")


def parse_transcript(data: bytes, *, name: str = "<transcript>") -> Transcript:
    """Parse transcript bytes into exchanges; fail closed on anything unexpected.

    `name` is how errors name the file. Reads `data` once, line by line; the
    exchanges keep byte offsets into it, not copies.

    >>> t = parse_transcript(b'{"role":"user","content":"hi"}\\n'
    ...                      b'{"role":"assistant","content":"hello"}\\n')
    >>> [(e.id, e.first_line, e.last_line) for e in t.exchanges]
    [('e001', 1, 2)]
    """

    if not data:
        raise TranscriptError(name, 1, "empty file; expected JSON Lines, one message a line")
    if data.startswith(_BOM):
        raise TranscriptError(
            name, 1, "starts with a UTF-8 byte-order mark; save the file as UTF-8 without BOM"
        )
    exchanges = _StrictExchanges(name)
    lineno = 0
    for lineno, pos, _end, line in split_lines(data):
        if not line or line.isspace():
            raise TranscriptError(name, lineno, "blank line; one message a line, no blank lines")
        try:
            record = loads_strict(decode_line(line))
            kind, ids = _classify(record)
        except (ValueError, _Fail) as exc:
            raise TranscriptError(name, lineno, str(exc)) from None
        exchanges.add(kind, ids, lineno, pos)
    exchanges.finish(lineno, len(data))
    return Transcript(name, data, hashlib.sha256(data).hexdigest(), tuple(exchanges.done))


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
                    f"tool result for {_show(ids[0])} comes before the first user prompt "
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
                    lineno, f"tool call id {_show(call_id)} is repeated in this exchange"
                )
            self.called.add(call_id)
            self.pending[call_id] = lineno

    def _results(self, ids: tuple[str, ...], lineno: int) -> None:
        for call_id in ids:
            if self.pending.pop(call_id, None) is None:
                raise self.fail(
                    lineno,
                    f"tool result for {_show(call_id)} matches no outstanding tool call "
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
                f"tool call {_show(call_id)} has no result before {where} (outstanding call)",
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


# -- priorities: command-line assignments and the sidecar ----------------------------


def _id_range(transcript: Transcript) -> str:
    count = len(transcript.exchanges)
    return "e001" if count == 1 else f"e001 to {exchange_name(count)}"


def parse_assignments(args: Sequence[str], transcript: Transcript) -> dict[str, str]:
    """Turn `e001=pinned e003=aside ...` into the full mapping (others `normal`).

    >>> t = parse_transcript(b'{"role":"user","content":"a"}\\n{"role":"assistant"}\\n')
    >>> parse_assignments(["e001=aside"], t)
    {'e001': 'aside'}
    """
    chosen: dict[str, str] = {}
    for arg in args:
        exchange_id, sep, priority = arg.partition("=")
        if not sep or not exchange_id:
            raise AssignmentError(f"argument {arg!r} is not ID=PRIORITY (e.g. e001=pinned)")
        if priority not in PRIORITIES:
            raise AssignmentError(
                f"{arg!r}: unknown priority {priority!r}; use pinned, normal or aside"
            )
        if transcript.exchange(exchange_id) is None:
            raise AssignmentError(
                f"{arg!r}: unknown exchange id {exchange_id!r}; {transcript.name} has "
                f"{_id_range(transcript)}"
            )
        if exchange_id in chosen:
            raise AssignmentError(f"{arg!r}: exchange {exchange_id} is named twice")
        chosen[exchange_id] = priority
    return {e.id: chosen.get(e.id, DEFAULT_PRIORITY) for e in transcript.exchanges}


def render_sidecar(transcript: Transcript, priorities: Mapping[str, str]) -> bytes:
    """The sidecar JSON: `{"version": 1, "sourceSha256", "priorities"}`, every exchange."""
    document = {
        "version": SIDECAR_VERSION,
        "sourceSha256": transcript.sha256,
        "priorities": {e.id: priorities.get(e.id, DEFAULT_PRIORITY) for e in transcript.exchanges},
    }
    return (json.dumps(document, indent=2) + "\n").encode("utf-8")


def parse_sidecar(data: bytes, transcript: Transcript, *, name: str) -> dict[str, str]:
    """Read a sidecar written for `transcript`; return the full priority mapping.

    A sidecar whose `sourceSha256` is not the source's SHA-256 is refused
    (`StaleSidecarError`): the source changed since it was annotated.
    """

    def bad(message: str) -> SidecarError:
        return SidecarError(f"{name}: {message}; rerun `ledger transcript annotate`")

    if data.startswith(_BOM):
        raise bad("starts with a UTF-8 byte-order mark")
    try:
        document = loads_strict(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise bad("is not valid UTF-8") from None
    except ValueError as exc:
        raise bad(str(exc)) from None
    if not isinstance(document, dict):
        raise bad("is not a JSON object")
    fields = {"version", "sourceSha256", "priorities"}
    if set(document) != fields:
        missing = sorted(fields - set(document))
        unknown = sorted(set(document) - fields)
        raise bad(f"invalid fields (missing: {missing}, unknown: {unknown})")
    version = document["version"]
    if type(version) is not int or version != SIDECAR_VERSION:
        raise bad(f"unsupported version {_show(version)}; expected 1")
    source_sha = document["sourceSha256"]
    if not isinstance(source_sha, str) or not _SHA256_HEX.fullmatch(source_sha):
        raise bad("'sourceSha256' must be 64 lower-case hex digits")
    if source_sha != transcript.sha256:
        raise StaleSidecarError(
            f"{name}: sourceSha256 {source_sha[:12]}... does not match {transcript.name} "
            f"({transcript.sha256[:12]}...): the source changed since it was annotated; "
            "rerun `ledger transcript annotate`"
        )
    priorities = document["priorities"]
    if not isinstance(priorities, dict):
        raise bad("'priorities' must be a JSON object")
    for exchange_id, priority in priorities.items():
        if transcript.exchange(exchange_id) is None:
            raise bad(f"unknown exchange id {_show(exchange_id)} in 'priorities'")
        if priority not in PRIORITIES:
            raise bad(f"{exchange_id}: unknown priority {_show(priority)}")
    return {e.id: priorities.get(e.id, DEFAULT_PRIORITY) for e in transcript.exchanges}


# -- framing ------------------------------------------------------------------------


def continuation_header(source_sha256: str) -> bytes:
    """The fixed first bytes of continuation.md (counted once against the budget)."""
    return (
        "# Continuation\n"
        "\n"
        f"Source SHA-256: {source_sha256}\n"
        "Complete exchanges in source order, each verbatim in a JSON Lines fence; "
        "omissions.json lists every exchange.\n"
    ).encode()


FRAMING_BYTES = len(continuation_header("0" * 64))
"""The header's size: the same for every source (its SHA-256 is 64 hex digits)."""


def _fence(data: bytes, start: int, end: int) -> bytes:
    # Shortest run of 3+ backticks that does not occur in the payload: one longer
    # than its longest backtick run. `find` scans in C without copying; a
    # pathological run falls back to one regex pass.
    run = 3
    while data.find(b"`" * run, start, end) != -1:
        run += 1
        if run > 16:
            longest = max(len(m.group()) for m in _BACKTICKS.finditer(data, start, end))
            return b"`" * (longest + 1)
    return b"`" * run


def _frame(transcript: Transcript, exchange: Exchange, priority: str) -> tuple[bytes, bytes]:
    """The bytes before and after an exchange's payload in continuation.md."""
    fence = _fence(transcript.data, exchange.start, exchange.end)
    marks = "".join(f", {mark}" for mark in exchange.marks)
    head = (
        (
            f"\n## {exchange.id} ({priority}, lines {exchange.first_line}-{exchange.last_line}"
            f"{marks})\n\n"
        ).encode()
        + fence
        + b"jsonl\n"
    )
    newline = b"" if transcript.data[exchange.end - 1 : exchange.end] == b"\n" else b"\n"
    return head, newline + fence + b"\n"


def framed_cost(transcript: Transcript, exchange: Exchange, priority: str) -> int:
    """Bytes that the exchange adds to continuation.md (block framing included)."""
    head, tail = _frame(transcript, exchange, priority)
    return len(head) + (exchange.end - exchange.start) + len(tail)


# -- the selector core: candidates and order ------------------------------------------


def _source_position(candidate: Candidate) -> tuple[int, str]:
    # Ids share one prefix and zero-padded numbers that grow past e999, so
    # (length, id) is source order without relying on ingest_rank.
    return (len(candidate.id), candidate.id)


def _transcript_preference(candidate: Candidate) -> tuple[int, int, str]:
    return (-candidate.priority, *_source_position(candidate))


TRANSCRIPT_ORDER = Order(preference=_transcript_preference, output=_source_position)
"""Preference: pinned, normal, aside (by priority value), each oldest first.
Output: source order."""


def exchange_record(
    transcript: Transcript, exchange: Exchange, priority: str, *, id_prefix: str = ""
) -> dict[str, Any]:
    """One exchange as a chunk record (content = its exact source lines;
    docs/reference/records.md).

    `tokens`/`estimated_tokens` is the framed byte cost, `required` is pinned,
    `dedupe_key` the (unique) chunk id, `source_version` the source's SHA-256.
    """
    chunk_id = id_prefix + exchange.id
    return {
        "id": chunk_id,
        "section": TRANSCRIPT_SECTION,
        "source_uri": f"transcript://sha256/{transcript.sha256}#{exchange.id}",
        "source_version": transcript.sha256,
        "effective_from": TRANSCRIPT_EFFECTIVE_FROM,
        "expires_on": None,
        "required_permission": TRANSCRIPT_PERMISSION,
        "trust": TRANSCRIPT_TRUST,
        "dedupe_key": chunk_id,
        "estimated_tokens": framed_cost(transcript, exchange, priority),
        "priority": PRIORITY_VALUES[priority],
        "required": priority == "pinned",
        "content": transcript.payload(exchange).decode("utf-8"),
    }


def record_digest(record: Mapping[str, Any]) -> str:
    """`ledger.core.canonical.digest_value(record)` for an `exchange_record`, faster.

    The record's keys are ASCII and its values strings, integers, booleans and
    null, so RFC 8785 is `json.dumps` with sorted keys and no white space (a test
    checks the two agree); the C encoder matters at 100,000 exchanges.
    """
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def exchange_candidates(
    transcript: Transcript, priorities: Mapping[str, str], *, id_prefix: str = ""
) -> list[Candidate]:
    """Map every exchange to a selector `Candidate`, in source order.

    id = `id_prefix` + exchange id; tokens = framed byte cost; required = pinned;
    priority = `PRIORITY_VALUES[class]`; dedupe_key = the id (unique); permission,
    trust and effective date are the `TRANSCRIPT_*` constants that
    `transcript_request` grants; ingest_rank = source position (1-based);
    record_digest = digest of `exchange_record`; content_digest = SHA-256 of the
    exchange's source bytes. Select with `TRANSCRIPT_ORDER`.
    """
    candidates = []
    for exchange in transcript.exchanges:
        priority = priorities.get(exchange.id, DEFAULT_PRIORITY)
        if priority not in PRIORITY_VALUES:
            raise ValueError(f"unknown priority {priority!r} for {exchange.id}")
        record = exchange_record(transcript, exchange, priority, id_prefix=id_prefix)
        candidates.append(
            candidate_of(
                record,
                record_digest=record_digest(record),
                content_digest=hashlib.sha256(transcript.payload(exchange)).hexdigest(),
                ingest_rank=exchange.index,
            )
        )
    return candidates


def transcript_request(budget: int) -> Request:
    """A selector request admitting every exchange candidate; `budget` in bytes."""
    return Request(
        as_of=TRANSCRIPT_EFFECTIVE_FROM,
        granted=frozenset({TRANSCRIPT_PERMISSION}),
        allowed_trust=frozenset({TRANSCRIPT_TRUST}),
        budget=budget,
        supersede=False,
    )


# -- selection ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decision:
    """What became of one exchange."""

    exchange: Exchange
    priority: str
    cost: int
    content_sha256: str
    selected: bool
    reason: str  # "selected", or the selector's eviction reason ("budget")
    detail: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True, eq=False)
class Selection:
    """The whole export decision: every exchange, in source order."""

    transcript: Transcript
    budget: int
    used: int
    header: bytes
    decisions: tuple[Decision, ...]

    @property
    def selected(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.selected)


def select_exchanges(
    transcript: Transcript, priorities: Mapping[str, str], budget: int
) -> Selection:
    """Choose the exchanges for continuation.md within `budget` bytes (whole file).

    Raises BudgetTooSmallError when the budget is below the pinned exchanges plus
    the Markdown framing.
    """
    header = continuation_header(transcript.sha256)
    candidates = exchange_candidates(transcript, priorities)
    pinned = [c for c in candidates if c.required]
    needed = len(header) + sum(c.tokens for c in pinned)

    def too_small() -> BudgetTooSmallError:
        return BudgetTooSmallError(
            f"budget {budget} bytes is below the {len(pinned)} pinned exchange(s) plus "
            f"Markdown framing ({needed} bytes); raise the budget to at least {needed} "
            "or pin fewer exchanges"
        )

    if budget < needed:
        raise too_small()
    try:
        context = select(candidates, transcript_request(budget - len(header)), TRANSCRIPT_ORDER)
    except RequiredOverBudgetError:  # pragma: no cover - checked above
        raise too_small() from None

    admitted = {c.id for c in context.items}
    evicted = {e.candidate.id: e for e in context.evicted}
    decisions = []
    used = len(header)
    for exchange, candidate in zip(transcript.exchanges, candidates, strict=True):
        priority = priorities.get(exchange.id, DEFAULT_PRIORITY)
        if candidate.id in admitted:
            used += candidate.tokens
            decision = Decision(
                exchange,
                priority,
                candidate.tokens,
                candidate.content_digest,
                True,
                "selected",
                None,
            )
        else:
            eviction = evicted[candidate.id]
            decision = Decision(
                exchange,
                priority,
                candidate.tokens,
                candidate.content_digest,
                False,
                eviction.reason,
                dict(eviction.detail),
            )
        decisions.append(decision)
    if used > budget:  # the selector broke its contract: a bug, keep the traceback
        raise AssertionError(f"selection uses {used} bytes, budget {budget}")
    return Selection(transcript, budget, used, header, tuple(decisions))


def render_continuation(selection: Selection) -> Iterator[bytes | memoryview]:
    """The bytes of continuation.md as chunks (payloads are views, not copies)."""
    transcript = selection.transcript
    view = memoryview(transcript.data)
    yield selection.header
    for decision in selection.decisions:
        if decision.selected:
            exchange = decision.exchange
            head, tail = _frame(transcript, exchange, decision.priority)
            yield head
            yield view[exchange.start : exchange.end]
            yield tail


def continuation_bytes(selection: Selection) -> bytes:
    """continuation.md as one bytes value (for tests and small transcripts)."""
    return b"".join(render_continuation(selection))


def omissions_document(selection: Selection) -> dict[str, Any]:
    """The omissions manifest: every exchange with priority, cost and decision.

    For an export (Claude Code, Codex) each exchange also has `lines` [first, last] and
    `marks`, and the document the export's `format`, `session`, `dates`,
    `skipped` (record type -> count) and `injected`.
    """
    export = selection.transcript.export
    exchanges = []
    for d in selection.decisions:
        entry: dict[str, Any] = {
            "id": d.exchange.id,
            "priority": d.priority,
            "framedBytes": d.cost,
            "status": "selected" if d.selected else "omitted",
            "reason": d.reason,
            "firstLine": d.exchange.first_line,
            "lastLine": d.exchange.last_line,
            "contentSha256": d.content_sha256,
        }
        if d.detail is not None:
            entry["detail"] = dict(d.detail)
        if export is not None:
            entry["lines"] = [d.exchange.first_line, d.exchange.last_line]
            entry["marks"] = list(d.exchange.marks)
        exchanges.append(entry)
    selected = sum(1 for d in selection.decisions if d.selected)
    document: dict[str, Any] = {
        "version": MANIFEST_VERSION,
        "sourceSha256": selection.transcript.sha256,
        "budget": selection.budget,
        "used": selection.used,
        "remaining": selection.budget - selection.used,
        "framingBytes": len(selection.header),
        "exchangeCount": len(selection.decisions),
        "selectedCount": selected,
        "omittedCount": len(selection.decisions) - selected,
    }
    if export is not None:
        document.update(export_summary(export))
    document["exchanges"] = exchanges
    return document


def export_summary(export: ExportInfo) -> dict[str, Any]:
    """The keys an export adds to omissions.json and `annotate --json`."""
    return {
        "format": export.format,
        "session": export.session_id,
        "dates": [export.first_date, export.last_date],
        "skipped": dict(export.skipped),
        "injected": export.injected,
    }


def render_omissions(selection: Selection) -> bytes:
    """omissions.json: UTF-8, indented, one exchange a line, a final newline.

    The summary fields come first, then `"exchanges"`, each entry on one line
    (json.dumps with `indent` is pure Python; a line per entry keeps 100,000
    exchanges fast and still readable and diff-friendly).
    """
    document = omissions_document(selection)
    entries = document.pop("exchanges")
    head = json.dumps(document, indent=2)[:-2]  # drop the closing "\n}"
    rows = ",\n".join("    " + json.dumps(entry) for entry in entries)
    body = f'  "exchanges": [\n{rows}\n  ]' if entries else '  "exchanges": []'
    return f"{head},\n{body}\n}}\n".encode()
