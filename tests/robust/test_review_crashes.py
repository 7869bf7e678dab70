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

from tests.robust.helpers import Run, pack_numbers, run, seed_ledger, sqlite_url
from tests.robust.review import no_traceback, one_line, seeded, seeded_base

__all__ = ["seeded", "seeded_base"]

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
def test_stdout_on_a_full_device_is_one_line(seeded: Path, args: tuple[str, ...]) -> None:
    """`>/dev/full` gave an OSError traceback in every printing command."""
    result = _to_full(args, seeded)
    no_traceback(result)
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot write to standard output"), lines


@pytest.mark.parametrize(
    "args",
    [("export", "1"), ("verify", "--json"), ("show", "1", "--json"), ("packs", "--json")],
    ids=lambda a: "-".join(a),
)
def test_a_closed_stdout_fails(seeded: Path, args: tuple[str, ...]) -> None:
    """With stdout closed, `export` and `verify --json` wrote nothing and exited 0."""
    result = _closed(args, seeded)
    no_traceback(result)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "standard output" in result.stderr


@pytest.mark.parametrize("how", ["full", "closed"])
@pytest.mark.parametrize("json_flag", [(), ("--json",)], ids=["text", "json"])
def test_build_says_its_pack_was_recorded(
    seeded: Path, how: str, json_flag: tuple[str, ...]
) -> None:
    """`build >/dev/full` exited 1 although the pack was committed: a retry
    recorded it twice."""
    before = pack_numbers(sqlite_url(seeded))
    args = ("build", "--as-of", "2026-07-21", *json_flag)
    result = _to_full(args, seeded) if how == "full" else _closed(args, seeded)
    no_traceback(result)
    after = pack_numbers(sqlite_url(seeded))
    assert after == before + [before[-1] + 1]
    assert result.returncode == 0, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert f"pack {after[-1]}" in line and "recorded" in line and "standard output" in line, line


def test_build_batch_says_its_packs_were_recorded(seeded: Path, tmp_path: Path) -> None:
    batch = tmp_path / "b.jsonl"
    batch.write_text(
        '{"subject": "default", "as_of": "2026-07-21"}\n'
        '{"subject": "default", "as_of": "2026-07-22"}\n'
    )
    before = pack_numbers(sqlite_url(seeded))
    result = _to_full(("build", "--batch", str(batch)), seeded)
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
    seed_ledger(db_url)
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
    seeded: Path, template: tuple[str, ...], text: str
) -> None:
    """`show ²` gave a ValueError (`isdigit()` is true for `²`)."""
    args = tuple(a.replace("{}", text) for a in template)
    result = run(*args, db=seeded)
    one_line(result, 3 if text == "0" else 2)
