"""LlamaIndex: a node postprocessor whose output is an audited pack.

    from ledger.integrations.llamaindex import LedgerNodePostprocessor

    engine = index.as_query_engine(
        node_postprocessors=[LedgerNodePostprocessor(lg, subject="support-bot")]
    )

The retrieved nodes' `metadata["ledger_id"]` (in rank order) become the
evidence candidates of a recorded pack; the postprocessor returns the pack's
admitted chunks (every section, in output order) as `TextNode`s, with `pack` and
`pack_digest` in their metadata. Install with `pip install
'context-ledger[llamaindex]'` (llama-index-core).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ledger.api import Ledger
from ledger.integrations._common import METADATA_ID, admitted_chunks
from ledger.integrations._pydantic import PackFields


class LedgerNodePostprocessor(BaseNodePostprocessor, PackFields):
    """Replace retrieved nodes by the admitted chunks of a pack built from them.

    Each call records one pack for `subject` (as of `as_of`, default today), so
    `ledger why-evicted`, `diff`, `verify` and `replay` explain what the model
    saw. A node keeps its retriever score when its chunk is admitted; admitted
    chunks of the other sections (policy, state, current input) have none.
    Nodes without `metadata["ledger_id"]` are refused; no nodes, no pack.
    """

    def __init__(
        self,
        lg: Ledger,
        subject: str = "default",
        budget: int | None = None,
        as_of: str | None = None,
        **kwargs: Any,
    ) -> None:
        # Pydantic fields, passed by name (mypy sees the base class's signature only).
        fields: dict[str, Any] = {"lg": lg, "subject": subject, "budget": budget, "as_of": as_of}
        super().__init__(**fields, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "LedgerNodePostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        pack = self.build_from([n.node.metadata for n in nodes], "nodes")
        if pack is None:
            return []
        scores: dict[str, float | None] = {}
        for n in nodes:
            scores.setdefault(n.node.metadata[METADATA_ID], n.score)
        return [
            NodeWithScore(
                node=TextNode(id_=meta["record_digest"], text=content, metadata=meta),
                score=scores.get(meta[METADATA_ID]),
            )
            for content, meta in admitted_chunks(self.lg, pack)
        ]
