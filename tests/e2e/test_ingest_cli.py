"""`ledger init`, `ledger ingest` and `ledger chunks` as a user runs them: subprocesses
on real databases, checking stdout, stderr and exit codes.

Every test that reads or writes a ledger runs on each backend, a SQLite file and
a PostgreSQL database (`db_url`, `empty_db_url`, and `shared_db` on
`module_backend`). SQLite-only, because they are about the SQLite file itself:
`ledger init` making an owner-only file, LEDGER_DB naming a path, the default
./ledger.db, a missing file that is not created, a file that is not a database,
a missing folder, and a plain copy of the file being a full ledger.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.store.engine import SCHEMA_REVISION
from tests import dbtools
from tests.conftest import FIXTURE, chunk, run_ledger, write_jsonl
from tests.dbtools import snapshot
from tests.store.ingest_cases import (
    RECORD_RULES,
    Rule,
    array_bytes,
    good_lines,
    jsonl_bytes,
    record_text,
)

FIXTURE_IDS = [c["id"] for c in json.loads(FIXTURE.read_text(encoding="utf-8"))["chunks"]]
SUMMARY_KEYS = {"batch", "read", "new", "unchanged"}


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """SPEC: exit code, nothing on stdout, one line `error: ...` on stderr, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    return lines[0][len("error: ") :]


@pytest.fixture(scope="module")
def shared_db(tmp_path_factory: pytest.TempPathFactory, module_backend: str) -> Iterator[str]:
    """One initialized ledger per backend for the refusal cases: a refusal must not change it."""
    db = dbtools.new_ledger(tmp_path_factory.mktemp("shared"), module_backend)
    yield db
    dbtools.drop(db)


# Every rule of the chunk table, through the command line.


