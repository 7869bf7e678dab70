"""A large JSON Lines file read by a second process (`ledger.ingest.worker`):
the same records, digests and errors as reading it in one process, and a
reader that stops early is an error, never a short ingest."""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from ledger.api import database_url
from ledger.api.ingest import ingest_files
from ledger.core.errors import InputError, RefusedError
from ledger.core.records import record_digest
from ledger.core.tsvector import index_payload
from ledger.ingest.files import iter_jsonl
from ledger.ingest.worker import read_jsonl, receive, worth_a_worker
from ledger.store.engine import make_engine
from ledger.store.ingest import SLICE
from tests.store.ingest_cases import jsonl_bytes, record_text

LINES = 2 * SLICE + 500  # three frames, the last one short


def _lines(n: int) -> list[bytes]:
    """Records the line fast path takes and ones it leaves to the strict reader
    (spaced keys, escapes, text outside ASCII)."""
    out = []
    for i in range(n):
        line = record_text(id=f"doc-{i:05d}", dedupe_key=f"doc-{i:05d}", content=f"Body {i}.")
        if i % 3 == 1:
            line = line.replace(b'"trust":', b'"trust" :')
        if i % 5 == 2:
            line = line.replace(b"Body", 'Bödy \\u00e9 \\"quoted\\"'.encode())
        if i % 7 == 3:  # a word only PostgreSQL's parser indexes (see ledger.core.tsvector)
            line = line.replace(b"Body", b"Body 1e5abc")
        out.append(line)
    return out


def _one_process(path: Path, payloads: bool = False) -> tuple[list[Any], int]:
    consumed: list[int] = []
    records = [
        (w, r, record_digest(r), index_payload(r.title, r.content) if payloads else None)
        for w, r in iter_jsonl(str(path), consumed.append)
    ]
    return records, sum(consumed)


def test_worker_reads_what_one_process_reads(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(jsonl_bytes(_lines(LINES)))
    consumed: list[int] = []
    got = list(read_jsonl(str(path), consumed.append))
    expected, expected_bytes = _one_process(path)
    assert len(got) == LINES
    assert got == expected
    assert sum(consumed) == expected_bytes == path.stat().st_size
    assert len(consumed) == 3  # a progress report per frame
    # With PostgreSQL's index rows: tsvectors, and terms for the server's parser.
    with_payloads = list(read_jsonl(str(path), None, index_payloads=True))
    assert with_payloads == _one_process(path, payloads=True)[0]
    assert {type(item[3]) for item in with_payloads} == {bytes, str}


def test_first_bad_line_comes_after_the_slices_before_it(tmp_path: Path) -> None:
    lines = _lines(LINES)
    lines[2 * SLICE + 17] = b'{"id": "broken", '  # line 4,018: not JSON
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl_bytes(lines))
    with pytest.raises(InputError) as one_process:
        _one_process(path)
    got = []
    with pytest.raises(InputError) as worker:
        for item in read_jsonl(str(path)):
            got.append(item)
    assert str(worker.value) == str(one_process.value)
    assert f"bad.jsonl:{2 * SLICE + 18}:" in str(worker.value)
    assert len(got) == 2 * SLICE  # the two whole slices, not the part of the third


def test_missing_file_is_the_same_error(tmp_path: Path) -> None:
    path = tmp_path / "gone.jsonl"
    with pytest.raises(InputError) as worker:
        list(read_jsonl(str(path)))
    with pytest.raises(InputError) as one_process:
        list(iter_jsonl(str(path), None))
    assert type(worker.value) is type(one_process.value)
    assert vars(worker.value) == vars(one_process.value)  # `problem` too
    assert str(worker.value) == str(one_process.value)


def _stored(url: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT chunk_id, source_version, content, content_digest, record_digest, "
                "batch_seq FROM chunk_versions ORDER BY vid"
            )
        ).all()
        entries = conn.execute(text("SELECT seq, kind, payload_digest FROM entries")).all()
        if engine.dialect.name == "postgresql":
            index = conn.execute(text("SELECT vid, terms::text FROM search_index ORDER BY 1")).all()
        else:  # a contentless FTS5 table: which versions each word finds
            index = [
                conn.execute(
                    text("SELECT rowid FROM search_index WHERE search_index MATCH :w ORDER BY 1"),
                    {"w": word},
                ).all()
                for word in ("body", "1e5abc", "quoted")
            ]
    engine.dispose()
    assert all(index)  # every word finds versions (PostgreSQL: every row has terms)
    return [tuple(r) for r in rows] + [tuple(e) for e in entries] + [tuple(i) for i in index]


def test_ingest_through_the_worker_stores_the_same_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_db: Callable[[str], str]
) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(jsonl_bytes(_lines(LINES)))
    stored = {}
    for name, threshold in (("worker", "0"), ("one", str(10**12))):
        monkeypatch.setenv("LEDGER_INGEST_WORKER_BYTES", threshold)
        url = database_url(new_db(name))
        engine = make_engine(url)
        summary = ingest_files(engine, [str(path)])
        engine.dispose()
        assert (summary.read, summary.new) == (LINES, LINES)
        stored[name] = _stored(url)
    assert stored["worker"] == stored["one"]


