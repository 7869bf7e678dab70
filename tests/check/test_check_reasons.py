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
    # Ranked third by its query (both customs chunks match two of its words).
    ({"admit": [{"text": "harbor opening hours"}], "query": "customs desk harbor", "top": 1},
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


def test_a_hint_never_rewrites_the_cases_question(lg: ledger.Ledger) -> None:
    """A chunk the case's query does not match at all: no K retrieves it, and the
    hint does not offer the expected words as the query instead (that would make
    the test pass by asking for its answer); by id or by phrase, the same."""
    for expect in ("open-note", {"text": "harbor opening hours"}):
        case = {"name": "c", "as_of": AS_OF, "query": "ferry timetable", "top": 1,
                "admit": [expect]}  # fmt: skip
        [got] = lg.check([case]).to_json()["cases"]
        [failure] = got["failures"]
        assert (failure["status"], failure["reason"]) == ("not_candidate", "not_retrieved")
        assert "it does not match that query" in failure["sentence"], failure
        assert failure["hint"] == {
            "target": failure["hint"]["target"], "steps": [], "admits": False,
        }  # fmt: skip


def test_a_phrase_written_otherwise_is_not_explained_as_missing(lg: ledger.Ledger) -> None:
    """The words are in an admitted chunk with punctuation between them: the case
    fails (a phrase is matched as written), and its explanation says so, rather
    than `why`'s answer that the chunk was admitted."""
    lg.ingest_records([chunk(id="pier-note", dedupe_key="pier-note", content="pier: closed; "
                             "use the north ramp", **EV)])  # fmt: skip
    case = {"name": "c", "as_of": AS_OF, "admit": [{"text": "pier closed use the north ramp"}]}
    [got] = lg.check([case]).to_json()["cases"]
    [failure] = got["failures"]
    assert (failure["status"], failure["reason"], failure["hint"]) == ("admitted", None, None)
    assert failure["sentence"].startswith(
        "pier-note was admitted to the case's pack, and it holds these words, but not as the "
        "case writes them"
    )
    written = {**case, "admit": [{"text": "PIER: closed;  use the north ramp"}]}
    assert lg.check([written]).to_json()["cases"][0]["passed"]


def test_at_an_older_mark_a_hint_names_the_ledgers_real_head(lg: ledger.Ledger) -> None:
    """`ledger_at` before a chunk's ingest: the hint says to build again at the
    ledger's newest entry (not the entry of the pack the explanation records
    and rolls back), and the answer says the ledger has moved on."""
    mark = lg.head().seq
    lg.ingest_records([chunk(id="late-note", dedupe_key="late-note", content="late tide", **EV)])
    head = lg.head().seq
    result = lg.check([{"name": "c", "as_of": AS_OF, "admit": ["late-note", "staff-note"]}],
                      ledger_at=mark).to_json()  # fmt: skip
    late, staff = result["cases"][0]["failures"]
    assert (late["status"], late["reason"]) == ("not_candidate", "ingested_later")
    assert late["hint"]["steps"] == [{"kind": "rebuild", "mark": head}], late
    assert late["hint"]["admits"] is True
    assert staff["reason"] == "permission_denied"
    assert f"The ledger has changed since the case's pack was built: it saw entries up to {mark}" \
        in staff["sentence"]  # fmt: skip
    assert lg.head().seq == head  # nothing recorded


def test_a_read_only_ledger_still_checks_every_case(lg: ledger.Ledger, tmp_path: Path) -> None:
    """Explaining a failing case records its pack in a transaction rolled back at
    once: on a database this connection may not write, every case is still
    decided and reported (nothing aborts the run), a failure with what its
    decision says and why it is not explained further."""
    cases = [
        {"name": "ok", "as_of": AS_OF, "admit": ["open-note"]},
        {"name": "staff", "as_of": AS_OF, "admit": ["staff-note"]},
        {"name": "nowhere", "as_of": AS_OF, "admit": [{"text": "brass sextant"}]},
        {"name": "open", "as_of": AS_OF, "exclude": ["open-note"]},
    ]
    path = tmp_path / "ledger.db"
    with ledger.open(f"sqlite:///file:{path}?mode=ro&uri=true") as ro:
        result = ro.check(cases).to_json()
    assert (result["passed"], result["failed"]) == (1, 3)
    ok, staff, nowhere, open_ = result["cases"]
    assert ok["passed"]
    [f] = staff["failures"]
    assert (f["status"], f["reason"], f["detail"], f["hint"]) == (
        "evicted", "permission_denied", {"required_permission": "staff-read"}, None,
    )  # fmt: skip
    assert "not explained further" in f["sentence"] and "readonly" in f["sentence"]
    [f] = nowhere["failures"]
    assert (f["status"], f["reason"]) == ("unexplained", None)
    [f] = open_["failures"]
    assert f["status"] == "admitted" and "must not reach the agent" in f["sentence"]
    # The same cases on a writable connection: explained by `why`, the same verdicts.
    explained = lg.check(cases).to_json()
    assert [c["passed"] for c in explained["cases"]] == [c["passed"] for c in result["cases"]]
    assert explained["cases"][1]["failures"][0]["hint"]["admits"] is True


def test_a_phrase_holds_as_whole_words(lg: ledger.Ledger) -> None:
    """ "rent hours" is in "harbor opening hours" only inside a word: an exclude
    of it holds, an admit of it fails; the whole words match either way."""
    inside = {"name": "in", "as_of": AS_OF, "exclude": [{"text": "ning hours"}],
              "admit": [{"text": "OPENING   hours"}]}  # fmt: skip
    assert lg.check([inside]).to_json()["cases"][0]["passed"]
    part = {"name": "part", "as_of": AS_OF, "admit": [{"text": "r"}]}
    [failure] = lg.check([part]).to_json()["cases"][0]["failures"]
    assert failure["expect"] == "admit"


def test_an_exclude_of_an_id_never_held_fails_its_case(lg: ledger.Ledger) -> None:
    """A mistyped exclude id would hold forever: the case fails and says so; an
    id the ledger holds (even one never admitted) is an ordinary exclude."""
    case = {"name": "c", "as_of": AS_OF, "exclude": ["open-notes", "staff-note"],
            "admit": ["open-note"]}  # fmt: skip
    [got] = lg.check([case]).to_json()["cases"]
    [failure] = got["failures"]
    assert (failure["expect"], failure["item"], failure["status"]) == (
        "exclude", "open-notes", "never_ingested",
    )  # fmt: skip
    assert failure["sentence"].startswith("No chunk 'open-notes' is in the ledger")
    fixed = {**case, "exclude": ["staff-note"]}
    assert lg.check([fixed]).to_json()["cases"][0]["passed"]
