"""`ledger check` refuses what it cannot run before any case runs: a report
that would replace an input, and a tests file whose values a build refuses."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.check.conftest import state
from tests.conftest import run_ledger

CASE = '[[case]]\nname = "policy"\nas_of = "2026-07-21"\nadmit = ["policy"]\n'
CANDIDATES_CASE = (
    '[[case]]\nname = "ranked"\nas_of = "2026-07-21"\ncandidates = "ranked.jsonl"\n'
    'admit = ["policy"]\n'
)


def refused(run: Any, code: int, *words: str) -> str:
    """The run's one error line, after checking that nothing ran."""
    assert run.returncode == code, run.stdout + run.stderr
    assert run.stdout == ""  # no case ran: no PASS/FAIL line, no summary
    assert "Traceback" not in run.stderr
    [line] = run.stderr.splitlines()
    assert line.startswith("error: "), line
    for word in words:
        assert word in line, line
    return line


# --------------------------------------------------------------------------
# --junit may not replace what the run reads.
# --------------------------------------------------------------------------


def test_junit_naming_the_tests_file_is_refused_before_any_case_runs(
    db: Path, tmp_path: Path
) -> None:
    tests = tmp_path / "t.toml"
    tests.write_text(CASE, encoding="utf-8")
    before = state(db)
    run = run_ledger("check", str(tests), "--junit", str(tests), db=db)
    refused(run, 1, f"{tests}: is the same path as the input {tests}", "name another output")
    assert tests.read_text(encoding="utf-8") == CASE
    assert state(db) == before


