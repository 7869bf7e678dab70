"""The `Ledger` facade: one object per database, one method per command.

    >>> import ledger
    >>> with ledger.open("ledger.db", create=True) as lg:       # doctest: +SKIP
    ...     lg.ingest_paths(["fixtures/support-chunks.json"])
    ...     pack = lg.build(as_of="2026-07-21")

Every method opens its own transaction (writes are all or nothing) and returns a
typed result from `ledger.core.results` whose `to_json()` equals the matching
command's `--json` output. Errors are `ledger.LedgerError` subclasses, each with
the exit code the command line maps it to.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, overload

from ledger.core.errors import InputError, NotFoundError
from ledger.core.results import (
    BatchBuild,
    CheckResult,
    ChunkList,
    Diff,
    EraseResult,
    Export,
    GrantChange,
    HeadResult,
    InitResult,
    Pack,
    PackList,
    PolicyChange,
    PolicyState,
    ReplayResult,
    SubjectGrants,
    VerifyResult,
    WhyEvicted,
)
from ledger.ingest.batch_file import read_batch_lines as read_batch_lines  # the CLI reads
from ledger.store import access, engine, packs, versions
from ledger.store.chain import entry_at, read_head

if TYPE_CHECKING:
    from ledger.core.checkpoint import Checkpoint
    from ledger.core.proofs import CheckpointResult, ConsistencyProof, InclusionProof
    from ledger.core.results import (
        DocumentIngestSummary,
        IngestSummary,
        RetractResult,
        SearchResult,
        WhyAnswer,
    )

# The store modules of the audit, build and ingest commands, the file readers, the
# Merkle tree and the signing keys (cryptography) are imported by the methods that
# use them: every database command pays for what this module imports (the
# start-up bench row).

HINTS = ("newest", "all", "none")
PackRef = int | str


def database_url(path_or_url: str) -> str:
    """The SQLAlchemy URL of `--db`: a value with `://` is one, anything else a file path."""
    if "://" in path_or_url:
        return path_or_url
    return "sqlite:///" + os.path.abspath(path_or_url)


def init(path_or_url: str) -> InitResult:
    """Create the database, or upgrade its schema to the newest migration (`ledger init`).

    A new SQLite file is owner-only; a SQLite file whose schema is behind is
    first copied to an owner-only backup whose path the result names.
    """
    from ledger.store import migrate

    url = database_url(path_or_url)
    eng = engine.make_engine(url, create=True)
    try:
        engine.check_database(eng, url)
        upgrade = migrate.upgrade_database(eng)
    finally:
        eng.dispose()
    return InitResult(
        {
            "database": engine.sqlite_path(url),
            "before": upgrade.before,
            "after": upgrade.after,
            "backup": upgrade.backup,
        }
    )


def open(  # noqa: A001 - the API's name (docs/reference/python-api.md)
    path_or_url: str, create: bool = False, *, otel_events: bool | None = None
) -> Ledger:
    """Open the ledger at a SQLite path or a SQLAlchemy URL.

    `create=True` first creates the database or upgrades its schema, as
    `ledger init` does (see `init`); without it the database must be an
    initialized ledger whose schema is current. `otel_events`: see `Ledger`.
    """
    if create:
        init(path_or_url)
    url = database_url(path_or_url)
    return Ledger(url, engine.open_engine(url), otel_events=otel_events)


def _listed(values: Any, param: str) -> list[Any]:
    """A list argument (`ids`, `paths`); one string or path is a list of one, as
    `erase` takes it, never its characters one by one."""
    if isinstance(values, str | os.PathLike):
        return [values]
    return list(values)


class Ledger:
    """One ledger database. Use `ledger.open(...)`, ideally as a context manager.

    `otel_events=True` adds to the OpenTelemetry span of each build one event per
    evicted candidate and the query; None (the default) reads LEDGER_OTEL_EVENTS
    (docs/guides/opentelemetry.md).
    """

    def __init__(self, url: str, eng: Any, *, otel_events: bool | None = None) -> None:
        self.url = url
        self._engine = eng
        self.otel_events = otel_events

    # -- lifetime -----------------------------------------------------------

    @property
    def database_file(self) -> str | None:
        """The SQLite file of this ledger (None on a server): what no output may alias."""
        return engine.sqlite_path(self.url)

    def close(self) -> None:
        """Release the database connections (the object cannot be used after)."""
        self._engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Ledger {engine.describe(self.url)}>"

    @contextmanager
    def _read(self) -> Iterator[Any]:
        with engine.read_transaction(self._engine) as conn:
            yield conn

    def _pack_no(self, conn: Any, pack: PackRef) -> int:
        return packs.resolve_pack(conn, str(pack))

    # -- ingest -------------------------------------------------------------

    def ingest_records(self, records: Iterable[Mapping[str, Any]]) -> IngestSummary:
        """Store chunk records given in memory (dicts of the chunk record's 13
        fields, docs/reference/records.md), all or none.

        An error names the record by its index: `records[3]: field 'trust': ...`.
        """
        from ledger.api import ingest

        return ingest.ingest_records(self._engine, records)

    def ingest_paths(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        format: str = "auto",  # noqa: A002 - the command's option name
        priorities: str | None = None,
        id_prefix: str | None = None,
        progress: Callable[..., None] | None = None,
        source_format: str | None = None,
        rules: str | os.PathLike[str] | None = None,
        source_version: str | None = None,
        effective_from: str | None = None,
    ) -> IngestSummary | DocumentIngestSummary:
        """Store the chunk records of files (`ledger ingest FILE...`), all or none.

        `source_format` "claude-code" or "codex" (with format "transcript")
        reads a real export of that tool as it is.

        With `rules` (a rules TOML file), `paths` are documents and folders of
        them (`ledger ingest PATH... --rules RULES.toml`): Markdown, reStructuredText, HTML,
        text and PDF chunked by heading, metadata from the rules; `source_version` and
        `effective_from` override the rules' for this run; `progress` is then
        called with (files done, chunks done). Returns a `DocumentIngestSummary`.
        """
        from ledger.api import ingest

        return ingest.ingest_paths(
            self._engine,
            [os.fspath(p) for p in _listed(paths, "paths")],
            format=format,
            priorities=priorities,
            id_prefix=id_prefix,
            progress=progress,
            source_format=source_format,
            rules=None if rules is None else os.fspath(rules),
            source_version=source_version,
            effective_from=effective_from,
        )

    def retract(
        self, ids: Sequence[str], *, from_date: str, reason: str | None = None
    ) -> RetractResult:
        """Withdraw chunk ids from `from_date` on, as one `retract` entry (`ledger
        retract`); one id may be given as a string. An unknown id raises
        `NotFoundError` (exit 3), nothing written."""
        from ledger.store import documents

        return documents.retract(self._engine, _listed(ids, "ids"), from_date, reason)

    def reinstate(
        self, ids: Sequence[str], *, from_date: str, reason: str | None = None
    ) -> RetractResult:
        """Undo the retractions of chunk ids from `from_date` on, as one
        `reinstate` entry (`ledger reinstate`); a later retraction withdraws them
        again. An unknown id raises `NotFoundError` (exit 3), an id never
        retracted `InputError` (exit 1); nothing written then."""
        from ledger.store import documents

        return documents.reinstate(self._engine, _listed(ids, "ids"), from_date, reason)

    # Erasure ---------------------------------------------------------

    def erase(
        self,
        refs: Sequence[str] = (),
        *,
        reason: str,
        ended_before: str | None = None,
        retention: bool = False,
        today: str | None = None,
    ) -> EraseResult:
        """Erase bodies, keep the audit (`ledger erase`): the versions REFs name (ids,
        digests, 8+ hex prefixes), or every version that ended for good by
        `ended_before`, or by today (`today`, default the date now) minus the
        policy's retention (`retention=True`). One `erase` entry; digests, metadata
        and decisions stay, so verify and replay still pass. Idempotent: bodies
        erased before are listed under `already_erased`, and nothing new to erase
        writes no entry (`entry` None). Cannot be undone."""
        from ledger.store.erase import erase

        if isinstance(refs, str):
            refs = [refs]
        return EraseResult(
            erase(
                self._engine,
                list(refs),
                reason=reason,
                ended_before=ended_before,
                retention=retention,
                today=today,
            )
        )

    def chunks(self, chunk_id: str | None = None, as_of: str | None = None) -> ChunkList:
        """Stored chunk versions with their digests, never their bodies, and each
        version's `state` on `as_of` (default today) at the head (`ledger chunks`)."""
        import datetime

        from ledger.core.reasons import check_date

        day = datetime.date.today().isoformat() if as_of is None else check_date(as_of, "as_of")
        with self._read() as conn:
            return ChunkList({"chunks": versions.list_versions(conn, chunk_id, day)})

    def current_versions(self, as_of: str | None = None) -> list[dict[str, Any]]:
        """Per document chunk id, the version valid on `as_of` (default today) with the
        newest `effective_from`, with its content: what a vector store should index
        (`ledger.integrations.langchain.LedgerLoader`). Every section, no permission
        filter: a pack's gates decide later."""
        import datetime

        from ledger.core.reasons import check_date

        day = datetime.date.today().isoformat() if as_of is None else check_date(as_of, "as_of")
        with self._read() as conn:
            return versions.current_versions(conn, day)

    # -- grants and policy --------------------------------------------------

    def grant(self, subject: str, *permissions: str) -> GrantChange:
        """Grant permissions to a subject: one entry, or none when all were held."""
        return self._change_grants(subject, permissions, "grant")

    def revoke(self, subject: str, *permissions: str) -> GrantChange:
        """Revoke held permissions from a subject (revoking one not held is refused)."""
        return self._change_grants(subject, permissions, "revoke")

    def _change_grants(self, subject: str, permissions: Sequence[str], action: str) -> GrantChange:
        seq, changed = access.change_grants(self._engine, subject, list(permissions), action)
        return GrantChange(
            {"entry": seq, "subject": subject, "action": action, "changed": list(changed)}
        )

    def subject(self, subject: str) -> SubjectGrants:
        """The permissions a subject holds now and every change (`ledger subject show`)."""
        access.check_subject(subject)
        with self._read() as conn:
            held = access.grants_at(conn, subject)
            history = access.grant_history(conn, subject)
        return SubjectGrants({"subject": subject, "permissions": held, "history": history})

    def set_policy(
        self,
        allow_trust: Sequence[str] | None = None,
        budget: int | None = None,
        *,
        retain_bodies: int | Literal["off"] | None = None,
    ) -> PolicyChange:
        """Record a new policy; a part not given keeps its current value.

        `retain_bodies` (days): the retention `erase(retention=True)` applies;
        "off" removes it."""
        if allow_trust is None and budget is None and retain_bodies is None:
            raise InputError("give allow_trust, budget and/or retain_bodies")
        retain: Any = access.KEEP
        if retain_bodies == "off":
            retain = None
        elif retain_bodies is not None:
            retain = access.check_retain_days(retain_bodies)
        seq, policy = access.set_policy(
            self._engine, list(allow_trust) if allow_trust is not None else None, budget, retain
        )
        return PolicyChange({"entry": seq, "policy": policy.record_json()})

    def policy(self) -> PolicyState:
        """The policy in force (None if never set) and every change (`ledger policy show`)."""
        with self._read() as conn:
            current = access.policy_at(conn)
            history = access.policy_history(conn)
        policy = current.record_json() if current else None
        return PolicyState({"policy": policy, "history": history})

    # -- build --------------------------------------------------------------

    def build(
        self,
        as_of: str,
        subject: str = "default",
        budget: int | None = None,
        *,
        counter: str = "estimated_tokens",
        ledger_at: int | None = None,
        query: str | None = None,
        top: int | None = None,
        candidates: str | os.PathLike[str] | Sequence[str | Mapping[str, Any]] | None = None,
        trace_id: str | None = None,
        span_id: str | None = None,
    ) -> Pack:
        """Select for `subject` on `as_of`, record the pack with every decision, return it.

        A retrieval build: `query` (and `top`, default 20) takes as evidence every
        version of the `top` best-matching evidence ids; `candidates` takes them from
        your own retriever: a JSON Lines file of `{"id", "source_version"?, "score"?}`,
        best first, or the same items (or bare ids) as a list.

        The pack records an OpenTelemetry trace: `trace_id` (32 hex) and `span_id`
        (16 hex), or else the active span's when the application uses OpenTelemetry;
        that span then gets the `ledger.pack.*` attributes (`ledger.integrations.otel`).
        """
        from ledger.store import build
        from ledger.store.inputs import candidates_source, check_ledger_at

        check_ledger_at(ledger_at)
        # OpenTelemetry only when the application has loaded it: no import cost otherwise.
        otel: Any = None
        if trace_id is not None or span_id is not None or "opentelemetry" in sys.modules:
            import ledger.integrations.otel as otel
        trace = otel.trace_of(trace_id, span_id) if otel is not None else None
        pack_no = build.build_pack(
            self._engine,
            as_of,
            subject,
            query=query,
            top=top,
            candidates_file=candidates_source(candidates),
            trace=trace,
            budget=budget,
            counter=counter,
            ledger_at=ledger_at,
        )
        pack = self.show(pack_no)
        if otel is not None:
            otel.annotate_span(pack, self.otel_events)
        return pack

    def build_batch(
        self,
        path: str | os.PathLike[str],
        *,
        counter: str = "estimated_tokens",
        keep_going: bool = False,
        progress: Callable[[int], None] | None = None,
        lines: Sequence[bytes] | None = None,
    ) -> BatchBuild:
        """Many packs from a JSON Lines file of `{"subject", "as_of", "budget"?}`, one
        ledger state; all or nothing unless `keep_going` (then each line alone).

        `lines` are the file's lines when the caller has read them already
        (`ledger.ingest.batch_file.read_batch_lines`); `progress` is called with 1
        after each line.
        """
        from ledger.store import batch

        name = os.fspath(path)
        if lines is None:
            lines = read_batch_lines(name)
        result = batch.run_batch(
            self._engine, name, list(lines), counter, keep_going, progress=progress
        )
        return BatchBuild(
            {
                "packs": result.packs,
                "failed": [{"line": w, "error": m} for w, m in result.failed],
            }
        )

    def build_transcript(
        self,
        source: str | os.PathLike[str],
        priorities: str | os.PathLike[str] | None = None,
        *,
        budget: int,
        subject: str | None = None,
        ledger_at: int | None = None,
        source_format: str | None = None,
    ) -> Pack:
        """Record a transcript continuation (what `transcript export` writes) as a pack.

        `source_format` "claude-code" or "codex" reads a real export; its pack is
        as of the session's last day. `subject` None: the export's session, or
        "transcript" for a strict transcript."""
        from ledger.api.transcripts import build_transcript
        from ledger.store.inputs import check_ledger_at

        check_ledger_at(ledger_at)
        pack_no = build_transcript(
            self._engine,
            os.fspath(source),
            os.fspath(priorities) if priorities is not None else None,
            budget,
            subject,
            ledger_at,
            source_format,
        )
        return self.show(pack_no)

    # -- packs --------------------------------------------------------------

    def packs(self, trace_id: str | None = None) -> PackList:
        """Every recorded pack, oldest first (`ledger packs`); with `trace_id` (32 hex)
        only the packs built in that OpenTelemetry trace."""
        if trace_id is not None:
            from ledger.integrations.otel import check_trace_id

            trace_id = check_trace_id(trace_id)
        with self._read() as conn:
            return PackList({"packs": packs.list_packs(conn, trace_id)})

    def show(self, pack: PackRef) -> Pack:
        """One pack: admissions in output order, every eviction with its reason."""
        with self._read() as conn:
            return Pack(packs.pack_json(conn, self._pack_no(conn, pack)))

    @overload
    def export(
        self, pack: PackRef, format: Literal["markdown"], with_content: bool = False
    ) -> str: ...

    @overload
    def export(
        self, pack: PackRef, format: Literal["json"] = "json", with_content: bool = False
    ) -> Export: ...

    def export(
        self,
        pack: PackRef,
        format: str = "json",  # noqa: A002 - the command's option name
        with_content: bool = False,
    ) -> str | Export:
        """The pack for a model: Markdown text, or the JSON export; bodies only on request.

        An evicted chunk's body is never exported.
        """
        if format not in ("json", "markdown"):
            raise InputError(f"format {format!r}: use json or markdown")
        with self._read() as conn:
            n = self._pack_no(conn, pack)
            if format == "markdown":
                return packs.export_markdown(conn, n, with_content)
            return Export(packs.export_manifest(conn, n, with_content))

    # -- audit --------------------------------------------------------------

    def why_evicted(
        self, ref: str, pack: PackRef | None = None, hints: str = "newest"
    ) -> WhyEvicted:
        """Every pack that considered REF (id, digest or 8+ hex prefix), newest first,
        and for an eviction the smallest change that would have admitted it."""
        from ledger.store.why_evicted import why_evicted

        if hints not in HINTS:
            raise InputError(f"hints {hints!r}: use one of {', '.join(HINTS)}")
        with self._read() as conn:
            pack_no = self._pack_no(conn, pack) if pack is not None else None
            return WhyEvicted(why_evicted(conn, ref, pack_no, hints))

    # Search and why ------------------------------------------------

    def search(
        self,
        text: str,
        as_of: str | None = None,
        limit: int = 10,
        with_content: bool = False,
    ) -> SearchResult:
        """Full-text search: the chunk versions best matching `text` (words and
        "quoted phrases"), valid on `as_of` when given; `with_content` adds a
        snippet of each body."""
        from ledger.store import search

        with self._read() as conn:
            return search.search(conn, text, as_of, limit, with_content)

    def why(
        self,
        text: str,
        pack: PackRef | None = None,
        subject: str = "default",
        limit: int = 5,
    ) -> WhyAnswer:
        """What `pack` (default: the subject's newest) did with the chunk versions
        matching `text`, the verdict and the one-sentence answer."""
        from ledger.store import search

        with self._read() as conn:
            pack_no = self._pack_no(conn, pack) if pack is not None else None
            return search.why(conn, text, pack_no, subject, limit)

    def check(
        self,
        tests: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        ledger_at: int | None = None,
        *,
        outputs: Sequence[str | os.PathLike[str]] = (),
    ) -> CheckResult:
        """Context tests (`ledger check`): each case decided as `build` would decide
        it, nothing recorded; each missed expectation explained by `why`.

        `tests`: a TOML file's path, its parsed form (`{"defaults": ..., "case":
        [...]}`), or a list of cases. A candidates file is named relative to the
        tests file's folder (the working folder for cases given in memory).
        A malformed file, or a value a build would refuse (checked as the build
        checks it, `[defaults]` on their own, before any case runs), raises
        `CheckFileError` (exit 2). `outputs`: the files
        the caller will write from the result (a JUnit report); one that is the
        tests file, a case's candidates file or the database (or a link to one)
        raises `UnsafeOutputError` (exit 1) before any case runs."""
        from ledger.core.checks import cases_of, parse_tests
        from ledger.core.query import parse_candidates
        from ledger.safeio import check_output, database_files, read_input
        from ledger.store.check import run_checks
        from ledger.store.inputs import INPUT_RULES, check_ledger_at

        check_ledger_at(ledger_at)
        base = Path(tests).parent if isinstance(tests, str | os.PathLike) else Path.cwd()

        def readable(name: str) -> object:  # a candidates file, read again when its case runs
            where = base / name
            return parse_candidates(read_input(where, what="candidates file"), str(where))

        rules = {**INPUT_RULES, "candidates": readable}
        inputs: list[Path] = []
        if isinstance(tests, str | os.PathLike):
            path = Path(tests)
            cases = parse_tests(read_input(path, what="tests file"), str(path), rules)
            inputs.append(path)
        else:
            doc = tests if isinstance(tests, Mapping) else {"case": list(tests)}
            cases = cases_of(doc, rules=rules)
        inputs += [base / case.candidates for case in cases if case.candidates is not None]
        protected = [*inputs, *database_files(self.database_file)]
        for output in outputs:
            check_output(Path(output), protected=protected)
        results = run_checks(self._engine, cases, base, ledger_at)
        passed = sum(1 for r in results if r.passed)
        return CheckResult(
            {
                "cases": [r.to_json() for r in results],
                "passed": passed,
                "failed": len(results) - passed,
            }
        )

    def diff(self, a: PackRef, b: PackRef) -> Diff:
        """What entered, left, changed version or reason between two packs, and why."""
        from ledger.store.diff import diff

        with self._read() as conn:
            return Diff(diff(conn, self._pack_no(conn, a), self._pack_no(conn, b)))

    def verify(
        self,
        checkpoint: str | os.PathLike[str] | Checkpoint | None = None,
        since: str | os.PathLike[str] | Checkpoint | None = None,
        *,
        vkey: str | None = None,
    ) -> VerifyResult:
        """Recompute every digest and the hash chain; name the first bad entry.

        `checkpoint`: `SEQ:HASH` (as `head` prints it), which the chain must still
        extend, or a tree checkpoint (a `ledger checkpoint` file's path, or a
        `Checkpoint`): the first N entries must have its root. `since`: a tree
        checkpoint; only the entries after it are read, and the stored tree must
        extend it (`verify --since`). `vkey` (a verifier key, or a file holding
        one): checkpoint files must carry its valid signature (without one to
        check, `vkey` is an InputError: it would check nothing). It never raises for
        a failed check of the ledger itself; a checkpoint of another ledger, or a
        bad signature, is an IntegrityError.
        """
        from ledger.api.checkpoints import tree_checkpoint
        from ledger.core.checkpoint import parse_seq_hash
        from ledger.signing import read_vkey
        from ledger.store.verify import verify

        seq_hash = None
        if isinstance(checkpoint, str) and parse_seq_hash(checkpoint) is not None:
            seq_hash, checkpoint = checkpoint, None
        key = read_vkey(vkey) if vkey is not None else None
        tree_cp = tree_checkpoint(checkpoint, key)
        since_cp = tree_checkpoint(since, key)
        if key is not None and tree_cp is None and since_cp is None:
            # Else nothing would be checked against the key, and ok would say otherwise.
            raise InputError(
                "vkey: checks a checkpoint file's signature; give checkpoint as a checkpoint "
                "file (or a Checkpoint), or since",
                param="vkey",
            )
        with self._read() as conn:
            return verify(conn, seq_hash, tree_checkpoint=tree_cp, since=since_cp)

    def head(self, at: int | None = None) -> HeadResult:
        """The newest entry (or entry `at`) as a checkpoint `SEQ:HASH` (keep it;
        verify against it later). A missing entry is a NotFoundError."""
        with self._read() as conn:
            newest = read_head(conn)
            h = newest if at is None else entry_at(conn, at)
        if h is None:
            raise NotFoundError(
                f"at: entry {at} does not exist (the newest is entry {newest.seq})", param="at"
            )
        return HeadResult({"seq": h.seq, "hash": h.entry_hash, "checkpoint": h.checkpoint()})

    # -- proofs and checkpoints (docs/reference/proofs.md) ---------------------

    def checkpoint(
        self, size: int | None = None, *, key: str | os.PathLike[str] | None = None
    ) -> CheckpointResult:
        """The C2SP checkpoint of the tree of `size` entries (default: all), signed
        with the private key file `key` when given (`ledger checkpoint --key`)."""
        from ledger.core.checkpoint import Note
        from ledger.core.proofs import CheckpointResult
        from ledger.signing import load_signer
        from ledger.store import tree as merkle_tree

        signer = load_signer(Path(key)) if key is not None else None
        with self._read() as conn:
            cp = merkle_tree.checkpoint(conn, size)
        note = Note(cp.text())
        if signer is not None:
            note = signer.sign(note)
        data = {**merkle_tree.checkpoint_json(cp), "note": note.render()}
        return CheckpointResult({**data, "signed": signer is not None})

    def prove(self, pack: PackRef, size: int | None = None) -> InclusionProof:
        """The inclusion proof of a pack's entry in the tree of `size` entries
        (default: now); `to_json()` is `ledger prove PACK --json`."""
        from ledger.store import tree as merkle_tree

        with self._read() as conn:
            return merkle_tree.prove_pack(conn, self._pack_no(conn, pack), size)

    def prove_consistency(self, old: int, new: int | None = None) -> ConsistencyProof:
        """The proof that the tree of `new` entries (default: now) extends the tree of
        `old`; `to_json()` is `ledger prove --consistency OLD [NEW] --json`."""
        from ledger.store import tree as merkle_tree

        with self._read() as conn:
            return merkle_tree.prove_consistency(conn, old, new)

    def replay(self, pack: PackRef) -> ReplayResult:
        """Rebuild a pack from the ledger as it stood then and compare every decision."""
        from ledger.store.replay import replay

        with self._read() as conn:
            return replay(conn, self._pack_no(conn, pack))

    # -- reports ------------------------------------------------------------

    def report_pack(
        self,
        pack: PackRef,
        *,
        with_content: bool = False,
        max_hints: int | None = None,
        hint_seconds: float | None = None,
    ) -> tuple[int, str]:
        """One self-contained HTML page of a pack: (pack number, the page)."""
        import ledger.report as report

        with self._read() as conn:
            n = self._pack_no(conn, pack)
            page = report.pack_report(
                conn,
                n,
                with_content=with_content,
                max_hints=report.DEFAULT_MAX_HINTS if max_hints is None else max_hints,
                hint_seconds=report.DEFAULT_HINT_SECONDS if hint_seconds is None else hint_seconds,
            )
        return n, page

    def report_diff(self, a: PackRef, b: PackRef) -> tuple[int, int, str]:
        """One self-contained HTML page of a diff: (pack A, pack B, the page)."""
        import ledger.report as report

        with self._read() as conn:
            na, nb = self._pack_no(conn, a), self._pack_no(conn, b)
            return na, nb, report.diff_report(conn, na, nb)

    def report_chunk(self, ref: str, *, with_content: bool = False) -> tuple[list[str], str]:
        """One self-contained HTML page of a chunk's history: (its ids, the page)."""
        import ledger.report as report

        with self._read() as conn:
            page, ids = report.chunk_report(conn, ref, with_content=with_content)
        return ids, page
