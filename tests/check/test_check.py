"""`ledger check`: context tests decided as `ledger build` would, nothing recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ledger
from ledger.core.checks import CheckFileError, fold
from tests.check.conftest import state
from tests.conftest import run_ledger
from tests.seeded import AS_OF, SEED

IDS = [c["id"] for c in SEED["chunks"]]


def write_tests(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "context-tests.toml"
    path.write_text(text, encoding="utf-8")
    return path


def recorded(db: Path, **build: Any) -> dict[str, Any]:
    with ledger.open(str(db)) as lg:
        return lg.build(**build).to_json()


TESTS = """
[defaults]
as_of = "2026-07-21"

[[case]]
name = "the policy and the current refund policy reach the agent"
admit = ["policy", { text = "summary of the CURRENT   refund policy" }]
exclude = ["old-refund-policy", { text = "expired, older refund" }]

[[case]]
name = "the shipping note fits"
admit = ["shipping-note"]
"""


def test_a_passing_and_a_failing_case_the_last_line_and_the_exit_code(
    db: Path, tmp_path: Path
) -> None:
    before = state(db)
    tests = write_tests(tmp_path, TESTS)
    run = run_ledger("check", str(tests), db=db)
    lines = run.stdout.splitlines()
    pack = recorded(db, as_of=AS_OF)  # after the check: the check recorded nothing
    admitted = {item["id"] for item in pack["admitted"]}
    assert "shipping-note" not in admitted  # the seed's budget leaves it out
    assert run.returncode == 1, run.stderr
    assert lines[0] == "PASS the policy and the current refund policy reach the agent"
    assert lines[1] == "FAIL the shipping note fits: 1 expectation not met"
    assert lines[2].startswith("  admit 'shipping-note': ")
    assert "budget" in lines[2]
    assert lines[-1] == "1 passed, 1 failed"
    assert before != state(db)  # the build above recorded a pack...
    assert len(lines) == 4


def test_the_ledger_is_unchanged_by_a_check(db: Path, tmp_path: Path) -> None:
    before = state(db)
    run = run_ledger("check", str(write_tests(tmp_path, TESTS)), "--json", db=db)
    assert run.returncode == 1
    assert state(db) == before


def test_json_and_each_case_pack_digest_is_what_build_records(db: Path, tmp_path: Path) -> None:
    run = run_ledger("check", str(write_tests(tmp_path, TESTS)), "--json", db=db)
    data = json.loads(run.stdout)
    assert (data["passed"], data["failed"]) == (1, 1)
    pack = recorded(db, as_of=AS_OF)
    assert [c["pack_digest"] for c in data["cases"]] == [pack["pack_digest"]] * 2
    failure = data["cases"][1]["failures"][0]
    assert set(failure) == {"expect", "item", "status", "reason", "detail", "hint", "sentence"}
    assert (failure["expect"], failure["item"], failure["status"]) == (
        "admit",
        "shipping-note",
        "evicted",
    )
    assert failure["reason"] == "budget"
    assert failure["detail"]["needed"] == 24
    # The hint was checked by re-running the selector: following it admits.
    assert failure["hint"]["admits"] is True
    budget = next(s["budget"] for s in failure["hint"]["steps"] if s.get("kind") == "budget")
    with ledger.open(str(db)) as lg:
        again = lg.build(as_of=AS_OF, budget=budget).to_json()
    assert "shipping-note" in {item["id"] for item in again["admitted"]}


def test_junit_xml_has_one_testcase_per_case_and_the_failure_sentence(
    db: Path, tmp_path: Path
) -> None:
    junit = tmp_path / "report.xml"
    run = run_ledger("check", str(write_tests(tmp_path, TESTS)), "--junit", str(junit), db=db)
    assert run.returncode == 1
    root = ElementTree.parse(junit).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "the policy and the current refund policy reach the agent",
        "the shipping note fits",
    ]
    assert cases[0].find("failure") is None
    failure = cases[1].find("failure")
    assert failure is not None
    data = json.loads(
        run_ledger("check", str(tmp_path / "context-tests.toml"), "--json", db=db).stdout
    )
    assert failure.get("message") == data["cases"][1]["failures"][0]["sentence"]


def test_all_passing_exits_0(db: Path, tmp_path: Path) -> None:
    tests = write_tests(
        tmp_path,
        '[[case]]\nname = "policy"\nas_of = "2026-07-21"\nadmit = ["policy"]\n',
    )
    run = run_ledger("check", str(tests), db=db)
    assert (run.returncode, run.stdout.splitlines()) == (0, ["PASS policy", "1 passed, 0 failed"])


def test_an_exclude_that_is_admitted_fails_naming_the_chunk(db: Path, tmp_path: Path) -> None:
    tests = write_tests(
        tmp_path,
        '[[case]]\nname = "no mirror"\nas_of = "2026-07-21"\n'
        'exclude = [{ text = "customer-facing explanation" }]\n',
    )
    data = json.loads(run_ledger("check", str(tests), "--json", db=db).stdout)
    failure = data["cases"][0]["failures"][0]
    assert (failure["expect"], failure["status"]) == ("exclude", "admitted")
    assert failure["sentence"].startswith("refund-faq was admitted")


def test_ledger_at_decides_at_that_entry(db: Path, tmp_path: Path) -> None:
    later = tmp_path / "later.jsonl"
    later.write_text(
        json.dumps(
            {
                **next(c for c in SEED["chunks"] if c["id"] == "legal-note"),
                "id": "late-note",
                "dedupe_key": "late-note",
                "required_permission": "policy-read",
                "content": "A note ingested after the policy.",
                "estimated_tokens": 1,
                "priority": 100,
            }
        )
        + "\n",
        encoding="utf-8",
    )
    run_ledger("ingest", str(later), db=db, check=True)  # entry 4
    tests = write_tests(
        tmp_path, '[[case]]\nname = "late"\nas_of = "2026-07-21"\nadmit = ["late-note"]\n'
    )
    assert run_ledger("check", str(tests), db=db).returncode == 0
    old = run_ledger("check", str(tests), "--ledger-at", "3", "--json", db=db)
    assert old.returncode == 1
    failure = json.loads(old.stdout)["cases"][0]["failures"][0]
    assert failure["status"] != "evicted"  # it did not exist at entry 3


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("[[case]]\nas_of = '2026-07-21'\nadmit = ['policy']\n", "case 1 key 'name'"),
        (
            "[[case]]\nname = 'x'\nas_of = '2026-13-01'\nadmit = ['policy']\n",
            "case 1 ('x') key 'as_of'",
        ),
        ("[[case]]\nname = 'x'\nas_of = '2026-07-21'\n", "case 1 ('x') key 'admit'"),
        (
            "[[case]]\nname = 'x'\nas_of = '2026-07-21'\nadmit = [3]\n",
            "case 1 ('x') key 'admit' item 1",
        ),
        (
            "[[case]]\nname = 'x'\nas_of = '2026-07-21'\nadmit = ['a']\nbudjet = 3\n",
            "case 1: unknown key 'budjet'",
        ),
        (
            "[[case]]\nname = 'x'\nas_of = '2026-07-21'\nadmit = ['a']\ntop = 5\n",
            "case 1 ('x') key 'top'",
        ),
        (
            "[[case]]\nname = 'x'\nas_of = '2026-07-21'\nadmit = ['a']\nquery = 'q'\ntop = 0\n",
            "case 1 ('x') key 'top'",
        ),
        (
            "[[case]]\nname = 'x'\nas_of = '2026-07-21'\nadmit = ['a']\nbudget = true\n",
            "case 1 ('x') key 'budget'",
        ),
        (
            "[[case]]\nname = 'x'\nas_of = '2026-07-21'\nadmit = ['a']\n" * 2,
            "case 2 key 'name'",
        ),
        (
            "[defaults]\nname = 'x'\n[[case]]\nname = 'y'\nas_of = '2026-07-21'\nadmit = ['a']\n",
            "[defaults] key 'name'",
        ),
        ("[[case]\n", "not valid TOML"),
        ("", "no [[case]] tables"),
    ],
)
def test_a_malformed_tests_file_is_refused_with_one_line_naming_case_and_key(
    db: Path, tmp_path: Path, text: str, where: str
) -> None:
    before = state(db)
    run = run_ledger("check", str(write_tests(tmp_path, text)), db=db)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith("error: ") and where in line, line
    assert "Traceback" not in run.stderr
    assert state(db) == before


def test_a_build_that_fails_closed_fails_its_case(db: Path, tmp_path: Path) -> None:
    tests = write_tests(
        tmp_path,
        '[[case]]\nname = "tiny"\nas_of = "2026-07-21"\nbudget = 10\nadmit = ["policy"]\n',
    )
    run = run_ledger("check", str(tests), "--json", db=db)
    assert run.returncode == 1
    [case] = json.loads(run.stdout)["cases"]
    assert case["pack_digest"] is None
    [failure] = case["failures"]
    assert (failure["expect"], failure["status"]) == ("build", "refused")
    assert "required chunks exceed the pack budget" in failure["sentence"]


def test_the_python_api_takes_cases_in_memory(db: Path) -> None:
    with ledger.open(str(db)) as lg:
        result = lg.check([{"name": "p", "as_of": AS_OF, "admit": ["policy"]}])
        assert result.ok and (result.passed, result.failed) == (1, 0)
        with pytest.raises(CheckFileError, match="key 'as_of'"):
            lg.check([{"name": "p", "admit": ["policy"]}])


def test_fold_is_case_and_white_space_folding() -> None:
    assert fold("  Straße\tWITHIN\n30  days ") == "strasse within 30 days"


# Generated cases: a case passes exactly when the recorded build of the same
# inputs admits what it expects and nothing it excludes.
DATES = ["2026-03-01", "2026-06-15", "2026-07-21", "2026-09-02"]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    as_of=st.sampled_from(DATES),
    budget=st.integers(min_value=150, max_value=400),
    admit=st.lists(st.sampled_from(IDS), max_size=3, unique=True),
    exclude=st.lists(st.sampled_from(IDS), max_size=2, unique=True),
)
def test_a_case_passes_exactly_when_the_recorded_build_admits_its_expectations(
    db: Path, as_of: str, budget: int, admit: list[str], exclude: list[str]
) -> None:
    if not admit and not exclude:
        admit = ["policy"]
    case = {"name": "c", "as_of": as_of, "budget": budget, "admit": admit, "exclude": exclude}
    with ledger.open(str(db)) as lg:
        try:
            pack = lg.build(as_of=as_of, budget=budget).to_json()
        except ledger.LedgerError:
            pack = None
        result = lg.check([case]).to_json()
    [got] = result["cases"]
    if pack is None:
        assert not got["passed"] and got["failures"][0]["expect"] == "build"
        return
    ids = {item["id"] for item in pack["admitted"]}
    assert got["passed"] == (set(admit) <= ids and not set(exclude) & ids)
    assert got["pack_digest"] == pack["pack_digest"]
    assert {f["item"] for f in got["failures"]} == (set(admit) - ids) | (set(exclude) & ids)
