"""Readers for real transcript exports: Claude Code sessions and Codex rollouts.

Pure: bytes in, values out (no file system, clock or randomness). The strict
transcript reader (`ledger.core.transcript_strict.parse_transcript`) refuses
anything but messages; these readers take the files those tools write as they
are. What each record is (`ledger.core.export_records`, and the tables "What
`--from claude-code` reads" and "What `--from codex` reads" in
docs/guides/transcripts.md):

- a record that carries no message (queue operations, summaries, session
  metadata, snapshots, token counts, ...) is *skipped* and counted by its type
  (`skipped`, e.g. ``{"queue-operation": 4, "event_msg:token_count": 66}``);
- a message injected by the tool (hook feedback, system reminders, task
  notifications, command output, ``isMeta`` records, compaction summaries, Codex
  developer and environment messages) belongs to the exchange in progress
  (before the first prompt: to the first exchange) and never opens one;
- a user prompt opens an exchange. A prompt that arrives while a tool call or a
  tool result is still unanswered closes the exchange in progress as
  ``interrupted``; an exchange whose prompt got no assistant output at all is
  ``unanswered`` (the final prompt of a file, typically); both are kept.

An exchange is the contiguous range of original lines from its first message
record to its last one, so its payload is those lines byte for byte (skipped
records that sit inside the range stay in it, verbatim; the ones between two
exchanges belong to none and are only counted). Line numbers and the SHA-256
are those of the original file.

A Claude Code subagent's own file (`<session>/subagents/agent-<id>.jsonl`)
carries its parent's session id; its exchanges are named by both
(`subagent_slug`), and the parent's reading says which of its exchanges
launched each agent (`ExportInfo.launches`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field

from ledger.core.export_records import (
    ASSISTANT,
    INJECTED,
    INJECTED_MARK,
    INTERRUPTED,
    ORPHANED,
    PROMPT,
    SKIP,
    UNANSWERED,
    ClaudeReader,
    CodexReader,
    Event,
    RecordFail,
)
from ledger.core.transcript_model import (
    BOM,
    Exchange,
    ExportInfo,
    Transcript,
    TranscriptError,
    decode_line,
    exchange_name,
    loads_strict,
    split_lines,
)
from ledger.core.transcript_strict import parse_transcript

FORMATS: tuple[str, ...] = ("claude-code", "codex")

_DATE = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})T")


def _date(value: object) -> str | None:
    if isinstance(value, str):
        match = _DATE.match(value)
        if match:
            return match.group(1)
    return None


# -- the exchange builder ---------------------------------------------------------------


@dataclass(slots=True)
class _Open:
    """The exchange in progress."""

    start: int
    first_line: int
    end: int = 0
    last_line: int = 0
    prompted: bool = False
    answered: bool = False  # any assistant output since the prompt
    awaiting: bool = False  # a tool result still waits for the assistant
    pending: dict[str, int] = field(default_factory=dict)
    marks: set[str] = field(default_factory=set)
    echo: str | None = None  # the prompt's text, while nothing else followed it
    echo_kind: str = ""
    agents: list[str] = field(default_factory=list)  # subagents its tool results launched


def read_export(data: bytes, fmt: str, *, name: str = "<transcript>") -> Transcript:
    """Read a Claude Code session (`fmt` "claude-code") or a Codex rollout ("codex").

    Returns a `Transcript` whose exchanges carry `marks` and whose `export` says
    what was skipped, the session id and the dates. Refuses (naming the line) only
    what is no export at all: an empty file, a byte-order mark, a line that is not
    UTF-8 or not a JSON object, a message record of the wrong shape, or a file
    with no message.

    >>> data = (b'{"type":"summary","summary":"s"}\\n'
    ...         b'{"type":"user","message":{"role":"user","content":"hi"}}\\n')
    >>> t = read_export(data, "claude-code")
    >>> [(e.id, e.first_line, e.last_line, e.marks) for e in t.exchanges], dict(t.export.skipped)
    ([('e001', 2, 2, ('unanswered',))], {'summary': 1})
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    if not data:
        raise TranscriptError(name, 1, f"empty file; expected a {fmt} export (JSON Lines)")
    if data.startswith(BOM):
        raise TranscriptError(
            name, 1, "starts with a UTF-8 byte-order mark; save the file as UTF-8 without BOM"
        )
    reader: ClaudeReader | CodexReader = ClaudeReader() if fmt == "claude-code" else CodexReader()
    grouping = _Exchanges()
    lineno = 0
    for lineno, start, end, line in split_lines(data):
        if not line.strip():
            grouping.skipped["(blank line)"] += 1
            continue
        try:
            record = loads_strict(decode_line(line))
            if not isinstance(record, dict):
                raise RecordFail(f"line is a JSON {type(record).__name__}, not an object")
            event = reader(record)
        except (ValueError, RecordFail) as exc:
            raise TranscriptError(name, lineno, str(exc)) from None
        grouping.add(event, lineno, start, end, _date(record.get("timestamp")))
    exchanges = grouping.finish()
    if not exchanges:
        raise TranscriptError(name, lineno, f"no message record in the file; is it a {fmt} export?")
    info = ExportInfo(
        format=fmt,
        session_id=reader.session_id,
        first_date=grouping.first_date,
        last_date=grouping.last_date,
        skipped=dict(sorted(grouping.skipped.items())),
        injected=grouping.injected,
        agent_id=reader.agent_id,
        launches=dict(grouping.launches),
    )
    return Transcript(name, data, hashlib.sha256(data).hexdigest(), tuple(exchanges), export=info)


