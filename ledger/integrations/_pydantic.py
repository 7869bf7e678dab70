"""The pydantic part the LangChain and LlamaIndex integrations share (both
frameworks are pydantic models): the fields a pack is built with, and the build
from a retriever's ranked results. Imported only by those two integrations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from ledger.core.results import Pack
from ledger.integrations._common import build_for, ranked_ids


class PackFields(BaseModel):
    """`lg` (a `Ledger`), and the `subject`, `budget` and `as_of` of every pack
    built from a call's results."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    lg: Any
    subject: str = "default"
    budget: int | None = None
    as_of: str | None = None

    def build_from(self, metadatas: Sequence[dict[str, Any]], what: str) -> Pack | None:
        """Record the pack whose evidence candidates are the ranked results' ledger
        ids (see `ranked_ids`); None, and no pack, when there are no results."""
        ids = ranked_ids(metadatas, what)
        if not ids:
            return None
        return build_for(self.lg, ids, self.subject, self.budget, self.as_of)
