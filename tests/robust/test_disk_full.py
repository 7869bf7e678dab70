"""A full disk during ingest, build and the commands that write files.

Two ways to fill the disk, both run every time:

- `rlimit`: the child gets RLIMIT_FSIZE (SIGXFSZ ignored), so a write past the
  limit fails with EFBIG; SQLite reports "disk I/O error";
- `tmpfs`: the database (or output folder) lives on a small tmpfs mounted for
  the test (we run as root), so a write fails with ENOSPC; SQLite reports
  "database or disk is full". Where mounting is not permitted, this case falls
  back to `rlimit` (it is never skipped).

Each must be one clear line `error: ...` (no traceback, no chunk body), exit 1
(exit 2 and `context pack error:` for `ledger pack`), no partial record or
file, and a ledger that verifies once the limit is lifted and then accepts the
very same run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.clitools import (
    clean_env,
    cli_verify_ok,
    file_size_limit,
    ledger_cmd,
    one_error_line,
    run,
    sqlite_url,
    state,
    write_generated,
)
from tests.seeded import SEED_GRANTS, SEED_TRUST

METHODS = ("rlimit", "tmpfs")
DB_FAILURE = ("database or disk is full", "disk I/O error")
MARKER = "CONFIDENTIAL-BODY-7731"


class SmallDisk:
    """A folder whose files cannot grow past a limit, and a way to lift it."""

    def __init__(self, folder: Path, method: str) -> None:
        self.folder = folder
        self.method = method
        self.mounted = False
        folder.mkdir(parents=True, exist_ok=True)

    def fill_at(self, size: int) -> Callable[[], None] | None:
        """Make writes fail at about `size` bytes (tmpfs: in all; rlimit: per file);
        return the child's preexec_fn. Call it before putting files in the folder."""
        if self.method == "tmpfs" and not self.mounted:
            self.mounted = _mount(self.folder, size)
            if not self.mounted:  # not permitted here: the same fault another way
                self.method = "rlimit"
        if self.mounted:
            return None
        return file_size_limit(size)

    def move_in(self, source: Path, name: str) -> Path:
        target = self.folder / name
        shutil.copyfile(source, target)
        target.chmod(0o600)
        return target

    def lift(self) -> None:
        if self.mounted:
            _run(["mount", "-o", "remount,size=256m", str(self.folder)])

    def close(self) -> None:
        if self.mounted:
            for _ in range(50):
                done = subprocess.run(["umount", str(self.folder)], capture_output=True)
                if done.returncode == 0:
                    break
                time.sleep(0.1)
            else:
                _run(["umount", "-l", str(self.folder)])
            self.mounted = False


def _run(cmd: list[str]) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, (cmd, result.stderr)


def _mount(folder: Path, size: int) -> bool:
    if shutil.which("mount") is None:
        return False
    size = max(8192, -(-size // 4096) * 4096)  # whole pages
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(folder)],
        capture_output=True,
    )
    return result.returncode == 0


@pytest.fixture(params=METHODS)
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SmallDisk]:
    small = SmallDisk(tmp_path / "small", str(request.param))
    try:
        yield small
    finally:
        small.close()


def wal_peak(cmd: list[str], wal: Path) -> int:
    """Run `cmd` to completion; the largest size its write-ahead log reached."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=clean_env())
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, wal.stat().st_size)
        except FileNotFoundError:
            pass
        time.sleep(0.002)
    err = proc.stderr.read() if proc.stderr else b""
    if proc.stderr:
        proc.stderr.close()
    assert proc.returncode == 0, err
    return peak


@pytest.fixture(scope="module")
def big_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10,000 records, about 6 MB: more than the small disk holds."""
    folder = tmp_path_factory.mktemp("input")
    return write_generated(folder / "big.jsonl", 10_000, "full-", MARKER + " " + "x" * 500)


@pytest.fixture(scope="module")
def ingest_wal(
    seeded_sqlite_base: Path, big_input: Path, tmp_path_factory: pytest.TempPathFactory
) -> int:
    copy = tmp_path_factory.mktemp("calibrate") / "ledger.db"
    shutil.copyfile(seeded_sqlite_base, copy)
    return wal_peak(ledger_cmd("ingest", str(big_input), db=copy), Path(str(copy) + "-wal"))


def assert_database_failure(result) -> str:  # type: ignore[no-untyped-def]
    message = one_error_line(result)
    assert message.startswith("the database failed: "), message
    assert any(reason in message for reason in DB_FAILURE), message
    assert MARKER not in result.stderr  # no statement parameters, no bodies
    return message


