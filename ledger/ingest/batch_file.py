"""The lines of a batch file (`Ledger.build_batch`): one JSON object a pack."""

from __future__ import annotations

from ledger.ingest.source import MAX_BATCH_BYTES, MAX_BATCH_LINE_BYTES, check_input_file, read_lines


def read_batch_lines(path: str) -> list[bytes]:
    """The lines of a batch file (a regular file; see `check_input_file`)."""
    check_input_file(path)
    # Through the one safe reader: streamed, each line and the whole file bounded.
    return read_lines(
        path, "batch file", line_limit=MAX_BATCH_LINE_BYTES, total_limit=MAX_BATCH_BYTES
    )
