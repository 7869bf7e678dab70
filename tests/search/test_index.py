"""The full-text index: built on upgrade, kept by ingest, forgotten by unindex; both backends."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect

from ledger.api import ingest_files
from ledger.store.engine import make_engine, read_transaction, write_transaction
from ledger.store.fulltext import TABLE, unindex
from ledger.store.migrate import downgrade_to, upgrade_to_head
from ledger.store.search import search
from tests.conftest import chunk, write_jsonl


def ids(engine: object, text: str) -> list[str]:
    with read_transaction(engine) as conn:  # type: ignore[arg-type]
        return [r["id"] for r in search(conn, text).to_json()["results"]]


def test_an_existing_ledger_is_indexed_on_upgrade(db_url: str, tmp_path: Path) -> None:
    engine = make_engine(db_url)
    try:
        path = write_jsonl(tmp_path / "a.jsonl", [
            chunk(id="walrus-note", dedupe_key="walrus-note", content="The walrus naps."),
            chunk(id="other-note", dedupe_key="other-note", content="Nothing here."),
        ])  # fmt: skip
        ingest_files(engine, [str(path)])
        assert ids(engine, "walrus") == ["walrus-note"]
        downgrade_to(engine, "0002")
        with engine.connect() as conn:
            assert not inspect(conn).has_table(TABLE)
        upgrade_to_head(engine)
        assert ids(engine, "walrus") == ["walrus-note"]
        assert ids(engine, "nothing here") == ["other-note"]
    finally:
        engine.dispose()


def test_unindex_forgets_a_body(db_url: str, tmp_path: Path) -> None:
    engine = make_engine(db_url)
    try:
        body = "Café au lait, the walrus said."
        path = write_jsonl(tmp_path / "a.jsonl", [chunk(id="w-1", dedupe_key="w-1", content=body)])
        ingest_files(engine, [str(path)])
        assert ids(engine, "cafe") == ["w-1"]
        with write_transaction(engine) as conn:
            (vid,) = conn.exec_driver_sql("SELECT vid FROM chunk_versions").one()
            unindex(conn, [(vid, None, body)])
        assert ids(engine, "cafe walrus") == []
    finally:
        engine.dispose()
