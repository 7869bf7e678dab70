"""Issue 14, class "unbounded or blocking reads": every input goes through one
safe reader (`ledger.ingest.source`): regular files only, size and line limits
derived from the record limits, streamed. The processes run under an address
space limit, so reading a whole device or a whole 8 GB sparse file fails fast
(MemoryError) where the reader would not bound it.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clitools import one_line, run, sqlite_url, state
from tests.conftest import chunk, write_jsonl

# Enough for the CLI with SQLAlchemy and the largest valid record line
# (12 MB at most), far less than an unbounded read of these inputs needs.
MEMORY = 1 << 30
TIMEOUT = 60  # a FIFO must not hang


def limited_memory(limit: int = MEMORY) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def _sparse(path: Path, size: int, tail: bytes = b"") -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
        if tail:
            f.seek(size)
            f.write(tail)
    return path


@pytest.mark.parametrize("source", ["/dev/zero", "fifo"])
def test_build_batch_reads_only_a_regular_file(
    seeded_file: Path, tmp_path: Path, source: str
) -> None:
    """`build --batch /dev/zero` exhausted memory (MemoryError traceback); a FIFO
    hung forever."""
    if source == "fifo":
        path = str(tmp_path / "batch.jsonl")
        os.mkfifo(path)
    else:
        path = source
    before = state(sqlite_url(seeded_file))
    result = run(
        "build", "--batch", path, db=seeded_file, timeout=TIMEOUT, preexec_fn=limited_memory()
    )
    line = one_line(result, 1)
    assert "regular file" in line, line
    assert state(sqlite_url(seeded_file)) == before


def test_build_batch_refuses_a_sparse_giant(seeded_file: Path, tmp_path: Path) -> None:
    path = _sparse(tmp_path / "batch.jsonl", 8 << 30)
    result = run(
        "build", "--batch", str(path), db=seeded_file, timeout=TIMEOUT, preexec_fn=limited_memory()
    )
    line = one_line(result, 1)
    assert "batch.jsonl" in line and ("longer than" in line or "larger than" in line), line


def test_build_batch_missing_file_is_an_error_line(seeded_file: Path, tmp_path: Path) -> None:
    """The message said `Error:` (click's) instead of the ledger's `error:`."""
    result = run("build", "--batch", str(tmp_path / "missing.jsonl"), db=seeded_file)
    line = one_line(result, 1)
    assert "missing.jsonl" in line and "no such" in line, line


def test_build_batch_still_builds(seeded_file: Path, tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    path.write_bytes(
        b'{"subject": "default", "as_of": "2026-07-21"}\r\n'
        b'{"subject": "default", "as_of": "2026-07-22", "budget": 100}\n'
    )
    result = run("build", "--batch", str(path), "--json", db=seeded_file)
    assert result.returncode == 0, result.stderr
    assert '"failed": []' in result.stdout


@pytest.mark.parametrize("name", ["giant.jsonl", "giant.json"])
def test_ingest_of_an_8_gb_sparse_file_is_refused_in_bounded_memory(
    seeded_file: Path, tmp_path: Path, name: str
) -> None:
    """An 8 GB sparse file gave a MemoryError traceback."""
    path = _sparse(tmp_path / name, 8 << 30)
    before = state(sqlite_url(seeded_file))
    result = run("ingest", str(path), db=seeded_file, timeout=TIMEOUT, preexec_fn=limited_memory())
    line = one_line(result, 1)
    assert name in line and ("longer than" in line or "more than" in line), line
    assert state(sqlite_url(seeded_file)) == before


def test_a_500_mb_line_is_refused_before_it_is_held(seeded_file: Path, tmp_path: Path) -> None:
    """A 500 MB line peaked at 1.6 GB before it was refused, though any line over
    about 12 MB cannot be a valid record: under a 1 GiB limit that is a
    MemoryError; the reader refuses it after reading the limit."""
    path = tmp_path / "long.jsonl"
    good = write_jsonl(tmp_path / "good.jsonl", [chunk(id="first-note")]).read_bytes()
    with open(path, "wb") as f:
        f.write(good)
        f.write(b'{"content": "')
        block = b"y" * (1 << 20)
        for _ in range(500):
            f.write(block)
        f.write(b'"}\n')
    result = run("ingest", str(path), db=seeded_file, timeout=TIMEOUT, preexec_fn=limited_memory())
    line = one_line(result, 1)
    assert "long.jsonl:2" in line and "longer than" in line, line


def test_the_longest_valid_record_line_is_read(seeded_file: Path, tmp_path: Path) -> None:
    """The line limit is derived, not guessed: 1,000,000 astral characters, each
    escaped as a 12-byte surrogate pair, still make a valid record."""
    path = tmp_path / "astral.jsonl"
    body = "\\ud83d\\ude00" * 1_000_000
    text = write_jsonl(tmp_path / "x.jsonl", [chunk(id="astral-note", content="@")]).read_text()
    path.write_text(text.replace('"@"', f'"{body}"'), encoding="ascii")
    assert path.stat().st_size > 12_000_000
    result = run("ingest", str(path), db=seeded_file, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr[-500:]
