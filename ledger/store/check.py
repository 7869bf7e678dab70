"""`ledger check`: each context test decided as `ledger build` would, nothing recorded.

A case's pack is decided by the build's own steps (`resolve_inputs`,
`with_retrieval`, `candidates_for`, `decide`) at one ledger mark for the whole
run, inside one read transaction, and its pack digest is the one `ledger build`
with the same inputs would record (`pack_digests`). Only a case that fails
is explained: its pack is recorded in a rehearsal transaction (always rolled
back), and `why` / `why-evicted` answer about the missed expectation in that
pack, checked hints included. The ledger is unchanged by a check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, select
from sqlalchemy.exc import DBAPIError

from ledger.core.checks import (
    ADMIT,
    BUILD,
    EXCLUDE,
    Admitted,
    Case,
    CaseResult,
    Expect,
    Failure,
    Miss,
    misses,
)
from ledger.core.context import Candidate, Context
from ledger.core.errors import ContextError, LedgerError, RefusedError
from ledger.core.query import holds_words
from ledger.core.reasons import reason_words
from ledger.core.transcript import budget_unit
from ledger.store.build import decide
from ledger.store.candidates import candidates_for
from ledger.store.chain import read_head
from ledger.store.check_reads import CheckReads
from ledger.store.engine import read_transaction, rehearsal_transaction
from ledger.store.inputs import Inputs, ledger_mark, resolve_inputs
from ledger.store.readers import contents_of
from ledger.store.rebuild import Rebuilt
from ledger.store.recording import PackDigests, pack_digests, record_pack
from ledger.store.retriever import with_retrieval
from ledger.store.schema import versions
from ledger.store.search import Asker, why, why_chunk


@dataclass(frozen=True, slots=True)
class Decided:
    """One case's build, decided and not recorded."""

    inputs: Inputs
    candidates: list[Candidate]
    ctx: Context
    vid_of: dict[str, int]
    digests: PackDigests  # what `ledger build` would record, and its evictions' columns

    @property
    def pack_digest(self) -> str:
        return self.digests.pack_digest


def run_checks(
    engine: Engine, cases: Sequence[Case], base: Path, ledger_at: int | None = None
) -> list[CaseResult]:
    """Every case's result, in file order. `base`: the folder a case's
    candidates file is named relative to; `ledger_at`: the mark (default: the head)."""
    results: list[CaseResult] = []
    failing: list[tuple[int, Case, Decided | None, _Misses, str | None]] = []
    with read_transaction(engine) as conn:
        head = read_head(conn).seq
        mark = ledger_mark(head, ledger_at)
        reads = CheckReads(conn, mark)
        for case in cases:
            try:
                decided = decide_case(conn, case, base, mark, reads)
            except RefusedError as exc:  # the build itself fails closed
                failing.append((len(results), case, None, _Misses([], []), str(exc)))
                results.append(CaseResult(case.name, None))
                continue
            phrases = any(item.text is not None for item in (*case.admit, *case.exclude))
            admitted = admitted_of(conn, decided, phrases, reads)
            missed = misses(case, admitted)
            gone = absent(conn, case.exclude)
            unknown = [item for item in case.exclude if item.id in gone]
            if missed or unknown:
                of = _Misses(missed, admitted, unknown)
                failing.append((len(results), case, decided, of, None))
            results.append(CaseResult(case.name, decided.pack_digest))
    cannot_write: list[str] = []  # why the rehearsals failed, once one did
    for index, case, pack, of, refused in failing:
        if pack is None:
            failure = Failure(
                BUILD, None, "refused", None, None, None, f"the build fails: {refused}"
            )
            results[index] = CaseResult(case.name, None, (failure,))
        else:
            explained = [*map(_never_held, of.unknown), *_explained(engine, pack, of, head,
                                                                     cannot_write)]  # fmt: skip
            results[index] = CaseResult(case.name, pack.pack_digest, tuple(explained))
    return results


