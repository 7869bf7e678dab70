"""Issue 14, class "crashes where a line was promised": standard output on a full
device or closed, and PACK arguments that are not pack numbers.

A command whose output cannot be written fails with one line (exit 1), except
`build`, whose pack is already recorded: it says so, with the pack's number, and
exits 0, so a retry does not record it twice. PACK is parsed once: ASCII digits
only, range-checked for the backend (2^63 on SQLite, 2^31 on PostgreSQL): out of
range names no pack (exit 3); text that is neither a number nor a digest prefix
is a usage error (exit 2).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.clitools import Run, no_traceback, one_line, pack_numbers, run, sqlite_url
from tests.seeded import seed_ledger

PRINTING = [
    ("packs",),
    ("show", "1"),
    ("show", "1", "--json"),
    ("chunks",),
    ("verify",),
    ("verify", "--json"),
    ("export", "1"),
    ("export", "1", "--format", "markdown"),
    ("why-evicted", "shipping-note"),
    ("diff", "1", "2"),
    ("replay", "1"),
    ("head",),
    ("subject", "show", "default"),
    ("policy", "show"),
]


def _full_stdout() -> None:
    os.dup2(os.open("/dev/full", os.O_WRONLY), 1)


def _to_full(args: tuple[str, ...], db: Path | str) -> Run:
    return run(*args, db=db, preexec_fn=_full_stdout)


def _closed(args: tuple[str, ...], db: Path | str) -> Run:
    return run(*args, db=db, preexec_fn=lambda: os.close(1))


@pytest.mark.parametrize("args", PRINTING, ids=lambda a: "-".join(a))
def test_stdout_on_a_full_device_is_one_line(seeded_file: Path, args: tuple[str, ...]) -> None:
    """`>/dev/full` gave an OSError traceback in every printing command."""
    result = _to_full(args, seeded_file)
    no_traceback(result)
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot write to standard output"), lines


@pytest.mark.parametrize(
    "args",
    [("export", "1"), ("verify", "--json"), ("show", "1", "--json"), ("packs", "--json")],
    ids=lambda a: "-".join(a),
)
def test_a_closed_stdout_fails(seeded_file: Path, args: tuple[str, ...]) -> None:
    """With stdout closed, `export` and `verify --json` wrote nothing and exited 0."""
    result = _closed(args, seeded_file)
    no_traceback(result)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "standard output" in result.stderr


@pytest.mark.parametrize("how", ["full", "closed"])
@pytest.mark.parametrize("json_flag", [(), ("--json",)], ids=["text", "json"])
def test_build_says_its_pack_was_recorded(
    seeded_file: Path, how: str, json_flag: tuple[str, ...]
) -> None:
    """`build >/dev/full` exited 1 although the pack was committed: a retry
    recorded it twice."""
    before = pack_numbers(sqlite_url(seeded_file))
    args = ("build", "--as-of", "2026-07-21", *json_flag)
    result = _to_full(args, seeded_file) if how == "full" else _closed(args, seeded_file)
    no_traceback(result)
    after = pack_numbers(sqlite_url(seeded_file))
    assert after == before + [before[-1] + 1]
    assert result.returncode == 0, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert f"pack {after[-1]}" in line and "recorded" in line and "standard output" in line, line


def test_build_batch_says_its_packs_were_recorded(seeded_file: Path, tmp_path: Path) -> None:
    batch = tmp_path / "b.jsonl"
    batch.write_text(
        '{"subject": "default", "as_of": "2026-07-21"}\n'
        '{"subject": "default", "as_of": "2026-07-22"}\n'
    )
    before = pack_numbers(sqlite_url(seeded_file))
    result = _to_full(("build", "--batch", str(batch)), seeded_file)
    no_traceback(result)
    assert result.returncode == 0, result.stderr
    n = before[-1]
    assert f"packs {n + 1}-{n + 2}" in result.stderr


PACK_COMMANDS = [
    ("show", "{}"),
    ("replay", "{}"),
    ("diff", "1", "{}"),
    ("why-evicted", "refund-faq", "--pack", "{}"),
    ("report", "{}"),
    ("export", "{}"),
    ("report", "--diff", "{}", "1"),
]


@pytest.fixture
def ledger_db(db_url: str) -> str:
    seed_ledger(db_url, init=True)
    return db_url


@pytest.mark.parametrize(
    "template", PACK_COMMANDS, ids=lambda t: t[0] + ("-" + t[1] if t[1].startswith("-") else "")
)
def test_pack_numbers_out_of_range_name_no_pack(
    ledger_db: str, backend: str, template: tuple[str, ...]
) -> None:
    """A pack number >= 2^63 (on PostgreSQL >= 2^31) crashed with a traceback."""
    edge = 2**63 if backend == "sqlite" else 2**31
    for number in (edge, edge + 7, 10**30, 2**64):
        args = tuple(a.replace("{}", str(number)) for a in template)
        one_line(run(*args, db=ledger_db), 3)


@pytest.mark.parametrize("text", ["²", "１", "٣", "0", "1e3", "+1", "1_000"])
@pytest.mark.parametrize("template", PACK_COMMANDS[:4], ids=lambda t: t[0])
def test_pack_arguments_that_are_not_numbers(
    seeded_file: Path, template: tuple[str, ...], text: str
) -> None:
    """`show ²` gave a ValueError (`isdigit()` is true for `²`)."""
    args = tuple(a.replace("{}", text) for a in template)
    result = run(*args, db=seeded_file)
    one_line(result, 3 if text == "0" else 2)


# Every command that takes a PACK (or a REF), and the values the review named:
# each gives one line and its code, through the one parser, on both backends.
EVERY_PACK = [
    ("show", "{}"),
    ("show", "{}", "--json"),
    ("replay", "{}"),
    ("diff", "1", "{}"),
    ("diff", "{}", "1"),
    ("why-evicted", "refund-faq", "--pack", "{}"),
    ("why", "refund", "--pack", "{}"),
    ("report", "{}"),
    ("report", "--diff", "1", "{}"),
    ("export", "{}"),
    ("export", "{}", "--format", "markdown"),
    ("prove", "{}"),
    ("prove", "{}", "--json"),
]
EVERY_REF = [("why-evicted", "{}"), ("why-evicted", "{}", "--json"), ("report", "--chunk", "{}")]
# value -> (code as a PACK, code as a REF). A REF that names no version is not
# found (SPEC), whatever it looks like. `-1` where an argument stands is an
# unknown option (usage, 2); as an option's value it is parsed like the others.
REVIEWED = {
    "²": (2, 3),
    str(2**63): (3, 3),
    str(2**31): (3, 3),
    "-1": (2, 3),
    "1 ": (2, 3),
    " 1": (2, 3),
    "1\n": (2, 3),
    "١": (2, 3),
}


def _in_process(*args: str) -> tuple[int, str, str]:
    from tests.robust.test_fuzz_cli_parsers import ledger_main

    return ledger_main(*args)


def test_every_pack_and_ref_argument_goes_through_one_parser(
    ledger_db: str, tmp_path: Path
) -> None:
    """`show ²` was a ValueError, a number >= 2^63 (PostgreSQL 2^31) a traceback in
    show, replay, diff, why-evicted --pack and report; `prove`, `why --pack` and
    a PACK with a space or another script's digit went their own ways."""
    out = tmp_path / "out.html"  # where a report would go, never the repository
    cases = [
        (value, template, REVIEWED[value][0 if template in EVERY_PACK else 1])
        for value in REVIEWED
        for template in EVERY_PACK + EVERY_REF
    ]
    for value, template, code in cases:
        if value.startswith("-") and not template[template.index("{}") - 1].startswith("--"):
            code = 2  # click reads it as an option
        args = tuple(a.replace("{}", value) for a in template)
        if args[0] == "report":
            args = (*args, "-o", str(out))
        got, stdout, stderr = _in_process("--db", ledger_db, *args)
        lines = stderr.splitlines()
        assert (got, len(lines)) == (code, 1), (args, got, stderr[-1500:])
        assert lines[0].startswith("error: ") and stdout == "", (args, stderr, stdout[:300])
        assert "Traceback" not in stderr
    assert not out.exists()


