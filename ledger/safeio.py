"""Careful file output: refusal checks, typed OVERWRITE confirmation, staged writes.

The rules (transcript annotate/export follow them):

- inputs are opened read-only (`read_input`), never for writing;
- an output that is a symbolic link, a hard-linked file (more than one link), not
  a regular file, or the same file as a protected input (same path after
  resolving, or same device and inode) is refused; so is an output directory that
  is a symbolic link. A SQLite database is protected with its `-wal`, `-shm` and
  `-journal` companions (`database_files`), which need not exist yet;
- an existing output is replaced only after the user types `OVERWRITE` at a
  terminal (stdin and stdout both TTYs); without a terminal it is refused, and
  there is no force flag;
- outputs are written into a fresh `.ledger-transcript-*` directory (0700) inside
  the output directory as owner-only files (0600), synced, then renamed into place
  with `os.replace`. A failure during the renames can leave one new and one old
  output: this is not a transactional multi-file replace, and the staged files
  that remain are named in the error. Concurrent writers to one output directory
  are unsupported.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

from ledger.core.errors import InputError, RefusedError

CONFIRM_WORD = "OVERWRITE"
STAGING_PREFIX = ".ledger-transcript-"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class UnsafeOutputError(RefusedError):
    """An output path is a symlink, a hard link, not a file, or aliases an input."""


class OverwriteRefusedError(RefusedError):
    """An existing output would be replaced without a typed OVERWRITE."""


class StagingError(RefusedError):
    """Writing or publishing the staged outputs failed."""


class UnreadableInputError(InputError):
    """An input that is not a readable regular file. `problem` names the case
    ("missing", "directory", "special" for a device, pipe or socket, "unreadable")
    so a caller bound to a seed contract's wording can say it its own way."""

    def __init__(self, message: str, problem: str):
        super().__init__(message)
        self.problem = problem

    def __reduce__(self) -> tuple[type[UnreadableInputError], tuple[str, str]]:
        # Pickled whole (ingest's reader process sends its errors so).
        return (type(self), (str(self), self.problem))


# The largest whole file the ledger reads into memory by default (candidates
# files, proofs, sidecars, fixtures, tests files, keys); documents have their own
# cap in the rules file (`max_file_bytes`).
MAX_INPUT_BYTES = 256 * 1024 * 1024


