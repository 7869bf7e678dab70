"""Running an ingest (`Ledger.ingest_records`, `Ledger.ingest_paths`): chunk
records from memory or files, or documents by a rules file, stored all or none.

The readers are `ledger.ingest`'s (`files`, `docplan`); the writes are the
store's (`ledger.store.ingest`, `ledger.store.documents`). The two are peers
that never import each other, so what joins them lives here, above both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import date
from typing import Any

from ledger.core.errors import InputError
from ledger.core.records import ChunkRecord
from ledger.core.results import DocumentIngestSummary, IngestSummary
from ledger.ingest.docplan import FileResult, StoredFile, chunk_run, plan_run
from ledger.ingest.files import (
    FORMATS,
    Progress,
    detect_format,
    read_digested,
    read_records,
    validated,
    with_digests,
)
from ledger.ingest.source import check_input_file
from ledger.store.documents import store_run, stored_files
from ledger.store.engine import write_transaction
from ledger.store.ingest import store_records, wants_index_payloads


def ingest_records(eng: Any, records: Iterable[Mapping[str, Any]]) -> IngestSummary:
    """Store chunk records given in memory, all or none; an error names the
    record by its index: `records[3]: field 'trust': ...`."""
    items = list(records)

    def read() -> Iterator[tuple[str, ChunkRecord]]:
        for i, obj in enumerate(items):
            where = f"records[{i}]"
            yield where, validated(where, obj)

    return store_records(eng, with_digests(read()), paths=["records"], reread=read)


def ingest_paths(
    eng: Any,
    paths: list[str],
    *,
    format: str = "auto",  # noqa: A002 - the API's parameter name
    priorities: str | None = None,
    id_prefix: str | None = None,
    progress: Callable[..., None] | None = None,
    source_format: str | None = None,
    rules: str | None = None,
    source_version: str | None = None,
    effective_from: str | None = None,
) -> IngestSummary | DocumentIngestSummary:
    """Chunk record files, or with `rules` documents (`ingest_documents`)."""
    if rules is not None:
        if (
            format != "auto"
            or priorities is not None
            or id_prefix is not None
            or source_format is not None
        ):
            raise InputError(
                "format, source_format, priorities and id_prefix do not go with rules: "
                "documents are told apart by their extension",
                param="rules",
            )
        return ingest_documents(
            eng,
            paths,
            rules,
            source_version=source_version,
            effective_from=effective_from,
            progress=progress,
        )
    if source_version is not None or effective_from is not None:
        raise InputError(
            "source_version and effective_from go with rules (a rules file)",
            param="source_version" if source_version is not None else "effective_from",
        )
    return ingest_files(
        eng,
        paths,
        format,
        progress=progress,
        priorities=priorities,
        id_prefix=id_prefix,
        source_format=source_format,
    )


def ingest_files(
    eng: Any,
    paths: list[str],
    fmt: str = "auto",
    *,
    progress: Progress | None = None,
    priorities: str | None = None,
    id_prefix: str | None = None,
    source_format: str | None = None,
) -> IngestSummary:
    """Validate and store every record of `paths` in one transaction and one entry.

    Raises `InputError` (a file or record breaks a rule, naming file, line or
    index, field and rule) or `RefusedError` (a changed version, a broken dedupe
    group); either way nothing is stored.
    """
    _check_files(paths, fmt, priorities, id_prefix, source_format)
    notes: list[str] = []
    records = read_digested(
        paths,
        fmt,
        notes=notes,
        progress=progress,
        transcript=(priorities, id_prefix),
        source_format=source_format,
        index_payloads=wants_index_payloads(eng),
    )
    # An exchange's dedupe_key is its own id, so a transcript needs no blame pass.
    reread = None if fmt == "transcript" else (lambda: read_records(paths, fmt, notes=[]))
    try:
        return store_records(eng, records, paths=paths, reread=reread, notes=notes)
    finally:
        records.close()  # a refusal stops the reader (a second process, for a large file) now


def _check_files(
    paths: list[str],
    fmt: str,
    priorities: str | None,
    id_prefix: str | None,
    source_format: str | None,
) -> None:
    """The arguments of `ingest_files`, before anything is read."""
    if fmt not in FORMATS:
        raise InputError(
            f"format: unknown format {fmt!r}; use one of {', '.join(FORMATS)}", param="format"
        )
    if not paths:
        raise InputError("no input files; name one or more chunk files")
    if fmt == "transcript" and len(paths) != 1:
        raise InputError(
            "format 'transcript' takes one transcript (its priorities belong to it)",
            param="format",
        )
    if fmt != "transcript" and (priorities is not None or id_prefix is not None or source_format):
        raise InputError(
            "priorities, id_prefix and source_format go with format 'transcript'", param="format"
        )
    for path in paths:
        check_input_file(path)
        detect_format(path, fmt)
    if priorities is not None:
        check_input_file(priorities)  # a named pipe or /dev/zero would hang the read


def ingest_documents(
    eng: Any,
    paths: list[str],
    rules: str,
    *,
    source_version: str | None = None,
    effective_from: str | None = None,
    progress: Any = None,
    today: str | None = None,
) -> DocumentIngestSummary:
    """Ingest Markdown, reStructuredText, HTML, text and PDF files by a rules file, all
    or nothing.

    The rules, the files and the overrides are checked (and every file read once)
    before the write transaction; the files whose bytes or rules changed since
    the source's last run are parsed inside it, so the incremental decision sees
    the state it writes against.
    """
    run = plan_run(
        paths,
        rules,
        today=today or date.today().isoformat(),
        source_version=source_version,
        effective_from=effective_from,
    )
    with write_transaction(eng) as conn:
        before = stored_files(conn, run.source)
        state = {path: StoredFile(*row) for path, row in before.items()}
        files, plans = chunk_run(run, state, progress)
        summary = store_run(
            conn,
            source=run.source,
            snapshot=run.rules.source.snapshot,
            version=run.version,
            effective_from=run.effective_from,
            paths=run.paths,
            files=files,
            plans=plans,
            before=before,
        )
    return replace(summary, unknown_markup=_unknown_markup(files))


def _unknown_markup(files: list[FileResult]) -> tuple[tuple[str, int], ...]:
    """The markup the readers rendered as text, summed over the parsed files, by name."""
    total: dict[str, int] = {}
    for f in files:
        for name, n in f.unknown.items():
            total[name] = total.get(name, 0) + n
    return tuple(sorted(total.items()))
