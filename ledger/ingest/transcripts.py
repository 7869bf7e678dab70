"""Transcripts through the ledger: exchanges as chunk versions, continuations as packs.

With `--from claude-code|codex` the source is a real export (`ledger.core.exports`):
chunk ids are `<session slug>-e001`, ..., every exchange is effective from the
session's first day, and the pack is as of its last day. A Claude Code subagent's
own file (`<session>/subagents/agent-<id>.jsonl`) is named by its session and
its agent (`<session slug>-<agent id>-e001`); when its parent session file sits
where Claude Code writes it (`<session>.jsonl` beside the `<session>/` folder),
every exchange's `source_uri` names the parent's exchange that launched the
agent (`transcript://sha256/<sha>?agent=<id>&launched-by=<session slug>-e003#e001`)
and that link is part of the annotation its version names.

`ledger ingest --format transcript SOURCE --priorities SIDECAR` stores every
exchange as a chunk version (`exchange_record`: content = its exact source lines,
estimated_tokens = its framed byte cost, required = pinned). The version names
both the source bytes and the annotation, `<source sha256>.p<priorities digest>`,
so re-annotating a transcript adds new versions instead of changing stored ones.
`ledger build --transcript SOURCE --priorities SIDECAR --budget BYTES` records
the continuation that `ledger transcript export` would write as a pack (scope
`transcript:<version>`), so `why-evicted` and `diff` explain exchanges like any
chunk. Transcript exchanges are never candidates of document packs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.core.canonical import digest_value
from ledger.core.errors import InputError, LedgerError
from ledger.core.exports import export_slug, read_transcript, session_slug, transcript_date
from ledger.core.records import LEDGER_MAX_CONTENT, MAX_TOKENS
from ledger.core.transcript import (
    Transcript,
    continuation_header,
    exchange_record,
    parse_sidecar,
)
from ledger.safeio import read_input

_NOT_ID = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True, slots=True)
class Annotated:
    """A parsed transcript with its (checked) priorities, and for a subagent's
    own file the parent's exchange that launched it (a chunk id), when found."""

    transcript: Transcript
    priorities: dict[str, str]
    launched_by: str | None = None

    @property
    def source_version(self) -> str:
        """The version every exchange of this annotation is stored under: the
        source's SHA-256 and a digest of the annotation (the priorities, and the
        parent link of a subagent whose parent was found)."""
        annotation: Any = self.priorities
        if self.launched_by is not None:
            annotation = {"priorities": self.priorities, "launched_by": self.launched_by}
        return f"{self.transcript.sha256}.p{digest_value(annotation)[:12]}"

    def header_bytes(self) -> int:
        """The fixed framing of continuation.md that the byte budget also pays for."""
        return len(continuation_header(self.transcript.sha256))

    @property
    def session_slug(self) -> str | None:
        """The id-safe name of the export's exchanges: its session's, or for a
        subagent's own file its session's and the agent's (None for a strict
        transcript)."""
        return export_slug(self.transcript)

    @property
    def agent_id(self) -> str | None:
        """The subagent whose own file this is (None: a main session or a strict one)."""
        export = self.transcript.export
        return None if export is None else export.agent_id

    @property
    def dates(self) -> tuple[str, str] | None:
        """(first, last) date of the export's timestamps, None when it has none."""
        return transcript_date(self.transcript)


def _read(path: str, what: str) -> bytes:
    return read_input(path, what=f"{what} file")


def load_annotated(
    source: str, priorities: str | None, source_format: str | None = None
) -> Annotated:
    """Read a transcript and its sidecar (a stale sidecar is refused). Without a
    sidecar every exchange is `normal`. `source_format` is the export's format
    ("claude-code", "codex"; None: the strict transcript contract)."""
    transcript = read_transcript(_read(source, "transcript"), source_format, name=source)
    if priorities is None:
        prio = {e.id: "normal" for e in transcript.exchanges}
    else:
        prio = parse_sidecar(_read(priorities, "priorities"), transcript, name=priorities)
    launched_by = None
    if transcript.export is not None and transcript.export.agent_id is not None:
        launched_by = _launching_exchange(source, transcript, source_format)
    return Annotated(transcript, dict(prio), launched_by)