def open_regular(path: str | Path, what: str, *, follow: bool = True) -> BinaryIO:
    """Open `path` for reading if it is a regular file; else one line
    (`UnreadableInputError`). The one way the ledger opens an input file.

    Opened without blocking, so a named pipe with no writer is refused at once
    instead of hanging, and a device (/dev/zero) is refused before any byte is
    read; what is checked is the opened descriptor, so nothing can be swapped in
    between. With `follow=False` a symbolic link is refused by the open itself
    (`O_NOFOLLOW`). `what` names the file in messages ("chunk file").
    """
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC | (0 if follow else _NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise UnreadableInputError(f"{path}: no such {what}", "missing") from None
    except IsADirectoryError:
        raise UnreadableInputError(
            f"{path}: is a directory; name the {what}", "directory"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise UnreadableInputError(
                f"{path}: the {what} is a symbolic link; links are refused (name the file itself)",
                "link",
            ) from None
        raise UnreadableInputError(
            f"{path}: cannot read the {what} ({exc.strerror or exc})", "unreadable"
        ) from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise UnreadableInputError(
            f"{path}: cannot read the {what} ({exc.strerror or exc})", "unreadable"
        ) from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise UnreadableInputError(f"{path}: is a directory; name the {what}", "directory")
        raise UnreadableInputError(
            f"{path}: the {what} is not a regular file (a device, pipe or socket)", "special"
        )
    return os.fdopen(fd, "rb")


def read_input(
    path: str | Path,
    *,
    what: str,
    limit: int = MAX_INPUT_BYTES,
    follow: bool = True,
    raise_it: str = "",
) -> bytes:
    """A whole input file as bytes, opened by `open_regular` and read up to
    `limit` bytes: a longer file is refused by name, before more is read
    (`raise_it` says how to allow a larger one, where that can be set)."""
    with open_regular(path, what, follow=follow) as handle:
        return read_bounded(handle, path, what, limit, raise_it)


def read_bounded(handle: BinaryIO, path: str | Path, what: str, limit: int, raise_it: str) -> bytes:
    """At most `limit` bytes of an open regular file, or one line naming the cap.
    The read asks for the file's size and one byte more (asking for the cap
    would allocate it for every file); a file that grew since is read on, to
    the cap."""
    try:
        want = min(limit, os.fstat(handle.fileno()).st_size) + 1
        data = handle.read(want)
        if len(data) == want and want <= limit:  # it grew: read on, up to the cap
            data += handle.read(limit + 1 - want)
    except OSError as exc:
        raise UnreadableInputError(
            f"{path}: cannot read the {what} ({exc.strerror or exc})", "unreadable"
        ) from None
    if len(data) > limit:
        how = f"; {raise_it}" if raise_it else ""
        raise UnreadableInputError(
            f"{path}: the {what} is over {limit:,} bytes, the most the ledger reads{how}",
            "too-large",
        )
    return data


def check_directory(path: Path) -> bool:
    """Refuse an output directory that is a symlink or not a directory; return exists."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UnsafeOutputError(
            f"{path}: cannot inspect the output directory: {exc.strerror}"
        ) from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeOutputError(
            f"{path}: the output directory is a symbolic link; pass its target instead"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeOutputError(f"{path}: the output directory exists and is not a directory")
    return True


def ensure_directory(path: Path) -> None:
    """Create an output directory (owner-only) if missing; refuse a symlink or a file."""
    if check_directory(path):
        return
    try:
        os.makedirs(path, mode=0o700)
    except OSError as exc:
        raise StagingError(f"{path}: cannot create the directory: {exc.strerror}") from None


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


# The files SQLite keeps beside a database: writing over one corrupts the ledger.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal", "-writer")  # -writer: store/engine.py writer_lock


def database_files(path: str | os.PathLike[str] | None) -> list[Path]:
    """A SQLite database file and its companions (`-wal`, `-shm`, `-journal`):
    what no output may alias. None (a server database) protects nothing."""
    if path is None:
        return []
    return [Path(path)] + [Path(f"{path}{suffix}") for suffix in SQLITE_COMPANIONS]


def _refuse_resolved_alias(target: Path, protected: Sequence[Path]) -> None:
    resolved = os.path.realpath(target)
    for other in protected:
        if resolved == os.path.realpath(other):
            raise UnsafeOutputError(
                f"{target}: is the same file as the input {other}; name another output file"
            )


def check_output(target: Path, *, protected: Sequence[Path]) -> bool:
    """Refuse an unsafe output path; return whether it exists (and may be replaced).

    `protected` are the inputs that an output must never alias: compared by path
    after resolving symbolic links and `..` (so a protected file that does not
    exist yet, such as a database's `-wal`, is caught too) and by device and
    inode (so hard links to them are caught).
    """
    for other in protected:
        if os.path.abspath(target) == os.path.abspath(other):
            raise UnsafeOutputError(
                f"{target}: is the same path as the input {other}; name another output file"
            )
    try:
        st = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        # A missing file (or folder): writing it reports what is wrong, unless it
        # is a protected file that does not exist yet (a database's -wal) reached
        # through a linked folder.
        _refuse_resolved_alias(target, protected)
        return False
    except OSError as exc:
        raise UnsafeOutputError(f"{target}: cannot inspect the output: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeOutputError(
            f"{target}: the output is a symbolic link; refusing to write through or replace it"
        )
    _refuse_resolved_alias(target, protected)
    for other in protected:
        try:
            other_st = os.stat(other)
        except OSError:
            continue
        if _same_file(st, other_st):
            raise UnsafeOutputError(
                f"{target}: is the same file as the input {other}; name another output file"
            )
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeOutputError(f"{target}: the output exists and is not a regular file")
    if st.st_nlink > 1:
        raise UnsafeOutputError(
            f"{target}: the output has {st.st_nlink} hard links; refusing to replace a "
            "hard-linked file"
        )
    return True


def write_output(target: Path, data: bytes, *, protected: Sequence[Path]) -> Path:
    """Write one output file (owner-only) atomically: staged beside it, then renamed.

    The target is checked by `check_output` (no symbolic link, hard link,
    non-regular file, or alias of a protected input), before staging and again
    just before the rename. An existing regular file is replaced. Returns the
    absolute path written.
    """
    check_output(target, protected=protected)
    folder = Path(os.path.dirname(os.path.abspath(target)))
    staged = folder / f".{target.name}.ledger-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        _write_private(staged, (data,))
        check_output(target, protected=protected)
        os.replace(staged, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise StagingError(f"{target}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise
    _fsync_directory(folder)
    return Path(os.path.abspath(target))


def check_outputs(targets: Sequence[Path], *, protected: Sequence[Path]) -> list[Path]:
    """`check_output` for each target; return the ones that exist."""
    return [t for t in targets if check_output(t, protected=protected)]


def is_interactive(stdin: TextIO, stdout: TextIO) -> bool:
    """True when both streams are terminals."""
    try:
        return stdin.isatty() and stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _names(paths: Sequence[Path]) -> str:
    return ", ".join(str(p) for p in paths)


def refuse_without_terminal(existing: Sequence[Path], *, stdin: TextIO, stdout: TextIO) -> None:
    """Refuse at once when outputs exist and no terminal can confirm their replacement."""
    if existing and not is_interactive(stdin, stdout):
        raise OverwriteRefusedError(
            f"{_names(existing)} already {'exists' if len(existing) == 1 else 'exist'}; "
            "refusing to replace without a terminal "
            f"(run interactively and type {CONFIRM_WORD}; there is no force flag)"
        )


def confirm_overwrite(existing: Sequence[Path], *, stdin: TextIO, stdout: TextIO) -> None:
    """Ask for a typed OVERWRITE before replacing `existing`; refuse otherwise.

    Non-interactive (stdin or stdout not a terminal): refused, never asked. At a
    terminal: prompt on stdout, read one line from stdin; only the exact word
    OVERWRITE (then the line ending) confirms.
    """
    if not existing:
        return
    refuse_without_terminal(existing, stdin=stdin, stdout=stdout)
    verb = "exists" if len(existing) == 1 else "exist"
    stdout.write(f"{_names(existing)} already {verb}. Type {CONFIRM_WORD} to replace: ")
    stdout.flush()
    line = stdin.readline()
    if line.endswith("\n"):
        line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
    if line != CONFIRM_WORD:
        raise OverwriteRefusedError(
            f"not confirmed (expected {CONFIRM_WORD}); {_names(existing)} left unchanged"
        )


def _write_private(path: Path, chunks: Iterable[bytes | memoryview]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    with os.fdopen(fd, "wb", buffering=1 << 20) as handle:
        os.fchmod(fd, 0o600)  # the umask may only remove bits; make it exact
        for chunk in chunks:
            handle.write(chunk)
        handle.flush()
        os.fsync(fd)


def _fsync_directory(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # not every file system syncs directories
    finally:
        os.close(fd)


def publish(
    outdir: Path,
    outputs: Sequence[tuple[str, Iterable[bytes | memoryview]]],
    *,
    confirmed: Collection[Path],
    protected: Sequence[Path],
) -> None:
    """Stage `outputs` (name, chunks) in OUTDIR, then rename each into place.

    `confirmed` are the existing targets the user agreed to replace; the targets
    are checked again just before the renames, and one that appeared meanwhile is
    refused.
    """
    try:
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=outdir))
    except OSError as exc:
        raise StagingError(f"{outdir}: cannot create a staging directory: {exc.strerror}") from None
    confirmed_paths = {os.path.abspath(p) for p in confirmed}
    try:
        os.chmod(staging, 0o700)
        for name, chunks in outputs:
            _write_private(staging / name, chunks)
        _fsync_directory(staging)
        for name, _ in outputs:
            target = outdir / name
            if check_output(target, protected=protected) and (
                os.path.abspath(target) not in confirmed_paths
            ):
                raise OverwriteRefusedError(
                    f"{target}: appeared while writing; left unchanged (use a fresh directory)"
                )
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise StagingError(f"{outdir}: cannot stage the outputs: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise

    done: list[str] = []
    try:
        for name, _ in outputs:
            os.replace(staging / name, outdir / name)
            done.append(name)
        os.rmdir(staging)
    except OSError as exc:
        published = ", ".join(done) or "nothing"
        raise StagingError(
            f"{outdir}: publishing failed after {published}: {exc.strerror or exc}; "
            f"staged outputs remain in {staging}"
        ) from None
    _fsync_directory(outdir)
