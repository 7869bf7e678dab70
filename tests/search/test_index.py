"""The full-text index: built on upgrade, kept by ingest, forgotten by unindex; both backends."""

from __future__ import annotations

import random
import sqlite3
import string
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, inspect

from ledger.api.ingest import ingest_files
from ledger.core.query import MAX_WORD, MAX_WORDS, index_terms, index_words
from ledger.core.records import record_digest
from ledger.core.tsvector import index_payload, tsvector_binary
from ledger.ingest.files import validated
from ledger.store.engine import make_engine, read_transaction, write_transaction
from ledger.store.fulltext import TABLE, fts5_text, unindex
from ledger.store.ingest import store_records
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


def readable(tsv: bytes | None) -> str | None:
    """A tsvector's binary form (`tsvector_binary`) in the text form (`word:1,3`)."""
    if tsv is None:
        return None
    words, at = [], 4
    for _ in range(int.from_bytes(tsv[:4], "big")):
        end = tsv.index(b"\0", at)
        count = int.from_bytes(tsv[end + 1 : end + 3], "big")
        positions = [
            int.from_bytes(tsv[i : i + 2], "big") for i in range(end + 3, end + 3 + 2 * count, 2)
        ]
        words.append(tsv[at:end].decode() + ":" + ",".join(map(str, positions)))
        at = end + 3 + 2 * count
    assert at == len(tsv)
    return " ".join(words)


def test_tsvector_binary_is_the_parse_known_beforehand_or_none() -> None:
    assert readable(tsvector_binary("cors use cors".split())) == "cors:1,3 use:2"
    assert readable(tsvector_binary("x1e5a 1e5 e5 0x1f 007".split())) == (
        "007:5 0x1f:4 1e5:2 e5:3 x1e5a:1"
    )
    assert tsvector_binary(["a"] * 255) is not None
    # The server's parser decides: scientific notation runs into a word, a word
    # more than 255 times, upper case (from folding), non-ASCII, no letter.
    for terms in ["1e5abc x", "x 2e10z", " ".join(["a"] * 256), "H", "caf\u00e9", "2026", ""]:
        assert tsvector_binary(terms.split()) is None, terms


@contextmanager
def ingested(db_url: str, tmp_path: Path, bodies: dict[str, str]) -> Iterator[Engine]:
    """A ledger holding one chunk per body (its key the id), ingested with the index."""
    engine = make_engine(db_url)
    try:
        path = write_jsonl(tmp_path / "a.jsonl", [
            chunk(id=k, dedupe_key=k, content=v) for k, v in bodies.items()
        ])  # fmt: skip
        ingest_files(engine, [str(path)])
        yield engine
    finally:
        engine.dispose()


def test_the_index_holds_what_the_servers_parser_would(db_url: str, tmp_path: Path) -> None:
    bodies = {
        "plain": "The walrus naps; the walrus wakes.",
        "numbers": "Set 1e5abc to 2e10 on x1e5a in 2026.",
        "folded": "\u00c7a \u210c Stra\u00dfe",
        "repeated": "walrus " * 300,
        "digits": "2026 42",
    }
    with ingested(db_url, tmp_path, bodies) as engine:
        assert sorted(ids(engine, "walrus")) == ["plain", "repeated"]
        assert ids(engine, "strasse") == ["folded"]
        assert ids(engine, "x1e5a") == ["numbers"]
        assert ids(engine, "42") == ["digits"]
        terms = [index_terms(None, body) for body in bodies.values()]
        # Both ways taken:
        assert {tsvector_binary(t.split()) is None for t in terms} == {True, False}
        if engine.dialect.name == "postgresql":
            with read_transaction(engine) as conn:
                differ = conn.exec_driver_sql(
                    f"SELECT v.chunk_id FROM chunk_versions v JOIN {TABLE} s ON s.vid = v.vid "
                    "JOIN unnest(%s::text[], %s::text[]) AS t(id, terms) ON t.id = v.chunk_id "
                    "WHERE s.terms::text <> to_tsvector('simple', t.terms)::text",
                    (list(bodies), terms),
                ).all()
                assert differ == []


def test_repeated_words_are_written_once_with_their_positions(db_url: str, tmp_path: Path) -> None:
    """The literal path (each word once, all its positions) on bodies that repeat
    words, up to the 255 positions it may write: the index holds what the
    server's parser would, and phrases still match by position."""
    rnd = random.Random(21)
    common = ["the", "cat", "sat", "a", "walrus"]  # no "mat", "on" or "end"
    bodies = {
        "phrase": "The cat sat; the mat sat on the cat.",
        "most": "walrus " * 255 + "end",
        **{f"mixed-{i}": " ".join(rnd.choices(common, k=200)) for i in range(5)},
    }
    assert all(tsvector_binary(index_words(None, body)) is not None for body in bodies.values())
    with ingested(db_url, tmp_path, bodies) as engine:
        assert ids(engine, '"mat sat on"') == ["phrase"]
        assert ids(engine, '"walrus end"') == ["most"]
        assert ids(engine, '"end walrus"') == []
        if engine.dialect.name == "postgresql":
            with read_transaction(engine) as conn:
                differ = conn.exec_driver_sql(
                    f"SELECT v.chunk_id FROM chunk_versions v JOIN {TABLE} s ON s.vid = v.vid "
                    "WHERE s.terms::text <> to_tsvector('simple', lower(v.content))::text"
                ).all()
                assert differ == []