def parent_session_path(source: str, session_id: str | None) -> Path | None:
    """Where Claude Code writes the parent of a subagent's file
    (`<project>/<session>/subagents/agent-<id>.jsonl` -> `<project>/<session>.jsonl`),
    or None when `source` does not sit in a `subagents` folder of a session's."""
    path = Path(source)
    folder = path.parent
    if folder.name != "subagents" or not session_id:
        return None
    session_dir = folder.parent
    if session_dir.name != session_id:
        return None
    return session_dir.with_name(session_id + ".jsonl")


def _launching_exchange(
    source: str, transcript: Transcript, source_format: str | None
) -> str | None:
    """The chunk id (`<session slug>-e003`) of the parent's exchange that launched
    this subagent, read from the parent session file beside it; None when that
    file is not there or does not name the agent."""
    export = transcript.export
    assert export is not None and export.agent_id is not None  # a subagent's own file
    parent_path = parent_session_path(source, export.session_id)
    if parent_path is None or not parent_path.is_file():
        return None
    try:
        parent = read_transcript(
            read_input(parent_path, what="parent session file"),
            source_format,
            name=str(parent_path),
        )
    except LedgerError as exc:
        raise InputError(
            f"{source}: its parent session {parent_path} cannot be read ({exc}); "
            "fix it, or move the subagent's file out of its session's folder"
        ) from None
    if parent.export is None or parent.export.session_id != export.session_id:
        return None
    exchange_id = parent.export.launches.get(export.agent_id)
    if exchange_id is None:
        return None
    return f"{session_slug(parent.export.session_id, parent.sha256)}-{exchange_id}"


def default_id_prefix(source: str, annotated: Annotated | None = None) -> str:
    """`chat-` for chat.jsonl: chunk ids must be unique across the ledger.

    An export (a `source_format`) is named by its session instead (`<session slug>-`), so
    two sessions never share ids whatever their files are called."""
    slug = None if annotated is None else annotated.session_slug
    if slug is not None:
        return slug + "-"
    # The whole name but its extension: `My_Session.2026-01-21.jsonl` and
    # `...-22.jsonl` are two transcripts, not two versions of one.
    stem = os.path.splitext(os.path.basename(source))[0].lower()
    stem = _NOT_ID.sub("-", stem).strip("-")[:40].strip("-")
    return (stem or "transcript") + "-"


def check_id_prefix(prefix: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,48}", prefix):
        raise InputError(
            f"id_prefix: {prefix!r} must be lower-case letters, digits and '-', "
            "starting with a letter or digit",
            param="id_prefix",
        )
    return prefix


def exchange_records(annotated: Annotated, id_prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, chunk record) for every exchange, in source order."""
    t = annotated.transcript
    version = annotated.source_version
    dates = annotated.dates
    link = _agent_link(annotated)
    for ex in t.exchanges:
        where = f"{t.name}: {ex.id} (lines {ex.first_line}-{ex.last_line})"
        rec = exchange_record(t, ex, annotated.priorities[ex.id], id_prefix=id_prefix)
        _check_size(where, rec)
        rec["source_version"] = version
        if dates is not None:
            rec["effective_from"] = dates[0]  # the session's own first day, not 1970
        if link:
            rec["source_uri"] = f"transcript://sha256/{t.sha256}?{link}#{ex.id}"
        yield where, rec


def _check_size(where: str, rec: dict[str, Any]) -> None:
    """An exchange is stored whole: one that the ledger cannot hold as one chunk
    (more than 16 Mi characters, or a framed cost above the largest count a
    chunk may have) is refused by name, in bytes, before anything is stored."""
    chars, cost = len(rec["content"]), rec["estimated_tokens"]
    if chars > LEDGER_MAX_CONTENT or cost > MAX_TOKENS:
        raise InputError(
            f"{where}: the exchange is {cost:,} bytes framed ({chars:,} characters); "
            f"the ledger stores an exchange whole, at most {MAX_TOKENS:,} bytes framed "
            f"and {LEDGER_MAX_CONTENT:,} characters (`ledger transcript export` has no such limit)"
        )


def _agent_link(annotated: Annotated) -> str:
    """The query of a subagent's exchange URIs: `agent=<id>`, and
    `&launched-by=<parent chunk id>` when the parent was found ("" for others)."""
    agent = annotated.agent_id
    if agent is None:
        return ""
    # The agent id as written, kept URI-safe (`session_slug` has the id-safe form).
    shown = re.sub(r"[^A-Za-z0-9._~-]", "-", agent)[:64]
    link = f"agent={shown}"
    if annotated.launched_by is not None:
        link += f"&launched-by={annotated.launched_by}"
    return link