def test_ingest_on_a_full_disk(
    disk: SmallDisk, seeded_sqlite_base: Path, big_input: Path, ingest_wal: int
) -> None:
    # tmpfs: the database and a third of what the run writes; rlimit: a third per file.
    size = seeded_sqlite_base.stat().st_size
    preexec = disk.fill_at(size + ingest_wal // 3 if disk.method == "tmpfs" else ingest_wal // 3)
    db = disk.move_in(seeded_sqlite_base, "ledger.db")
    before = state(sqlite_url(db))
    result = run("ingest", str(big_input), db=db, preexec_fn=preexec)
    assert_database_failure(result)

    disk.lift()
    assert state(sqlite_url(db)) == before  # no partial record
    cli_verify_ok(sqlite_url(db))
    done = json.loads(run("ingest", "--json", str(big_input), db=db, check=True).stdout)
    assert (done["read"], done["new"]) == (10_000, 10_000)
    cli_verify_ok(sqlite_url(db))


@pytest.fixture(scope="module")
def candidates_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("candidates")
    path = folder / "ledger.db"
    url = sqlite_url(path)
    run("init", db=url, check=True)
    run(
        "ingest",
        str(write_generated(folder / "c.jsonl", 3_000, "cand-", MARKER)),
        db=url,
        check=True,
    )
    run("subject", "grant", "default", *SEED_GRANTS, db=url, check=True)
    args = [a for t in SEED_TRUST for a in ("--allow-trust", t)]
    run("policy", "set", *args, "--budget", "4000", db=url, check=True)
    return path


@pytest.fixture(scope="module")
def batch_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twenty packs in one transaction: 60,000 decision rows."""
    path = tmp_path_factory.mktemp("batch") / "batch.jsonl"
    path.write_text(
        "".join(
            json.dumps({"subject": "default", "as_of": f"2026-{1 + i % 12:02d}-15"}) + "\n"
            for i in range(20)
        ),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("kind", ["single", "batch"])
def test_build_on_a_full_disk(
    disk: SmallDisk, candidates_db: Path, batch_file: Path, kind: str, tmp_path: Path
) -> None:
    args = (
        ("build", "--as-of", "2026-07-21")
        if kind == "single"
        else ("build", "--batch", str(batch_file))
    )
    copy = tmp_path / "calibrate.db"
    shutil.copyfile(candidates_db, copy)
    peak = wal_peak(ledger_cmd(*args, db=copy), Path(str(copy) + "-wal"))
    assert peak > 64 << 10, peak

    size = candidates_db.stat().st_size
    preexec = disk.fill_at(size + peak // 3 if disk.method == "tmpfs" else max(40 << 10, peak // 3))
    db = disk.move_in(candidates_db, "ledger.db")
    before = state(sqlite_url(db))
    result = run(*args, db=db, preexec_fn=preexec)
    assert_database_failure(result)

    disk.lift()
    assert state(sqlite_url(db)) == before  # no pack, no decision, no entry
    cli_verify_ok(sqlite_url(db))
    run(*args, db=db, check=True)
    packs = json.loads(run("packs", "--json", db=db, check=True).stdout)["packs"]
    assert [p["pack"] for p in packs] == list(range(1, (1 if kind == "single" else 20) + 1))
    cli_verify_ok(sqlite_url(db))


@pytest.fixture(scope="module")
def export_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One admitted chunk of 300 KB, so that its export does not fit."""
    from tests.conftest import chunk

    folder = tmp_path_factory.mktemp("export")
    path = folder / "ledger.db"
    record = chunk(id="large", dedupe_key="large", content=MARKER + " " + "y" * 300_000)
    (folder / "c.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    run("init", db=path, check=True)
    run("ingest", str(folder / "c.jsonl"), db=path, check=True)
    run("subject", "grant", "default", "public-read", db=path, check=True)
    run("policy", "set", "--allow-trust", "approved-source", "--budget", "100", db=path, check=True)
    run("build", "--as-of", "2026-07-21", db=path, check=True)
    return path


def test_export_on_a_full_disk(disk: SmallDisk, export_db: Path) -> None:
    target = disk.folder / "pack.md"
    preexec = disk.fill_at(100 << 10)
    result = run(
        "export",
        "1",
        "--format",
        "markdown",
        "--with-content",
        "-o",
        str(target),
        db=export_db,
        preexec_fn=preexec,
    )
    message = one_error_line(result)
    assert message.startswith(f"{target}: cannot write"), message
    assert list(disk.folder.iterdir()) == []  # neither the file nor its temporary
    disk.lift()
    run(
        "export",
        "1",
        "--format",
        "markdown",
        "--with-content",
        "-o",
        str(target),
        db=export_db,
        check=True,
    )
    assert MARKER in target.read_text(encoding="utf-8")


def test_transcript_export_on_a_full_disk(disk: SmallDisk, tmp_path: Path) -> None:
    source = tmp_path / "chat.jsonl"
    lines = []
    for i in range(40):
        question = f"{MARKER} question {i} " + "q" * 4000
        lines.append(json.dumps({"role": "user", "content": question}))
        lines.append(json.dumps({"role": "assistant", "content": f"answer {i} " + "a" * 4000}))
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sidecar = tmp_path / "chat.priorities.json"
    run("transcript", "annotate", str(source), str(sidecar), check=True)
    out = disk.folder / "out"
    preexec = disk.fill_at(100 << 10)
    result = run(
        "transcript", "export", str(source), str(sidecar), "1000000", str(out), preexec_fn=preexec
    )
    one_error_line(result)
    assert not (out / "continuation.md").exists() and not (out / "omissions.json").exists()
    assert [p for p in out.rglob("*") if p.is_file()] == []  # the staged files are gone
    disk.lift()
    run("transcript", "export", str(source), str(sidecar), "1000000", str(out), check=True)


def test_pack_json_on_a_full_disk(disk: SmallDisk, tmp_path: Path) -> None:
    from tests.seeded import SEED

    fixture = json.loads(json.dumps(SEED))
    for item in fixture["chunks"]:
        item["content"] = item["content"] + " " + "z" * 9_000
    path = tmp_path / "big-fixture.json"
    path.write_text(json.dumps(fixture), encoding="utf-8")
    target = disk.folder / "pack.json"
    preexec = disk.fill_at(16 << 10)
    result = run("pack", "--fixture", str(path), "--json-pack", str(target), preexec_fn=preexec)
    message = one_error_line(result, code=2, prefix="context pack error: ")
    assert "cannot write the JSON pack" in message, message
    assert list(disk.folder.iterdir()) == []
    disk.lift()
    run("pack", "--fixture", str(path), "--json-pack", str(target), check=True)
