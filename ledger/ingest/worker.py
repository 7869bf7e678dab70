"""A large JSON Lines file read, validated and digested by a second process.

`ledger ingest` of a large file spends about as long on its input (read each
line, parse, validate, digest the record) as on storing it; on a machine with
two or more processors the two halves run at once: this module's process reads
the file and sends its records, in slices, to the one that stores them (measured
in bench/RESULTS.md). What is stored, and every error and the order in which
errors are found, is what reading in one process gives: the slices are the
store's slices, and the reader stops at the first bad line, reporting that
line's own error after the slices before it.

A file is read this way when it holds at least `LEDGER_INGEST_WORKER_BYTES`
bytes (default 16 MiB, 8 MiB when the reader also makes the index rows; 0 for
every JSON Lines file) and the machine has more than one processor. The
reader is `python -m ledger.ingest.worker PATH [--index-payloads]`, the same
interpreter and package: it writes frames to its standard output, each a kind
byte, a 4-byte length and a MessagePack body (msgspec, in C both ways):

- `R`: (bytes read, [(where, record, record digest, tsvector, terms), ...]),
  one slice; when asked for (`--index-payloads`), the record's PostgreSQL index
  row (`ledger.core.tsvector.index_payload`) is its tsvector (bytes) or its
  terms (text), the other None; else both are None;
- `E`: the `LedgerError` the reader raised (the one reading in one process
  raises), pickled, after which it stops;
- `D`: the end of the file.

Anything else (the reader killed, a crash, a frame cut short) raises a
RuntimeError that says the reader stopped and how (a bug or the machine's
doing, not the input's); the caller's transaction then stores nothing.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, cast

import msgspec

from ledger.core.errors import InputError, LedgerError
from ledger.core.records import INGEST_SLICE, ChunkRecord, record_digest
from ledger.core.tsvector import index_payload
from ledger.ingest.files import Progress, iter_jsonl

# (where it was read, validated record, record digest, PostgreSQL index row or None)
ReadRecord = tuple[str, ChunkRecord, str, bytes | str | None]

DEFAULT_BYTES = 16 << 20
# When the reader also makes the index rows (PostgreSQL), half as large: the
# work it takes off the store is twice as much (measured on PostgreSQL: the
# second process is 8 % slower at 5.6 MB, 18 % faster at 11 MB).
DEFAULT_BYTES_WITH_INDEX = 8 << 20
_ENV = "LEDGER_INGEST_WORKER_BYTES"

_encode = msgspec.msgpack.Encoder().encode
# A frame's record: the payload in two fields (MessagePack has one union of
# bytes and text, msgspec none).
_Sent = tuple[str, ChunkRecord, str, bytes | None, str | None]
_decode_slice = msgspec.msgpack.Decoder(tuple[int, list[_Sent]]).decode


def worth_a_worker(path: str, index_payloads: bool = False) -> bool:
    """Whether `path` is read by a second process: large enough (it also makes
    the index rows with `index_payloads`), and a second processor to run it."""
    raw = os.environ.get(_ENV)
    if raw is None:
        threshold = DEFAULT_BYTES_WITH_INDEX if index_payloads else DEFAULT_BYTES
    elif raw.isdigit():
        threshold = int(raw)
    else:
        raise InputError(f"{_ENV}={raw!r}: expected a number of bytes (0 for every file)")
    return bool(sys.executable) and (os.cpu_count() or 1) > 1 and os.path.getsize(path) >= threshold


def read_jsonl(
    path: str, progress: Progress | None = None, index_payloads: bool = False
) -> Iterator[ReadRecord]:
    """The (where, record, digest, index payload or None) of every line of
    `path`, read by a second process."""
    # The child imports this very package, wherever it was imported from.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (root, env.get("PYTHONPATH"))))
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ledger.ingest.worker", path]
            + (["--index-payloads"] if index_payloads else []),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        stdout = cast(IO[bytes], proc.stdout)  # a pipe: stdout=PIPE
        try:
            yield from receive(stdout, progress, lambda: _stopped(proc, stderr))
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            stdout.close()


def receive(
    stream: IO[bytes], progress: Progress | None, stopped: Callable[[], str] | None = None
) -> Iterator[ReadRecord]:
    """The records of a reader's frames on `stream` (see the module's text);
    `stopped()` says why the reader stopped when its frames end early."""
    while True:
        head = stream.read(5)
        body = stream.read(int.from_bytes(head[1:], "big")) if len(head) == 5 else b""
        if len(head) < 5 or len(body) != int.from_bytes(head[1:], "big"):
            # Not the input's fault (killed, out of memory, a bug): no LedgerError.
            why = stopped() if stopped is not None else "its output ended early"
            raise RuntimeError(f"ingest: the process reading the file stopped: {why}")
        kind = head[:1]
        if kind == b"R":
            consumed, records = _decode_slice(body)
            if progress is not None:
                progress(consumed)
            for where, rec, digest, tsv, terms in records:
                yield where, rec, digest, tsv if terms is None else terms
        elif kind == b"E":
            raise _reported(body)
        elif kind == b"D":
            return
        else:
            raise RuntimeError(
                f"ingest: the process reading the file sent a frame of kind {kind!r}"
            )


def _reported(body: bytes) -> Exception:
    # Pickled by the reader this process started, of this very package.
    try:
        error = pickle.loads(body)  # noqa: S301 - our own child's frame
    except Exception as exc:  # noqa: BLE001 - any failure: say the frame was unreadable
        return RuntimeError(f"ingest: the reader's error could not be read: {exc!r}")
    if not isinstance(error, LedgerError):
        return RuntimeError(f"ingest: the reader reported {type(error).__name__}")
    return error


def _stopped(proc: subprocess.Popen[bytes], stderr: IO[bytes]) -> str:
    code = proc.wait()
    stderr.seek(0)
    lines = stderr.read().decode("utf-8", "replace").strip().splitlines()
    return f"exit code {code}" + (f" ({lines[-1]})" if lines else "")


def _frame(out: IO[bytes], kind: bytes, body: bytes) -> None:
    out.write(kind + len(body).to_bytes(4, "big") + body)


def main(path: str, out: IO[bytes], index_payloads: bool = False) -> None:
    """Read `path` and write its frames to `out` (the reader's side)."""
    consumed = 0

    def count(n: int) -> None:
        nonlocal consumed
        consumed += n

    pending: list[_Sent] = []
    try:
        for where, rec in iter_jsonl(path, count):
            payload = index_payload(rec.title, rec.content) if index_payloads else None
            terms = payload if isinstance(payload, str) else None
            tsv = payload if isinstance(payload, bytes) else None
            pending.append((where, rec, record_digest(rec), tsv, terms))
            if len(pending) >= INGEST_SLICE:  # the store's slices: see the module's text
                _frame(out, b"R", _encode((consumed, pending)))
                pending, consumed = [], 0
    except LedgerError as exc:
        _frame(out, b"E", pickle.dumps(exc))
    else:
        _frame(out, b"R", _encode((consumed, pending)))
        _frame(out, b"D", b"")
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.stdout.buffer, sys.argv[2:] == ["--index-payloads"])
