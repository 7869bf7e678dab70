"""What the command-line tests share: the CLI run as a user runs it (in process,
or in a subprocess with a timeout and resource limits), the state of a ledger on
either backend, generated inputs, the checks of "one line, the right exit code,
no traceback", `verify`'s answer, and raw tampering of a SQLite ledger through
the driver, as an attacker with the file would. (The seeded ledger they run on
is tests/seeded.py's.)"""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import inspect, text

from tests.conftest import chunk, run_in_process


@dataclass(frozen=True)
class Run:
    """A finished `ledger` subprocess; output decoded leniently (hostile input may
    make a buggy command print anything)."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def ledger_args(*args: str, db: str | Path | None = None) -> list[str]:
    return (["--db", str(db)] if db is not None else []) + list(args)


def ledger_cmd(*args: str, db: str | Path | None = None) -> list[str]:
    return [sys.executable, "-m", "ledger_cli", *ledger_args(*args, db=db)]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}


def run(
    *args: str,
    db: str | Path | None = None,
    input: bytes | None = None,
    stdin: Any = None,
    cwd: Path | None = None,
    timeout: float = 120,
    preexec_fn: Callable[[], None] | None = None,
    check: bool = False,
    subprocess_run: bool = False,
) -> Run:
    """Run `ledger ARGS...` as a user does; a hang fails the test at `timeout`.

    In this process through the CLI's entry point (tests/conftest.py's
    `run_in_process`: the same parsing, messages and exit codes, without a
    Python start-up per command), unless the process boundary matters: a
    `preexec_fn` (limits, closed or full descriptors), a `stdin` file,
    `subprocess_run=True`, or LEDGER_TEST_SUBPROCESS=1 for the whole run.
    """
    boundary = preexec_fn is not None or stdin is not None or subprocess_run
    if boundary or os.environ.get("LEDGER_TEST_SUBPROCESS") == "1":
        proc = subprocess.run(
            ledger_cmd(*args, db=db),
            input=input,
            stdin=stdin,
            capture_output=True,
            cwd=cwd,
            env=clean_env(),
            timeout=timeout,
            preexec_fn=preexec_fn,
        )
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
        out = Run(tuple(args), proc.returncode, stdout, stderr)
    else:
        done = run_in_process(ledger_args(*args, db=db), input, cwd, None, timeout)
        out = Run(tuple(args), done.returncode, done.stdout, done.stderr)
    if check and out.returncode != 0:
        raise AssertionError(f"ledger {' '.join(args)} exited {out.returncode}: {out.stderr}")
    return out


def file_size_limit(limit: int) -> Callable[[], None]:
    """A preexec_fn: writes beyond `limit` bytes of any file fail with EFBIG.

    SIGXFSZ is ignored (as CPython does at start-up anyway), so the write
    returns an error instead of killing the process: a full disk, as the
    program sees it.
    """

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def one_error_line(result: Run, code: int = 1, prefix: str = "error: ") -> str:
    """SPEC: the exit code, nothing on stdout, one line on stderr, no traceback."""
    assert result.returncode == code, (result.args, result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stdout == "", result.stdout[:500]
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith(prefix), lines[0]
    return lines[0][len(prefix) :]


def sqlite_url(path: Path) -> str:
    return "sqlite:///" + str(path)


@dataclass(frozen=True)
class State:
    """Row counts of every table and the chain head: equal before and after a
    refused command, on either backend."""

    counts: dict[str, int]
    head: tuple[int, str] | None


def state(url: str) -> State:
    from ledger.store.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            tables = sorted(t for t in inspect(conn).get_table_names() if t != "alembic_version")
            counts = {
                t: conn.execute(text(f'SELECT count(*) FROM "{t}"')).scalar_one() for t in tables
            }
            head = conn.execute(
                text("SELECT seq, entry_hash FROM entries ORDER BY seq DESC LIMIT 1")
            ).first()
    finally:
        engine.dispose()
    return State(counts, None if head is None else (head[0], head[1]))


def verify_ok(url: str) -> int:
    """Verify in-process (the code `ledger verify` runs); return the entry count."""
    from ledger.store.engine import open_engine, read_transaction
    from ledger.store.verify import verify

    engine = open_engine(url)
    try:
        with read_transaction(engine) as conn:
            result = verify(conn)
    finally:
        engine.dispose()
    assert result.ok, result.first_bad
    return result.entries


def cli_verify_ok(url: str) -> dict[str, Any]:
    """`ledger verify --json` in a subprocess: exit 0 and ok."""
    result = run("verify", "--json", db=url, check=True)
    data: dict[str, Any] = json.loads(result.stdout)
    assert data["ok"] is True and data["first_bad"] is None, data
    return data


def count_versions(url: str, id_prefix: str) -> int:
    from ledger.store.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    text("SELECT count(*) FROM chunk_versions WHERE chunk_id LIKE :p"),
                    {"p": id_prefix + "%"},
                ).scalar_one()
            )
    finally:
        engine.dispose()


def pack_numbers(url: str) -> list[int]:
    from ledger.store.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return [r[0] for r in conn.execute(text("SELECT pack_no FROM packs ORDER BY pack_no"))]
    finally:
        engine.dispose()


def record_line(i: int, prefix: str, content: str) -> str:
    """One chunk record of a generated file, as a JSON line (varied fields)."""
    trusts = ("approved-source", "user-input", "confirmed-state", "unverified")
    perms = ("public-read", "public-read", "state-read", "legal-read")
    rec = chunk(
        id=f"{prefix}{i:06d}",
        source_uri=f"doc://{prefix}/{i}",
        section=("evidence", "state", "policy", "current-input")[i % 4],
        trust=trusts[i % 4],
        required_permission=perms[(i // 4) % 4],
        dedupe_key=f"{prefix}{i:06d}",
        effective_from=f"2026-0{1 + i % 9}-1{i % 10}",
        estimated_tokens=5 + i % 60,
        priority=i % 101,
        content=f"{content} {i}",
    )
    if i % 10 in (0, 1):  # pairs share a dedupe key: same section, permission and trust
        rec.update(
            dedupe_key=f"{prefix}pair{i // 10:06d}",
            section="evidence",
            trust="approved-source",
            required_permission="public-read",
        )
    return json.dumps(rec, ensure_ascii=False)


def write_generated(path: Path, n: int, prefix: str, content: str = "Generated body.") -> Path:
    """A JSON Lines file of `n` valid chunk records with ids `prefix` + number."""
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(record_line(i, prefix, content) + "\n")
    return path


def write_lines(path: Path, lines: Iterable[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def sqlite_exec(db: Path | str, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Tamper through sqlite3 itself, as an attacker with the file would."""
    con = sqlite3.connect(str(db))
    try:
        con.execute(sql, params)
        con.commit()
    finally:
        con.close()


