"""`ledger check` on a generated corpus: one failing case for every reason a fact
can miss the agent, each failure naming that reason (the `why` answer's), and
every hint it marks as admitting, applied literally, admitting the chunk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ledger
from tests.conftest import chunk

AS_OF = "2026-07-21"
EV = {"section": "evidence", "estimated_tokens": 20}


def corpus() -> list[dict[str, Any]]:
    """One chunk per way of missing the agent, each with its own words."""
    return [
        chunk(id="open-note", dedupe_key="open-note", content="harbor opening hours", **EV),
        chunk(id="staff-note", dedupe_key="staff-note", required_permission="staff-read",
              content="quartermaster payroll codes", **EV),
        chunk(id="rumor-note", dedupe_key="rumor-note", trust="unverified",
              content="whispered lighthouse rumor", **EV),
        chunk(id="future-note", dedupe_key="future-note", effective_from="2026-09-01",
              content="autumn ferry timetable", **EV),
        chunk(id="old-note", dedupe_key="old-note", expires_on="2026-05-01",
              content="spring regatta schedule", **EV),
        chunk(id="gone-note", dedupe_key="gone-note", content="demolished pier access", **EV),
        chunk(id="moved-note", dedupe_key="moved-note", source_version="v1",
              content="anchorage fees were twelve crowns", **EV),
        chunk(id="moved-note", dedupe_key="moved-note", source_version="v2",
              effective_from="2026-06-01", content="anchorage fees are fifteen crowns", **EV),
        chunk(id="dup-low", dedupe_key="dup-group", priority=10,
              content="customs desk duplicate wording", **EV),
        chunk(id="dup-high", dedupe_key="dup-group", priority=90,
              content="customs desk primary wording", **EV),
        chunk(id="big-note", dedupe_key="big-note", priority=1, estimated_tokens=500,
              section="evidence", content="enormous tide table appendix"),
    ]  # fmt: skip


@pytest.fixture
def lg(tmp_path: Path):  # type: ignore[no-untyped-def]
    with ledger.open(str(tmp_path / "ledger.db"), create=True) as opened:
        opened.ingest_records(corpus())
        opened.retract(["gone-note"], from_date="2026-07-01", reason="pier demolished")
        opened.grant("default", "public-read")
        opened.set_policy(allow_trust=["approved-source"], budget=300)
        yield opened


# (case, the failure's status and reason); a case names its chunk by id or by phrase.
CASES: list[tuple[dict[str, Any], str, str | None]] = [
    ({"admit": ["staff-note"]}, "evicted", "permission_denied"),
    ({"admit": [{"text": "whispered lighthouse rumor"}]}, "evicted", "trust_denied"),
    ({"admit": ["future-note"]}, "evicted", "not_yet_effective"),
    ({"admit": ["old-note"]}, "evicted", "expired"),
    ({"admit": ["gone-note"]}, "evicted", "retracted"),
    ({"admit": [{"text": "twelve crowns"}]}, "evicted", "superseded"),
    ({"admit": ["dup-low"]}, "evicted", "duplicate"),
    ({"admit": ["big-note"]}, "evicted", "budget"),
    ({"admit": [{"text": "harbor opening hours"}], "query": "ferry timetable", "top": 1},
     "not_candidate", "not_retrieved"),
    ({"admit": [{"text": "brass sextant"}]}, "never_ingested", None),
    ({"exclude": ["open-note"]}, "admitted", None),
]  # fmt: skip


@pytest.mark.parametrize(("case", "status", "reason"), CASES, ids=[r or s for _c, s, r in CASES])
def test_each_reason_fails_its_case_and_names_it(
    lg: ledger.Ledger, case: dict[str, Any], status: str, reason: str | None
) -> None:
    result = lg.check([{"name": "c", "as_of": AS_OF, **case}]).to_json()
    [got] = result["cases"]
    assert not got["passed"] and result["failed"] == 1
    [failure] = got["failures"]
    assert (failure["status"], failure["reason"]) == (status, reason), failure
    if status == "evicted":
        assert f"by {reason}" in failure["sentence"]
    hint = failure["hint"]
    if status != "admitted" and reason is not None:
        assert hint is not None and hint["steps"], failure  # every miss says what would admit
    if hint and hint["admits"]:
        assert admitted_after(lg, case, hint), (case, hint)


def admitted_after(lg: ledger.Ledger, case: dict[str, Any], hint: dict[str, Any]) -> bool:
    """The hint's steps applied literally, then the case checked again."""
    again = {"name": "c", "as_of": AS_OF, **case}
    for step in hint["steps"]:
        kind = step["kind"]
        if kind == "grant":
            lg.grant("default", step["permission"])
        elif kind == "allow_trust":
            lg.set_policy(allow_trust=["approved-source", step["trust"]], budget=300)
        elif kind == "reinstate":
            lg.reinstate([step["id"]], from_date=step["from"])
        elif kind in ("as_of", "superseded_by", "retracted") and step.get("as_of"):
            again["as_of"] = step["as_of"]
        elif kind == "budget":
            again["budget"] = step["budget"]
        elif kind == "retrieve":
            again["query"], again["top"] = step["query"], step["top"]
        else:
            raise AssertionError(f"a step this test cannot apply: {step}")
    return bool(lg.check([again]).to_json()["cases"][0]["passed"])
