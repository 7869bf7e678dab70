"""The `ledger` command group: global options, lazy subcommands, exit codes.

Exit codes (SPEC.md): 0 success, 1 invalid input or refused operation, 2 usage
error, 3 not found, 4 integrity failure. A `LedgerError` becomes one line
`error: ...` on stderr with its code; so does a database failure (a full disk,
an I/O error, a lost server: SQLAlchemy's OperationalError, exit 1). Any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from ledger.core.errors import EXIT_INVALID, EXIT_USAGE, LedgerError

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
    # Search and why (issue 16)
    "search": "ledger_cli.search_cmds:search_command",
    "why": "ledger_cli.search_cmds:why_command",
    # Integrations (issue 17)
    "mcp": "ledger_cli.mcp_cmd:mcp_command",
    # Documents (issue 15).
    "retract": "ledger_cli.retract_cmd:retract_command",
    # Proofs and checkpoints (issue 18)
    "keygen": "ledger_cli.proof_cmds:keygen_command",
    "checkpoint": "ledger_cli.proof_cmds:checkpoint_group",
    "prove": "ledger_cli.proof_cmds:prove_command",
    "proof": "ledger_cli.proof_cmds:proof_group",
}


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
        return self._ledger

    def _close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None


pass_settings = click.make_pass_decorator(Settings)


class LazyGroup(click.Group):
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
        return getattr(importlib.import_module(module_name), attr)


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


def database_failure(exc: BaseException) -> str | None:
    """The one-line reason of a database failure (disk full, I/O error, lost server).

    SQLAlchemy wraps the driver's OperationalError; this checks the class by name
    so that the database-free commands never import SQLAlchemy. Only the driver's
    own message is used: SQLAlchemy's text also shows the statement's parameters,
    which may hold chunk bodies. Any other exception returns None (a bug keeps its
    traceback).
    """
    if not any(
        cls.__name__ == "OperationalError" and cls.__module__ == "sqlalchemy.exc"
        for cls in type(exc).__mro__
    ):
        return None
    orig = getattr(exc, "orig", None)
    reason = " ".join(str(orig).split()) if orig is not None else ""
    return reason or type(exc).__name__


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the group and map errors to exit codes in one place."""
    try:
        cli.main(args=argv, prog_name="ledger", standalone_mode=False)
    except LedgerError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code if exc.exit_code is not None else EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        # `ledger chunks | head`: the reader left; that is not an error of ours.
        sys.stderr.close()
        sys.exit(0)
    except Exception as exc:
        # A full disk, an I/O error or a lost database server is not a bug: one
        # line, exit 1. The command's transaction was rolled back (or never
        # committed), so nothing it would have recorded is in the ledger.
        reason = database_failure(exc)
        if reason is None:
            raise
        click.echo(
            f"error: the database failed: {reason}; nothing was recorded by this command "
            "(free disk space or fix the database, then run it again)",
            err=True,
        )
        sys.exit(EXIT_INVALID)
    sys.exit(0)


if __name__ == "__main__":
    main()
