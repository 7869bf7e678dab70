"""Every file the ledger reads is opened once, checked on the descriptor, and
read up to a cap (issue 38, items 5 and 6): a candidates file that is
/dev/zero or a FIFO, a document over the rules' max_file_bytes."""

from __future__ import annotations

import os
from pathlib import Path

from tests import dbtools
from tests.conftest import run_ledger
from tests.seeded import seed_ledger


def _one_line(proc: object) -> str:
    stderr = proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return str(lines[0])


def test_candidates_that_are_a_device_or_a_fifo_are_refused_at_once(tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.db")
    seed_ledger(db, init=True, build=False)
    before = dbtools.snapshot(db)
    fifo = tmp_path / "candidates.fifo"
    os.mkfifo(fifo)  # no writer: reading it would wait forever
    for source in ("/dev/zero", str(fifo)):
        proc = run_ledger("build", "--as-of", "2026-07-21", "--candidates", source, db=db)
        assert proc.returncode == 1, proc.stderr
        assert "not a regular file" in _one_line(proc)
    assert dbtools.snapshot(db) == before


def test_a_document_over_max_file_bytes_is_refused_by_name(tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.db")
    run_ledger("init", db=db, check=True)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "small.md").write_text("# Small\n\nText.\n", encoding="utf-8")
    (docs / "big.md").write_text("# Big\n\n" + "word " * 400, encoding="utf-8")
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[source]\nname = "kb"\nuri = "https://example.org/{path}"\nmax_file_bytes = 1000\n'
        '\n[[rule]]\nmatch = "**"\nsection = "evidence"\nrequired_permission = "kb-read"\n'
        'trust = "approved-source"\npriority = 50\n',
        encoding="utf-8",
    )
    before = dbtools.snapshot(db)
    proc = run_ledger("ingest", str(docs), "--rules", str(rules), db=db)
    assert proc.returncode == 1
    line = _one_line(proc)
    assert "big.md: the document is over 1,000 bytes" in line and "max_file_bytes" in line
    assert dbtools.snapshot(db) == before
    rules.write_text(rules.read_text().replace("max_file_bytes = 1000", "max_file_bytes = 0"))
    assert "max_file_bytes" in _one_line(
        run_ledger("ingest", str(docs), "--rules", str(rules), db=db)
    )