def test_junit_naming_the_tests_file_another_way_or_by_a_hard_link_is_refused(
    db: Path, tmp_path: Path
) -> None:
    tests = tmp_path / "t.toml"
    tests.write_text(CASE, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    other_way = tmp_path / "sub" / ".." / "t.toml"
    refused(run_ledger("check", str(tests), "--junit", str(other_way), db=db), 1, "same")
    link = tmp_path / "link.toml"
    os.link(tests, link)
    refused(run_ledger("check", str(link), "--junit", str(tests), db=db), 1, "same file")
    assert tests.read_text(encoding="utf-8") == CASE


def test_junit_naming_a_cases_candidates_file_is_refused(db: Path, tmp_path: Path) -> None:
    tests = tmp_path / "t.toml"
    tests.write_text(CASE + CANDIDATES_CASE, encoding="utf-8")
    ranked = tmp_path / "ranked.jsonl"
    ranked.write_text('{"id": "policy"}\n', encoding="utf-8")
    # From another folder: the case names the file relative to the tests file.
    run = run_ledger("check", str(tests), "--junit", "ranked.jsonl", db=db, cwd=tmp_path)
    refused(run, 1, "ranked.jsonl", "is the same path as the input")
    assert ranked.read_text(encoding="utf-8") == '{"id": "policy"}\n'


def test_junit_naming_the_database_is_refused_before_any_case_runs(
    db: Path, tmp_path: Path
) -> None:
    # The second case's candidates file names a chunk the ledger lacks: running
    # it would stop the run with that error instead.
    tests = tmp_path / "t.toml"
    tests.write_text(CASE + CANDIDATES_CASE, encoding="utf-8")
    (tmp_path / "ranked.jsonl").write_text('{"id": "no-such-chunk"}\n', encoding="utf-8")
    assert "no-such-chunk" in run_ledger("check", str(tests), db=db).stderr
    before = state(db)
    run = run_ledger("check", str(tests), "--junit", str(db), db=db)
    refused(run, 1, "is the same path as the input")
    assert state(db) == before


def test_junit_naming_another_file_is_written(db: Path, tmp_path: Path) -> None:
    tests = tmp_path / "t.toml"
    tests.write_text(CASE, encoding="utf-8")
    report = tmp_path / "report.xml"
    run = run_ledger("check", str(tests), "--junit", str(report), db=db)
    assert run.returncode == 0, run.stderr
    assert report.read_bytes().startswith(b"<?xml")


# --------------------------------------------------------------------------
# A value a build refuses is refused when the file is parsed: exit 2, the
# parser's one line naming the case and the key, and no case run.
# --------------------------------------------------------------------------

GOOD = '[[case]]\nname = "first"\nas_of = "2026-07-21"\nadmit = ["policy"]\n'


def second_case(**keys: str) -> str:
    """A valid first case, then a case `second` with these keys (TOML values)."""
    body = {"as_of": '"2026-07-21"', "admit": '["policy"]', **keys}
    return GOOD + '[[case]]\nname = "second"\n' + "".join(f"{k} = {v}\n" for k, v in body.items())


@pytest.mark.parametrize(
    ("keys", "key", "words"),
    [
        ({"counter": '"nope"'}, "counter", "'nope' is not a counter; use one of"),
        ({"budget": "0"}, "budget", "must be between 1 and 10000000, got 0"),
        ({"budget": "10000001"}, "budget", "must be between 1 and 10000000"),
        ({"budget": "9007199254740991"}, "budget", "must be between 1 and 10000000"),
        ({"subject": '"a b"'}, "subject", "use letters, digits"),
        ({"subject": '"x"'}, "subject", None),  # a valid subject: no refusal
        ({"query": '"!!! ???"'}, "query", "the query has no words"),
        ({"query": '"refund"', "top": "10001"}, "top", "between 1 and 10000"),
        ({"candidates": '"missing.jsonl"'}, "candidates", "no such candidates file"),
        ({"candidates": '"bad.jsonl"'}, "candidates", "bad.jsonl"),
    ],
)
def test_a_value_the_build_refuses_is_refused_when_the_file_is_parsed(
    db: Path, tmp_path: Path, keys: dict[str, str], key: str, words: str | None
) -> None:
    (tmp_path / "bad.jsonl").write_text('{"id": "policy", "rank": 1}\n', encoding="utf-8")
    tests = tmp_path / "t.toml"
    tests.write_text(second_case(**keys), encoding="utf-8")
    report = tmp_path / "report.xml"
    before = state(db)
    run = run_ledger("check", str(tests), "--junit", str(report), db=db)
    if words is None:
        assert run.returncode in (0, 1) and "PASS first" in run.stdout, run.stderr
        return
    line = refused(run, 2, f"{tests}: case 2 ('second') key '{key}': ", words)
    assert line.count("\n") == 0
    assert not report.exists()
    assert state(db) == before


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("top", '"lots"', "'lots' must be a whole number"),
        ("top", "0", "between 1 and 10000"),
        ("budget", "-3", "must be between 1 and 10000000, got -3"),
        ("as_of", '"2026-02-30"', "must be a real YYYY-MM-DD date"),
        ("subject", '"a b"', "use letters, digits"),
        ("counter", '"nope"', "is not a counter"),
        ("query", '"..."', "the query has no words"),
        ("admit", '"policy"', "must be a list"),
    ],
)
def test_defaults_are_checked_on_their_own_even_when_every_case_overrides_them(
    db: Path, tmp_path: Path, key: str, value: str, words: str
) -> None:
    own = {
        "top": "",  # no case is a query case: a [defaults] top applies to none
        "budget": "budget = 200\n",
        "as_of": "",  # every case gives its own below
        "subject": 'subject = "default"\n',
        "counter": 'counter = "estimated_tokens"\n',
        "query": "",
        "admit": "",
    }[key]
    tests = tmp_path / "t.toml"
    tests.write_text(
        f"[defaults]\n{key} = {value}\n\n" + GOOD.replace("[[case]]\n", "[[case]]\n" + own),
        encoding="utf-8",
    )
    before = state(db)
    run = run_ledger("check", str(tests), db=db)
    refused(run, 2, f"{tests}: [defaults] key '{key}': ", words)
    assert state(db) == before


