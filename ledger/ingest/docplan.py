"""One document run, reader side: rules, files, version and date, chunks as records.

`plan_run` reads and validates the rules file (refused before any document is
read), walks the PATHs, checks every file against the rules, reads each file's
bytes once and hashes them, and settles the run's source_version and
effective_from (rules, git, content digest or the command-line overrides).
`chunk_run` then parses the files whose bytes or rules changed since the last
run of the source (the store says which) and turns their chunks into validated
chunk records with ids, titles, paths and locations. Nothing here writes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ledger.core.errors import InputError
from ledger.core.records import (
    MAX_SOURCE_VERSION,
    ChunkRecord,
    RecordError,
    iso_date,
    refuse_controls,
    validate_chunk,
)
from ledger.core.rules import Rule, Rules, parse_rules
from ledger.ingest.documents import (
    DocChunk,
    DocFile,
    assign_ids,
    chunk_document,
    content_dedupe_key,
    document_kind,
    read_file_bytes,
    walk_paths,
)
from ledger.ingest.gitinfo import GitCommit, folder_commit
from ledger.ingest.readers.base import Work
from ledger.safeio import UnreadableInputError, read_input
from ledger.tokens import text_counter

Progress = Callable[[int, int], None]  # (files done, chunks done)
CHUNKER_VERSION = "chunker-1"  # part of every file's cache key: a new chunker re-parses


@dataclass(frozen=True, slots=True)
class RunFile:
    """A file of the run: where it is, its rule, its bytes' digest and the cache key."""

    file: DocFile
    rule: Rule
    data: bytes
    digest: str
    meta_digest: str


@dataclass(frozen=True, slots=True)
class PlannedChunk:
    """One chunk of the run as a record, with where it stands in its file."""

    record: ChunkRecord
    digest: str
    location_kind: str
    location: tuple[int, int]
    where: str


@dataclass(frozen=True, slots=True)
class StoredFile:
    """What the store remembers of a file of the source (the incremental path)."""

    file_digest: str
    meta_digest: str
    chunk_ids: tuple[str, ...]


@dataclass(slots=True)
class FileResult:
    """A file after the run: its digests and the ids it holds now."""

    relpath: str
    file_digest: str
    meta_digest: str
    ids: list[str] = field(default_factory=list)
    reused: bool = False
    unknown: dict[str, int] = field(default_factory=dict)  # markup rendered as text


@dataclass(frozen=True, slots=True)
class DocumentRun:
    """A checked run: its rules, files, source_version and effective_from."""

    rules: Rules
    paths: tuple[str, ...]
    files: tuple[RunFile, ...]
    version: str
    effective_from: str

    @property
    def source(self) -> str:
        return self.rules.source.name


def read_rules_file(path: str) -> Rules:
    """The rules file at `path`, validated (refused before any document is read)."""
    try:
        data = read_input(path, what="rules file", follow=False, limit=_RULES_BYTES)
    except UnreadableInputError as exc:
        if exc.problem == "missing":
            raise InputError(f"rules: {path}: no such file", param="rules") from None
        raise
    return parse_rules(data, path)


_RULES_BYTES = 1024 * 1024  # a rules file is a page of TOML


