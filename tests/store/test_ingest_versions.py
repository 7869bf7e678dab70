"""Immutable versions, idempotent re-ingest, and ingest entries on the hash chain,
on each backend: a SQLite file and a PostgreSQL database."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import rfc8785
from sqlalchemy import Engine, select

from ledger.api.ingest import ingest_files as ingest
from ledger.core.canonical import digest_value
from ledger.core.errors import RefusedError
from ledger.store.chain import GENESIS, entry_hash
from ledger.store.ingest import SLICE
from ledger.store.schema import batches as batches_t
from ledger.store.schema import entries, versions
from tests.conftest import chunk, write_jsonl
from tests.dbtools import snapshot


def digest_of(rec: dict[str, object]) -> str:
    return hashlib.sha256(rfc8785.dumps(rec)).hexdigest()


def records(n: int, prefix: str = "rec") -> list[dict[str, object]]:
    return [
        chunk(id=f"{prefix}-{i}", dedupe_key=f"{prefix}-{i}", priority=i % 101) for i in range(n)
    ]


def batches(engine: Engine) -> list[tuple[int, int, int, int]]:
    b = batches_t.c
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                select(b.seq, b.read_count, b.new_count, b.unchanged_count).order_by(b.seq)
            )
        ]


def test_reingesting_the_same_file_adds_nothing(ledger_engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "chunks.jsonl", records(25))
    first = ingest(ledger_engine, [str(path)])
    second = ingest(ledger_engine, [str(path)])
    assert first.to_json() == {"batch": 1, "read": 25, "new": 25, "unchanged": 0}
    # SPEC: a run that stores nothing new writes no entry (`batch` is null).
    assert second.to_json() == {"batch": None, "read": 25, "new": 0, "unchanged": 25}
    assert batches(ledger_engine) == [(1, 25, 25, 0)]
    with ledger_engine.connect() as conn:
        assert len(conn.execute(select(versions)).all()) == 25


def test_a_new_version_of_a_stored_id_is_new(ledger_engine: Engine, tmp_path: Path) -> None:
    ingest(ledger_engine, [str(write_jsonl(tmp_path / "v1.jsonl", [chunk(source_version="1")]))])
    summary = ingest(
        ledger_engine,
        [
            str(
                write_jsonl(
                    tmp_path / "v2.jsonl",
                    [chunk(source_version="1"), chunk(source_version="2", content="New.")],
                )
            )
        ],
    )
    assert (summary.new, summary.unchanged) == (1, 1)


@pytest.mark.parametrize(
    "change",
    [
        {"content": "Alpha content, edited."},
        {"priority": 51},
        {"expires_on": "2027-01-01"},
        {"required": True},
        {"source_uri": "doc://alpha-moved"},
        {"content": "Alpha content. "},
    ],
    ids=["content", "priority", "expires_on", "required", "source_uri", "trailing space"],
)
def test_a_changed_version_is_refused_naming_both_digests(
    change: dict[str, object], ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    original = chunk()
    changed = chunk(**change)
    ingest(ledger_engine, [str(write_jsonl(tmp_path / "v1.jsonl", [original]))])
    before = snapshot(db_url)
    path = write_jsonl(tmp_path / "edit.jsonl", [chunk(id="other"), changed])
    with pytest.raises(RefusedError) as info:
        ingest(ledger_engine, [str(path)])
    message = str(info.value)
    assert info.value.exit_code == 1
    assert message.startswith(f"{path}:2: chunk 'alpha' version '1' is already stored")
    assert digest_of(original) in message and digest_of(changed) in message
    assert snapshot(db_url) == before


def test_the_same_version_twice_in_one_input_counts_unchanged(
    ledger_engine: Engine, tmp_path: Path
) -> None:
    path = write_jsonl(
        tmp_path / "twice.jsonl", [chunk(), chunk(id="beta", dedupe_key="beta"), chunk()]
    )
    summary = ingest(ledger_engine, [str(path)])
    assert (summary.read, summary.new, summary.unchanged) == (3, 2, 1)


def test_the_same_version_differing_in_one_input_is_refused(
    ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "twice.jsonl", [chunk(), chunk(content="Other body.")])
    before = snapshot(db_url)
    with pytest.raises(RefusedError) as info:
        ingest(ledger_engine, [str(path)])
    message = str(info.value)
    assert message.startswith(f"{path}:2: ")
    assert digest_of(chunk()) in message and digest_of(chunk(content="Other body.")) in message
    assert snapshot(db_url) == before


def test_repeats_far_apart_in_one_input_are_caught(
    ledger_engine: Engine, db_url: str, tmp_path: Path
) -> None:
    """The second copy lands in a later write slice than the first."""
    bulk = records(SLICE + 10)
    same = write_jsonl(tmp_path / "same.jsonl", [chunk(), *bulk, chunk()])
    summary = ingest(ledger_engine, [str(same)])
    assert (summary.new, summary.unchanged) == (len(bulk) + 1, 1)

    before = snapshot(db_url)
    changed = write_jsonl(
        tmp_path / "changed.jsonl",
        [
            chunk(source_version="2"),
            *records(SLICE + 10, "more"),
            chunk(source_version="2", priority=1),
        ],
    )
    with pytest.raises(RefusedError, match=f"{changed}:{SLICE + 12}: "):
        ingest(ledger_engine, [str(changed)])
    assert snapshot(db_url) == before


def test_the_same_file_twice_in_one_run(ledger_engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", records(3))
    summary = ingest(ledger_engine, [str(path), str(path)])
    assert (summary.read, summary.new, summary.unchanged) == (6, 3, 3)


def test_ingest_entries_form_a_hash_chain(ledger_engine: Engine, tmp_path: Path) -> None:
    runs = [records(3, "one"), records(2, "two"), records(3, "one") + records(1, "three")]
    for i, recs in enumerate(runs):
        ingest(ledger_engine, [str(write_jsonl(tmp_path / f"run{i}.jsonl", recs))])
    e = entries.c
    v = versions.c
    with ledger_engine.connect() as conn:
        rows = conn.execute(select(entries).order_by(e.seq)).all()
        digests = {
            seq: sorted(
                d for (d,) in conn.execute(select(v.record_digest).where(v.batch_seq == seq))
            )
            for seq in (1, 2, 3)
        }
    assert [r.seq for r in rows] == [1, 2, 3]
    assert [r.kind for r in rows] == ["ingest"] * 3
    assert rows[0].prev_hash == GENESIS
    for prev, row in zip(rows, rows[1:], strict=False):
        assert row.prev_hash == prev.entry_hash
    for row in rows:
        assert row.entry_hash == entry_hash(row.seq, row.kind, row.payload_digest, row.prev_hash)
        # The same formula, written out: SHA-256 of the RFC 8785 JSON of four fields.
        assert (
            row.entry_hash
            == hashlib.sha256(
                rfc8785.dumps(
                    {
                        "seq": row.seq,
                        "kind": row.kind,
                        "payload_digest": row.payload_digest,
                        "prev_hash": row.prev_hash,
                    }
                )
            ).hexdigest()
        )
    # The payload covers the counts, the file names and the record digests each
    # batch added.
    expected_counts = {1: (3, 0), 2: (2, 0), 3: (4, 3)}
    for row in rows:
        read, unchanged = expected_counts[row.seq]
        payload = {
            "kind": "ingest",
            "new": digests[row.seq],
            "read": read,
            "sources": [f"run{row.seq - 1}.jsonl"],
            "unchanged": unchanged,
        }
        assert row.payload_digest == digest_value(payload)
    assert len(digests[3]) == 1  # only "three-0" was new in the third run


def test_batch_records_its_sources(ledger_engine: Engine, tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", records(1, "a"))
    b = write_jsonl(tmp_path / "b.jsonl", records(1, "b"))
    ingest(ledger_engine, [str(a), str(b)])
    with ledger_engine.connect() as conn:
        sources = conn.execute(select(batches_t.c.sources)).scalar_one()
    assert json.loads(sources) == ["a.jsonl", "b.jsonl"]
