"""A small support-bot ledger for the integration tests, on each backend."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import ledger
from tests.conftest import chunk

AS_OF = "2026-07-21"
BUDGET = 200


def corpus() -> list[dict[str, Any]]:
    ev: dict[str, Any] = {"section": "evidence", "required_permission": "public-read"}
    return [
        chunk(id="house-rules", section="policy", dedupe_key="house-rules", required=True,
              priority=90, estimated_tokens=20, content="Answer politely; never promise cash."),
        chunk(id="refund-window", dedupe_key="refund-window", source_version="v1",
              content="Refunds are accepted within 14 days.", **ev),
        chunk(id="refund-window", dedupe_key="refund-window", source_version="v2",
              effective_from="2026-06-01", content="Refunds are accepted within 30 days.", **ev),
        chunk(id="damaged-items", dedupe_key="damaged-items", estimated_tokens=30,
              content="Damaged items are replaced free of charge.", **ev),
        chunk(id="legal-note", dedupe_key="legal-note", required_permission="legal-read",
              section="evidence", content="Statutory refund law, internal reading."),
        chunk(id="shipping", dedupe_key="shipping", estimated_tokens=400, priority=40,
              content="Shipping takes three to five days.", **ev),
        chunk(id="tax-forms", dedupe_key="tax-forms", priority=10,
              content="Quarterly tax forms are due in April.", **ev),
    ]  # fmt: skip


EVIDENCE_IDS = sorted({c["id"] for c in corpus() if c["section"] == "evidence"})


@pytest.fixture
def lg(db_url: str) -> Iterator[ledger.Ledger]:
    """An open Ledger over the corpus, `default` granted public-read, budget 200."""
    with ledger.open(db_url) as opened:
        opened.ingest_records(corpus())
        opened.grant("default", "public-read")
        opened.set_policy(allow_trust=["approved-source"], budget=BUDGET)
        yield opened
