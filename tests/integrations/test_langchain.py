"""LangChain: LedgerLoader into a real InMemoryVectorStore (langchain-core's
deterministic embedding), LedgerRetriever around its retriever, sync and async;
the packs it records are ordinary packs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

import ledger
from ledger.integrations.langchain import LedgerLoader, LedgerRetriever
from tests.integrations.conftest import AS_OF, EVIDENCE_IDS, corpus

META = {"ledger_id", "source_version", "record_digest", "section", "title", "path"}


def vector_store(lg: ledger.Ledger, as_of: str = AS_OF) -> InMemoryVectorStore:
    docs = LedgerLoader(lg, as_of=as_of).load()
    return InMemoryVectorStore.from_documents(docs, DeterministicFakeEmbedding(size=64))


def test_the_loader_yields_the_current_version_of_every_chunk(lg: ledger.Ledger) -> None:
    docs = LedgerLoader(lg, as_of=AS_OF).load()
    by_id = {d.metadata["ledger_id"]: d for d in docs}
    assert sorted(by_id) == sorted({c["id"] for c in corpus()})  # every section, no filter
    assert by_id["refund-window"].page_content == "Refunds are accepted within 30 days."
    assert by_id["refund-window"].metadata["source_version"] == "v2"
    stored = {(v["id"], v["source_version"]): v for v in lg.chunks().to_json()["chunks"]}
    for d in docs:
        assert set(d.metadata) == META
        assert d.metadata["title"] is None and d.metadata["path"] is None  # plain records
        v = stored[(d.metadata["ledger_id"], d.metadata["source_version"])]
        assert d.metadata["record_digest"] == v["record_digest"]
        assert d.metadata["section"] == v["section"]


def test_the_loader_follows_the_as_of_date(lg: ledger.Ledger) -> None:
    before = {d.metadata["ledger_id"]: d for d in LedgerLoader(lg, as_of="2026-03-01").lazy_load()}
    assert before["refund-window"].metadata["source_version"] == "v1"
    assert before["refund-window"].page_content == "Refunds are accepted within 14 days."
    assert LedgerLoader(lg, as_of="2025-12-31").load() == []  # nothing effective yet


def test_the_retriever_packs_what_the_base_retriever_found(lg: ledger.Ledger) -> None:
    base = vector_store(lg).as_retriever(search_kwargs={"k": 10})
    found = [d.metadata["ledger_id"] for d in base.invoke("refund for a damaged parcel")]
    retriever = LedgerRetriever(lg, base, as_of=AS_OF)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("refund for a damaged parcel")

    pack = lg.show(1).to_json()
    ranked = [r["id"] for r in pack["retrieval"]["ranked"]]
    assert ranked == found  # the base's rank order is the pack's
    # What comes back is exactly what the pack admitted, in its output order.
    assert [d.metadata["ledger_id"] for d in docs] == [a["id"] for a in pack["admitted"]]
    assert [d.metadata["record_digest"] for d in docs] == [
        a["record_digest"] for a in pack["admitted"]
    ]
    for d in docs:
        assert d.metadata["pack"] == 1 and d.metadata["pack_digest"] == pack["pack_digest"]
        assert set(d.metadata) == META | {"pack", "pack_digest"}
    bodies = {c["content"] for c in corpus()}
    assert all(d.page_content in bodies for d in docs)
    # The gates ran on the retrieved ids: every evidence id was found (k=10).
    reasons = {(e["id"], e["source_version"]): e["reason"] for e in pack["evicted"]}
    assert reasons == {
        ("legal-note", "1"): "permission_denied",
        ("refund-window", "v1"): "superseded",
        ("shipping", "1"): "budget",
    }
    assert docs[0].metadata["ledger_id"] == "house-rules"  # policy comes first, not retrieved


def test_only_the_retrieved_ids_are_evidence_candidates(lg: ledger.Ledger) -> None:
    base = vector_store(lg).as_retriever(search_kwargs={"k": 2})
    found = [d.metadata["ledger_id"] for d in base.invoke("tax")]
    LedgerRetriever(lg, base, as_of=AS_OF).invoke("tax")
    pack = lg.show(1).to_json()
    evidence = {a["id"] for a in pack["admitted"] if a["section"] == "evidence"}
    evidence |= {e["id"] for e in pack["evicted"]}
    assert evidence <= set(found) and len(found) == 2
    missing = sorted(set(EVIDENCE_IDS) - set(found))
    why = lg.why_evicted(missing[0]).to_json()
    assert all(d["pack"] != 1 for v in why["versions"] for d in v["decisions"])


def test_the_async_path_records_the_same_pack(lg: ledger.Ledger) -> None:
    base = vector_store(lg).as_retriever(search_kwargs={"k": 10})
    retriever = LedgerRetriever(lg, base, subject="default", budget=150, as_of=AS_OF)
    sync_docs = retriever.invoke("refund")
    async_docs = asyncio.run(retriever.ainvoke("refund"))
    one, two = lg.show(1).to_json(), lg.show(2).to_json()
    assert one["pack_digest"] == two["pack_digest"]  # same decision, so the same digest
    assert [d.page_content for d in sync_docs] == [d.page_content for d in async_docs]
    assert [d.metadata["pack"] for d in async_docs] == [2] * len(async_docs)
    assert two["budget"] == 150


def test_its_packs_are_ordinary_packs(lg: ledger.Ledger) -> None:
    base = vector_store(lg).as_retriever(search_kwargs={"k": 10})
    LedgerRetriever(lg, base, as_of=AS_OF).invoke("refund")
    LedgerRetriever(lg, base, budget=40, as_of=AS_OF).invoke("refund")
    why = lg.why_evicted("shipping").to_json()
    assert [(d["pack"], d["reason"]) for d in why["versions"][0]["decisions"]] == [
        (2, "budget"),
        (1, "budget"),
    ]
    diff = lg.diff(1, 2).to_json()
    left = {c["id"]: c for c in diff["changes"]}
    assert left["damaged-items"]["to"]["reason"] == "budget"
    assert lg.verify().to_json()["ok"] is True
    for n in (1, 2):
        assert lg.replay(n).to_json()["identical"] is True


def test_a_document_without_a_ledger_id_is_refused(lg: ledger.Ledger) -> None:
    foreign = InMemoryVectorStore.from_documents(
        [Document(page_content="not from the ledger", metadata={"source": "web"})],
        DeterministicFakeEmbedding(size=8),
    )
    with pytest.raises(ledger.InputError, match="ledger_id"):
        LedgerRetriever(lg, foreign.as_retriever(), as_of=AS_OF).invoke("anything")
    assert len(lg.packs().packs) == 0


def test_an_id_the_ledger_does_not_know_refuses_the_build(lg: ledger.Ledger) -> None:
    stale = InMemoryVectorStore.from_documents(
        [Document(page_content="deleted", metadata={"ledger_id": "gone-chunk"})],
        DeterministicFakeEmbedding(size=8),
    )
    with pytest.raises(ledger.InputError, match="unknown chunk id 'gone-chunk'"):
        LedgerRetriever(lg, stale.as_retriever(), as_of=AS_OF).invoke("anything")
    assert len(lg.packs().packs) == 0


def test_nothing_found_records_no_pack(lg: ledger.Ledger) -> None:
    empty = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    assert LedgerRetriever(lg, empty.as_retriever(), as_of=AS_OF).invoke("x") == []
    assert len(lg.packs().packs) == 0


def test_split_documents_count_once_at_their_best_rank(lg: ledger.Ledger) -> None:
    class Fixed(BaseRetriever):
        docs: list[Any]

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return self.docs

    parts = [
        Document(page_content="a", metadata={"ledger_id": "damaged-items"}),
        Document(page_content="b", metadata={"ledger_id": "tax-forms"}),
        Document(page_content="c", metadata={"ledger_id": "damaged-items"}),
    ]
    LedgerRetriever(lg, Fixed(docs=parts), as_of=AS_OF).invoke("q")
    ranked = lg.show(1).to_json()["retrieval"]["ranked"]
    assert [(r["id"], r["rank"]) for r in ranked] == [("damaged-items", 1), ("tax-forms", 2)]


def test_the_loader_leaves_out_retracted_chunks_and_erased_bodies(lg: ledger.Ledger) -> None:
    """A vector store built from the loader must not keep what was removed:
    a retracted id is gone from the retraction's date on (and back once
    reinstated), an erased body is never loaded."""
    lg.retract(["tax-forms"], from_date="2026-06-01", reason="removed from the docs")
    ids = {d.metadata["ledger_id"] for d in LedgerLoader(lg, as_of=AS_OF).load()}
    assert "tax-forms" not in ids and "shipping" in ids
    before = {d.metadata["ledger_id"] for d in LedgerLoader(lg, as_of="2026-05-01").load()}
    assert "tax-forms" in before  # the retraction holds from its date on
    lg.reinstate(["tax-forms"], from_date="2026-06-01")
    assert "tax-forms" in {d.metadata["ledger_id"] for d in LedgerLoader(lg, as_of=AS_OF).load()}
    lg.erase(["shipping"], reason="a test erasure")
    assert "shipping" not in {d.metadata["ledger_id"] for d in LedgerLoader(lg, as_of=AS_OF).load()}
