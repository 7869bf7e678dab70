"""Issue 14, class "secrets and bodies in messages": every SQLAlchemy `DBAPIError`
becomes one line with exit 1 (never a traceback with the statement's
`[parameters: ...]`, which hold chunk bodies), with advice that fits the cause;
and every error path's stderr is grepped for a known body.

PostgreSQL: a read-only transaction (`default_transaction_read_only`, what a hot
standby gives too) and a role without write privileges. SQLite: a read-only
connection (`?mode=ro`).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clitools import no_traceback, one_line, run, sqlite_url, state
from tests.conftest import chunk, write_jsonl
from tests.seeded import BODY_MARKER

BODY = "Body-of-a-new-chunk-0c41e2: never in a message"


def _new_chunks(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "new.jsonl", [chunk(id="new-note", content=BODY)])


@pytest.fixture(scope="module")
def pg_ledger(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A seeded ledger on the test server, and a role that may only read it."""
    import psycopg

    from tests import dbtools, pgserver
    from tests.seeded import SECRET_CHUNK, seed_ledger

    url = pgserver.create_database(pg_server, f"review_{os.getpid()}_{uuid.uuid4().hex[:8]}")
    seed_ledger(url, init=True)
    folder = tmp_path_factory.mktemp("pgsecret")
    run("ingest", str(write_jsonl(folder / "s.jsonl", [SECRET_CHUNK])), db=url, check=True)
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(
        url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True
    ) as c:
        c.execute("DROP ROLE IF EXISTS reader_only")  # a cluster-wide name; one per run
        c.execute("CREATE ROLE reader_only LOGIN")
        c.execute(f'GRANT CONNECT ON DATABASE "{name}" TO reader_only')
        c.execute("GRANT USAGE ON SCHEMA public TO reader_only")
        c.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader_only")
    yield url
    dbtools.drop(url)


def _as_reader(url: str) -> str:
    rest = url.split("://", 1)[1].split("@", 1)[1]
    return f"postgresql+psycopg://reader_only@{rest}"


def _read_only_tx(url: str) -> str:
    return url + "?options=-c%20default_transaction_read_only%3Don"


@pytest.mark.parametrize("how", ["read-only-transaction", "read-only-role"])
@pytest.mark.parametrize(
    "command",
    [
        ("ingest",),
        ("subject", "grant", "default", "legal-read"),
        ("build", "--as-of", "2026-07-21"),
        ("policy", "set", "--budget", "100"),
    ],
    ids=lambda c: c[0],
)
def test_postgresql_errors_are_one_line_without_parameters(
    pg_ledger: str, tmp_path: Path, how: str, command: tuple[str, ...]
) -> None:
    """Errors that are not OperationalError (read-only transaction or role,
    permission denied) gave a raw traceback whose parameters held the body."""
    url = _read_only_tx(pg_ledger) if how == "read-only-transaction" else _as_reader(pg_ledger)
    args = command + ((str(_new_chunks(tmp_path)),) if command == ("ingest",) else ())
    result = run(*args, db=url, timeout=120)
    line = one_line(result, 1)
    assert BODY not in result.stderr and BODY_MARKER not in result.stderr
    assert "[parameters" not in line and "[SQL" not in line, line
    assert "free disk space" not in line, line
    assert ("read-only" in line) if how == "read-only-transaction" else ("privilege" in line), line


def test_sqlite_read_only_database_is_not_a_full_disk(seeded_file: Path, tmp_path: Path) -> None:
    """The read-only-database error advised freeing disk space."""
    url = f"sqlite:///file:{seeded_file}?mode=ro&uri=true"
    before = state(sqlite_url(seeded_file))
    result = run("ingest", str(_new_chunks(tmp_path)), db=url)
    line = one_line(result, 1)
    assert "read-only" in line and "free disk space" not in line, line
    assert BODY not in result.stderr
    assert state(sqlite_url(seeded_file)) == before


def test_existing_tables_without_a_schema_revision(seeded_file: Path) -> None:
    """`init` on a ledger whose alembic_version was dropped said "table entries
    already exists" and advised freeing disk space."""
    import sqlite3

    con = sqlite3.connect(seeded_file)
    con.execute("DROP TABLE alembic_version")
    con.commit()
    con.close()
    line = one_line(run("init", db=seeded_file), 1)
    assert "free disk space" not in line, line
    assert "not a ledger" in line or "schema" in line, line


# Every error path of the ledger, on a ledger that holds BODY_MARKER: none may
# print a body (the new record's nor a stored one), nor a traceback.
def _error_paths(tmp_path: Path, db: Path) -> list[tuple[tuple[str, ...], str | Path]]:
    changed = write_jsonl(
        tmp_path / "changed.jsonl",
        [
            {
                **json.loads(json.dumps(chunk())),
                "id": "secret-note",
                "source_uri": "doc://secret",
                "dedupe_key": "secret-note",
                "estimated_tokens": 5,
                "priority": 10,
                "content": BODY + " (changed)",
            }
        ],
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(chunk(id="bad-note", content=BODY, priority=101)) + "\n")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "content": "' + BODY + '", \n')
    required = write_jsonl(
        tmp_path / "req.jsonl",
        [
            chunk(
                id="req-note",
                content=BODY,
                required=True,
                required_permission="nobody-has-it",
                dedupe_key="req-note",
            )
        ],
    )
    run("ingest", str(required), db=db, check=True)
    ro = f"sqlite:///file:{db}?mode=ro&uri=true"
    return [
        (("ingest", str(changed)), db),
        (("ingest", str(bad)), db),
        (("ingest", str(broken)), db),
        (("ingest", str(_new_chunks(tmp_path))), ro),
        (("subject", "grant", "default", "x-read"), ro),
        (("build", "--as-of", "2026-07-21"), ro),
        (("build", "--as-of", "2026-07-21"), db),  # the required chunk fails its gate
        (("build", "--as-of", "2026-07-21", "--budget", "1"), db),
        (("build", "--as-of", "not-a-date"), db),
        (("show", "999"), db),
        (("export", "999", "--with-content"), db),
        (("why-evicted", "no-such-chunk"), db),
        (("replay", "999"), db),
        (("diff", "1", "999"), db),
        (("report", "999"), db),
        (("verify", "--checkpoint", "bogus"), db),
    ]


def test_no_error_path_prints_a_body(seeded_file: Path, tmp_path: Path) -> None:
    for args, db in _error_paths(tmp_path, seeded_file):
        result = run(*args, db=db)
        no_traceback(result)
        assert result.returncode != 0, (args, result.stdout[:300])
        for text in (result.stderr, result.stdout):
            assert BODY not in text and BODY_MARKER not in text, (args, text[-500:])
        assert len(result.stderr.splitlines()) == 1, (args, result.stderr)