class _Exchanges:
    """The export's records grouped into exchanges, one event at a time: a prompt
    opens an exchange, everything up to the next prompt belongs to it."""

    def __init__(self) -> None:
        self.skipped: Counter[str] = Counter()
        self.exchanges: list[Exchange] = []
        self.current: _Open | None = None
        # Injected or assistant records before the first prompt.
        self.preamble: _Open | None = None
        self.injected = 0
        self.first_date: str | None = None
        self.last_date: str | None = None
        self.launches: dict[str, str] = {}  # subagent id -> the exchange that launched it

    def add(self, event: Event, lineno: int, start: int, end: int, stamp: str | None) -> None:
        if stamp is not None:
            self.first_date = self.first_date or stamp
            self.last_date = stamp
        if event.kind == SKIP:
            self.skipped[event.type] += 1
            if self.current is not None:
                self.current.marks.update(event.marks)
        elif event.kind == PROMPT:
            self._prompt(event, lineno, start, end)
        else:
            self._within(event, lineno, start, end)

    def _prompt(self, event: Event, lineno: int, start: int, end: int) -> None:
        ex = self.current
        if (
            ex is not None
            and ex.echo is not None
            and event.echo is not None
            and ex.echo_kind != event.echo_kind
            and ex.echo == event.echo
        ):
            # Codex writes each prompt twice (a response item and an event);
            # the second is the same prompt, not a new exchange.
            ex.end, ex.last_line, ex.echo = end, lineno, None
            return
        if ex is not None:
            self._close(ex)
        ex = self.preamble if self.preamble is not None else _Open(start, lineno)
        self.preamble = None
        ex.prompted = True
        ex.answered = ex.awaiting = False
        ex.pending.clear()
        ex.echo, ex.echo_kind = event.echo, event.echo_kind
        ex.end, ex.last_line = end, lineno
        self.current = ex

    def _within(self, event: Event, lineno: int, start: int, end: int) -> None:
        """An injected, assistant or tool-result record: part of the open exchange
        (or of the preamble before the first prompt)."""
        ex = self.current
        if ex is None:
            if self.preamble is None:
                self.preamble = _Open(start, lineno)
            ex = self.preamble
        ex.end, ex.last_line, ex.echo = end, lineno, None
        ex.marks.update(event.marks)
        if event.kind == INJECTED:
            self.injected += 1
            ex.marks.add(INJECTED_MARK)
        elif event.kind == ASSISTANT:
            ex.answered = True
            ex.awaiting = False
            for call in event.calls:
                ex.pending[call] = lineno
        else:  # RESULT
            for call in event.calls:
                if ex.pending.pop(call, None) is None:
                    ex.marks.add(ORPHANED)
            ex.awaiting = True
            ex.agents.extend(event.agents)

    def _close(self, ex: _Open) -> None:
        marks = set(ex.marks)
        if not ex.answered:
            marks.add(UNANSWERED)
        elif ex.pending or ex.awaiting:
            marks.add(INTERRUPTED)
        index = len(self.exchanges) + 1
        for agent in ex.agents:
            self.launches.setdefault(agent, exchange_name(index))
        self.exchanges.append(
            Exchange(
                exchange_name(index),
                index,
                ex.first_line,
                ex.last_line,
                ex.start,
                ex.end,
                tuple(sorted(marks)),
            )
        )

    def finish(self) -> list[Exchange]:
        if self.current is not None:
            self._close(self.current)
        if self.preamble is not None:
            # No prompt at all (a file that starts with the assistant and never
            # gets a prompt): its records are one exchange, kept whole.
            self._close(self.preamble)
        return self.exchanges


