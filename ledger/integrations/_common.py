"""What the retrieval integrations share, free of any framework import."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from ledger.api import Ledger
from ledger.core.errors import InputError
from ledger.core.results import Pack

# The metadata key that names a document's chunk id (what LedgerLoader writes).
METADATA_ID = "ledger_id"


def ranked_ids(metadatas: Sequence[dict[str, Any]], what: str) -> list[str]:
    """The ledger ids of a retriever's results in rank order, each once (a chunk
    split into several documents keeps its best rank); a result without a
    `ledger_id` is refused, since the pack could not account for it."""
    ids: list[str] = []
    seen: set[str] = set()
    for i, meta in enumerate(metadatas):
        cid = meta.get(METADATA_ID)
        if not isinstance(cid, str):
            raise InputError(
                f"{what}[{i}]: no metadata['{METADATA_ID}']; index documents from "
                "LedgerLoader (or set the chunk id there) so the pack can account for them"
            )
        if cid not in seen:
            seen.add(cid)
            ids.append(cid)
    return ids


def version_metadata(item: dict[str, Any]) -> dict[str, Any]:
    """A chunk version's metadata for a framework document (title/path: None when
    the record has none)."""
    return {
        METADATA_ID: item["id"],
        "source_version": item["source_version"],
        "record_digest": item["record_digest"],
        "section": item["section"],
        "title": item.get("title"),
        "path": item.get("path"),
    }


def build_for(
    lg: Ledger, ids: Sequence[str], subject: str, budget: int | None, as_of: str | None
) -> Pack:
    """Record the pack of `subject` with `ids` as its ranked evidence, as of `as_of`
    (default today)."""
    day = as_of or datetime.date.today().isoformat()
    return lg.build(day, subject, budget, candidates=ids)


def admitted_chunks(lg: Ledger, pack: Pack) -> list[tuple[str, dict[str, Any]]]:
    """The admitted chunks of a pack in output order: (body, metadata with `pack`
    and `pack_digest`); a chunk whose body was erased has no body to give."""
    export = lg.export(pack.number, format="json", with_content=True).to_json()
    return [
        (
            item["content"],
            {**version_metadata(item), "pack": pack.number, "pack_digest": pack.digest},
        )
        for item in export["admitted"]
        if "erased" not in item
    ]
