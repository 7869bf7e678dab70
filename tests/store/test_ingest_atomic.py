"""All or nothing: one bad record anywhere in 10,000 lines leaves the database as it
was, on each backend (a SQLite file and a PostgreSQL database)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, event

from ledger.api.ingest import ingest_files as ingest
from ledger.core.errors import LedgerError
from ledger.store.chain import read_head
from ledger.store.ingest import SLICE
from tests.conftest import chunk, write_jsonl
from tests.dbtools import snapshot
from tests.store.ingest_cases import jsonl_bytes, record_text

LINES = 10_000

# What breaks the run, and when ingest finds out: while reading (a field, the
# JSON itself), while storing (a changed version of a stored record), or after
# every row is written (a dedupe group across the whole ledger).
BAD_RECORDS = {
    "field rule": record_text(id="bad-record", dedupe_key="bad-record", priority=101),
    "duplicate key": record_text(id="bad-record", dedupe_key="bad-record")[:-1] + b', "id": "x"}',
    "changed version": record_text(id="stored", dedupe_key="stored", content="Changed."),
    "dedupe group": record_text(id="joiner", dedupe_key="required-group"),
}
POSITIONS = {"first": 0, "middle": LINES // 2, "last": LINES - 1}


@pytest.fixture
def populated(ledger_engine: Engine, tmp_path: Path) -> Engine:
    """A ledger that already holds two ingest entries."""
    write_jsonl(tmp_path / "a.jsonl", [chunk(id="stored", dedupe_key="stored")])
    write_jsonl(
        tmp_path / "b.jsonl",
        [chunk(id="required-member", dedupe_key="required-group", required=True)],
    )
    ingest(ledger_engine, [str(tmp_path / "a.jsonl")])
    ingest(ledger_engine, [str(tmp_path / "b.jsonl")])
    return ledger_engine


@pytest.mark.parametrize("position", POSITIONS, ids=list(POSITIONS))
@pytest.mark.parametrize("kind", BAD_RECORDS, ids=list(BAD_RECORDS))
def test_bad_record_leaves_database_unchanged(
    kind: str, position: str, populated: Engine, db_url: str, tmp_path: Path
) -> None:
    lines = [record_text(id=f"bulk-{i:05d}", dedupe_key=f"bulk-{i:05d}") for i in range(LINES - 1)]
    lines.insert(POSITIONS[position], BAD_RECORDS[kind])
    path = tmp_path / "bulk.jsonl"
    path.write_bytes(jsonl_bytes(lines))

    before = snapshot(db_url)
    with populated.connect() as conn:
        head_before = read_head(conn)
    assert before.counts["entries"] == 2 and before.counts["chunk_versions"] == 2

    with pytest.raises(LedgerError) as info:
        ingest(populated, [str(path)])
    assert info.value.exit_code == 1
    if kind != "dedupe group":  # found while reading: the message names the line
        assert str(info.value).startswith(f"{path}:{POSITIONS[position] + 1}: ")

    after = snapshot(db_url)
    assert after.counts == before.counts
    assert after.head == before.head
    assert after.dump == before.dump
    with populated.connect() as conn:
        assert read_head(conn) == head_before


def test_the_next_ingest_continues_the_chain_after_a_refusal(
    populated: Engine, db_url: str, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jsonl_bytes([record_text(id="fine", dedupe_key="fine"), b"{"]))
    with pytest.raises(LedgerError):
        ingest(populated, [str(bad)])
    good = write_jsonl(tmp_path / "good.jsonl", [chunk(id="fine", dedupe_key="fine")])
    assert ingest(populated, [str(good)]).batch == 3  # no gap left by the refused run
    assert snapshot(db_url).counts["entries"] == 3


def test_rows_already_written_are_rolled_back(
    populated: Engine, db_url: str, tmp_path: Path
) -> None:
    """A refusal on the last line comes after earlier slices were inserted: they go too.

    What was written is seen on each backend's own path: SQLite's executemany
    through SQLAlchemy's cursor events, PostgreSQL's COPY (no SQLAlchemy statement)
    by the version ids its rows drew from `chunk_versions`' sequence, which a
    rollback does not give back."""
    inserts: list[int] = []

    def count(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.startswith("INSERT INTO chunk_versions"):
            inserts.append(len(parameters) if executemany else 1)

    def vids_drawn() -> int:
        with populated.connect() as c:
            name = c.exec_driver_sql(
                "SELECT pg_get_serial_sequence('chunk_versions', 'vid')"
            ).scalar_one()
            return int(c.exec_driver_sql(f"SELECT last_value FROM {name}").scalar_one())

    pg = populated.dialect.name == "postgresql"
    lines = [record_text(id=f"bulk-{i:05d}", dedupe_key=f"bulk-{i:05d}") for i in range(3 * SLICE)]
    lines.append(BAD_RECORDS["changed version"])
    path = tmp_path / "late.jsonl"
    path.write_bytes(jsonl_bytes(lines))
    before = snapshot(db_url)
    drawn = vids_drawn() if pg else 0
    event.listen(populated, "before_cursor_execute", count)
    try:
        with pytest.raises(LedgerError):
            ingest(populated, [str(path)])
    finally:
        event.remove(populated, "before_cursor_execute", count)
    written = vids_drawn() - drawn if pg else sum(inserts)
    assert written >= 3 * SLICE
    assert snapshot(db_url) == before