def test_the_budget_range_is_the_builds(db: Path) -> None:
    """The parser takes exactly the budgets a build takes (one rule, the build's)."""
    import ledger
    from ledger.core.checks import CheckFileError
    from ledger.store.access import MAX_BUDGET

    with ledger.open(str(db)) as lg:
        for budget in (0, 1, MAX_BUDGET, MAX_BUDGET + 1):
            case = {"name": "b", "as_of": "2026-07-21", "budget": budget, "admit": ["policy"]}
            try:
                lg.build(as_of="2026-07-21", budget=budget)
                builds = True
            except ledger.LedgerError as exc:
                builds = "budget:" not in str(exc)  # refused for its budget, or else
            try:
                lg.check([case])
                parses = True
            except CheckFileError:
                parses = False
            assert parses == builds, budget


# --------------------------------------------------------------------------
# A TOML date is that day.
# --------------------------------------------------------------------------


def test_an_unquoted_toml_date_is_that_day(db: Path, tmp_path: Path) -> None:
    import json

    quoted = tmp_path / "quoted.toml"
    quoted.write_text(CASE, encoding="utf-8")
    bare = tmp_path / "bare.toml"
    bare.write_text(CASE.replace('"2026-07-21"', "2026-07-21"), encoding="utf-8")
    assert "as_of = 2026-07-21\n" in bare.read_text(encoding="utf-8")
    runs = [run_ledger("check", str(p), "--json", db=db) for p in (quoted, bare)]
    assert [r.returncode for r in runs] == [0, 0], runs[1].stderr
    digests = [json.loads(r.stdout)["cases"][0]["pack_digest"] for r in runs]
    assert digests[0] == digests[1]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("2026-07-21T10:00:00", "2026-07-21T10:00:00 is a date and time; give the day alone"),
        ("2026-07-21T10:00:00Z", "is a date and time; give the day alone (2026-07-21)"),
        ("10:00:00", "10:00:00 must be a real YYYY-MM-DD date"),
        ("20260721", "20260721 must be a real YYYY-MM-DD date"),
    ],
)
def test_a_toml_date_and_time_or_time_is_refused_in_one_clear_line(
    db: Path, tmp_path: Path, value: str, words: str
) -> None:
    tests = tmp_path / "t.toml"
    tests.write_text(CASE.replace('"2026-07-21"', value), encoding="utf-8")
    line = refused(
        run_ledger("check", str(tests), db=db), 2, "case 1 ('policy') key 'as_of'", words
    )
    assert "datetime" not in line


def test_the_python_api_takes_a_date_object(db: Path) -> None:
    import datetime

    import ledger

    with ledger.open(str(db)) as lg:
        case = {"name": "p", "as_of": datetime.date(2026, 7, 21), "admit": ["policy"]}
        assert lg.check([case]).ok


# --------------------------------------------------------------------------
# A case name is one line of plain text; texts never break the output.
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "toml_name",
    [r"a\nFAKE PASS", r"\u0001", r"\u001b[31mred", r"tab\there", r"a\u2028b", r"a\u0085b"],
)
def test_a_control_character_in_a_case_name_is_refused(
    db: Path, tmp_path: Path, toml_name: str
) -> None:
    tests = tmp_path / "t.toml"
    tests.write_text(GOOD.replace('"first"', f'"{toml_name}"'), encoding="utf-8")
    before = state(db)
    line = refused(
        run_ledger("check", str(tests), db=db), 2, f"{tests}: case 1 (", ") key 'name': "
    )
    assert "control character" in line and "one line of plain text" in line
    assert line.isprintable()  # the name is shown escaped
    assert state(db) == before


