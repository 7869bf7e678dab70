"""The `ledger` command group: global options, lazy subcommands, exit codes.

Exit codes (docs/reference/exit-codes.md): 0 success, 1 invalid input or refused
operation, 2 usage error, 3 not found, 4 integrity failure. The code comes from
the exception's class alone (`exit_code_of`). A `LedgerError` becomes one line
`error: ...` on stderr, its API parameter named as this command's option
(`as_of: ...` becomes `--as-of: ...`, `render_error`); so does a database
failure (a full disk, an I/O error, a lost server: SQLAlchemy's DBAPIError,
exit 1; a stored text that is not UTF-8, exit 4). Any other exception is a bug
and keeps its traceback.

Every command runs with the cyclic garbage collector paused
(`ledger_cli.collector`), except the long-running server (`ledger mcp`).
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import importlib.util
import io
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ledger.core.errors import (
    EXIT_INVALID,
    EXIT_USAGE,
    IntegrityError,
    LedgerError,
    RefusedError,
)
from ledger_cli.collector import collector_paused, freeze_loaded

# name -> "module:attribute". Modules are imported only when their command runs
# (or when help lists them), so a database-free command never loads SQLAlchemy.
COMMANDS: dict[str, str] = {
    "init": "ledger_cli.db_cmds:init_command",
    "ingest": "ledger_cli.ingest_cmd:ingest_command",
    "chunks": "ledger_cli.ingest_cmd:chunks_command",
    "subject": "ledger_cli.access_cmds:subject_group",
    "policy": "ledger_cli.access_cmds:policy_group",
    "build": "ledger_cli.build_cmd:build_command",
    "packs": "ledger_cli.packs_cmd:packs_command",
    "show": "ledger_cli.packs_cmd:show_command",
    "export": "ledger_cli.packs_cmd:export_command",
    "why-evicted": "ledger_cli.audit_cmds:why_evicted_command",
    "diff": "ledger_cli.audit_cmds:diff_command",
    "verify": "ledger_cli.audit_cmds:verify_command",
    "head": "ledger_cli.audit_cmds:head_command",
    "replay": "ledger_cli.audit_cmds:replay_command",
    "pack": "ledger_cli.pack_cmd:pack_command",
    "select": "ledger_cli.pack_cmd:select_command",
    "transcript": "ledger_cli.transcript_cmd:transcript_group",
    "report": "ledger_cli.report_cmd:report_command",
    # Search and why
    "search": "ledger_cli.search_cmds:search_command",
    "check": "ledger_cli.check_cmd:check_command",
    "reinstate": "ledger_cli.retract_cmd:reinstate_command",
    "why": "ledger_cli.search_cmds:why_command",
    # Integrations
    "mcp": "ledger_cli.mcp_cmd:mcp_command",
    # Documents.
    "retract": "ledger_cli.retract_cmd:retract_command",
    # Proofs and checkpoints
    "keygen": "ledger_cli.proof_cmds:keygen_command",
    "checkpoint": "ledger_cli.proof_cmds:checkpoint_group",
    "prove": "ledger_cli.proof_cmds:prove_command",
    "proof": "ledger_cli.proof_cmds:proof_group",
    # Erasure and retention
    "erase": "ledger_cli.erase_cmd:erase_command",
}


# Whether this process runs one command and ends (the `ledger` command itself),
# or calls main() with arguments, as the tests do.
_PROCESS = {"one_command": False}


class Settings:
    """What every database command needs: where the database is, and its `Ledger`
    once a command has asked for it (closed when the command's context closes)."""

    def __init__(self, db: str) -> None:
        self.db = db
        self._ledger: Any = None

    def ledger(self, ctx: click.Context) -> Any:
        """The `ledger.Ledger` of --db, opened on first use (SQLAlchemy loads only then)."""
        if self._ledger is None:
            from ledger.api import open as open_ledger

            self._ledger = open_ledger(self.db)
            ctx.call_on_close(self._close)
            if _PROCESS["one_command"]:
                freeze_loaded()
        return self._ledger

    def database_files(self) -> list[Path]:
        """The SQLite file of --db and its companions (`safeio.database_files`),
        without opening the ledger: what no output of any command may alias,
        including the database-free ones (`pack --json-pack`, `keygen -o`,
        `transcript`). A server URL protects nothing. SQLAlchemy loads only
        for a `sqlite:` URL; a plain path (the usual case, and the default
        `ledger.db`) is resolved as `ledger.open` resolves it."""
        from ledger.safeio import database_files

        if "://" not in self.db:
            return database_files(os.path.abspath(self.db))
        if not self.db.lower().startswith("sqlite"):
            return []
        from ledger.api.files import database_file

        return database_files(database_file(self.db))

    def _close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None


pass_settings = click.make_pass_decorator(Settings)


def protected_database_files() -> list[Path]:
    """`Settings.database_files` of the command running now (none outside the
    `ledger` group, as when a test invokes a command alone)."""
    ctx = click.get_current_context(silent=True)
    settings = ctx.find_object(Settings) if ctx is not None else None
    return settings.database_files() if settings is not None else []


# The innermost command whose run raised the LedgerError being reported: its
# options name the error's `param` (set by `Command.invoke`, read by `_main`).
FAILED_IN: list[click.Command] = []


class Command(click.Command):
    """A `ledger` command: it runs with the garbage collector paused (unless
    `pause_collector=False`: a server), and a LedgerError it raises is
    rendered with its options' names."""

    def __init__(self, *args: Any, pause_collector: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pause_collector = pause_collector

    def invoke(self, ctx: click.Context) -> Any:
        try:
            if not self.pause_collector:
                return super().invoke(ctx)
            with collector_paused():
                return super().invoke(ctx)
        except KeyboardInterrupt:
            # Caught here, before click turns it into Abort and prints an empty
            # line: one line instead (`interrupted`). Every write is one
            # transaction, rolled back by the exception on its way out.
            if not FAILED_IN:
                FAILED_IN.append(self)
            raise interrupted() from None
        except LedgerError:
            if not FAILED_IN:  # the innermost command comes first
                FAILED_IN.append(self)
            raise


class Interrupted(RefusedError):
    """The user interrupted the command (Ctrl-C, SIGINT): exit 1."""


def interrupted() -> Interrupted:
    """The one line of an interrupted command. A write interrupted before its
    commit was rolled back (each command writes in one transaction); one that
    was committed is named (`RECORDED`), so it is not run twice."""
    if RECORDED:
        return Interrupted(
            f"interrupted after {', '.join(RECORDED)} recorded; do not run it again "
            "(`ledger head` names the newest entry)"
        )
    return Interrupted("interrupted; nothing was recorded by this command (run it again)")


class Group(Command, click.Group):
    """A group of `ledger` commands; its subcommands are `Command`s. The group
    itself does not pause the collector: each subcommand decides."""

    command_class = Command
    group_class = type  # click: a subgroup is of this group's class

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("pause_collector", False)
        super().__init__(*args, **kwargs)


def command(name: str, **kwargs: Any) -> Callable[[Callable[..., Any]], Command]:
    """`click.command` for a `ledger` command (`cls`: a subclass of `Command`)."""
    kwargs.setdefault("cls", Command)
    made: Callable[[Callable[..., Any]], Command] = click.command(name, **kwargs)
    return made


def group(name: str, **kwargs: Any) -> Callable[[Callable[..., Any]], Group]:
    """`click.group` for a group of `ledger` commands."""
    made: Callable[[Callable[..., Any]], Group] = click.group(name, cls=Group, **kwargs)
    return made


def render_error(error: LedgerError, command: click.Command | None) -> str:
    """The error's one line as this command says it: a message about an API
    parameter (`as_of: ...`, `param="as_of"`) names the command's option for
    it instead (`--as-of: ...`) when the command has one (an option of that
    name, or spelled `--as-of`: `format` is `--format` even where the command
    calls it `fmt`). A message about the parameter that starts with something
    else (a file's name) names the option at its end: `a.yaml: cannot tell the
    format ... (--format)`. Else the message as raised.

    >>> c = click.Command("build", params=[click.Option(["--as-of"])])
    >>> render_error(LedgerError("as_of: must use YYYY-MM-DD", param="as_of"), c)
    '--as-of: must use YYYY-MM-DD'
    """
    text = str(error)
    param = error.param
    if param is None or command is None:
        return text
    flag = "--" + param.replace("_", "-")
    for option in command.params:
        if isinstance(option, click.Option) and (option.name == param or flag in option.opts):
            name = ([o for o in option.opts if o.startswith("--")] or option.opts)[0]
            if text.startswith(f"{param}:"):
                return name + text[len(param) :]
            return f"{text} ({name})"
    return text


def exit_code_of(error: LedgerError) -> int:
    """The exit code of a LedgerError: its class's (docs/reference/exit-codes.md).
    The one place the command line chooses a code for a library error."""
    return error.exit_code


class LazyGroup(Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(
            name
            for name, target in COMMANDS.items()
            if importlib.util.find_spec(target.split(":")[0]) is not None
        )

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        if importlib.util.find_spec(module_name) is None:
            return None
        command: click.Command = getattr(importlib.import_module(module_name), attr)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="LEDGER_DB",
    default="ledger.db",
    show_default=True,
    metavar="PATH_OR_URL",
    help="SQLite file, or a SQLAlchemy URL (postgresql+psycopg://...). Also LEDGER_DB.",
)
@click.version_option(package_name="context-ledger", prog_name="ledger")
@click.pass_context
def cli(ctx: click.Context, db: str) -> None:
    """Versioned context chunks and audited context packs.

    \b
    ledger init && ledger ingest chunks.json
    ledger subject grant default policy-read
    ledger policy set --allow-trust approved-source --budget 170
    ledger build --as-of 2026-07-21
    ledger why-evicted shipping-note
    """
    ctx.obj = Settings(db=db)


class DatabaseFailure(RefusedError):
    """The database failed (a full disk, an I/O error, a lost server, a
    read-only database, a missing privilege): not a bug, exit 1."""


def database_error(exc: BaseException) -> LedgerError | None:
    """A database failure as a LedgerError of its class, or None for any other
    exception.

    Every SQLAlchemy `DBAPIError` (a full disk, an I/O error, a lost server, a
    read-only database, a missing privilege, a constraint the database enforces)
    is a failure of the database, not a bug: a `DatabaseFailure`. A stored text
    that sqlite cannot decode as UTF-8 means the database was altered outside
    the ledger: an `IntegrityError`. The class is checked by name so that the
    database-free commands never import SQLAlchemy. Only the driver's primary
    message is used: SQLAlchemy's text shows the statement's parameters and
    PostgreSQL's DETAIL may show a failing row, and either may hold chunk bodies.
    The advice fits the cause (a read-only database is not a full disk).
    """
    if not any(
        cls.__name__ == "DBAPIError" and cls.__module__ == "sqlalchemy.exc"
        for cls in type(exc).__mro__
    ):
        return None
    orig = getattr(exc, "orig", None)
    if "Could not decode to UTF-8" in str(orig):
        # sqlite3 quotes the undecodable text, a chunk body, in its message.
        return IntegrityError(
            "a stored text is not valid UTF-8: the database was altered; "
            "run `ledger verify` to name the entry"
        )
    diag = getattr(orig, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    text = primary if isinstance(primary, str) and primary else (str(orig) if orig else "")
    # The first line only: DETAIL and CONTEXT lines may quote a row.
    reason = " ".join(text.splitlines()[0].split()) if text.strip() else type(exc).__name__
    return DatabaseFailure(
        f"the database failed: {reason}; nothing was recorded by this command "
        f"({_database_advice(reason.lower())})"
    )


def _database_advice(low: str) -> str:
    """What to do about a database failure, from the driver's lower-cased words."""
    if "read-only" in low or "readonly" in low or "read only" in low or "hot standby" in low:
        return (
            "the database is read-only for this connection; run it where the ledger may be written"
        )
    if "permission denied" in low or "privilege" in low or "must be owner" in low:
        return "the database user lacks a privilege; grant it, or connect as the ledger's owner"
    if any(w in low for w in ("disk", "full", "no space", "i/o", "disk i/o")):
        return "free disk space or fix the database, then run it again"
    if "already exists" in low:
        return "the schema is not what this ledger made; run `ledger verify`, or use a new database"
    return "fix the database or the connection, then run it again"


# What a command recorded before it printed (`pack 3 (entry 9)`): if printing
# then fails (a full device, a closed stdout), the user learns that the record
# exists, so a retry does not record it twice.
RECORDED: list[str] = []


class _ClosedStdout(io.TextIOBase):
    """Standard output when the process started with it closed: writing fails
    (a command whose output goes nowhere must not report success)."""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def _stdout_failure(exc: BaseException) -> bool:
    """An OSError raised while writing to standard output (click.echo to stdout)."""
    if not isinstance(exc, OSError) or isinstance(exc, BrokenPipeError):
        return False
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "echo" and frame.f_globals.get("__name__") == "click.utils":
            return not frame.f_locals.get("err")
        tb = tb.tb_next
    return isinstance(sys.stdout, _ClosedStdout)


def _flush_stdout() -> None:
    if sys.stdout is not None and not sys.stdout.closed:
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the group and map errors to exit codes in one place.

    With no `argv` (the installed `ledger` command, `python -m ledger_cli`) the
    process runs this one command: what is loaded once the ledger is open, and
    everything at the end, is frozen out of the garbage collector, so that its
    collections (after a selection, at shutdown) do not walk SQLAlchemy's
    hundreds of thousands of objects again (`ledger_cli.collector`). Exit
    handlers still run.
    """
    _PROCESS["one_command"] = argv is None
    try:
        _main(argv)
    finally:
        if argv is None:
            freeze_loaded()


def error_line(message: str) -> str:
    """An error message as one line for the terminal: each control, separator or
    invisible format character (a newline, ESC, U+202E) escaped (`\\x1b`), as
    stored metadata is (`ledger.core.records.printable`). A file name or --db
    path holding one can then neither forge a second `error:` line nor move the
    cursor nor reverse the text. Every error line of the command line goes
    through here."""
    from ledger.core.records import printable

    return printable(message)


def _fail(error: LedgerError) -> None:
    """Report a LedgerError in one line on stderr and exit with its class's code."""
    command = FAILED_IN[0] if FAILED_IN else None
    click.echo(f"error: {error_line(render_error(error, command))}", err=True)
    sys.exit(exit_code_of(error))


def _main(argv: list[str] | None) -> None:
    RECORDED.clear()  # one run per process, but main() may be called in-process
    FAILED_IN.clear()
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()
    try:
        cli.main(args=argv, prog_name="ledger", standalone_mode=False)
        _flush_stdout()
    except LedgerError as exc:
        _fail(exc)
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        path = ctx.command_path if ctx is not None else ""
        if path.split(" ")[1:2] in (["pack"], ["select"], ["transcript"]):
            exc.show()  # the compatibility commands keep their references' form
        else:
            # One line, as every other error: what, and where to read how.
            said = error_line(" ".join(exc.format_message().split()).rstrip("."))
            hint = f" (see `{path} --help`)" if ctx is not None and exc.exit_code == 2 else ""
            click.echo(f"error: {said}{hint}", err=True)
        sys.exit(exc.exit_code if exc.exit_code is not None else EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        # `ledger chunks | head`: the reader left; that is not an error of ours.
        sys.stderr.close()
        sys.exit(0)
    except OSError as exc:
        if not _stdout_failure(exc):
            raise
        reason = exc.strerror or str(exc)
        # Nothing more goes to stdout (a flush at exit would fail again).
        with contextlib.suppress(Exception):
            sys.stdout = _ClosedStdout()
        if RECORDED:
            click.echo(
                f"warning: {', '.join(RECORDED)} recorded, but printing failed: "
                f"cannot write to standard output ({reason}); "
                + (
                    "`ledger show` prints it"
                    if all(r.startswith("pack") for r in RECORDED)
                    else "do not run it again (`ledger head` names the newest entry)"
                ),
                err=True,
            )
            sys.exit(0)
        click.echo(f"error: cannot write to standard output ({reason})", err=True)
        sys.exit(EXIT_INVALID)
    except Exception as exc:
        # A full disk, an I/O error, a lost server, a read-only database or a
        # missing privilege is not a bug: one line, exit 1. The command's
        # transaction was rolled back (or never committed), so nothing it would
        # have recorded is in the ledger.
        error = database_error(exc)
        if error is None:
            raise
        _fail(error)
    sys.exit(0)


if __name__ == "__main__":
    main()
