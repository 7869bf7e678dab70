"""Queries that several commands share. SQLAlchemy Core, set-based."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from ledger.store.packs import location_json
from ledger.store.schema import erasures, versions


def version_json(row: Any) -> dict[str, Any]:
    """A stored version's metadata and digests as JSON (no content)."""
    return {
        "id": row.chunk_id,
        "source_version": row.source_version,
        "section": row.section,
        "source_uri": row.source_uri,
        "effective_from": row.effective_from,
        "expires_on": row.expires_on,
        "required_permission": row.required_permission,
        "trust": row.trust,
        "dedupe_key": row.dedupe_key,
        "estimated_tokens": row.estimated_tokens,
        "priority": row.priority,
        "required": bool(row.required),
        "record_digest": row.record_digest,
        "content_digest": row.content_digest,
        "batch": row.batch_seq,
        **location_json(row),
    }


def list_versions(conn: Connection, chunk_id: str | None = None) -> list[dict[str, Any]]:
    """Stored versions ordered by id, then ingest order."""
    cols = [c for c in versions.c if c.name != "content"]
    query = (
        select(*cols, erasures.c.entry_seq.label("erased_by"), erasures.c.reason)
        .select_from(versions.outerjoin(erasures, erasures.c.vid == versions.c.vid))
        .order_by(versions.c.chunk_id, versions.c.vid)
    )
    if chunk_id is not None:
        query = query.where(versions.c.chunk_id == chunk_id)
    out = []
    for r in conn.execute(query):
        item = version_json(r)
        if r.erased_by is not None:  # the body is gone: which entry erased it, and why
            item["erased"] = {"entry": r.erased_by, "reason": r.reason}
        out.append(item)
    return out


def current_versions(conn: Connection, as_of: str) -> list[dict[str, Any]]:
    """Per document chunk id, the version valid on `as_of` with the newest
    `effective_from` (ties: the later ingest), with its content; every section,
    no permission or trust filter (a pack's gates decide). Ordered by id.

    Transcript exchanges are left out: they are a conversation, not documents;
    so is an id whose current version's body was erased.
    """
    c = versions.c
    query = (
        select(versions)
        .where(c.effective_from <= as_of)
        .where((c.expires_on.is_(None)) | (c.expires_on > as_of))
        .where(c.scope.is_(None))
        .order_by(c.chunk_id, c.effective_from.desc(), c.vid.desc())
    )
    out: list[dict[str, Any]] = []
    last: str | None = None
    for row in conn.execute(query):
        if row.chunk_id == last:
            continue
        last = row.chunk_id
        if row.content is None:
            continue  # erased: no body to index (and an older version is superseded)
        item = version_json(row)
        m = row._mapping
        item["title"] = m.get("title")
        item["path"] = m.get("path")
        item["content"] = row.content
        out.append(item)
    return out
