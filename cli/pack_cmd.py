"""`ledger pack` and `ledger select`: the two database-free compatibility commands.

They keep their references' exit codes, so they exit here themselves instead of
raising to `ledger_cli.main` (which maps a LedgerError to `error: ...`, exit 1).
Neither imports SQLAlchemy or Alembic: they start as fast as Python does.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from importlib.resources import files
from pathlib import Path

import click

from ledger import safeio
from ledger.core.errors import InputError, LedgerError
from ledger_cli.main import command, error_line, protected_database_files

PACK_ERROR_EXIT = 2  # the pack-fixture contract's code for every failure
SELECT_ERROR_EXIT = 1  # the budgeted-select contract's code for invalid input
MAX_SELECT_INPUT = 64 << 20  # bytes of stdin `ledger select` reads at most


def _default_fixture() -> str:
    return str(files("ledger_fixtures").joinpath("support-chunks.json"))


def _read_fixture(path: Path) -> tuple[bytes, int]:
    """The fixture's bytes and permission bits. Only a regular file is read: the
    file is opened without blocking (a named pipe with no writer is refused, not
    waited for) and a device (/dev/zero) is refused before any read."""
    try:
        with safeio.open_regular(path, "fixture") as handle:
            return handle.read(), stat.S_IMODE(os.fstat(handle.fileno()).st_mode)
    except safeio.UnreadableInputError as exc:
        # The pack-fixture contract's wording for each case.
        words = {
            "missing": f"fixture does not exist: {path}",
            "directory": f"fixture is a directory, not a file: {path}",
            "special": f"fixture is not a regular file (a device, pipe or socket): {path}",
        }
        raise InputError(words.get(exc.problem, f"cannot read fixture {path}")) from None
    except OSError as exc:
        raise InputError(f"cannot read fixture {path}: {exc.strerror or exc}") from None


def _write_pack(
    path: Path, text: str, fixture_mode: int = 0o666, protected: tuple[Path, ...] = ()
) -> Path:
    """Write atomically (a temporary file renamed over the target): all or nothing.

    The file gets the mode a plain open() would give it (as the reference's
    does), but never more group or other permission than the fixture it was
    made from: the pack holds the fixture's chunk bodies. Refused: a symbolic
    link (even a dangling one), an existing file that is not a regular file or
    has other hard links, and the fixture and database files (`protected`).
    """
    import tempfile  # only when a pack is written: keeps `ledger pack` start-up small

    from ledger import safeio

    # Not resolved: a symbolic link (dangling or not) is refused rather than
    # written through, and its target's folders are never created.
    target = Path(os.path.abspath(path))
    if target.is_dir() and not target.is_symlink():
        raise InputError(f"cannot write the JSON pack: {target} is a directory")
    try:
        safeio.check_output(target, protected=list(protected))
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
            # mkstemp creates 0600; give the file the mode a plain open() would,
            # limited for group and others to what the fixture allows them.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask & (0o600 | (fixture_mode & 0o066)))
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as exc:
        raise InputError(f"cannot write the JSON pack {target}: {exc.strerror or exc}") from None
    return target


@command("pack")
@click.option(
    "--fixture",
    "fixture",
    default=None,
    metavar="PATH",
    help="Pack fixture (JSON). Default: the fixture the project ships "
    "(docs/reference/compatibility.md).",
)
@click.option(
    "--json-pack",
    "json_pack",
    default=None,
    metavar="PATH",
    help="Also write the pack as JSON (UTF-8, indent 2, keys sorted); parents are created. "
    "A PATH that is a symbolic link (even a dangling one), not a regular file, the "
    "fixture itself, or the --db database (or its -wal/-shm/-journal files) is refused. "
    "The file gets the mode a plain open() gives (umask), but no more group or other "
    "permission than the fixture has: it holds the fixture's chunk bodies.",
)
def pack_command(fixture: str | None, json_pack: str | None) -> None:
    """Build a context pack from a pack fixture file; no database.

    The pack-fixture command of docs/reference/compatibility.md: three lines on stdout (budget, the
    selected ids in output order, the excluded ids with their reason, by id). Any
    failure prints `context pack error: <message>` on stderr, nothing on stdout,
    and exits 2.

    \b
    Example:
      ledger pack
      ledger pack --fixture chunks.json --json-pack out/pack.json
    """
    # Imported here: `ledger --help` should not pay for the selector.
    from ledger.core.fixture import build_fixture_pack

    try:
        path = Path(fixture) if fixture is not None else Path(_default_fixture())
        data, fixture_mode = _read_fixture(path)
        result = build_fixture_pack(data, source=str(path))
        lines = list(result.lines)
        if json_pack is not None:
            text = json.dumps(result.pack, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
            # Never the fixture, nor the database of --db/LEDGER_DB (or the
            # default ledger.db) with its companions, though `pack` opens none.
            protected = (path, *protected_database_files())
            written = _write_pack(Path(json_pack), text, fixture_mode, protected)
            lines.append(f"wrote {written}")
    except LedgerError as exc:
        click.echo(f"context pack error: {error_line(str(exc))}", err=True)
        sys.exit(PACK_ERROR_EXIT)
    # Printed only after everything succeeded: on failure stdout stays empty.
    click.echo("\n".join(lines))
    sys.exit(0)


@command("select")
def select_command() -> None:
    """Select items into a budget from JSON on stdin (docs/reference/compatibility.md).

    Reads one object `{"budget", "items": [{"id", "cost", "priority",
    "required", "content"}]}`. Prints `{"ok": true, "result": {"selected",
    "omitted", "used"}}` and exits 0, or `{"ok": false, "error": "..."}` and
    exits 1 for invalid input (duplicate keys, NaN, extra fields, a boolean as
    an integer, required items over the budget, more than 64 MiB of input).

    \b
    Example:
      echo '{"budget": 8, "items": [{"id": "a", "cost": 3, "priority": 0,
            "required": true, "content": "x"}]}' | ledger select
    """
    from ledger.core.budgeted import run
    from ledger.core.strictjson import loads_strict

    # Bounded: `ledger select < /dev/zero` (or an endless pipe) must end.
    data = sys.stdin.buffer.read(MAX_SELECT_INPUT + 1)
    try:
        if len(data) > MAX_SELECT_INPUT:
            raise InputError(
                f"stdin: input larger than {MAX_SELECT_INPUT >> 20} MiB; "
                "the selector reads at most that much"
            )
        result = run(loads_strict(data, source="stdin"))
    except LedgerError as exc:
        click.echo(json.dumps({"ok": False, "error": str(exc)}, sort_keys=True))
        sys.exit(SELECT_ERROR_EXIT)
    click.echo(json.dumps({"ok": True, "result": result}, sort_keys=True))
    sys.exit(0)
