"""Errors at the command line: the exit code comes from the exception's class
alone, and a library message about an API parameter (`as_of: ...`) names the
running command's option for it (`--as-of: ...`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import click
import pytest

from ledger.core.errors import (
    ContextError,
    InputError,
    IntegrityError,
    LedgerError,
    NotFoundError,
    RefusedError,
)
from ledger_cli.main import COMMANDS, Command, database_error, render_error
from tests.conftest import run_in_process

RAISE: list[BaseException] = []


@click.command("probe", cls=Command)
@click.option("--as-of", "as_of")
@click.option("--top", type=int)
@click.argument("ref", required=False)
def probe_command(as_of: str | None, top: int | None, ref: str | None) -> None:
    raise RAISE[0]


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setitem(COMMANDS, "probe", f"{__name__}:probe_command")

    def run(error: BaseException):  # type: ignore[no-untyped-def]
        RAISE[:] = [error]
        return run_in_process(["probe"])

    return run


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (InputError("x"), 1),
        (RefusedError("x"), 1),
        (NotFoundError("x"), 3),
        (IntegrityError("x: a digest differs"), 4),
        # The words do not choose the code: only the class does.
        (RefusedError("the database was altered"), 1),
        (ContextError("x", 4), 4),
    ],
)
def test_the_exit_code_is_the_class_s(probe, error: LedgerError, code: int) -> None:  # type: ignore[no-untyped-def]
    proc = probe(error)
    assert proc.returncode == code
    assert proc.stderr == f"error: {error}\n"


def test_a_message_about_a_parameter_names_the_command_s_option(probe) -> None:  # type: ignore[no-untyped-def]
    proc = probe(InputError("as_of: '2026-02-30' must use YYYY-MM-DD", param="as_of"))
    assert proc.stderr == "error: --as-of: '2026-02-30' must use YYYY-MM-DD\n"
    # About the parameter, but first naming something else: the option at the end.
    later = InputError("a.json: the pack's date is later", param="as_of")
    assert probe(later).stderr == "error: a.json: the pack's date is later (--as-of)\n"
    # No option of that name, or no `param`: the message as raised.
    for error in (
        InputError("ledger_at: must be at least 1", param="ledger_at"),
        InputError("as_of: must use YYYY-MM-DD"),
        InputError("ref: no such pack", param="ref"),  # an argument, not an option
    ):
        assert probe(error).stderr == f"error: {error}\n"


def test_render_error_alone() -> None:
    command = click.Command("c", params=[click.Option(["-t", "--top"]), click.Argument(["ref"])])
    assert render_error(InputError("top: below 1", param="top"), command) == "--top: below 1"
    assert render_error(InputError("top: below 1", param="top"), None) == "top: below 1"
    assert render_error(InputError("ref: x", param="ref"), command) == "ref: x"


def _dbapi(message: str) -> Exception:
    from sqlalchemy.exc import OperationalError

    return OperationalError("SELECT 1", {}, sqlite3.OperationalError(message))


def test_a_stored_text_that_is_not_utf8_is_an_integrity_error(probe) -> None:  # type: ignore[no-untyped-def]
    undecodable = _dbapi("Could not decode to UTF-8 column 'content' with text 'secret body'")
    error = database_error(undecodable)
    assert isinstance(error, IntegrityError)
    proc = probe(undecodable)
    assert proc.returncode == 4
    assert "not valid UTF-8" in proc.stderr and "secret" not in proc.stderr


def test_any_other_database_failure_is_exit_1(probe) -> None:  # type: ignore[no-untyped-def]
    full = _dbapi("database or disk is full")
    error = database_error(full)
    assert isinstance(error, LedgerError) and not isinstance(error, IntegrityError)
    assert database_error(ValueError("no database here")) is None
    proc = probe(full)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: the database failed: database or disk is full;")
    assert "free disk space" in proc.stderr


def test_a_bad_as_of_is_as_of_to_python_and_the_as_of_option_to_the_cli(db_path: Path) -> None:
    """Needs the library's date check to raise `as_of: ...` with `param="as_of"`
    (ledger.core.reasons.check_date, ledger.store.build)."""
    import ledger

    with ledger.open(str(db_path)) as lg, pytest.raises(InputError) as raised:
        lg.build(as_of="2026-02-30")
    assert str(raised.value).startswith("as_of: '2026-02-30'")
    assert raised.value.param == "as_of"
    proc = run_in_process(["--db", str(db_path), "build", "--as-of", "2026-02-30"])
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: --as-of: '2026-02-30'")


def test_a_bad_id_prefix_is_id_prefix_to_python_and_the_option_to_the_cli(
    db_path: Path,
) -> None:
    import ledger

    plain = str(Path(__file__).parents[2] / "fixtures" / "transcripts" / "plain.jsonl")
    with ledger.open(str(db_path)) as lg, pytest.raises(InputError) as raised:
        lg.ingest_paths([plain], format="transcript", id_prefix="Bad Prefix")
    assert str(raised.value).startswith("id_prefix: 'Bad Prefix' must be lower-case letters")
    assert raised.value.param == "id_prefix"
    argv = ["--db", str(db_path), "ingest", plain, "--format", "transcript"]
    proc = run_in_process([*argv, "--id-prefix", "Bad Prefix"])
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: --id-prefix: 'Bad Prefix' must be lower-case letters")
