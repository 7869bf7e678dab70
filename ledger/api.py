"""The `Ledger` facade: one object per database, one method per command."""

from __future__ import annotations

from typing import Any

from ledger.core.errors import InputError
from ledger.ingest.files import FORMATS, Progress, check_input_file, detect_format, read_records
from ledger.store.access import check_budget
from ledger.store.build import build_transcript_pack
from ledger.store.ingest import IngestSummary, store_records


def ingest_files(
    engine: Any,
    paths: list[str],
    fmt: str = "auto",
    *,
    progress: Progress | None = None,
    priorities: str | None = None,
    id_prefix: str | None = None,
) -> IngestSummary:
    """Validate and store every record of `paths` in one transaction and one entry.

    Raises `InputError` (a file or record breaks a rule, naming file, line or
    index, field and rule) or `RefusedError` (a changed version, a broken dedupe
    group); either way nothing is stored.
    """
    if fmt not in FORMATS:
        raise InputError(f"--format: unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if not paths:
        raise InputError("no input files; name one or more chunk files")
    if fmt == "transcript" and len(paths) != 1:
        raise InputError("--format transcript takes one transcript (its --priorities belong to it)")
    if fmt != "transcript" and (priorities is not None or id_prefix is not None):
        raise InputError("--priorities and --id-prefix go with --format transcript")
    for path in paths:
        check_input_file(path)
        detect_format(path, fmt)
    if priorities is not None:
        check_input_file(priorities)  # a named pipe or /dev/zero would hang the read
    notes: list[str] = []
    records = read_records(
        paths, fmt, notes=notes, progress=progress, transcript=(priorities, id_prefix)
    )
    # An exchange's dedupe_key is its own id, so a transcript needs no blame pass.
    reread = None if fmt == "transcript" else (lambda: read_records(paths, fmt, notes=[]))
    return store_records(
        engine,
        records,
        paths=paths,
        reread=reread,
        notes=notes,
    )


def build_transcript(
    engine: Any,
    source: str,
    priorities: str | None,
    budget: int,
    subject: str = "transcript",
    ledger_at: int | None = None,
) -> int:
    """Record the continuation of `source` (with its priorities sidecar) as a pack."""
    from ledger.ingest.transcripts import load_annotated

    check_budget(budget)
    annotated = load_annotated(source, priorities)
    hint = f" --priorities {priorities}" if priorities else ""
    return build_transcript_pack(
        engine,
        annotated.source_version,
        annotated.header_bytes(),
        budget,
        subject,
        ledger_at,
        source=source,
        ingest_hint=f"ledger ingest --format transcript {source}{hint}",
    )


# --------------------------------------------------------------------------
# Documents (issue 15): `ledger ingest PATH... --rules` and `ledger retract`.
# --------------------------------------------------------------------------


def ingest_documents(
    engine: Any,
    paths: list[str],
    rules: str,
    *,
    source_version: str | None = None,
    effective_from: str | None = None,
    progress: Any = None,
    today: str | None = None,
) -> Any:
    """Ingest Markdown, HTML, text and PDF files by a rules file, all or nothing.

    The rules, the files and the overrides are checked (and every file read once)
    before the write transaction; the files whose bytes or rules changed since
    the source's last run are parsed inside it, so the incremental decision sees
    the state it writes against. Returns a `DocumentIngestSummary`.
    """
    from datetime import date

    from ledger.ingest.docplan import StoredFile, chunk_run, plan_run
    from ledger.store.documents import store_run, stored_files
    from ledger.store.engine import write_transaction

    run = plan_run(
        paths,
        rules,
        today=today or date.today().isoformat(),
        source_version=source_version,
        effective_from=effective_from,
    )
    with write_transaction(engine) as conn:
        before = stored_files(conn, run.source)
        state = {path: StoredFile(*row) for path, row in before.items()}
        files, plans = chunk_run(run, state, progress)
        return store_run(
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


def retract(engine: Any, ids: list[str], from_date: str, reason: str | None = None) -> Any:
    """Withdraw chunk ids from `from_date` on, as one `retract` entry (`RetractResult`)."""
    from ledger.store.documents import retract as store_retract

    return store_retract(engine, ids, from_date, reason)