NUMBER_OPTIONS = [
    ("head", "--at", "{}"),
    ("build", "--as-of", "2026-07-21", "--budget", "{}"),
    ("build", "--as-of", "2026-07-21", "--ledger-at", "{}"),
    ("build", "--as-of", "2026-07-21", "--query", "refund", "--top", "{}"),
    ("prove", "1", "--size", "{}"),
    ("prove", "--consistency", "{}"),
    ("prove", "--consistency", "1", "{}"),
    ("search", "refund", "--limit", "{}"),
    ("why", "refund", "--limit", "{}"),
    ("policy", "set", "--budget", "{}"),
    ("policy", "set", "--retain-bodies", "{}"),
]


def test_every_number_option_is_ascii_digits_and_range_checked(ledger_db: str) -> None:
    """`prove --consistency ²` was a ValueError and `head --at 2^70` an
    OverflowError traceback; `--budget ١٧٠` was taken as 170 (int() reads
    other scripts' digits). Nothing is recorded by a refused one."""
    before = pack_numbers(ledger_db)
    cases = [
        (args, value)
        for args in NUMBER_OPTIONS
        for value in ("²", "١٧٠", "1 ", "+1", "1_000", str(2**70), "9" * 5000)
    ]
    for args, value in cases:
        argv = tuple(a.replace("{}", value) for a in args)
        code, stdout, stderr = _in_process("--db", ledger_db, *argv)
        lines = stderr.splitlines()
        assert code in (1, 2, 3) and len(lines) == 1, (argv[:6], code, stderr[-1500:])
        assert lines[0].startswith("error: ") and stdout == "", (argv[:6], stderr[-500:])
        assert len(lines[0]) < 400, lines[0][:500]
    assert pack_numbers(ledger_db) == before


RECORDING = [
    ("policy", "set", "--budget", "180"),
    ("subject", "grant", "default", "legal-read"),
    ("subject", "revoke", "default", "public-read"),
    ("retract", "legal-note", "--from", "2026-01-01"),
    ("erase", "legal-note", "--reason", "test"),
    ("policy", "set", "--retain-bodies", "30"),
    ("ingest", "{update}"),
    ("ingest", "{update}", "--json"),
]


@pytest.mark.parametrize("args", RECORDING, ids=lambda a: "-".join(a[:2]))
def test_every_recording_command_says_what_it_recorded(
    seeded_file: Path, args: tuple[str, ...]
) -> None:
    """Like `build`: `policy set`, `grant`, `revoke`, `retract` and `ingest` commit
    their entry, then printed; with stdout on a full device they exited 1, so a
    retry recorded a second policy or retraction entry."""
    update = str(Path(__file__).resolve().parents[2] / "fixtures" / "demo-update.jsonl")
    argv = tuple(a.replace("{update}", update) for a in args)
    before = int(run("head", db=seeded_file, check=True).stdout.split(":")[0])
    result = _to_full(argv, seeded_file)
    no_traceback(result)
    after = int(run("head", db=seeded_file, check=True).stdout.split(":")[0])
    assert after == before + 1, (before, after, result.stderr)
    assert result.returncode == 0, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert f"{after}" in line and "recorded" in line and "standard output" in line, line
    assert "do not run it again" in line, line
