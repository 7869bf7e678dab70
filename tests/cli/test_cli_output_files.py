"""Issue 14, class "outputs that destroy inputs": no file the ledger writes may
alias the database, its `-wal`/`-shm` companions or any input of the command
(compared by device and inode after resolving; refused with exit 1, or 2 for
`ledger pack`); an existing output that is not a regular file is refused; and
`pack --json-pack` never writes through a symbolic link.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.clitools import Run, no_traceback, one_line, run, verify_json
from tests.conftest import FIXTURE, run_ledger


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


WRITERS = [
    ("export", "1", "--format", "json", "-o"),
    ("export", "1", "--format", "markdown", "--with-content", "-o"),
    ("report", "1", "-o"),
    ("report", "--diff", "1", "2", "-o"),
    ("report", "--chunk", "refund-faq", "-o"),
]


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: "-".join(w[:2]))
@pytest.mark.parametrize(
    "alias", ["same-path", "relative", "hard-link", "symlink", "wal", "shm", "linked-folder-wal"]
)
def test_output_never_aliases_the_database(
    seeded_file: Path, writer: tuple[str, ...], alias: str
) -> None:
    """`export 1 -o ledger.db` replaced the whole ledger with the export and exited 0."""
    folder = seeded_file.parent
    before = _digest(seeded_file)
    if alias == "same-path":
        target = str(seeded_file)
    elif alias == "relative":
        target = "./sub/../ledger.db"
        (folder / "sub").mkdir()
    elif alias == "hard-link":
        os.link(seeded_file, folder / "alias.db")
        target = str(folder / "alias.db")
    elif alias == "symlink":
        os.symlink(seeded_file, folder / "alias.db")
        target = str(folder / "alias.db")
    elif alias == "linked-folder-wal":
        os.symlink(folder, folder / "lnk")
        target = str(folder / "lnk" / "ledger.db-wal")  # not there yet: caught by resolving
    else:
        target = f"{seeded_file}-{alias}"
    result = run(*writer, target, db=seeded_file, cwd=folder)
    line = one_line(result, 1)
    assert "ledger.db" in line or "alias.db" in line, line
    assert not Path(f"{seeded_file}-wal").exists()
    assert _digest(seeded_file) == before
    if alias in ("wal", "shm", "linked-folder-wal"):
        # SQLite removes its companions when the last connection closes: the
        # export must not have left a file of its own under that name.
        assert not Path(target).exists()
    assert verify_json(seeded_file)["ok"] is True


@pytest.mark.parametrize("writer", WRITERS[:3], ids=lambda w: "-".join(w[:2]))
def test_output_that_is_a_fifo_is_refused_not_replaced(
    seeded_file: Path, writer: tuple[str, ...]
) -> None:
    """As root, `report 1 -o /dev/null` replaced /dev/null with a regular file: a
    non-regular output (here a named pipe, which any user can make) is refused."""
    fifo = seeded_file.parent / "pipe"
    os.mkfifo(fifo)
    result = run(*writer, str(fifo), db=seeded_file, timeout=60)
    line = one_line(result, 1)
    assert "regular file" in line, line
    assert fifo.is_fifo()


def test_pack_json_pack_never_aliases_its_fixture(tmp_path: Path) -> None:
    fixture = tmp_path / "fixture.json"
    fixture.write_bytes(FIXTURE.read_bytes())
    before = fixture.read_bytes()
    os.link(fixture, tmp_path / "hard.json")
    for target in (fixture, tmp_path / "hard.json", tmp_path / "." / "fixture.json"):
        result = run("pack", "--fixture", str(fixture), "--json-pack", str(target))
        one_line(result, 2, prefix="context pack error: ")
        assert fixture.read_bytes() == before


def test_pack_json_pack_refuses_a_symbolic_link(tmp_path: Path) -> None:
    """`pack --json-pack link` wrote through the link (the reference may do the
    same: the ledger is safer and refuses, see `ledger pack --help`)."""
    target = tmp_path / "elsewhere.json"
    target.write_text("keep me\n", encoding="utf-8")
    link = tmp_path / "pack.json"
    os.symlink(target, link)
    result = run("pack", "--json-pack", str(link))
    line = one_line(result, 2, prefix="context pack error: ")
    assert "symbolic link" in line, line
    assert target.read_text(encoding="utf-8") == "keep me\n"
    assert link.is_symlink()


def test_pack_json_pack_does_not_create_a_dangling_links_folders(tmp_path: Path) -> None:
    """A dangling link's target folders were created anywhere the link pointed."""
    far = tmp_path / "far" / "away" / "pack.json"
    link = tmp_path / "pack.json"
    os.symlink(far, link)
    result = run("pack", "--json-pack", str(link))
    one_line(result, 2, prefix="context pack error: ")
    assert not (tmp_path / "far").exists()