@pytest.mark.parametrize("rule", RECORD_RULES, ids=[r.name for r in RECORD_RULES])
def test_ingest_refuses_each_rule(rule: Rule, shared_db: str, tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(jsonl_bytes(good_lines(1) + [rule.text] + good_lines(1, "after")))
    before = snapshot(shared_db)
    message = assert_one_line_error(run_ledger("ingest", str(path), db=shared_db))
    where = f"{path}:2: " + (f"field '{rule.field}': " if rule.field else "")
    assert message.startswith(where), message
    assert rule.rule in message
    assert snapshot(shared_db) == before


@pytest.mark.parametrize(
    "name, body, expected",
    [
        (
            "bom.jsonl",
            b"\xef\xbb\xbf" + jsonl_bytes(good_lines(1)),
            "{path}:1: file starts with a UTF-8 byte-order mark",
        ),
        ("bom.json", b"\xef\xbb\xbf" + array_bytes(good_lines(1)), "{path}: UTF-8 byte-order mark"),
        ("empty.jsonl", b"", "{path}: empty file"),
        ("empty.json", b"", "{path}: empty file"),
        (
            "blank.jsonl",
            jsonl_bytes(good_lines(1) + [b""] + good_lines(1, "x")),
            "{path}:2: blank line",
        ),
        (
            "array.json",
            array_bytes(good_lines(2) + [record_text(id="bad-record", priority=1.5)]),
            "{path}: [2]: field 'priority': must be an integer",
        ),
        (
            "nan.json",
            array_bytes(
                good_lines(1) + [record_text(id="bad-record", priority=7).replace(b": 7", b": NaN")]
            ),
            "{path}: [1]: field 'priority': non-finite JSON number: NaN",
        ),
    ],
    ids=[
        "bom jsonl",
        "bom json",
        "empty jsonl",
        "empty json",
        "blank line",
        "array index",
        "array NaN",
    ],
)
def test_ingest_refuses_bad_files(
    name: str, body: bytes, expected: str, shared_db: str, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.write_bytes(body)
    before = snapshot(shared_db)
    message = assert_one_line_error(run_ledger("ingest", str(path), db=shared_db))
    assert message.startswith(expected.format(path=path)), message
    assert snapshot(shared_db) == before


def test_dedupe_refusal_across_runs(db_url: str, tmp_path: Path) -> None:
    first = write_jsonl(tmp_path / "first.jsonl", [chunk(id="kept", dedupe_key="group")])
    assert run_ledger("ingest", str(first), db=db_url).returncode == 0
    before = snapshot(db_url)
    second = write_jsonl(
        tmp_path / "second.jsonl", [chunk(id="joiner", dedupe_key="group", trust="unverified")]
    )
    message = assert_one_line_error(run_ledger("ingest", str(second), db=db_url))
    assert message.startswith(f"{second}:1: field 'dedupe_key': dedupe_key 'group' crosses trust")
    assert snapshot(db_url) == before


def test_changed_version_refused_with_both_digests(db_url: str, tmp_path: Path) -> None:
    original, changed = chunk(), chunk(content="Alpha content, revised.")
    run_ledger("ingest", str(write_jsonl(tmp_path / "a.jsonl", [original])), db=db_url, check=True)
    before = snapshot(db_url)
    proc = run_ledger("ingest", str(write_jsonl(tmp_path / "b.jsonl", [changed])), db=db_url)
    message = assert_one_line_error(proc)
    import rfc8785

    for rec in (original, changed):
        assert hashlib.sha256(rfc8785.dumps(rec)).hexdigest() in message
    assert snapshot(db_url) == before


def test_bad_last_line_of_10000_leaves_the_ledger_unchanged(db_url: str, tmp_path: Path) -> None:
    run_ledger("ingest", str(FIXTURE), db=db_url, check=True)
    path = tmp_path / "bulk.jsonl"
    lines = good_lines(9_999, "bulk") + [record_text(id="bad-record", expires_on="2025-01-01")]
    path.write_bytes(jsonl_bytes(lines))
    before = snapshot(db_url)
    message = assert_one_line_error(run_ledger("ingest", str(path), db=db_url))
    assert message.startswith(
        f"{path}:10000: field 'expires_on': must be later than effective_from"
    )
    assert snapshot(db_url) == before


# Output.


def test_json_summary_has_exactly_the_spec_keys(db_url: str, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [chunk(), chunk(id="beta", dedupe_key="beta")])
    first = run_ledger("ingest", "--json", str(path), db=db_url)
    assert first.returncode == 0 and first.stderr == ""
    assert json.loads(first.stdout) == {"batch": 1, "read": 2, "new": 2, "unchanged": 0}
    second = run_ledger("ingest", str(path), "--json", db=db_url)
    data = json.loads(second.stdout)
    assert set(data) == SUMMARY_KEYS
    # SPEC: a run that stores nothing new writes no entry, and says so with a null batch.
    assert data == {"batch": None, "read": 2, "new": 0, "unchanged": 2}


def test_plain_summary(db_url: str, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [chunk()])
    proc = run_ledger("ingest", str(path), db=db_url)
    assert proc.returncode == 0
    assert proc.stdout == "batch 1: read 1, new 1, unchanged 0\n"


def test_chunks_lists_versions_with_digests_and_never_content(db_url: str, tmp_path: Path) -> None:
    secret = "  Confidential body \u00e9 that must never be listed.\n"
    recs = [
        chunk(id="alpha", source_version="1", content=secret),
        chunk(id="alpha", source_version="2", content=secret + "v2"),
        chunk(id="beta", dedupe_key="beta", content="Beta body, also private."),
    ]
    run_ledger("ingest", str(write_jsonl(tmp_path / "a.jsonl", recs)), db=db_url, check=True)

    listing = run_ledger("chunks", "--json", db=db_url)
    assert listing.returncode == 0
    data = json.loads(listing.stdout)
    rows = data["chunks"]
    assert [(r["id"], r["source_version"]) for r in rows] == [
        ("alpha", "1"),
        ("alpha", "2"),
        ("beta", "1"),
    ]
    for row, rec in zip(rows, recs, strict=True):
        assert "content" not in row
        assert row["content_digest"] == hashlib.sha256(rec["content"].encode("utf-8")).hexdigest()
        assert len(row["record_digest"]) == 64
    only = json.loads(run_ledger("chunks", "--id", "alpha", "--json", db=db_url).stdout)["chunks"]
    assert [(r["id"], r["source_version"]) for r in only] == [("alpha", "1"), ("alpha", "2")]
    plain = run_ledger("chunks", db=db_url)
    plain_id = run_ledger("chunks", "--id", "beta", db=db_url)
    for proc in (listing, plain, plain_id):
        assert proc.returncode == 0
        out = proc.stdout + proc.stderr
        assert "Confidential" not in out and "private" not in out
    assert "alpha" in plain.stdout and rows[0]["record_digest"][:12] in plain.stdout
    assert "beta" in plain_id.stdout and "alpha" not in plain_id.stdout


def test_content_stored_exactly_and_hashable_by_the_user(db_url: str, tmp_path: Path) -> None:
    content = "\n\n  Indented first line.\n\ttab line\r\n  trailing  \n"
    run_ledger(
        "ingest",
        str(write_jsonl(tmp_path / "a.jsonl", [chunk(content=content, id=" alpha ")])),
        db=db_url,
        check=True,
    )
    row = json.loads(run_ledger("chunks", "--json", db=db_url).stdout)["chunks"][0]
    assert row["id"] == "alpha"
    assert row["content_digest"] == hashlib.sha256(content.encode("utf-8")).hexdigest()
    assert dbtools.query(db_url, "SELECT content FROM chunk_versions") == [(content,)]


# Formats.


def test_seed001_fixture_ingests_its_chunks_with_a_note(db_url: str) -> None:
    proc = run_ledger("ingest", "--json", str(FIXTURE), db=db_url)
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == {"batch": 1, "read": 11, "new": 11, "unchanged": 0}
    assert proc.stderr.startswith("note: ")
    assert "request" in proc.stderr and "not applied" in proc.stderr
    ids = {r["id"] for r in json.loads(run_ledger("chunks", "--json", db=db_url).stdout)["chunks"]}
    assert ids == set(FIXTURE_IDS)


@pytest.mark.parametrize("name", ["chunks.json", "chunks.jsonl", "chunks.ndjson", "CHUNKS.JSONL"])
def test_formats_by_extension(name: str, db_url: str, tmp_path: Path) -> None:
    lines = good_lines(3)
    body = array_bytes(lines) if name == "chunks.json" else jsonl_bytes(lines)
    (tmp_path / name).write_bytes(body)
    proc = run_ledger("ingest", "--json", str(tmp_path / name), db=db_url)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["new"] == 3
    assert proc.stderr == ""


@pytest.mark.parametrize(
    "name, fmt, body",
    [
        ("export.txt", "jsonl", jsonl_bytes(good_lines(2))),
        ("lines.json", "jsonl", jsonl_bytes(good_lines(2))),
        ("array.data", "json", array_bytes(good_lines(2))),
        (
            "fixture.data",
            "fixture",
            b'{"fixture_version": "v1", "selector_version": "v1", "request": {}, "chunks": '
            + array_bytes(good_lines(2))
            + b"}",
        ),
    ],
)
def test_format_option_overrides_the_extension(
    name: str, fmt: str, body: bytes, db_url: str, tmp_path: Path
) -> None:
    (tmp_path / name).write_bytes(body)
    proc = run_ledger("ingest", "--format", fmt, "--json", str(tmp_path / name), db=db_url)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["new"] == 2


@pytest.mark.parametrize(
    "name, fmt, body, words",
    [
        ("fixture.json", "json", FIXTURE.read_bytes(), "expected a JSON array"),
        ("array.json", "fixture", array_bytes(good_lines(1)), "expected a pack fixture"),
        ("weird.json", "auto", b'{"chunks": [], "extra": 1}', "unknown top-level fields ['extra']"),
        ("object.json", "auto", record_text(), "fixture object needs `chunks`"),
        ("scalar.json", "auto", b'"text"', "expected a JSON array"),
        ("array.jsonl", "auto", array_bytes(good_lines(1)), ":1: invalid JSON"),
    ],
)
def test_wrong_shape_for_the_format_is_refused(
    name: str, fmt: str, body: bytes, words: str, shared_db: str, tmp_path: Path
) -> None:
    (tmp_path / name).write_bytes(body)
    proc = run_ledger("ingest", "--format", fmt, str(tmp_path / name), db=shared_db)
    assert words in assert_one_line_error(proc)


def test_unknown_extension_is_refused_with_a_hint(shared_db: str, tmp_path: Path) -> None:
    path = tmp_path / "chunks.yaml"
    path.write_bytes(jsonl_bytes(good_lines(1)))
    message = assert_one_line_error(run_ledger("ingest", str(path), db=shared_db))
    assert message.startswith(f"{path}: ") and "--format" in message


def test_unknown_format_value_is_a_usage_error(shared_db: str, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [chunk()])
    proc = run_ledger("ingest", "--format", "yaml", str(path), db=shared_db)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_symlink_directory_and_missing_file_are_refused(shared_db: str, tmp_path: Path) -> None:
    real = write_jsonl(tmp_path / "real.jsonl", [chunk()])
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    missing = tmp_path / "missing.jsonl"
    before = snapshot(shared_db)
    for path, words in ((link, "symbolic link"), (folder, "directory"), (missing, "no such file")):
        message = assert_one_line_error(run_ledger("ingest", str(path), db=shared_db))
        assert message.startswith(f"{path}: ") and words in message
        # A good file beside the bad one is not stored either.
        assert_one_line_error(run_ledger("ingest", str(real), str(path), db=shared_db))
    assert snapshot(shared_db) == before


def test_several_files_make_one_batch(db_url: str, tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [chunk(id="one", dedupe_key="one")])
    b = tmp_path / "b.json"
    b.write_bytes(array_bytes([record_text(id="two", dedupe_key="two")]))
    proc = run_ledger("ingest", "--json", str(a), str(b), str(FIXTURE), db=db_url)
    assert json.loads(proc.stdout) == {"batch": 1, "read": 13, "new": 13, "unchanged": 0}


# `ledger init` on an empty database, on each backend.


def test_init_creates_the_schema_and_is_idempotent(empty_db_url: str) -> None:
    where = "the database" if dbtools.is_pg(empty_db_url) else dbtools.sqlite_file(empty_db_url)
    first = run_ledger("init", db=empty_db_url)
    assert first.returncode == 0 and first.stdout == "", first.stderr
    assert first.stderr == f"{where}: created schema {SCHEMA_REVISION}\n"
    assert json.loads(run_ledger("chunks", "--json", db=empty_db_url).stdout) == {"chunks": []}
    run_ledger("ingest", str(FIXTURE), db=empty_db_url, check=True)
    before = snapshot(empty_db_url)
    assert before.counts["chunk_versions"] == 11
    second = run_ledger("init", db=empty_db_url)
    assert second.returncode == 0 and second.stdout == ""
    assert second.stderr == f"{where}: schema {SCHEMA_REVISION} is current\n"
    assert snapshot(empty_db_url) == before


@pytest.mark.parametrize("command", [["ingest", str(FIXTURE)], ["chunks"], ["chunks", "--json"]])
def test_command_on_a_database_without_schema(command: list[str], empty_db_url: str) -> None:
    if dbtools.is_pg(empty_db_url):
        db = empty_db_url
    else:
        db = dbtools.sqlite_file(empty_db_url)  # the path, as a user names the file
        sqlite3.connect(db).close()
    message = assert_one_line_error(run_ledger(*command, db=db))
    assert "run `ledger init`" in message and db in message
    assert dbtools.tables(db) == []  # the command created nothing


# The database file (SQLite only).


def test_init_creates_an_owner_only_file_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "new" / "ledger.db"
    path.parent.mkdir()
    first = run_ledger("init", db=path)
    assert first.returncode == 0 and first.stdout == ""
    assert "created schema" in first.stderr
    assert path.stat().st_mode & 0o777 == 0o600
    run_ledger("ingest", str(FIXTURE), db=path, check=True)
    before = snapshot(path)
    second = run_ledger("init", db=path)
    assert second.returncode == 0 and "is current" in second.stderr
    assert snapshot(path) == before
    for p in path.parent.iterdir():
        assert p.stat().st_mode & 0o777 == 0o600, p


def test_ledger_db_environment_variable(tmp_path: Path) -> None:
    path = tmp_path / "env.db"
    run_ledger("init", env={"LEDGER_DB": str(path)}, check=True)
    proc = run_ledger("ingest", "--json", str(FIXTURE), env={"LEDGER_DB": str(path)})
    assert json.loads(proc.stdout)["new"] == 11


def test_default_database_is_ledger_db_in_the_cwd(tmp_path: Path) -> None:
    run_ledger("init", cwd=tmp_path, check=True)
    assert (tmp_path / "ledger.db").is_file()


@pytest.mark.parametrize("command", [["ingest", str(FIXTURE)], ["chunks"]])
def test_command_on_a_missing_database_file(command: list[str], tmp_path: Path) -> None:
    path = tmp_path / "nowhere.db"
    message = assert_one_line_error(run_ledger(*command, db=path))
    assert f"no ledger database at {path}" in message and "ledger init" in message
    assert not path.exists()


@pytest.mark.parametrize("command", [["init"], ["chunks"]])
def test_command_on_a_file_that_is_not_a_database(command: list[str], tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("not a database\n" * 200)
    message = assert_one_line_error(run_ledger(*command, db=path))
    assert "not a database" in message


def test_init_in_a_missing_folder(tmp_path: Path) -> None:
    message = assert_one_line_error(run_ledger("init", db=tmp_path / "no" / "such" / "x.db"))
    assert "does not exist" in message


def test_copied_ledger_keeps_working(db_path: Path, tmp_path: Path) -> None:
    """A plain file copy is a full ledger (the WAL is checkpointed when the CLI exits)."""
    run_ledger("ingest", str(FIXTURE), db=db_path, check=True)
    copy = tmp_path / "copy.db"
    shutil.copyfile(db_path, copy)
    os.chmod(copy, 0o600)
    rows = json.loads(run_ledger("chunks", "--json", db=copy).stdout)["chunks"]
    assert len(rows) == 11