def sqlite_rows(db: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(str(db))
    try:
        return [tuple(r) for r in con.execute(sql, params)]
    finally:
        con.close()


def no_traceback(result: Run) -> None:
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "Traceback" not in result.stdout, result.stdout[-3000:]


def one_line(result: Run, code: int, prefix: str = "error: ") -> str:
    """Exit `code`, nothing on stdout, one line on stderr starting with `prefix`."""
    no_traceback(result)
    assert result.returncode == code, (result.args, result.returncode, result.stderr[-2000:])
    assert result.stdout == "", result.stdout[:500]
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith(prefix), lines[0]
    return lines[0]


def verify_json(db: Path | str) -> dict[str, Any]:
    """`ledger verify --json` (exit 0 or 4, never a traceback): its parsed answer."""
    result = run("verify", "--json", db=db)
    no_traceback(result)
    assert result.returncode in (0, 4), (result.returncode, result.stderr[-2000:])
    data: dict[str, Any] = json.loads(result.stdout)
    assert (result.returncode == 0) == data["ok"], data
    return data


def assert_verify_names(db: Path | str, seq: int) -> dict[str, Any]:
    """verify fails (exit 4) and names entry `seq` as the first bad one."""
    data = verify_json(db)
    assert data["ok"] is False, data
    assert data["first_bad"]["seq"] == seq, data
    plain = run("verify", db=db)
    no_traceback(plain)
    assert plain.returncode == 4, plain.stderr
    assert f"entry {seq}" in plain.stdout, plain.stdout
    return data


def file_bytes(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def iter_files(folder: Path) -> Iterator[Path]:
    yield from sorted(p for p in folder.rglob("*"))
