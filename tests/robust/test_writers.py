"""Writers side by side: processes that build, ingest and change grants at once.

A build selects without the write lock and takes it only to append (store/
build.py), so processes overlap; the chain must still be one gap-free sequence
in which nothing is lost or doubled, every pack must replay, and a writer
killed while it holds the lock must not stop the next one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ledger
from tests.clitools import clean_env, pack_numbers, sqlite_url, verify_ok
from tests.seeded import AS_OF, seed_ledger

BUILDS = 12  # per builder process
INGESTS = 4
GRANTS = 4

BUILDER = """
import sys, ledger
url, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with ledger.open(url) as lg:
    for i in range(n):
        if i % 2:
            lg.build(as_of="{as_of}", query="refund policy", top=3)
        else:
            lg.build(as_of="{as_of}", budget=150 + i)
print("done", who)
"""

INGESTER = """
import json, sys, ledger
url, folder, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with ledger.open(url) as lg:
    for i in range(n):
        path = f"{{folder}}/more-{{i}}.jsonl"
        lg.ingest_paths([path])
print("done ingest")
"""

GRANTER = """
import sys, ledger
url, n = sys.argv[1], int(sys.argv[2])
with ledger.open(url) as lg:
    for i in range(n):
        lg.grant(f"agent-{{i}}", "public-read")
print("done grants")
"""


def more_chunks(folder: Path, n: int) -> None:
    """`n` files of 50 new evidence chunks each, ids unique across files."""
    base = json.loads((Path("fixtures") / "support-chunks.json").read_text("utf-8"))["chunks"]
    template = next(c for c in base if c["id"] == "refund-faq")
    for i in range(n):
        with (folder / f"more-{i}.jsonl").open("w", encoding="utf-8") as f:
            for j in range(50):
                cid = f"more-{i}-{j}"
                content = f"Refund policy note {i}-{j} for the parallel writers."
                record = {**template, "id": cid, "dedupe_key": cid, "content": content}
                f.write(json.dumps(record) + "\n")


def url_of(db: str | Path) -> str:
    return str(db) if "://" in str(db) else sqlite_url(Path(db))


def script(code: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )


@pytest.fixture
def db(backend: str, request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A ledger holding the seeded ledger's entries 1-3 (no pack), on each backend."""
    from tests import dbtools

    if backend == "postgresql":
        request.getfixturevalue("pg_server")
    path = dbtools.new_ledger(tmp_path / "db", backend)
    seed_ledger(path, build=False)
    yield path
    dbtools.drop(path)


def test_parallel_writers_lose_nothing_and_every_pack_replays(db: str, tmp_path: Path) -> None:
    more_chunks(tmp_path, INGESTS)
    builder = BUILDER.format(as_of=AS_OF)
    procs = [
        script(builder, db, "a", str(BUILDS)),
        script(builder, db, "b", str(BUILDS)),
        script(INGESTER.format(), db, str(tmp_path), str(INGESTS)),
        script(GRANTER.format(), db, str(GRANTS)),
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
        assert out.decode().startswith("done")
    entries = verify_ok(url_of(db))  # every digest and the whole chain
    assert entries == 3 + 2 * BUILDS + INGESTS + GRANTS  # nothing lost, nothing doubled
    assert pack_numbers(url_of(db)) == list(range(1, 2 * BUILDS + 1))
    with ledger.open(db) as lg:
        assert len(lg.chunks().to_json()["chunks"]) >= 11 + 50 * INGESTS
        for number in pack_numbers(url_of(db)):
            assert lg.replay(number).identical, number
            pack = lg.show(number).to_json()
            # A pack's mark is before its own entry: what it read, never what
            # another writer appended after it started.
            assert pack["ledger_mark"] < pack["entry"]


HOLDER = """
import sys, time
from ledger.store.engine import open_engine, write_transaction
engine = open_engine(sys.argv[1])
with write_transaction(engine) as conn:
    print("locked", flush=True)
    time.sleep(60)
"""


def test_a_writer_killed_while_it_holds_the_lock_does_not_stop_the_next(db: str) -> None:
    holder = script(HOLDER, url_of(db))
    assert holder.stdout is not None
    assert holder.stdout.readline().decode().strip() == "locked"
    waiting = script(BUILDER.format(as_of=AS_OF), db, "w", "1")
    time.sleep(1.0)
    assert waiting.poll() is None  # queued behind the holder
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err.decode()
    assert verify_ok(url_of(db)) == 4
    assert pack_numbers(url_of(db)) == [1]
    for stream in (holder.stdout, holder.stderr):
        if stream is not None:
            stream.close()


def test_the_lock_file_is_the_ledgers_owner_only_and_never_an_output(tmp_path: Path) -> None:
    from ledger import safeio

    db = tmp_path / "ledger.db"
    seed_ledger(db, init=True, build=False)
    lock = tmp_path / "ledger.db-writer"
    assert lock.exists() and (lock.stat().st_mode & 0o777) == 0o600
    assert lock in safeio.database_files(db)
    with pytest.raises(safeio.UnsafeOutputError):
        safeio.write_output(lock, b"x", protected=safeio.database_files(db))