def test_each_version_is_indexed_under_its_own_id_across_slices(
    db_url: str, tmp_path: Path
) -> None:
    """Slices of new versions among versions already stored, each record with
    the index row a reader process makes (PostgreSQL writes those with the ids
    its versions are given; SQLite indexes the stored bodies): every version is
    found by its own word, and holds its own words."""

    def digested(records: list[dict[str, Any]]) -> Iterator[tuple[str, Any, str, Any]]:
        for i, obj in enumerate(records, 1):
            rec = validated(f"line {i}", obj)
            yield f"line {i}", rec, record_digest(rec), index_payload(None, rec.content)

    def body(i: int) -> str:
        # Every seventh body only the server's parser can index ("1e5abc"):
        # its terms go by another statement than the other rows of its slice.
        return f"word{i}x and {'more ' * (i % 5)}" + (" 1e5abc" if i % 7 == 0 else "")

    engine = make_engine(db_url)
    try:
        # Every third record is stored already; a slice holds 2,000 records.
        old = [
            chunk(id=f"old-{i}", dedupe_key=f"k-{i}", content=body(i)) for i in range(0, 3000, 3)
        ]
        store_records(engine, digested(old), paths=["a.jsonl"])
        both = [
            old[i // 3]
            if i % 3 == 0
            else chunk(id=f"new-{i}", dedupe_key=f"k-{i}", content=body(i))
            for i in range(3000)
        ]
        summary = store_records(engine, digested(both), paths=["b.jsonl"])
        assert (summary.new, summary.unchanged) == (2000, 1000)
        assert tsvector_binary(index_words(None, body(7))) is None
        for i in (1, 2, 3, 7, 1999, 2000, 2998, 2999):
            assert ids(engine, f"word{i}x") == [both[i]["id"]]
        with read_transaction(engine) as conn:
            if engine.dialect.name == "postgresql":
                rows = conn.exec_driver_sql(
                    f"SELECT v.chunk_id, s.terms::text = to_tsvector('simple', v.content)::text "
                    f"FROM chunk_versions v JOIN {TABLE} s ON s.vid = v.vid"
                ).all()
            else:
                rows = conn.exec_driver_sql(
                    f"SELECT v.chunk_id, 1 FROM chunk_versions v JOIN {TABLE} s ON s.rowid = v.vid"
                ).all()
        assert sorted(cid for cid, _ in rows) == sorted(c["id"] for c in both)
        assert all(same for _, same in rows)
    finally:
        engine.dispose()


def test_the_index_has_no_foreign_key_to_the_versions(db_url: str) -> None:
    """Revision 0011: an index row costs no lookup of its version on ingest."""
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            assert inspect(conn).has_table(TABLE)
            assert inspect(conn).get_foreign_keys(TABLE) == []
    finally:
        engine.dispose()


def fts5_words(texts: list[str]) -> list[list[str]]:
    """The words SQLite's FTS5 (`ascii` tokenizer, as the index) finds in each text."""
    con = sqlite3.connect(":memory:")
    try:
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='ascii')")
        con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        con.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", list(enumerate(texts)))
        words: list[list[str]] = [[] for _ in texts]
        for doc, term in con.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
            words[doc].append(term)
        return words
    finally:
        con.close()


def test_fts5_is_given_text_with_the_index_words() -> None:
    """`fts5_text` hands FTS5 ASCII text as it is only when FTS5 finds in it the
    words `index_terms` holds, in the same order; else the words themselves."""
    rnd = random.Random(21)
    alphabet = string.printable + "\x00\x01\x7f" + string.ascii_letters * 3
    versions: list[tuple[str | None, str]] = [
        (None, "The Walrus_naps; CORS-Middleware x1e5 2026!"),
        ("Title: Here", "body\x00with\tcontrol\nchars"),
        ("", "a" * MAX_WORD + " kept"),
        (None, "a" * (MAX_WORD + 1) + " dropped run"),
        (None, "b" * MAX_WORD),  # the longest text that cannot hold a long run
        (None, "c" * (MAX_WORD + 1)),  # the shortest that can
        (None, "d," + "e" * (MAX_WORD + 1)),  # a run after punctuation
        ("Caf\u00e9", "au lait"),
        (None, "x " * MAX_WORDS),
        ("T", "word " * MAX_WORDS),
        *[(None, "".join(rnd.choices(alphabet, k=rnd.randrange(400)))) for _ in range(200)],
        *[(None, "ab1" * rnd.randrange(40, 50)) for _ in range(5)],
    ]
    texts = [fts5_text(title, content) for title, content in versions]
    assert fts5_words(texts) == [index_terms(t, c).split() for t, c in versions]
    as_is = [text == content for text, (_, content) in zip(texts, versions, strict=True)]
    assert any(as_is) and not all(as_is)  # both ways taken