def test_a_large_and_a_small_file_in_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_db: Callable[[str], str]
) -> None:
    # The large file by the reader process (PostgreSQL: with its index rows,
    # indexed slice by slice), the small one in this process (indexed after the
    # last slice): every version indexed once, as in one process.
    big, small = tmp_path / "big.jsonl", tmp_path / "small.jsonl"
    big.write_bytes(jsonl_bytes(_lines(LINES)))
    small.write_bytes(
        jsonl_bytes([record_text(id=f"extra-{i}", dedupe_key=f"extra-{i}") for i in range(5)])
    )
    stored = {}
    for name, threshold in (("worker", big.stat().st_size), ("one", 10**12)):
        monkeypatch.setenv("LEDGER_INGEST_WORKER_BYTES", str(threshold))
        url = database_url(new_db(name))
        engine = make_engine(url)
        summary = ingest_files(engine, [str(big), str(small)])
        engine.dispose()
        assert (summary.read, summary.new) == (LINES + 5, LINES + 5)
        stored[name] = _stored(url)
    assert stored["worker"] == stored["one"]


def test_a_changed_version_is_refused_through_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_db: Callable[[str], str]
) -> None:
    monkeypatch.setenv("LEDGER_INGEST_WORKER_BYTES", "0")
    url = database_url(new_db("refuse"))
    engine = make_engine(url)
    first = tmp_path / "first.jsonl"
    first.write_bytes(jsonl_bytes(_lines(10)))
    ingest_files(engine, [str(first)])
    before = _stored(url)
    lines = _lines(LINES)
    lines[SLICE + 3] = record_text(id="doc-00004", dedupe_key="doc-00004", content="Changed.")
    second = tmp_path / "second.jsonl"
    second.write_bytes(jsonl_bytes(lines))
    with pytest.raises(RefusedError, match=r"second\.jsonl:2004: chunk 'doc-00004'") as refused:
        ingest_files(engine, [str(second)])
    # Stopped at once, not left blocked on its pipe while the error (whose
    # traceback holds the reading generator) is still held.
    assert refused.tb is not None and _readers() == []
    engine.dispose()
    assert _stored(url) == before


def _readers() -> list[int]:
    """This process's children that are `ledger.ingest.worker` readers (Linux's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # not a process, or gone
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"ledger.ingest.worker" in cmdline:
            found.append(int(entry.name))
    return found


def _frame(kind: bytes, body: bytes) -> bytes:
    return kind + len(body).to_bytes(4, "big") + body


@pytest.mark.parametrize(
    "stream",
    [b"", b"R\x00\x00", _frame(b"R", b"\x92\x00\x90")[:-1], _frame(b"R", b"\x92\x00\x90")],
    ids=["nothing", "cut head", "cut body", "no end frame"],
)
def test_a_reader_that_stops_early_is_an_error(stream: bytes) -> None:
    with pytest.raises(RuntimeError, match="the process reading the file stopped: exit code 9"):
        list(receive(io.BytesIO(stream), None, lambda: "exit code 9"))


def test_reader_error_frames() -> None:
    error = _frame(b"E", pickle.dumps(InputError("oops")))
    with pytest.raises(InputError, match="^oops$"):
        list(receive(io.BytesIO(error), None))
    with pytest.raises(RuntimeError, match="the reader reported ValueError"):
        list(receive(io.BytesIO(_frame(b"E", pickle.dumps(ValueError("x")))), None))
    with pytest.raises(RuntimeError, match="the reader's error could not be read"):
        list(receive(io.BytesIO(_frame(b"E", b"not a pickle")), None))
    with pytest.raises(RuntimeError, match="frame of kind b'Z'"):
        list(receive(io.BytesIO(_frame(b"Z", b"")), None))


def test_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "small.jsonl"
    path.write_bytes(jsonl_bytes(_lines(3)))
    size = path.stat().st_size
    two_processors = (os.cpu_count() or 1) > 1
    monkeypatch.delenv("LEDGER_INGEST_WORKER_BYTES", raising=False)
    assert worth_a_worker(str(path)) is False  # far below the default
    assert worth_a_worker(str(path), index_payloads=True) is False
    # The defaults: 16 MiB, and 8 MiB when the reader also makes the index rows.
    with path.open("r+b") as f:
        f.truncate(8 << 20)
    assert worth_a_worker(str(path)) is False
    assert worth_a_worker(str(path), index_payloads=True) is two_processors
    with path.open("r+b") as f:
        f.truncate(16 << 20)
    assert worth_a_worker(str(path)) is two_processors
    path.write_bytes(jsonl_bytes(_lines(3)))
    monkeypatch.setenv("LEDGER_INGEST_WORKER_BYTES", str(size))
    assert worth_a_worker(str(path)) is two_processors
    monkeypatch.setenv("LEDGER_INGEST_WORKER_BYTES", str(size + 1))
    assert worth_a_worker(str(path)) is False
    assert worth_a_worker(str(path), index_payloads=True) is False  # the setting rules both
    monkeypatch.setenv("LEDGER_INGEST_WORKER_BYTES", "16M")
    with pytest.raises(InputError, match="LEDGER_INGEST_WORKER_BYTES='16M': expected a number"):
        worth_a_worker(str(path))