def read_transcript(data: bytes, fmt: str | None, *, name: str = "<transcript>") -> Transcript:
    """The strict transcript parser when `fmt` is None, else the export reader for `fmt`."""
    if fmt is None:
        return parse_transcript(data, name=name)
    return read_export(data, fmt, name=name)


_NOT_SLUG = re.compile(r"[^a-z0-9-]+")
_SLUG_MAX = 40  # room for "-e" and 6+ digits within the 64 characters of an id
_SUBAGENT_SLUG_MAX = 56  # a session's slug and an agent's id, with the same room


def session_slug(session_id: str | None, sha256: str) -> str:
    """The id-safe name of a session: its id lower-cased when that is already safe
    (a UUID), else a slug of it plus 8 hex digits of its SHA-256, so two session
    ids never share a slug. No session id: `session-` and 16 hex digits of the
    file's SHA-256.

    >>> session_slug("4c2ddfdc-b619-4525-8d03-1950fb1b0257", "0" * 64)
    '4c2ddfdc-b619-4525-8d03-1950fb1b0257'
    >>> session_slug("My_Session", "0" * 64)
    'my-session-5d2ddb3c'
    """
    if not session_id:
        return f"session-{sha256[:16]}"
    if re.fullmatch(r"[a-z0-9][a-z0-9-]*", session_id) and len(session_id) <= _SLUG_MAX:
        return session_id
    stem = _NOT_SLUG.sub("-", session_id.lower()).strip("-")[: _SLUG_MAX - 9].strip("-")
    tag = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:8]
    return f"{stem}-{tag}" if stem else f"session-{tag}"


def transcript_date(transcript: Transcript) -> tuple[str, str] | None:
    """(first, last) YYYY-MM-DD of an export's timestamps; None without any."""
    export = transcript.export
    if export is None or export.first_date is None or export.last_date is None:
        return None
    first, last = export.first_date, export.last_date
    return (first, last) if first <= last else (last, first)


def subagent_slug(session_id: str | None, agent_id: str, sha256: str) -> str:
    """The id-safe name of a Claude Code subagent's own file: its parent session's
    slug and the agent's id (`<session>-<agent id>`), so a subagent's exchanges
    never share ids with its parent's or another agent's. An agent id that is not
    id-safe, or too long beside the session's slug, becomes `a` and 12 hex digits
    of its SHA-256.

    >>> subagent_slug("4c2ddfdc-b619-4525-8d03-1950fb1b0257", "a485154", "0" * 64)
    '4c2ddfdc-b619-4525-8d03-1950fb1b0257-a485154'
    >>> subagent_slug("4c2ddfdc-b619-4525-8d03-1950fb1b0257", "Agent_7", "0" * 64)
    '4c2ddfdc-b619-4525-8d03-1950fb1b0257-a8856f927a927'
    """
    session = session_slug(session_id, sha256)
    agent = agent_id
    if not (
        re.fullmatch(r"[a-z0-9]+", agent_id)
        and len(session) + 1 + len(agent_id) <= _SUBAGENT_SLUG_MAX
    ):
        agent = "a" + hashlib.sha256(agent_id.encode("utf-8")).hexdigest()[:12]
    return f"{session}-{agent}"


def export_slug(transcript: Transcript) -> str | None:
    """The id-safe name of an export's exchanges: its session's slug, or for a
    subagent's own file its session's and the agent's (None: a strict transcript)."""
    export = transcript.export
    if export is None:
        return None
    if export.agent_id is not None:
        return subagent_slug(export.session_id, export.agent_id, transcript.sha256)
    return session_slug(export.session_id, transcript.sha256)
