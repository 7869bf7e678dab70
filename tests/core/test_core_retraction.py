"""Gate 5 in the pure core: `retracted {from, entry}` between expired and superseded."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ledger.core.hints import admission_hint
from ledger.core.select import Candidate, Request, select


def cand(cid: str, version: str, effective_from: str, rank: int, **kw: Any) -> Candidate:
    fields: dict[str, Any] = {
        "id": cid,
        "source_version": version,
        "section": "evidence",
        "effective_from": effective_from,
        "expires_on": None,
        "required_permission": "read",
        "trust": "approved-source",
        "dedupe_key": cid,
        "tokens": 10,
        "priority": 50,
        "required": False,
        "record_digest": f"{cid}-{version}".ljust(64, "0"),
        "content_digest": "c" * 64,
        "ingest_rank": rank,
    }
    fields.update(kw)
    return Candidate(**fields)


def request(as_of: str, retractions: dict[str, tuple[tuple[int, str], ...]]) -> Request:
    return Request(
        as_of,
        frozenset({"read"}),
        frozenset({"approved-source"}),
        1000,
        retractions=MappingProxyType(retractions),
    )


def decided(ctx: Any) -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {(c.id, c.source_version): "admitted" for c in ctx.items}
    for e in ctx.evicted:
        out[(e.candidate.id, e.candidate.source_version)] = (e.reason, dict(e.detail))
    return out


def test_a_retraction_after_the_version_and_on_or_before_as_of_evicts_it() -> None:
    old = cand("faq", "v1", "2026-01-01", rank=1)
    other = cand("guide", "v1", "2026-01-01", rank=1)
    marks = {"faq": ((5, "2026-07-01"),)}
    got = decided(select([old, other], request("2026-07-01", marks)))
    assert got[("faq", "v1")] == ("retracted", {"from": "2026-07-01", "entry": 5})
    assert got[("guide", "v1")] == "admitted"
    # The day before the retraction's date: still admitted.
    assert decided(select([old, other], request("2026-06-30", marks)))[("faq", "v1")] == "admitted"


def test_a_version_ingested_after_the_retraction_is_not_affected() -> None:
    old = cand("faq", "v1", "2026-01-01", rank=1)
    new = cand("faq", "v2", "2026-03-01", rank=7)
    marks = {"faq": ((5, "2026-02-01"),)}
    got = decided(select([old, new], request("2026-04-01", marks)))
    assert got[("faq", "v1")] == ("retracted", {"from": "2026-02-01", "entry": 5})
    assert got[("faq", "v2")] == "admitted"
    # Before v2 takes effect, v1 is retracted and v2 not yet effective: nothing admitted.
    early = decided(select([old, new], request("2026-02-15", marks)))
    assert early[("faq", "v1")][0] == "retracted" and early[("faq", "v2")][0] == "not_yet_effective"


def test_gates_1_to_4_come_first_and_the_first_applicable_retraction_names_it() -> None:
    expired = cand("faq", "v1", "2026-01-01", rank=1, expires_on="2026-02-01")
    got = decided(select([expired], request("2026-07-01", {"faq": ((5, "2026-01-15"),)})))
    assert got[("faq", "v1")][0] == "expired"
    live = cand("faq", "v1", "2026-01-01", rank=1)
    marks = {"faq": ((9, "2026-05-01"), (5, "2026-06-01"), (3, "2026-01-01"))}
    # Every entry is after the version (rank 1); the lowest entry whose date has come names it.
    assert decided(select([live], request("2026-07-01", marks)))[("faq", "v1")] == (
        "retracted",
        {"from": "2026-01-01", "entry": 3},
    )
    # An entry not after the version (the version was ingested later) never applies.
    late = cand("faq", "v1", "2026-01-01", rank=9)
    assert decided(select([late], request("2026-07-01", marks)))[("faq", "v1")] == "admitted"


def test_a_retracted_required_chunk_is_an_ordinary_eviction() -> None:
    req = cand("policy", "v1", "2026-01-01", rank=1, required=True)
    ctx = select([req], request("2026-07-01", {"policy": ((4, "2026-06-01"),)}))
    assert decided(ctx)[("policy", "v1")] == ("retracted", {"from": "2026-06-01", "entry": 4})


def test_the_hint_of_a_retracted_version_is_to_reinstate_it() -> None:
    old = cand("faq", "v1", "2026-01-01", rank=1)
    hint = admission_hint(
        [old], request("2026-07-01", {"faq": ((5, "2026-06-01"),)}), old.record_digest
    )
    assert hint.to_json()["steps"] == [
        {
            "kind": "reinstate",
            "id": "faq",
            "from": "2026-07-01",
            "retracted": {"from": "2026-06-01", "entry": 5},
        }
    ]
    assert hint.admits is True  # re-run with a reinstatement after entry 5
    # Retracted from before the version took effect (no earlier date admits it):
    # a reinstatement still does.
    early = admission_hint(
        [old], request("2026-07-01", {"faq": ((5, "2026-01-01"),)}), old.record_digest
    )
    assert early.admits is True and early.steps[0]["kind"] == "reinstate"
