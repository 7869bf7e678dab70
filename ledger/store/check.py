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

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine

from ledger.core.checks import (
    ADMIT,
    BUILD,
    Admitted,
    Case,
    CaseResult,
    Failure,
    Miss,
    misses,
)
from ledger.core.context import Candidate, Context
from ledger.core.errors import ContextError, LedgerError, RefusedError
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
from ledger.store.search import why, why_chunk


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
    failing: list[tuple[int, Case, Decided | None, list[Miss], str | None]] = []
    with read_transaction(engine) as conn:
        mark = ledger_mark(read_head(conn).seq, ledger_at)
        reads = CheckReads(conn, mark)
        for case in cases:
            try:
                decided = decide_case(conn, case, base, mark, reads)
            except RefusedError as exc:  # the build itself fails closed
                failing.append((len(results), case, None, [], str(exc)))
                results.append(CaseResult(case.name, None))
                continue
            phrases = any(item.text is not None for item in (*case.admit, *case.exclude))
            missed = misses(case, admitted_of(conn, decided, phrases, reads))
            if missed:
                failing.append((len(results), case, decided, missed, None))
            results.append(CaseResult(case.name, decided.pack_digest))
    for index, case, pack, missed, refused in failing:
        if pack is None:
            failure = Failure(
                BUILD, None, "refused", None, None, None, f"the build fails: {refused}"
            )
            results[index] = CaseResult(case.name, None, (failure,))
        else:
            results[index] = CaseResult(
                case.name, pack.pack_digest, tuple(explain(engine, pack, missed))
            )
    return results


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


def explain(engine: Engine, decided: Decided, missed: list[Miss]) -> list[Failure]:
    """Each miss with its `why` answer, asked of the case's pack recorded in a
    rehearsal transaction (rolled back: nothing stays)."""
    # The pack as a hint's first rebuild would decide it: it was, by the same steps.
    built = Rebuilt(decided.inputs, decided.candidates, decided.ctx)
    with rehearsal_transaction(engine) as conn:
        pack_no = record_pack(
            conn,
            decided.inputs,
            decided.candidates,
            decided.ctx,
            decided.vid_of,
            digests=decided.digests,
        )
        return [_explain(conn, pack_no, miss, built) for miss in missed]


CASE_PACK = "the case's pack"  # how an explanation names the (unrecorded) pack


def _explain(conn: Connection, pack_no: int, miss: Miss, built: Rebuilt) -> Failure:
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
        # As a phrase: the versions that hold the words as the case gives them.
        phrase = '"' + item.text.replace('"', " ") + '"'
        answer = why(conn, phrase, pack_no, limit=1, label=CASE_PACK, built=built)
    else:
        answer = why_chunk(conn, str(item.id), pack_no, label=CASE_PACK, built=built)
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


__all__ = ["Decided", "admitted_of", "decide_case", "explain", "run_checks"]
