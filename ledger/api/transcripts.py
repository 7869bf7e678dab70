"""A transcript continuation recorded as a pack (`Ledger.build_transcript`): the
annotated transcript is read by `ledger.ingest.transcripts`, the pack built by
`ledger.store.build`."""

from __future__ import annotations

from typing import Any

from ledger.ingest.transcripts import load_annotated
from ledger.store.access import check_budget
from ledger.store.build import build_transcript_pack

# A transcript pack's subject when none is given: never a name read from the file
# (a session id `default` must not become the document packs' subject), but the
# namespace and the export's id-safe session name: `transcript:<session slug>`.
SUBJECT_PREFIX = "transcript:"


def transcript_subject(slug: str | None) -> str:
    """`transcript:<slug>` for an export, `transcript` for a strict transcript.

    >>> transcript_subject("default")
    'transcript:default'
    """
    return "transcript" if slug is None else SUBJECT_PREFIX + slug


def build_transcript(
    eng: Any,
    source: str,
    priorities: str | None,
    budget: int,
    subject: str | None = "transcript",
    ledger_at: int | None = None,
    source_format: str | None = None,
) -> int:
    """Record the continuation of `source` (with its priorities sidecar) as a pack.

    `source_format` names an export's tool (the pack is as of the session's last
    day); `subject` None is `transcript:<session slug>` for an export (a
    subagent's: `transcript:<session slug>-<agent id>`), `transcript` for a
    strict transcript: never a document pack's subject."""
    check_budget(budget)
    annotated = load_annotated(source, priorities, source_format)
    if subject is None:
        subject = transcript_subject(annotated.session_slug)
    dates = annotated.dates
    # The command that would ingest the transcript's exchanges, for the message
    # when they are not in the ledger.
    hint = (f" --from {source_format}" if source_format else "") + (
        f" --priorities {priorities}" if priorities else ""
    )
    return build_transcript_pack(
        eng,
        annotated.source_version,
        annotated.header_bytes(),
        budget,
        subject,
        ledger_at,
        source=source,
        ingest_hint=f"ledger ingest --format transcript {source}{hint}",
        as_of=dates[1] if dates else None,
    )
