"""Queries that several commands share. SQLAlchemy Core, set-based."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from ledger.core.context import thaw
from ledger.core.select import Request, standing
from ledger.store.candidates import load_candidates
from ledger.store.chain import read_head
from ledger.store.inputs import DOCUMENTS, TRANSCRIPT_SCOPE, reinstatements_at, retractions_at
from ledger.store.packs import location_json
from ledger.store.schema import erasures, versions
from ledger.tokens import ESTIMATED


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


def list_versions(
    conn: Connection, chunk_id: str | None = None, as_of: str | None = None
) -> list[dict[str, Any]]:
    """Stored versions ordered by id, then ingest order; with `as_of`, each
    version's `state` on that date at the head (docs/reference/retention.md)."""
    cols = [c for c in versions.c if c.name != "content"]
    query = (
        select(*cols, erasures.c.entry_seq.label("erased_by"), erasures.c.reason)
        .select_from(versions.outerjoin(erasures, erasures.c.vid == versions.c.vid))
        .order_by(versions.c.chunk_id, versions.c.vid)
    )
    if chunk_id is not None:
        query = query.where(versions.c.chunk_id == chunk_id)
    rows = conn.execute(query).all()
    states: dict[int, tuple[str, dict[str, Any]]] = {}
    if as_of is not None:
        scopes = sorted({_scope_of(r) for r in rows})
        states = version_states(conn, as_of, scopes, chunk_id)
    out = []
    for r in rows:
        item = version_json(r)
        if r.erased_by is not None:  # the body is gone: which entry erased it, and why
            item["erased"] = {"entry": r.erased_by, "reason": r.reason}
        if as_of is not None:
            name, detail = (
                ("erased", {"entry": r.erased_by})
                if r.erased_by is not None
                else states.get(r.vid, ("unknown", {}))  # an altered scope column
            )
            item["state"], item["state_detail"] = name, detail
        out.append(item)
    return out


def _scope_of(row: Any) -> str:
    """The pack scope a version belongs to (`documents`, `transcript:<version>`)."""
    return DOCUMENTS if row.scope is None else f"{TRANSCRIPT_SCOPE}{row.source_version}"


def _anyone(conn: Connection, head: int, as_of: str, candidates: list[Any]) -> Request:
    """A request as of `as_of` at `head` that every permission and trust label
    passes: gates 3-6 alone decide (a pack's own gates 1-2 come later)."""
    return Request(
        as_of,
        granted=frozenset(c.required_permission for c in candidates),
        allowed_trust=frozenset(c.trust for c in candidates),
        budget=0,
        retractions=retractions_at(conn, head),
        reinstatements=reinstatements_at(conn, head),
    )


def version_states(
    conn: Connection, as_of: str, scopes: list[str], chunk_id: str | None = None
) -> dict[int, tuple[str, dict[str, Any]]]:
    """Per version id, its state as of `as_of` at the head: `current` (the one
    version of its id a build could give), or the first of gates 3-6 that keeps
    it out (`not_yet_effective`, `expired`, `retracted`, `superseded`) and that
    gate's detail."""
    head = read_head(conn).seq
    where = None if chunk_id is None else versions.c.chunk_id == chunk_id
    states: dict[int, tuple[str, dict[str, Any]]] = {}
    for scope in scopes:
        candidates, vid_of = load_candidates(conn, head, ESTIMATED, scope, where)
        live, out = standing(candidates, _anyone(conn, head, as_of, candidates))
        for c in live:
            states[vid_of[c.record_digest]] = ("current", {})
        for e in out:
            states[vid_of[e.candidate.record_digest]] = (e.reason, thaw(e.detail))
    return states


def current_versions(conn: Connection, as_of: str) -> list[dict[str, Any]]:
    """Per document chunk id, the version a build as of `as_of` at the head
    could give whatever its grants and policy: gates 3-6 (valid on `as_of`, not
    retracted at the head, the newest of its id), with its content; every
    section, no permission or trust filter (a pack's gates decide). Ordered by id.

    Transcript exchanges are left out: they are a conversation, not documents;
    so is an id whose current version's body was erased.
    """
    head = read_head(conn).seq
    candidates, vid_of = load_candidates(conn, head, ESTIMATED, DOCUMENTS)
    live, _out = standing(candidates, _anyone(conn, head, as_of, candidates))
    vids = sorted(vid_of[c.record_digest] for c in live)
    c = versions.c
    out: list[dict[str, Any]] = []
    for start in range(0, len(vids), 500):
        rows = conn.execute(select(versions).where(c.vid.in_(vids[start : start + 500])))
        for row in rows:
            if row.content is None:
                continue  # erased: no body to index (and an older version is superseded)
            item = version_json(row)
            m = row._mapping
            item["title"] = m.get("title")
            item["path"] = m.get("path")
            item["content"] = row.content
            out.append(item)
    out.sort(key=lambda item: item["id"])
    return out