def test_pack_json_pack_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pack.json"
    os.mkfifo(fifo)
    result = run("pack", "--json-pack", str(fifo), timeout=60)
    one_line(result, 2, prefix="context pack error: ")
    assert fifo.is_fifo()


def test_pack_json_pack_still_creates_missing_parents(tmp_path: Path) -> None:
    """The seed-001 contract: parent folders are created (for a real path)."""
    target = tmp_path / "new" / "dir" / "pack.json"
    result = run("pack", "--json-pack", str(target))
    no_traceback(result)
    assert result.returncode == 0, result.stderr
    assert target.is_file() and not target.is_symlink()
    assert result.stdout.splitlines()[-1] == f"wrote {target}"


@pytest.mark.parametrize("named", ["--db", "LEDGER_DB", "default"])
@pytest.mark.parametrize("suffix", ["", "-wal", "-journal"])
def test_pack_json_pack_never_aliases_the_database(
    seeded_file: Path, named: str, suffix: str
) -> None:
    """`ledger --db team.db pack --json-pack team.db` replaced the ledger with the
    JSON pack and exited 0: `pack` opens no database, but its output may not be
    the database of --db, LEDGER_DB or the default ledger.db, nor a companion."""
    folder = seeded_file.parent
    before = _digest(seeded_file)
    argv = ["pack", "--json-pack", f"ledger.db{suffix}"]
    env = {"LEDGER_DB": str(seeded_file)} if named == "LEDGER_DB" else None
    result = run_ledger(*argv, db=seeded_file if named == "--db" else None, cwd=folder, env=env)
    line = one_line(
        Run(tuple(argv), result.returncode, result.stdout, result.stderr),
        2,
        prefix="context pack error: ",
    )
    assert f"ledger.db{suffix}" in line, line
    assert _digest(seeded_file) == before
    assert not Path(f"{seeded_file}-wal").exists()
    assert not Path(f"{seeded_file}-journal").exists()
    assert verify_json(seeded_file)["ok"] is True


def test_keygen_never_writes_the_databases_companion(seeded_file: Path) -> None:
    """`keygen -o ledger.db-wal` wrote the private key where SQLite keeps its
    write-ahead log: the next command would take it for the log and delete it."""
    folder = seeded_file.parent
    result = run("keygen", "example.com/ledger", "-o", "ledger.db-wal", db=seeded_file, cwd=folder)
    line = one_line(result, 1)
    assert "ledger.db-wal" in line, line
    assert not Path(f"{seeded_file}-wal").exists()
    assert verify_json(seeded_file)["ok"] is True


def test_checkpoint_output_never_replaces_its_signing_key(seeded_file: Path) -> None:
    """`checkpoint --key k -o k` replaced the private key with the checkpoint."""
    folder = seeded_file.parent
    run("keygen", "example.com/ledger", "-o", "ledger.key", db=seeded_file, cwd=folder, check=True)
    key = folder / "ledger.key"
    before = key.read_bytes()
    result = run(
        "checkpoint", "--key", "ledger.key", "-o", "ledger.key", db=seeded_file, cwd=folder
    )
    line = one_line(result, 1)
    assert "ledger.key" in line, line
    assert key.read_bytes() == before


def test_transcript_annotate_never_writes_the_databases_companion(seeded_file: Path) -> None:
    """`transcript annotate chat.jsonl ledger.db-wal` wrote the sidecar as the
    database's write-ahead log."""
    folder = seeded_file.parent
    chat = folder / "chat.jsonl"
    chat.write_text(
        '{"role":"user","content":"hi"}\n{"role":"assistant","content":"ok"}\n', encoding="utf-8"
    )
    result = run("transcript", "annotate", str(chat), "ledger.db-wal", db=seeded_file, cwd=folder)
    line = one_line(result, 1)
    assert "ledger.db-wal" in line, line
    assert not Path(f"{seeded_file}-wal").exists()
    assert verify_json(seeded_file)["ok"] is True
