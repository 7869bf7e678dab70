"""Transcript continuation: keep critical exchanges verbatim within a byte budget.

Pure: bytes and values in, values out. No file system, clock, randomness or click;
`ledger_cli.transcript_cmd` reads the files and `ledger.safeio` writes them.

Its input is what a reader returns (`ledger.core.transcript_model.Transcript`):
the strict reader `parse_transcript` (`ledger.core.transcript_strict`, re-exported
here) or an export reader (`ledger.core.exports`). Exchanges are numbered e001,
e002, ... in source order; an exchange keeps the exact source bytes of its lines.

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
from ledger.core.transcript_model import (
    BOM,
    Exchange,
    ExportInfo,
    loads_strict,
    show_value,
)

# What the readers return, the strict reader and its error, named here too:
# callers that frame and select a transcript read it through this module.
from ledger.core.transcript_model import Transcript as Transcript
from ledger.core.transcript_model import TranscriptError as TranscriptError
from ledger.core.transcript_model import exchange_name as exchange_name
from ledger.core.transcript_strict import parse_transcript as parse_transcript

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
# A transcript pack's scope is this prefix and its annotation's version; its
# budget, `used`, `remaining` and every count are UTF-8 bytes of continuation.md.
TRANSCRIPT_PACK_SCOPE = "transcript:"
TRANSCRIPT_UNIT = "bytes"


def budget_unit(scope: str | None) -> str:
    """The unit a pack's budget and counts are in, for every text that shows
    them: "bytes" for a transcript pack (scope `transcript:...`), else "tokens".

    >>> budget_unit("transcript:0f3a.p1c2d"), budget_unit(None)
    ('bytes', 'tokens')
    """
    if scope is not None and scope.startswith(TRANSCRIPT_PACK_SCOPE):
        return TRANSCRIPT_UNIT
    return "tokens"


def counted_by(scope: str | None, counter: str) -> str:
    """How a pack's counts were made, for text: the counter's name, or for a
    transcript pack (whose estimates are bytes) what the bytes are of."""
    if budget_unit(scope) == TRANSCRIPT_UNIT:
        return "UTF-8 bytes of continuation.md"
    return counter


_BACKTICKS = re.compile(rb"`+")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


# -- errors ----------------------------------------------------------------------


class SidecarError(InputError):
    """The priorities sidecar is not a valid sidecar for its source."""


class StaleSidecarError(RefusedError):
    """The sidecar was written for other source bytes (the source changed)."""


class AssignmentError(InputError):
    """An `ID=PRIORITY` argument is malformed or names no exchange."""


class BudgetTooSmallError(RefusedError):
    """The byte budget cannot hold the pinned exchanges plus the Markdown framing."""


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

    if data.startswith(BOM):
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
        raise bad(f"unsupported version {show_value(version)}; expected 1")
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
            raise bad(f"unknown exchange id {show_value(exchange_id)} in 'priorities'")
        if priority not in PRIORITIES:
            raise bad(f"{exchange_id}: unknown priority {show_value(priority)}")
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
    `skipped` (record type -> count), `injected`, `agent` and `launches`.
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
        "agent": export.agent_id,
        "launches": dict(export.launches),
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
