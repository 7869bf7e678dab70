"""Shared fixtures: real SQLite files built by the real migrations, and the CLI
run as a user runs it (in process by default, in a subprocess where it matters)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "support-chunks.json"


def run_ledger(
    *args: str,
    db: Path | str | None = None,
    input: bytes | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = False,
    subprocess_run: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run `ledger ARGS...` as a user would and return its exit code and output.

    In process by default (the CLI's own entry point, `ledger_cli.main.main`,
    with stdin, stdout, stderr, environment and folder swapped for the call):
    the same parsing, rendering and exit codes without a Python start-up per
    command. `subprocess_run=True` (or LEDGER_TEST_SUBPROCESS=1 for the whole
    run) runs `python -m ledger_cli` in a child process instead, for what only a
    process boundary shows (signals, terminals, inherited descriptors).
    """
    argv = (["--db", str(db)] if db is not None else []) + list(args)
    if subprocess_run or os.environ.get("LEDGER_TEST_SUBPROCESS") == "1":
        out = _run_subprocess(argv, input, cwd, env)
    else:
        out = run_in_process(argv, input, cwd, env)
    if check and out.returncode != 0:
        raise AssertionError(f"ledger {' '.join(args)} exited {out.returncode}: {out.stderr}")
    return out


def _run_subprocess(
    argv: list[str], input: bytes | None, cwd: Path | None, env: dict[str, str] | None
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "ledger_cli", *argv]
    full_env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    full_env.update(env or {})
    proc = subprocess.run(cmd, input=input, capture_output=True, cwd=cwd, env=full_env, timeout=600)
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    )


def run_in_process(
    argv: list[str],
    input: bytes | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    errors: str = "replace",
) -> subprocess.CompletedProcess[str]:
    """`ledger ARGV...` through its entry point in this process. A command still
    running after `timeout` seconds raises subprocess.TimeoutExpired, as
    `subprocess.run` does for a hung child (SIGALRM; in the main thread only).
    Output is decoded as UTF-8 with `errors` ("strict": bad bytes fail the test)."""
    import traceback

    from click.testing import CliRunner

    from ledger_cli.main import main

    overrides: dict[str, str | None] = {"LEDGER_DB": None, **(env or {})}
    before = os.getcwd()
    code: int
    with (
        CliRunner().isolation(input=input, env=overrides) as (stdout, stderr, _),
        _deadline(timeout, argv),
    ):
        try:
            if cwd is not None:
                os.chdir(cwd)
            main(argv)
            code = 0
        except subprocess.TimeoutExpired:
            raise
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # a bug: the traceback a user would see, exit 1 as Python gives
            sys.stderr.write(traceback.format_exc())
            code = 1
        finally:
            os.chdir(before)
            sys.stdout.flush()
            sys.stderr.flush()
        out, err = stdout.getvalue(), stderr.getvalue()
    return subprocess.CompletedProcess(
        ["ledger", *argv], code, out.decode("utf-8", errors), err.decode("utf-8", errors)
    )


