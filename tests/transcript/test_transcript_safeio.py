"""ledger.safeio: refusal checks, the OVERWRITE confirmation, staged owner-only writes."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from ledger import safeio
from ledger.core.errors import InputError, RefusedError


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


# -- refusal checks --------------------------------------------------------------------


def test_missing_output_is_fine_existing_regular_file_is_reported(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    assert safeio.check_output(target, protected=[]) is False
    target.write_text("old")
    assert safeio.check_output(target, protected=[]) is True


def test_symlink_output_is_refused_even_when_dangling(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("x")
    for name, dest in (("link.md", real), ("dangling.md", tmp_path / "nowhere")):
        link = tmp_path / name
        link.symlink_to(dest)
        with pytest.raises(safeio.UnsafeOutputError, match="symbolic link"):
            safeio.check_output(link, protected=[])


def test_hard_linked_output_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    target.write_text("x")
    os.link(target, tmp_path / "other-name")
    with pytest.raises(safeio.UnsafeOutputError, match="2 hard links"):
        safeio.check_output(target, protected=[])


def test_output_aliasing_an_input_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "chat.jsonl"
    source.write_text("x")
    # Same path, spelled differently.
    with pytest.raises(safeio.UnsafeOutputError, match="same path as the input"):
        safeio.check_output(tmp_path / "sub" / ".." / "chat.jsonl", protected=[source])
    # Same inode through a hard link: named as an alias, before the link count.
    alias = tmp_path / "out.md"
    os.link(source, alias)
    with pytest.raises(safeio.UnsafeOutputError, match="same file as the input"):
        safeio.check_output(alias, protected=[source])
    # The input itself reached through a symlink to the output.
    target = tmp_path / "target.md"
    target.write_text("y")
    sneaky = tmp_path / "sneaky.jsonl"
    sneaky.symlink_to(target)
    with pytest.raises(safeio.UnsafeOutputError, match="same file as the input"):
        safeio.check_output(target, protected=[sneaky])


def test_directory_at_output_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out.md").mkdir()
    with pytest.raises(safeio.UnsafeOutputError, match="not a regular file"):
        safeio.check_output(tmp_path / "out.md", protected=[])


def test_output_directory_checks(tmp_path: Path) -> None:
    assert safeio.check_directory(tmp_path / "new") is False
    safeio.ensure_directory(tmp_path / "new" / "deeper")
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "deeper").st_mode) == 0o700 & ~_umask()
    (tmp_path / "file").write_text("x")
    with pytest.raises(safeio.UnsafeOutputError, match="not a directory"):
        safeio.ensure_directory(tmp_path / "file")
    (tmp_path / "link").symlink_to(tmp_path / "new")
    with pytest.raises(safeio.UnsafeOutputError, match="symbolic link"):
        safeio.check_directory(tmp_path / "link")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_read_input_refusals(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such transcript file"):
        safeio.read_input(tmp_path / "missing.jsonl", what="transcript file")
    with pytest.raises(InputError, match="directory"):
        safeio.read_input(tmp_path, what="transcript file")
    (tmp_path / "a").write_bytes(b"\x00\xff")
    assert safeio.read_input(tmp_path / "a", what="transcript file") == b"\x00\xff"


# -- confirmation --------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 9, 10, 11])
def test_read_bounded_reads_the_whole_file_up_to_the_cap(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * size)
    with safeio.open_regular(path, "file") as handle:
        if size > 10:
            with pytest.raises(safeio.UnreadableInputError, match="over 10 bytes"):
                safeio.read_bounded(handle, path, "file", 10, "")
        else:
            assert safeio.read_bounded(handle, path, "file", 10, "") == b"x" * size


class _GrownSinceStat:
    """A file's handle whose descriptor reports the size it had before it grew
    (what a file appended to between `fstat` and the read looks like)."""

    def __init__(self, handle: io.BufferedReader, stale: io.BufferedReader) -> None:
        self.handle, self.stale = handle, stale

    def read(self, n: int) -> bytes:
        return self.handle.read(n)

    def fileno(self) -> int:
        return self.stale.fileno()


@pytest.mark.parametrize(("grown", "refused"), [(3, False), (4, False), (5, True)])
def test_a_file_that_grew_after_its_size_was_read_is_read_on_to_the_cap(
    tmp_path: Path, grown: int, refused: bool
) -> None:
    path, before = tmp_path / "f.bin", tmp_path / "before.bin"
    before.write_bytes(b"a" * 6)
    path.write_bytes(b"a" * 6 + b"b" * grown)
    with path.open("rb") as handle, before.open("rb") as stale:
        grew: Any = _GrownSinceStat(handle, stale)
        if refused:  # 11 bytes, over the cap of 10
            with pytest.raises(safeio.UnreadableInputError, match="over 10 bytes"):
                safeio.read_bounded(grew, path, "file", 10, "")
        else:
            assert safeio.read_bounded(grew, path, "file", 10, "") == b"a" * 6 + b"b" * grown


def test_nothing_existing_needs_no_confirmation() -> None:
    safeio.confirm_overwrite([], stdin=io.StringIO(), stdout=io.StringIO())


@pytest.mark.parametrize(
    ("stdin", "stdout"),
    [
        (io.StringIO("OVERWRITE\n"), io.StringIO()),
        (Terminal("OVERWRITE\n"), io.StringIO()),
        (io.StringIO("OVERWRITE\n"), Terminal()),
    ],
)
def test_without_a_terminal_it_is_refused_and_never_asked(
    stdin: io.StringIO, stdout: io.StringIO
) -> None:
    with pytest.raises(safeio.OverwriteRefusedError) as info:
        safeio.confirm_overwrite([Path("out/continuation.md")], stdin=stdin, stdout=stdout)
    assert "without a terminal" in str(info.value) and "no force flag" in str(info.value)
    assert "\n" not in str(info.value)
    assert stdout.getvalue() == ""
    assert stdin.read() == "OVERWRITE\n"  # nothing was read
    assert isinstance(info.value, RefusedError)


@pytest.mark.parametrize("answer", ["OVERWRITE\n", "OVERWRITE\r\n", "OVERWRITE"])
def test_typed_overwrite_at_a_terminal_confirms(answer: str) -> None:
    out = Terminal()
    safeio.confirm_overwrite([Path("a"), Path("b")], stdin=Terminal(answer), stdout=out)
    assert out.getvalue() == "a, b already exist. Type OVERWRITE to replace: "


@pytest.mark.parametrize(
    "answer", ["overwrite\n", "yes\n", "OVERWRITE \n", " OVERWRITE\n", "OVERWRITEX\n", "\n", ""]
)
def test_anything_else_at_a_terminal_refuses(answer: str) -> None:
    with pytest.raises(safeio.OverwriteRefusedError, match="not confirmed"):
        safeio.confirm_overwrite([Path("a")], stdin=Terminal(answer), stdout=Terminal())


# -- staged publishing ----------------------------------------------------------------------


def test_publish_writes_owner_only_files_and_leaves_no_staging(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        safeio.publish(
            tmp_path,
            [("a.md", [b"hello ", memoryview(b"world")]), ("b.json", [b"{}\n"])],
            confirmed=[],
            protected=[],
        )
    finally:
        os.umask(old)
    assert (tmp_path / "a.md").read_bytes() == b"hello world"
    assert (tmp_path / "b.json").read_bytes() == b"{}\n"
    for name in ("a.md", "b.json"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600
    assert listing(tmp_path) == ["a.md", "b.json"]


def test_publish_replaces_confirmed_files(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("old")
    os.chmod(tmp_path / "a.md", 0o644)
    safeio.publish(tmp_path, [("a.md", [b"new"])], confirmed=[tmp_path / "a.md"], protected=[])
    assert (tmp_path / "a.md").read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(tmp_path / "a.md").st_mode) == 0o600


def test_publish_refuses_a_target_that_appeared_unconfirmed(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("someone else's")
    with pytest.raises(safeio.OverwriteRefusedError, match="appeared while writing"):
        safeio.publish(tmp_path, [("a.md", [b"new"])], confirmed=[], protected=[])
    assert (tmp_path / "a.md").read_text() == "someone else's"
    assert listing(tmp_path) == ["a.md"]


def test_publish_refuses_a_symlink_that_appeared(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text("keep")
    (tmp_path / "a.md").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(safeio.UnsafeOutputError):
        safeio.publish(tmp_path, [("a.md", [b"new"])], confirmed=[tmp_path / "a.md"], protected=[])
    assert (tmp_path / "elsewhere").read_text() == "keep"
    assert listing(tmp_path) == ["a.md", "elsewhere"]


def test_failure_while_staging_removes_the_staging_directory(tmp_path: Path) -> None:
    def chunks():  # type: ignore[no-untyped-def]
        yield b"partial"
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        safeio.publish(tmp_path, [("a.md", chunks())], confirmed=[], protected=[])
    assert listing(tmp_path) == []


def test_staging_directory_is_private_and_inside_outdir(tmp_path: Path) -> None:
    seen: list[tuple[Path, int]] = []

    def chunks():  # type: ignore[no-untyped-def]
        (staging,) = [p for p in tmp_path.iterdir() if p.name.startswith(".ledger-transcript-")]
        seen.append((staging, stat.S_IMODE(os.stat(staging).st_mode)))
        yield b"x"

    safeio.publish(tmp_path, [("a.md", chunks())], confirmed=[], protected=[])
    assert seen and seen[0][1] == 0o700 and seen[0][0].parent == tmp_path
    assert not seen[0][0].exists()
