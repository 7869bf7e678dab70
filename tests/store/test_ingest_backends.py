"""Ingest on both backends (a SQLite file and a real PostgreSQL server): the same
rules, the same digests and the same chain, since no hashed value depends on the
backend."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import rfc8785
from sqlalchemy import Engine, func, select

from ledger.api.ingest import ingest_files as ingest
from ledger.core.canonical import content_digest
from ledger.core.errors import InputError, RefusedError
from ledger.store.chain import GENESIS
from ledger.store.ingest import SLICE
from ledger.store.schema import entries as entries_t
from ledger.store.schema import versions
from tests.conftest import FIXTURE, chunk, write_jsonl


def rows(engine: Engine) -> list[tuple[str, str, str, str]]:
    v = versions.c
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                select(v.chunk_id, v.source_version, v.record_digest, v.content_digest).order_by(
                    v.chunk_id, v.source_version
                )
            )
        ]


def entries(engine: Engine) -> list[tuple[int, str, str, str]]:
    e = entries_t.c
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                select(e.seq, e.payload_digest, e.prev_hash, e.entry_hash).order_by(e.seq)
            )
        ]


def sha(value: object) -> str:
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def test_fixture_digests_and_chain_are_backend_independent(ledger_engine: Engine) -> None:
    chunks = json.loads(FIXTURE.read_text(encoding="utf-8"))["chunks"]
    ingest(ledger_engine, [str(FIXTURE)])
    expected_rows = sorted(
        (c["id"], c["source_version"], sha(c), content_digest(c["content"])) for c in chunks
    )
    assert rows(ledger_engine) == expected_rows
    payload = sha(
        {
            "kind": "ingest",
            "new": sorted(r[2] for r in expected_rows),
            "read": len(chunks),
            "sources": [FIXTURE.name],
            "unchanged": 0,
        }
    )
    head = sha({"seq": 1, "kind": "ingest", "payload_digest": payload, "prev_hash": GENESIS})
    assert entries(ledger_engine) == [(1, payload, GENESIS, head)]


def test_many_slices_idempotent_and_immutable(ledger_engine: Engine, tmp_path: Path) -> None:
    recs = [
        chunk(id=f"b-{i:05d}", dedupe_key=f"g-{i // 3:05d}", content=f"Body {i}.\n")
        for i in range(SLICE * 2 + 7)
    ]
    path = write_jsonl(tmp_path / "bulk.jsonl", recs)
    first = ingest(ledger_engine, [str(path)])
    assert (first.new, first.unchanged) == (len(recs), 0)
    second = ingest(ledger_engine, [str(path)])
    assert (second.new, second.unchanged) == (0, len(recs))
    before = (rows(ledger_engine), entries(ledger_engine))
    changed = write_jsonl(
        tmp_path / "changed.jsonl", [chunk(id="b-00003", dedupe_key="g-00001", content="Edited.")]
    )
    with pytest.raises(RefusedError, match="b-00003"):
        ingest(ledger_engine, [str(changed)])
    assert (rows(ledger_engine), entries(ledger_engine)) == before


def test_dedupe_rules_across_runs(ledger_engine: Engine, tmp_path: Path) -> None:
    ingest(
        ledger_engine, [str(write_jsonl(tmp_path / "a.jsonl", [chunk(id="aa", dedupe_key="grp")]))]
    )
    before = entries(ledger_engine)
    for n, bad in enumerate(
        [
            {"required": True},
            {"section": "state"},
            {"required_permission": "other-read"},
            {"trust": "user-input"},
        ]
    ):
        path = write_jsonl(tmp_path / f"b{n}.jsonl", [chunk(id="bb", dedupe_key="grp", **bad)])
        with pytest.raises(RefusedError, match=f"{path}:1: field 'dedupe_key'"):
            ingest(ledger_engine, [str(path)])
    # Versions of one id are not duplicates, on either backend.
    ingest(
        ledger_engine,
        [
            str(
                write_jsonl(
                    tmp_path / "v.jsonl",
                    [
                        chunk(id="solo", dedupe_key="solo-key", required=True),
                        chunk(
                            id="solo",
                            dedupe_key="solo-key",
                            required=True,
                            source_version="2",
                            trust="user-input",
                        ),
                    ],
                )
            )
        ],
    )
    assert len(entries(ledger_engine)) == len(before) + 1


def test_a_bad_last_record_stores_nothing(ledger_engine: Engine, tmp_path: Path) -> None:
    recs = [chunk(id=f"n-{i:05d}", dedupe_key=f"n-{i:05d}") for i in range(SLICE + 5)]
    recs.append(chunk(id="n-last", effective_from="2026-02-30"))
    path = write_jsonl(tmp_path / "bad.jsonl", recs)
    with pytest.raises(InputError, match=f"{path}:{len(recs)}: field 'effective_from'"):
        ingest(ledger_engine, [str(path)])
    with ledger_engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(versions)).scalar() == 0
        assert conn.execute(select(func.count()).select_from(entries_t)).scalar() == 0
