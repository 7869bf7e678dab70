"""MCP replies bounded for a model's context (issue 39): lists inside an item cut
to 10 with a count, a reply under 16,000 characters unless the client asks for
more; through the official MCP client over stdio, on each backend."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

import ledger
from ledger.core.bounded import bound, size_of
from tests.conftest import chunk, ledger_json
from tests.integrations.test_mcp import session_run

AS_OF = "2026-07-21"


@pytest.fixture
def lg_empty(db_url: str) -> Iterator[ledger.Ledger]:
    with ledger.open(db_url) as opened:
        yield opened


def crowded(lg: ledger.Ledger) -> None:
    """One chunk displaced by 150 higher-priority ones, all matching "harbor"."""
    ev = {"section": "evidence", "required_permission": "public-read", "estimated_tokens": 10}
    records = [
        chunk(id=f"filler-{i:03d}", dedupe_key=f"filler-{i:03d}", priority=90,
              content=f"harbor pilot notice number {i}", **ev)
        for i in range(150)
    ]  # fmt: skip
    records.append(chunk(id="late-notice", dedupe_key="late-notice", priority=10,
                         content="harbor closed for the storm", **ev))  # fmt: skip
    lg.ingest_records(records)
    lg.grant("default", "public-read")
    lg.set_policy(allow_trust=["approved-source"], budget=1500)
    lg.build(AS_OF)


def test_lists_inside_a_match_are_cut_to_ten_with_a_count(
    lg_empty: ledger.Ledger, db_url: str
) -> None:
    crowded(lg_empty)
    cli = ledger_json("why", "storm", db=db_url)
    steps = cli["matches"][0]["hint"]["steps"]
    assert len(steps[0]["displaced_by"]) > 10  # the CLI lists them all
    _, (result,) = asyncio.run(session_run(db_url, [("why", {"text": "storm"})]))
    step = result.structured_content["matches"][0]["hint"]["steps"][0]
    assert step["displaced_by"] == steps[0]["displaced_by"][:10]
    assert step["displaced_by_omitted"] == len(steps[0]["displaced_by"]) - 10
    assert result.structured_content["sentence"] == cli["sentence"]


def test_a_reply_stays_under_the_bound_unless_the_client_asks(
    lg_empty: ledger.Ledger, db_url: str
) -> None:
    crowded(lg_empty)
    cli = ledger_json("show", "1", db=db_url)
    assert size_of(cli) > 16_000
    calls = [("show_pack", {"pack": 1}), ("show_pack", {"pack": 1, "max_chars": 0}),
             ("show_pack", {"pack": 1, "max_chars": 40_000})]  # fmt: skip
    _, (small, whole, larger) = asyncio.run(session_run(db_url, calls))
    got = small.structured_content
    assert size_of(got) <= 16_000 and len(small.content[0].text) <= 16_000
    kept = len(got["admitted"]) + len(got["evicted"])
    omitted = got["truncated"]["omitted"]
    assert kept + sum(omitted.values()) == len(cli["admitted"]) + len(cli["evicted"])
    assert got["admitted"] == cli["admitted"][: len(got["admitted"])]  # first items kept
    assert whole.structured_content == bound(cli, 0) and "truncated" not in whole.structured_content
    assert 16_000 < size_of(larger.structured_content) <= 40_000


def test_a_bad_bound_is_a_tool_error(lg_empty: ledger.Ledger, db_url: str) -> None:
    crowded(lg_empty)
    calls = [("search", {"text": "harbor", "max_chars": -1}),
             ("search", {"text": "harbor", "max_chars": True})]  # fmt: skip
    _, results = asyncio.run(session_run(db_url, calls))
    for result in results:
        assert result.is_error
        assert "max_chars" in result.content[0].text


def test_bound_keeps_small_replies_and_cuts_nested_lists() -> None:
    small = {"text": "x", "matches": [{"id": "a", "hint": {"steps": [{"kind": "grant"}]}}]}
    assert bound(small) == small
    big: dict[str, Any] = {"items": [{"id": i, "refs": list(range(25))} for i in range(2000)]}
    cut = bound(big, 5_000)
    assert size_of(cut) <= 5_000
    assert cut["items"][0] == {"id": 0, "refs": list(range(10)), "refs_omitted": 15}
    assert cut["truncated"]["omitted"]["items"] == 2000 - len(cut["items"])
    assert json.loads(json.dumps(cut)) == cut


def test_arguments_are_read_as_the_command_line_reads_them(
    lg_empty: ledger.Ledger, db_url: str
) -> None:
    """Issue 38, item 18: `true` and `1.0` were taken as pack 1."""
    crowded(lg_empty)
    calls = [("show_pack", {"pack": True}), ("show_pack", {"pack": 1.0}),
             ("why", {"text": "storm", "limit": True}), ("show_pack", {"pack": 1}),
             ("show_pack", {"pack": "1"})]  # fmt: skip
    _, results = asyncio.run(session_run(db_url, calls))
    assert [r.is_error for r in results] == [True, True, True, False, False]
