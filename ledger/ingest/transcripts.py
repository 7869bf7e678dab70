"""Transcripts through the ledger: exchanges as chunk versions, continuations as packs.

With `--from claude-code|codex` the source is a real export (`ledger.core.exports`):
chunk ids are `<session slug>-e001`, ..., every exchange is effective from the
session's first day, and the pack is as of its last day.

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
from typing import Any

from ledger.core.canonical import digest_value
from ledger.core.errors import InputError
from ledger.core.exports import read_transcript, session_slug, transcript_date
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
    """A parsed transcript with its (checked) priorities."""

    transcript: Transcript
    priorities: dict[str, str]

    @property
    def source_version(self) -> str:
        """The version every exchange of this annotation is stored under."""
        return f"{self.transcript.sha256}.p{digest_value(self.priorities)[:12]}"

    def header_bytes(self) -> int:
        """The fixed framing of continuation.md that the byte budget also pays for."""
        return len(continuation_header(self.transcript.sha256))

    @property
    def session_slug(self) -> str | None:
        """The id-safe name of the export's session (None for a strict transcript)."""
        t = self.transcript
        return None if t.export is None else session_slug(t.export.session_id, t.sha256)

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
    return Annotated(transcript, dict(prio))


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
    for ex in t.exchanges:
        rec = exchange_record(t, ex, annotated.priorities[ex.id], id_prefix=id_prefix)
        rec["source_version"] = version
        if dates is not None:
            rec["effective_from"] = dates[0]  # the session's own first day, not 1970
        yield f"{t.name}: {ex.id} (lines {ex.first_line}-{ex.last_line})", rec