def _explained(
    engine: Engine, decided: Decided, of: _Misses, head: int, cannot_write: list[str]
) -> list[Failure]:
    """A failing case's misses, each with its `why` answer (`explain`); on a
    database the connection may not write, what the decision says instead
    (`unexplained`), and `cannot_write` keeps the refusal for the next cases."""
    if not of.missed:
        return []
    if not cannot_write:
        try:
            return explain(engine, decided, of.missed, of.admitted, now=head)
        except DBAPIError as exc:  # a read-only database, a missing privilege
            cannot_write.append(_first_line(exc))
    return [unexplained(decided, miss, cannot_write[0]) for miss in of.missed]


def absent(conn: Connection, items: Sequence[Expect]) -> set[str]:
    """The ids among `items` that no version in the ledger has ever held."""
    ids = sorted({str(item.id) for item in items if item.id is not None})
    if not ids:
        return set()
    v = versions.c
    held: Iterable[str] = conn.execute(
        select(v.chunk_id).where(v.chunk_id.in_(ids)).distinct()
    ).scalars()
    return set(ids) - set(held)


def _never_held(item: Expect) -> Failure:
    """An `exclude` id the ledger never held: it would hold whatever the pack."""
    return Failure(
        EXCLUDE, item, "never_ingested", None, None, None,
        f"No chunk {item.id!r} is in the ledger: an exclude of an id that does not exist "
        "always holds, so this one fails until the id is corrected (or the chunk ingested).",
    )  # fmt: skip


UNEXPLAINED = "unexplained"  # the status of a miss the ledger could not explain


def unexplained(decided: Decided, miss: Miss, failure: str) -> Failure:
    """A miss of a case whose pack could not be recorded to ask `why` (the
    rehearsal's write failed: `failure`, the database's words): what the
    decision itself says of an evicted id, and why there is no more."""
    tail = (
        f"not explained further: the database refused the write that explains a failing "
        f"case (its pack is recorded in a transaction rolled back at once): {failure}; run "
        "the check where the ledger may be written for the `why` answer and its hint."
    )
    item = miss.item
    if miss.expect == ADMIT and item.id is not None:
        eviction = next((e for e in decided.ctx.evicted if e.candidate.id == item.id), None)
        if eviction is not None:
            c = eviction.candidate
            detail = {
                k: dict(v) if isinstance(v, Mapping) else v for k, v in eviction.detail.items()
            }
            words = reason_words(eviction.reason, detail, budget_unit(decided.inputs.scope))
            return Failure(
                ADMIT, item, "evicted", eviction.reason, detail, None,
                f"{c.id}@{c.source_version} was left out of {CASE_PACK} by {eviction.reason}: "
                f"{words}; {tail}",
            )  # fmt: skip
    if miss.expect != ADMIT:
        return Failure(miss.expect, item, "admitted", None, None, None,
                       f"{miss.found} was admitted to {CASE_PACK}, and it holds what must "
                       f"not reach the agent; {tail}")  # fmt: skip
    return Failure(ADMIT, item, UNEXPLAINED, None, None, None, f"{item.label()} was not "
                   f"admitted to {CASE_PACK}; {tail}")  # fmt: skip


def _first_line(exc: DBAPIError) -> str:
    """The database's own words for a failure (never the statement or its values)."""
    words = str(exc.orig if exc.orig is not None else type(exc).__name__)
    return (words.strip().splitlines() or [type(exc).__name__])[0]


@dataclass(frozen=True, slots=True)
class _Misses:
    """A failing case's misses, and what its pack admitted (ids and contents)."""

    missed: list[Miss]
    admitted: list[Admitted]
    unknown: list[Expect] = field(default_factory=list)  # exclude ids never held


def decide_case(
    conn: Connection, case: Case, base: Path, mark: int, reads: CheckReads | None = None
) -> Decided:
    """The case's pack, decided as `ledger build` with the same inputs would.
    `reads`: the run's memos (`CheckReads`), which give what the plain reads
    here give; without them every read is the build's own."""
    try:
        if reads is None:
            inputs = resolve_inputs(
                conn, case.as_of, case.subject, budget=case.budget, counter=case.counter,
                ledger_at=mark,
            )  # fmt: skip
        else:
            inputs = reads.inputs(case.as_of, case.subject, case.budget, case.counter)
        source = None if case.candidates is None else str(base / case.candidates)
        live_of = None if reads is None else reads.live_of
        inputs = with_retrieval(conn, inputs, case.query, case.top, source, live_of)
        if reads is None:
            candidates, vid_of = candidates_for(conn, inputs)
        else:
            candidates, vid_of = reads.candidates(inputs)
        ctx = decide(inputs, candidates)
    except RefusedError:
        raise
    except LedgerError as exc:
        raise ContextError(f"case {case.name!r}: {exc}", exc.exit_code, param=exc.param) from None
    return Decided(inputs, candidates, ctx, vid_of, pack_digests(inputs, candidates, ctx))