def test_phrases_and_queries_may_hold_any_text_and_the_output_stays_one_line_each(
    db: Path, tmp_path: Path
) -> None:
    """A phrase spans lines (white space folds); a query is cleaned as `build
    --query` cleans it; what the output quotes of them is escaped."""
    tests = tmp_path / "t.toml"
    tests.write_text(
        GOOD + '[[case]]\nname = "second"\nas_of = "2026-07-21"\n'
        'query = "refund\\u001b[2J policy"\n'
        'admit = [{ text = "no such\\u001b[2J\\nphrase" },\n'
        '         { text = "summary of\\nthe current" }]\n',
        encoding="utf-8",
    )
    run = run_ledger("check", str(tests), db=db)
    assert run.returncode == 1, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:2] == ["PASS first", "FAIL second: 1 expectation not met"]
    assert lines[2].startswith("  admit text 'no such\\x1b[2J\\nphrase': ")
    assert lines[-1] == "1 passed, 1 failed" and len(lines) == 4
    assert all(line.isprintable() for line in lines)


def test_junit_xml_is_well_formed_whatever_the_text() -> None:
    """Sentences quote stored titles and versions: any character XML 1.0
    forbids is written as its escape."""
    from xml.etree import ElementTree

    from ledger.core.checks import case_lines, junit_xml

    nasty = "t\x00i\x01t\x1bl\x0be\ufffe\ud800 \u2028end\nnext"
    failure = {
        "expect": "admit",
        "item": "policy",
        "status": "evicted",
        "reason": None,
        "detail": None,
        "hint": None,
        "sentence": nasty,
    }
    cases = [{"name": "n\x01", "passed": False, "failures": [failure]}]
    root = ElementTree.fromstring(junit_xml(cases, suite="suite\x02"))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "suite\\x02"
    case = suite.find("testcase")
    assert case is not None and case.get("name") == "n\\x01"
    got = case.find("failure")
    assert got is not None
    assert got.get("message") == "t\\x00i\\x01t\\x1bl\\x0be\\ufffe\\ud800 \u2028end\nnext"
    [line] = case_lines(cases[0])[1:]  # one line, however many the sentence held
    assert line.isprintable() and "\\u2028end\\nnext" in line
    assert got.text == line


# --------------------------------------------------------------------------
# The check's result and error are the package's, as every other one.
# --------------------------------------------------------------------------


def test_check_result_and_check_file_error_are_exported_from_ledger(db: Path) -> None:
    import ledger
    from ledger import CheckFileError, CheckResult

    assert {"CheckFileError", "CheckResult"} <= set(ledger.__all__)
    assert issubclass(CheckFileError, ledger.LedgerError) and CheckFileError.exit_code == 2
    with ledger.open(str(db)) as lg:
        result = lg.check([{"name": "p", "as_of": "2026-07-21", "admit": ["policy"]}])
        assert isinstance(result, CheckResult) and result.ok
        with pytest.raises(CheckFileError, match="key 'budget'"):
            lg.check([{"name": "p", "as_of": "2026-07-21", "budget": 0, "admit": ["policy"]}])


# --------------------------------------------------------------------------
# ledger_at: the library's own input error, in the API's words.
# --------------------------------------------------------------------------


@pytest.mark.parametrize("value", [True, False, "3", 3.0, [3]])
def test_a_ledger_at_that_is_not_a_whole_number_is_the_librarys_input_error(
    db: Path, value: Any
) -> None:
    import ledger

    before = state(db)
    case = {"name": "p", "as_of": "2026-07-21", "admit": ["policy"]}
    with ledger.open(str(db)) as lg:
        for call in (
            lambda: lg.check([case], value),
            lambda: lg.check([case], ledger_at=value),
            lambda: lg.build(as_of="2026-07-21", ledger_at=value),
            lambda: lg.build(as_of="2026-07-21", counter="utf8-bytes", ledger_at=value),
        ):
            with pytest.raises(ledger.InputError) as caught:
                call()
            message = str(caught.value)
            assert message.startswith(f"ledger_at: {value!r} is not an entry number"), message
            assert caught.value.param == "ledger_at"
            assert "\n" not in message
        assert lg.check([case], 3).ok  # a whole number still is one
    assert state(db) == before
