"""LlamaIndex: LedgerNodePostprocessor on real TextNodes and NodeWithScore; the
packs it records are ordinary packs."""

from __future__ import annotations

import pytest
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

import ledger
from ledger.integrations.llamaindex import LedgerNodePostprocessor
from tests.integrations.conftest import AS_OF, corpus


def nodes(*ranked: tuple[str, float]) -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(text=f"indexed copy of {cid}", metadata={"ledger_id": cid}),
                      score=score)
        for cid, score in ranked
    ]  # fmt: skip


def test_retrieved_nodes_become_the_packs_admitted_chunks(lg: ledger.Ledger) -> None:
    pp = LedgerNodePostprocessor(lg, subject="default", as_of=AS_OF)
    assert isinstance(pp, BaseNodePostprocessor)
    got = pp.postprocess_nodes(
        nodes(
            ("shipping", 0.9), ("refund-window", 0.8), ("legal-note", 0.7), ("damaged-items", 0.2)
        ),
        QueryBundle("refund for damaged items"),
    )
    pack = lg.show(1).to_json()
    assert [r["id"] for r in pack["retrieval"]["ranked"]] == [
        "shipping", "refund-window", "legal-note", "damaged-items"
    ]  # fmt: skip
    assert [n.node.metadata["ledger_id"] for n in got] == [a["id"] for a in pack["admitted"]]
    # Output order: section, then the retriever's rank (the best match first).
    assert [n.node.metadata["ledger_id"] for n in got] == [
        "house-rules", "refund-window", "damaged-items"
    ]  # fmt: skip
    bodies = {(c["id"], c["source_version"]): c["content"] for c in corpus()}
    for n in got:
        meta = n.node.metadata
        # The ledger's body of the admitted version, not the retriever's copy.
        assert n.node.get_content() == bodies[(meta["ledger_id"], meta["source_version"])]
        assert meta["pack"] == 1 and meta["pack_digest"] == pack["pack_digest"]
        assert n.node.node_id == meta["record_digest"]
    scores = {n.node.metadata["ledger_id"]: n.score for n in got}
    assert scores == {"house-rules": None, "damaged-items": 0.2, "refund-window": 0.8}
    reasons = {e["id"]: e["reason"] for e in pack["evicted"] if e["source_version"] != "v1"}
    assert reasons == {"shipping": "budget", "legal-note": "permission_denied"}


def test_the_budget_and_subject_are_the_packs(lg: ledger.Ledger) -> None:
    lg.grant("auditor", "public-read", "legal-read")
    pp = LedgerNodePostprocessor(lg, subject="auditor", budget=45, as_of=AS_OF)
    got = pp.postprocess_nodes(nodes(("legal-note", 1.0), ("damaged-items", 0.5)))
    pack = lg.show(1).to_json()
    assert (pack["subject"], pack["budget"]) == ("auditor", 45)
    assert [n.node.metadata["ledger_id"] for n in got] == ["house-rules", "legal-note"]
    assert {e["id"]: e["reason"] for e in pack["evicted"]} == {"damaged-items": "budget"}


def test_its_packs_are_ordinary_packs(lg: ledger.Ledger) -> None:
    LedgerNodePostprocessor(lg, as_of=AS_OF).postprocess_nodes(nodes(("tax-forms", 1.0)))
    LedgerNodePostprocessor(lg, as_of=AS_OF).postprocess_nodes(
        nodes(("tax-forms", 1.0), ("damaged-items", 0.9))
    )
    diff = lg.diff(1, 2).to_json()
    assert [(c["id"], c["from"]["status"], c["to"]["status"]) for c in diff["changes"]] == [
        ("damaged-items", "absent", "admitted")
    ]
    why = lg.why_evicted("tax-forms").to_json()
    assert [d["admitted"] for d in why["versions"][0]["decisions"]] == [True, True]
    assert lg.verify().to_json()["ok"] is True
    assert all(lg.replay(n).to_json()["identical"] for n in (1, 2))


def test_nodes_without_a_ledger_id_are_refused(lg: ledger.Ledger) -> None:
    foreign = [NodeWithScore(node=TextNode(text="web page", metadata={"url": "x"}), score=1.0)]
    with pytest.raises(ledger.InputError, match=r"nodes\[0\].*ledger_id"):
        LedgerNodePostprocessor(lg, as_of=AS_OF).postprocess_nodes(foreign)
    assert len(lg.packs().packs) == 0
    assert LedgerNodePostprocessor(lg, as_of=AS_OF).postprocess_nodes([]) == []
    assert len(lg.packs().packs) == 0


def test_behind_a_real_vector_index_retriever(lg: ledger.Ledger) -> None:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    indexed = [
        TextNode(text=v["content"], id_=v["record_digest"], metadata={"ledger_id": v["id"]})
        for v in lg.current_versions(AS_OF)
    ]
    index = VectorStoreIndex(indexed, embed_model=MockEmbedding(embed_dim=8))
    retrieved = index.as_retriever(similarity_top_k=10).retrieve("refund")
    assert len(retrieved) == len(indexed)
    got = LedgerNodePostprocessor(lg, as_of=AS_OF).postprocess_nodes(retrieved, query_str="refund")
    pack = lg.show(1).to_json()
    ranked = [r["id"] for r in pack["retrieval"]["ranked"]]
    assert ranked == [n.node.metadata["ledger_id"] for n in retrieved]
    assert [n.node.metadata["ledger_id"] for n in got] == [a["id"] for a in pack["admitted"]]
    assert {e["id"]: e["reason"] for e in pack["evicted"]} == {
        "legal-note": "permission_denied",
        "refund-window": "superseded",
        "shipping": "budget",
    }
