"""The one way the ledger reads an input file: regular files only, bounded, streamed.

Every reader of user files (chunk files, `build --batch` files) opens them here:

- only a regular file is read. It is opened without blocking, so a named pipe
  with no writer is refused at once instead of hanging, and a device
  (`/dev/zero`) is refused before any byte is read;
- a file read whole (a JSON array or fixture) may not be larger than its limit,
  checked on the file's size before reading, and again on what was read;
- a file read by lines (JSON Lines, batch files) is streamed: one line at a
  time, and a line longer than its limit is refused after reading at most the
  limit plus one byte, so memory stays bounded whatever the file holds (an 8 GB
  sparse file without a newline costs one limit's worth).

The limits derive from the record limits (`ledger.core.records`): a valid chunk
record cannot be longer than `MAX_RECORD_BYTES` as one line of JSON.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from ledger.core.errors import InputError
from ledger.core.records import LEDGER_MAX_CONTENT, MAX_SHORT_TEXT, MAX_URI
from ledger.safeio import open_regular

# JSON escapes one character in at most 12 bytes (an astral character as a
# surrogate pair `\ud83d\ude00`); the content dominates, and the twelve other
# fields with their keys and quoting fit in a generous fixed allowance.
_FIELDS_ALLOWANCE = 12 * (MAX_URI + 12 * MAX_SHORT_TEXT) + 4096
MAX_RECORD_BYTES = 12 * LEDGER_MAX_CONTENT + _FIELDS_ALLOWANCE
# A JSON array or a fixture is parsed whole (the parser needs the whole text);
# larger collections belong in JSON Lines, which is streamed.
MAX_DOCUMENT_BYTES = 256 << 20
# A `build --batch` line is {"subject", "as_of", "budget"}: short by definition.
MAX_BATCH_LINE_BYTES = 64 << 10
MAX_BATCH_BYTES = 64 << 20


def _size(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10} KiB"
    return f"{n:,} bytes"


def lstat_named(path: str, what: str) -> os.stat_result:
    """`os.lstat` of a path the user named (`what`: "file", "file or folder"); a
    missing path, an unreadable one or a symbolic link is refused by name."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"{path}: is a symbolic link; pass the {what} it points to")
    return st


def check_input_file(path: str) -> None:
    """Refuse a path that is not a regular file (a directory, device, pipe or socket)."""
    st = lstat_named(path, "file")
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory; pass chunk files")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: is not a regular file (device, pipe or socket)")


def read_whole(path: str, what: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The whole of a regular file of at most `limit` bytes."""
    with open_regular(path, what) as f:
        try:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise InputError(
                    f"{path}: the {what} has {size:,} bytes, more than the {_size(limit)} "
                    "read whole; split it, or use JSON Lines (read line by line)"
                )
            data = f.read(limit + 1)
        except OSError as exc:
            raise InputError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if len(data) > limit:  # the file grew while it was read
        raise InputError(f"{path}: the {what} is larger than {_size(limit)}")
    return data


def iter_lines(
    f: BinaryIO, path: str, what: str, limit: int = MAX_RECORD_BYTES
) -> Iterator[tuple[int, bytes]]:
    """(line number, line with its ending) of an open file, each at most `limit` bytes.

    A longer line is refused when `limit + 1` bytes of it have been read.
    """
    lineno = 0
    while True:
        try:
            raw = f.readline(limit + 1)
        except OSError as exc:
            raise InputError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
        if not raw:
            return
        lineno += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            raise InputError(
                f"{path}:{lineno}: line longer than {_size(limit)}, more than any valid "
                f"{'record' if limit == MAX_RECORD_BYTES else 'line'} can need; "
                "one record per line"
            )
        yield lineno, raw


def read_lines(path: str, what: str, *, line_limit: int, total_limit: int) -> list[bytes]:
    """Every line of a small regular file (without line endings), bounded twice."""
    lines: list[bytes] = []
    total = 0
    with open_regular(path, what) as f:
        for _, raw in iter_lines(f, path, what, line_limit):
            total += len(raw)
            if total > total_limit:
                raise InputError(f"{path}: the {what} is larger than {_size(total_limit)}")
            lines.append(raw.rstrip(b"\r\n"))
    return lines