def _meta_digest(rules: Rules, rule: Rule) -> str:
    """What, besides the bytes, decides a file's chunks: its rule and the source settings."""
    s = rules.source
    text = "\x1f".join(
        (rule.metadata_digest(), s.name, s.counter, str(s.max_tokens), CHUNKER_VERSION)
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_overrides(source_version: str | None, effective_from: str | None) -> None:
    if source_version is not None:
        text = source_version.strip()
        if not text or len(text) > MAX_SOURCE_VERSION or "\x00" in text or text != source_version:
            raise InputError(
                f"source_version: must be non-blank text of at most {MAX_SOURCE_VERSION} "
                "characters without surrounding white space",
                param="source_version",
            )
        try:  # printed by search, why and chunks, put in Markdown exports
            refuse_controls(text, "source_version")
        except RecordError as exc:
            raise InputError(str(exc), param="source_version") from None
    if effective_from is not None:
        try:
            iso_date(effective_from, "effective_from")
        except RecordError:
            raise InputError(
                f"effective_from: {effective_from!r} must use YYYY-MM-DD", param="effective_from"
            ) from None


def _plan_files(rules: Rules, paths: Sequence[str]) -> list[tuple[DocFile, Rule]]:
    """The files of the run with their rules, checked before any is read."""
    files = walk_paths(paths)
    rule_of = rules.check_matches(f.relpath for f in files)
    by_rel: dict[str, str] = {}
    planned: list[tuple[DocFile, Rule]] = []
    for f in files:
        rule = rule_of[f.relpath]
        if rule.skip:
            continue
        kind = document_kind(f.relpath)
        if kind is None:
            raise InputError(
                f"{f.full}: not a document type ledger reads (.md, .markdown, .rst, .txt, .html, "
                f'.htm, .pdf); add a rule `match = "{f.relpath}"` with `skip = true`'
            )
        if kind == "pdf":
            try:
                import pypdf  # noqa: F401
            except ImportError:
                raise InputError(
                    f"{f.full}: PDF needs the optional parser: pip install 'context-ledger[pdf]'"
                ) from None
        if f.relpath in by_rel:
            raise InputError(
                f"{f.full}: has the same relative path as {by_rel[f.relpath]}; their chunk ids "
                "would collide: ingest them as separate sources"
            )
        by_rel[f.relpath] = f.full
        planned.append((f, rule))
    if not planned:
        raise InputError(f"{', '.join(paths)}: no documents to read (every file is skipped)")
    return planned


def _git_commit(paths: Sequence[str]) -> GitCommit:

    commits = []
    for p in paths:
        folder = p if os.path.isdir(p) else (os.path.dirname(p) or ".")
        commits.append(folder_commit(folder))
    if len({c.commit for c in commits}) > 1:
        raise InputError(
            "the paths are in different git commits; ingest them in separate runs or give "
            "their source_version and effective_from"
        )
    return commits[0]


def plan_run(
    paths: Sequence[str],
    rules_path: str,
    *,
    today: str,
    source_version: str | None = None,
    effective_from: str | None = None,
) -> DocumentRun:
    """Check the rules, the files and the overrides, read every file once; or InputError.

    `today` is the date `effective_from = "today"` means (the caller's clock).
    """
    if not paths:
        raise InputError("no PATH: name the documents' files or folders")
    rules = read_rules_file(rules_path)
    _check_overrides(source_version, effective_from)
    planned = _plan_files(rules, paths)
    files: list[RunFile] = []
    metas = {rule.index: _meta_digest(rules, rule) for rule in rules.rules}
    for f, rule in planned:
        data, _st = read_file_bytes(f, rules.source.max_file_bytes)
        files.append(RunFile(f, rule, data, hashlib.sha256(data).hexdigest(), metas[rule.index]))
    source = rules.source
    needs_git = (source_version is None and source.version == "git") or (
        effective_from is None and source.effective_from == "git"
    )
    commit = _git_commit(paths) if needs_git else None
    if source_version is not None:
        version = source_version
    elif source.version == "git" and commit is not None:  # needs_git: never None here
        version = commit.commit
    elif source.version == "content":
        # The digest of the whole source: every file's path and bytes.
        h = hashlib.sha256()
        for rf in files:
            h.update(rf.file.relpath.encode("utf-8") + b"\x00" + rf.digest.encode() + b"\n")
        version = "sha256:" + h.hexdigest()[:16]
    else:
        version = source.version
    if effective_from is not None:
        day = effective_from
    elif source.effective_from == "git" and commit is not None:
        day = commit.date
    elif source.effective_from == "today":
        day = today
    else:
        day = source.effective_from
    for rule in rules.rules:
        if rule.expires_on is not None and rule.expires_on <= day:
            raise InputError(
                f"{rules.where}: {rule.label}.expires_on {rule.expires_on} must be later than "
                f"the run's effective_from {day}"
            )
    return DocumentRun(rules, tuple(paths), tuple(files), version, day)


def _record(chunk: DocChunk, chunk_id: str, rule: Rule, run: DocumentRun) -> ChunkRecord:
    if rule.dedupe == "content":
        key = content_dedupe_key(chunk.text, rule.section, rule.required_permission, rule.trust)
    else:
        key = chunk_id
    obj = {
        "id": chunk_id,
        "section": rule.section,
        "source_uri": run.rules.source.render_uri(run.version, chunk.path),
        "source_version": run.version,
        "effective_from": run.effective_from,
        "expires_on": rule.expires_on,
        "required_permission": rule.required_permission,
        "trust": rule.trust,
        "dedupe_key": key,
        "estimated_tokens": chunk.tokens,
        "priority": rule.priority,
        "required": rule.required,
        "content": chunk.text,
    }
    try:
        rec = validate_chunk(obj, allow_nul=False, ledger=True)
        refuse_controls(chunk.title, "title")
        refuse_controls(chunk.path, "path")
    except RecordError as exc:
        raise InputError(f"{chunk.path}:{chunk.location[0]}: chunk '{chunk_id}': {exc}") from None
    return ChunkRecord(**{**rec.to_json(), "title": chunk.title, "path": chunk.path})


def chunk_run(
    run: DocumentRun,
    stored: Mapping[str, StoredFile],
    progress: Progress | None = None,
) -> tuple[list[FileResult], list[PlannedChunk]]:
    """Parse the files whose bytes or rules changed since `stored` (the source's last
    run); return every file's result and the chunks of the parsed files.

    A file whose digest and cache key match its stored state costs nothing more
    here: it keeps the ids it had (they are not parsed, so not in the chunks).
    """
    source = run.rules.source
    count = text_counter(source.counter)
    results: list[FileResult] = []
    parsed: list[tuple[RunFile, list[DocChunk]]] = []
    reused: set[str] = set()
    chunks_done = 0
    for done, rf in enumerate(run.files, start=1):
        result = FileResult(rf.file.relpath, rf.digest, rf.meta_digest)
        old = stored.get(rf.file.relpath)
        if old is not None and (old.file_digest, old.meta_digest) == (rf.digest, rf.meta_digest):
            result.ids = list(old.chunk_ids)
            result.reused = True
            reused.update(old.chunk_ids)
            chunks_done += len(old.chunk_ids)
        else:
            work = Work()
            chunks = chunk_document(
                rf.data, rf.file.relpath, rf.file.full, count, source.max_tokens, work
            )
            result.unknown = work.unknown
            parsed.append((rf, chunks))
            chunks_done += len(chunks)
        results.append(result)
        if progress is not None:
            progress(done, chunks_done)
    flat = [c for _rf, chunks in parsed for c in chunks]
    ids = iter(assign_ids(source.name, flat, taken=reused))
    by_path = {r.relpath: r for r in results}
    planned: list[PlannedChunk] = []
    for rf, chunks in parsed:
        result = by_path[rf.file.relpath]
        for chunk in chunks:
            chunk_id = next(ids)
            result.ids.append(chunk_id)
            rec = _record(chunk, chunk_id, rf.rule, run)
            planned.append(
                PlannedChunk(
                    rec,
                    rec.record_digest,
                    chunk.location_kind,
                    chunk.location,
                    f"{rf.file.full}:{chunk.location[0]}",
                )
            )
    return results, planned
