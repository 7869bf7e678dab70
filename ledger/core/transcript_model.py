"""What a transcript reader returns: exchanges over the source bytes, and the
helpers both readers share (lines, strict JSON, the error naming a line).

Pure: bytes and values in, values out. The strict reader is
`ledger.core.transcript_strict`, the readers of real exports `ledger.core.exports`;
`ledger.core.transcript` frames and selects what they return.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.core.errors import InputError
from ledger.core.strictjson import DECODER, DuplicateKeyError, NonFiniteError

BOM = b"\xef\xbb\xbf"
_EXCHANGE_ID = re.compile(r"e([0-9]{3,})")

# -- errors -------------------------------------------------------------------------


class TranscriptError(InputError):
    """A transcript breaks the input contract; names the file and the line."""

    def __init__(self, name: str, line: int, message: str) -> None:
        self.name = name
        self.line = line
        self.reason = message
        super().__init__(f"{name} line {line}: {message}")


# -- what a reader returns ------------------------------------------------------------------------


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
    # Claude Code subagents: the agent whose own file this is (None: a main session),
    # and, in a main session, which exchange launched each agent (agent id -> e001).
    agent_id: str | None = None
    launches: Mapping[str, str] = field(default_factory=dict)


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


def show_value(value: Any) -> str:
    """A JSON value as a message shows it: at most 40 characters."""
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
        raise ValueError(f"duplicate JSON key {show_value(exc.value)}") from None
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
