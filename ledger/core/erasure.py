"""Erasure, pure: which versions have ended, and what an erase entry covers.

A body is erased, the record stays: its digests, metadata and every decision
about it. The erase entry's payload digest covers, per erased version, its record
digest and its *metadata digest* (the record with the content replaced by its
content digest), and the reason. `verify` recomputes the metadata digest from the
stored fields, so the metadata of an erased version stays tamper-evident even
though its record digest can no longer be recomputed without the body.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.core.canonical import digest_value
from ledger.core.records import RecordError, refuse_controls

MAX_REASON = 500
"""Longest erase reason, in characters (as a retraction's)."""


def check_reason(reason: str | None, why: str = "say why the bodies are erased") -> str:
    """The reason an erase, a retraction or a reinstatement records: required,
    stripped, non-blank, at most 500 characters, and no control character (it is
    printed on terminals and in reports). ValueError names what is wrong; `why`
    tells a person what the reason is for."""
    if reason is None:
        raise ValueError(f"reason: required; {why}")
    text = reason.strip()
    if not text:
        raise ValueError(f"reason: must not be blank; {why}")
    if len(text) > MAX_REASON:
        raise ValueError(f"reason: at most {MAX_REASON} characters")
    try:
        refuse_controls(text, "reason")
    except RecordError as exc:
        raise ValueError(f"reason: {exc.rule}; write it on one line of plain text") from None
    return text


def metadata_digest(record: Mapping[str, Any], content_digest: str) -> str:
    """The digest of a record without its body: every field but `content`, plus
    `content_digest`. What an erase entry keeps checkable of a version."""
    data = {k: v for k, v in record.items() if k != "content"}
    data["content_digest"] = content_digest
    return digest_value(data)


def erase_payload(items: Iterable[tuple[str, str]], reason: str) -> str:
    """The payload digest of an erase entry: the sorted (record digest, metadata
    digest) pairs of the versions it erased, and the reason."""
    erased = [{"record_digest": r, "metadata_digest": m} for r, m in sorted(items)]
    return digest_value({"kind": "erase", "erased": erased, "reason": reason})


@dataclass(frozen=True, slots=True)
class VersionSpan:
    """What decides when a version is valid: its id, validity dates and ingest."""

    vid: int
    chunk_id: str
    effective_from: str
    expires_on: str | None
    batch_seq: int
    record_digest: str

    def rank(self) -> tuple[str, int, str]:
        """Gate 6's order: the later effective_from wins; ties: later ingest, digest."""
        return (self.effective_from, self.batch_seq, self.record_digest)


_FOREVER = "9999-12-31"


def _live_until(v: VersionSpan, retracted: Sequence[tuple[int, str]]) -> str:
    """The first day this version is no longer valid by its own dates (gate 4) or a
    retraction written after it (gate 5): a date, or far in the future."""
    end = v.expires_on or _FOREVER
    for entry, day in retracted:
        if entry > v.batch_seq and day < end:
            end = day
    return end


def ended_versions(
    spans: Iterable[VersionSpan],
    retractions: Mapping[str, Sequence[tuple[int, str]]],
    date: str,
) -> list[int]:
    """The versions that have ended for good by `date`: on `date` and on every day
    after it, gates 4-6 evict them whatever the subject's permissions or the
    policy's trust: expired, retracted, or superseded by later versions of the
    same id that stay valid from `date` on.

    A version that a later one supersedes only for a while (until that one
    expires) has not ended: a build after that date admits it again, so its body
    is kept. Versions not yet effective on `date` have not ended either.
    """
    by_id: dict[str, list[VersionSpan]] = {}
    for s in spans:
        by_id.setdefault(s.chunk_id, []).append(s)
    out: list[int] = []
    for cid, group in by_id.items():
        marks = retractions.get(cid, ())
        live = [(s, _live_until(s, marks)) for s in group]
        for s, end in live:
            if s.effective_from > date:
                continue  # not yet effective: it has not started, let alone ended
            if end <= date:
                out.append(s.vid)
                continue
            # Superseded from `date` until its own end by later versions: their
            # valid spans must cover [date, end) without a gap.
            covers = sorted(
                (w.effective_from, w_end)
                for w, w_end in live
                if w.rank() > s.rank() and w.effective_from < w_end
            )
            reach = date
            for start, stop in covers:
                if start > reach:
                    break
                if stop > reach:
                    reach = stop
                if reach >= end:
                    break
            if reach >= end:
                out.append(s.vid)
    return sorted(out)