def admitted_of(
    conn: Connection, decided: Decided, contents: bool = True, reads: CheckReads | None = None
) -> list[Admitted]:
    """The admitted chunks' ids and contents (None for an erased body; None for
    every one without `contents`, when the case names no phrase). `reads`: the
    run's memos, which hold the contents of the versions a retrieval read."""
    vids = [decided.vid_of[c.record_digest] for c in decided.ctx.items]
    body: dict[int, str | None] = {}
    if contents:
        body = contents_of(conn, vids) if reads is None else reads.contents(vids)
    return [Admitted(c.id, body.get(vid)) for c, vid in zip(decided.ctx.items, vids, strict=True)]


def explain(
    engine: Engine,
    decided: Decided,
    missed: list[Miss],
    admitted: Sequence[Admitted] = (),
    now: int | None = None,
) -> list[Failure]:
    """Each miss with its `why` answer, asked of the case's pack recorded in a
    rehearsal transaction (rolled back: nothing stays). `admitted`: what the
    pack admitted, with contents (a phrase's words may be there, written
    otherwise); `now`: the ledger's newest entry (default: the case's mark),
    which the hints are checked at (`Asker`)."""
    # The pack as a hint's first rebuild would decide it: it was, by the same steps.
    built = Rebuilt(decided.inputs, decided.candidates, decided.ctx)
    # A hint may change the case's query's K, never its question.
    asker = Asker(decided.inputs.mark if now is None else now, retrieve_asked=False)
    with rehearsal_transaction(engine) as conn:
        pack_no = record_pack(
            conn,
            decided.inputs,
            decided.candidates,
            decided.ctx,
            decided.vid_of,
            digests=decided.digests,
        )
        return [_explain(conn, pack_no, miss, built, admitted, asker) for miss in missed]


CASE_PACK = "the case's pack"  # how an explanation names the (unrecorded) pack


def _explain(
    conn: Connection,
    pack_no: int,
    miss: Miss,
    built: Rebuilt,
    admitted: Sequence[Admitted],
    asker: Asker,
) -> Failure:
    if miss.expect != ADMIT:
        return Failure(
            miss.expect,
            miss.item,
            "admitted",
            None,
            None,
            None,
            f"{miss.found} was admitted to {CASE_PACK}, and it holds what must not reach "
            "the agent.",
        )
    item = miss.item
    if item.text is not None:
        holder = next(
            (a for a in admitted if a.content is not None and holds_words(a.content, item.text)),
            None,
        )
        if holder is not None:  # `why` would find it: say what the check did not
            return Failure(
                ADMIT, item, "admitted", None, None, None,
                f"{holder.id} was admitted to {CASE_PACK}, and it holds these words, but "
                "not as the case writes them: a phrase must be in the content as written "
                "(case and white space folded; punctuation and other characters count). "
                "Write the phrase as the content has it, or expect the id.",
            )  # fmt: skip
        # As a phrase: the versions that hold the words as the case gives them.
        phrase = '"' + item.text.replace('"', " ") + '"'
        answer = why(conn, phrase, pack_no, limit=1, label=CASE_PACK, built=built, asker=asker)
    else:
        answer = why_chunk(conn, str(item.id), pack_no, label=CASE_PACK, built=built, asker=asker)
    # The version that holds the words (the answer may lead with the version of
    # its id the pack weighed, when only an older text holds them).
    lead: Any = next((m for m in answer.matches if m.matched), None)
    return Failure(
        ADMIT,
        item,
        answer.verdict if lead is None else lead.status,
        None if lead is None else lead.reason,
        None if lead is None else lead.detail,
        None if lead is None else lead.hint,
        answer.sentence,
    )


__all__ = ["UNEXPLAINED", "Decided", "admitted_of", "decide_case", "explain", "run_checks"]
