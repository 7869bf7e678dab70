"""LangChain: the ledger's current versions as `Document`s, and a retriever whose
results go through an audited pack.

    from langchain_core.vectorstores import InMemoryVectorStore
    from ledger.integrations.langchain import LedgerLoader, LedgerRetriever

    store = InMemoryVectorStore.from_documents(LedgerLoader(lg).load(), embeddings)
    retriever = LedgerRetriever(lg, store.as_retriever(k=8), subject="support-bot")
    docs = retriever.invoke("refund window for damaged items")   # the admitted chunks

Install with `pip install 'context-ledger[langchain]'` (langchain-core).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable

from ledger.api import Ledger
from ledger.core.results import Pack
from ledger.integrations._common import admitted_chunks, version_metadata
from ledger.integrations._pydantic import PackFields


class LedgerLoader(BaseLoader):
    """One `Document` per chunk id: the version a build as of `as_of` (default
    today) could give at the head (valid on that day, not retracted, the newest
    `effective_from`; an erased body is left out), in every section, without a
    permission filter (the pack's gates decide later). `metadata`: `ledger_id`,
    `source_version`, `record_digest`, `section`, `title`, `path` (the last two
    None for records without them). Index these in your vector store."""

    def __init__(self, lg: Ledger, as_of: str | None = None) -> None:
        self.lg = lg
        self.as_of = as_of

    def lazy_load(self) -> Iterator[Document]:
        for v in self.lg.current_versions(self.as_of):
            yield Document(
                page_content=v["content"],
                id=v["record_digest"],
                metadata=version_metadata(v),
            )


def pack_documents(lg: Ledger, pack: Pack) -> list[Document]:
    """The admitted chunks of a pack in output order, with their bodies."""
    return [
        Document(page_content=body, id=meta["record_digest"], metadata=meta)
        for body, meta in admitted_chunks(lg, pack)
    ]


class LedgerRetriever(BaseRetriever, PackFields):
    """A retriever that runs `base`, takes the `ledger_id`s of its documents (in
    rank order) as the evidence candidates of a recorded pack for `subject`, and
    returns the pack's admitted chunks (every section, in output order) with
    `pack` and `pack_digest` in their metadata. Each call records one pack, so
    `ledger why-evicted`, `diff`, `verify` and `replay` explain what the agent saw.

    When `base` finds nothing, no pack is recorded and the result is empty.
    """

    base: Runnable[str, list[Document]]

    def __init__(
        self,
        lg: Ledger,
        base: Runnable[str, list[Document]],
        subject: str = "default",
        budget: int | None = None,
        as_of: str | None = None,
        **kwargs: Any,
    ) -> None:
        # Pydantic fields, passed by name (mypy sees BaseRetriever's own signature only).
        fields: dict[str, Any] = {
            "lg": lg, "base": base, "subject": subject, "budget": budget, "as_of": as_of
        }  # fmt: skip
        super().__init__(**fields, **kwargs)

    def _build(self, docs: Sequence[Document]) -> list[Document]:
        pack = self.build_from([d.metadata for d in docs], "base retriever result")
        return [] if pack is None else pack_documents(self.lg, pack)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        docs = self.base.invoke(query, config={"callbacks": run_manager.get_child()})
        return self._build(docs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        docs = await self.base.ainvoke(query, config={"callbacks": run_manager.get_child()})
        # The build is a database transaction: off the event loop.
        return await asyncio.to_thread(self._build, docs)