@contextmanager
def _deadline(seconds: float | None, argv: list[str]) -> Iterator[None]:
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise subprocess.TimeoutExpired(["ledger", *argv], seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def ledger_json(*args: str, db: Path | str | None = None) -> Any:
    """Run a `--json` command and return its parsed stdout (it must succeed)."""
    proc = run_ledger(*args, "--json", db=db, check=True)
    return json.loads(proc.stdout)


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_ledger


@pytest.fixture
def db_url_factory(tmp_path: Path) -> Callable[[str], str]:
    def make(name: str = "ledger.db") -> str:
        return "sqlite:///" + str(tmp_path / name)

    return make


@pytest.fixture(scope="session", autouse=True)
def sqlite_init_template() -> str:
    """The SQLite ledger `ledger init` makes, once per process, before any test
    runs (so no test's monkeypatching can touch it): fresh ledgers are copies."""
    from tests import dbtools

    return dbtools.init_template("sqlite")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh ledger file as `ledger init` makes it (a copy of the one it made
    for this process, with a ledger id of its own)."""
    from tests import dbtools

    return Path(dbtools.new_ledger(tmp_path, "sqlite"))


def chunk(**overrides: Any) -> dict[str, Any]:
    """A valid chunk record; tests override the fields they care about."""
    rec: dict[str, Any] = {
        "id": "alpha",
        "section": "evidence",
        "source_uri": "doc://alpha",
        "source_version": "1",
        "effective_from": "2026-01-01",
        "expires_on": None,
        "required_permission": "public-read",
        "trust": "approved-source",
        "dedupe_key": "alpha",
        "estimated_tokens": 10,
        "priority": 50,
        "required": False,
        "content": "Alpha content.",
    }
    rec.update(overrides)
    return rec


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --------------------------------------------------------------------------
# Both backends: SQLite files and a real PostgreSQL server on loopback.
# --------------------------------------------------------------------------

BACKENDS = [b for b in os.environ.get("LEDGER_TEST_BACKENDS", "sqlite,postgresql").split(",") if b]


@pytest.fixture(scope="session")
def pg_server():  # type: ignore[no-untyped-def]
    """One throwaway PostgreSQL cluster for the whole run, stopped by its pid."""
    from tests import dbtools, pgserver

    server = pgserver.start()
    dbtools.SERVER = server
    dbtools.init_template("postgresql")  # before any test (and its monkeypatching) runs
    yield server
    dbtools.forget_templates()
    dbtools.SERVER = None
    pgserver.stop(server)


def _new_database_url(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, name: str
) -> str:
    if backend == "sqlite":
        return "sqlite:///" + str(tmp_path / f"{name}.db")
    from tests import pgserver

    server = request.getfixturevalue("pg_server")
    return pgserver.create_database(server, f"{name}_{os.getpid()}_{uuid.uuid4().hex[:10]}")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module", params=BACKENDS)
def module_backend(request: pytest.FixtureRequest) -> str:
    """The backend of a module-scoped ledger (a history built once, read by many tests)."""
    if request.param == "postgresql":
        request.getfixturevalue("pg_server")
    return str(request.param)


@pytest.fixture
def new_db(request: pytest.FixtureRequest, backend: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Make fresh ledgers (by `ledger init`) on this test's backend: `new_db(name)`."""
    from tests import dbtools

    if backend == "postgresql":
        request.getfixturevalue("pg_server")

    made: list[str] = []

    def make(name: str = "ledger") -> str:
        made.append(dbtools.new_ledger(tmp_path / name, backend, name))
        return made[-1]

    yield make
    for db in made:
        dbtools.drop(db)


@pytest.fixture
def db_url(request: pytest.FixtureRequest, backend: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A fresh ledger URL on each backend, as `ledger init` makes it: a copy of
    the ledger it made once for this process (a SQLite file copied, or CREATE
    DATABASE ... TEMPLATE), with a ledger id of its own."""
    from tests import dbtools

    if backend == "postgresql":
        request.getfixturevalue("pg_server")
        url = dbtools.new_ledger(tmp_path, backend)
    else:
        url = "sqlite:///" + dbtools.new_ledger(tmp_path, backend)
    yield url
    dbtools.drop(url)


@pytest.fixture
def ledger_engine(db_url: str):  # type: ignore[no-untyped-def]
    """An engine on a fresh migrated ledger (`db_url`), on each backend."""
    from ledger.store.engine import make_engine

    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def empty_db_url(request: pytest.FixtureRequest, backend: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A database URL on each backend with no schema yet (for `ledger init` tests)."""
    from tests import dbtools

    url = _new_database_url(request, backend, tmp_path, "empty")
    yield url
    dbtools.drop(url)


# --------------------------------------------------------------------------
# The seeded ledger (tests/seeded.py): the fixture ingested, its request as
# grants and policy (budget 170), and, where said, pack 1 as of 2026-07-21.
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seeded_template(tmp_path_factory: pytest.TempPathFactory, module_backend: str):  # type: ignore[no-untyped-def]
    """Entries 1-3 of the seeded ledger (no pack), once per module and backend."""
    from tests import dbtools
    from tests.seeded import seed_ledger

    db = dbtools.new_ledger(tmp_path_factory.mktemp("seeded"), module_backend)
    seed_ledger(db, build=False)
    yield db
    dbtools.drop(db)


@pytest.fixture
def seeded(seeded_template: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A copy of a ledger holding entries 1-3 of the seeded ledger (budget 170),
    on each backend."""
    from tests import dbtools

    db = dbtools.copy_ledger(seeded_template, tmp_path / "ledger.db")
    yield db
    dbtools.drop(db)


@pytest.fixture(scope="module")
def seeded_file_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seeded SQLite ledger file, once per module: 1 ingest, 2 grant, 3 policy,
    4 pack 1, 5 ingest of the secret chunk (tests/seeded.py's BODY_MARKER), 6 pack 2."""
    from tests.seeded import make_seeded_file

    return make_seeded_file(tmp_path_factory.mktemp("seeded"), secret=True)


@pytest.fixture
def seeded_file(seeded_file_base: Path, tmp_path: Path) -> Path:
    """This test's own byte copy of `seeded_file_base` (tmp_path/ledger.db)."""
    from tests.seeded import copy_file

    return copy_file(seeded_file_base, tmp_path)


@pytest.fixture(scope="module")
def seeded_sqlite_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seeded SQLite ledger file with pack 1 (entries 1-4), shared by a module's
    tests, which copy it before they write."""
    from tests.seeded import make_seeded_file

    path = make_seeded_file(tmp_path_factory.mktemp("seeded"))
    assert not Path(str(path) + "-wal").exists()  # checkpointed: no WAL left
    return path
