"""`ledger build`: select from the ledger for a subject on a date, record the pack.

The shell around the pure core: it resolves the build's inputs (`inputs`), reads
its candidates (`candidates`), lets `ledger.core.select` decide, and records the
pack, one decision row per candidate and the pack's ledger entry (`recording`).
`replay` reuses `decide` with a pack's recorded inputs.

Writers side by side: a build reads and selects in a read transaction, at its
ledger mark (the head when it starts, or `ledger_at`), holding no lock; only
then does it take the ledger's write lock, in a second transaction, to append
its entry and write its rows. Everything it decided on is fixed by the mark
(the versions, grants, policy and retractions at or before it never change), so
it re-reads nothing: another process's entries appended in between come after
the mark, as a `--ledger-at` build would see them. The chain stays one
gap-free sequence: the pack's number and entry are taken under the lock.
(A build with a counter other than the stored estimate fills the token-count
cache, a write, so it selects under the lock as before.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Unpack

from sqlalchemy import Connection, Engine

from ledger.core.context import Context
from ledger.core.errors import InputError
from ledger.core.select import Candidate, RequiredOverBudgetError
from ledger.core.select import select as run_selector
from ledger.store.access import check_budget
from ledger.store.candidates import candidates_for, load_candidates
from ledger.store.engine import read_transaction, write_transaction
from ledger.store.inputs import (
    Asked,
    Inputs,
    check_counter,
    resolve_inputs,
    transcript_inputs,
)
from ledger.store.recording import Trace, pack_digests, record_pack
from ledger.store.retriever import with_retrieval
from ledger.tokens import ESTIMATED

__all__ = ["build_pack", "build_transcript_pack", "decide"]


def decide(inputs: Inputs, candidates: Iterable[Candidate]) -> Context:
    """Run the pure core on the inputs."""
    return run_selector(candidates, inputs.request(), inputs.order())


def build_pack(
    engine: Engine,
    as_of: str,
    subject: str = "default",
    *,
    query: str | None = None,
    top: int | None = None,
    candidates_file: str | bytes | None = None,
    trace: Trace | None = None,
    **asked: Unpack[Asked],
) -> int:
    """Build and record one pack in its own transaction; return its number.

    With `query` (and `top`, default 20) or `candidates_file`: a retrieval build;
    `trace`: the OpenTelemetry trace and span ids recorded with it."""
    counter = check_counter(asked.get("counter", ESTIMATED))
    if counter != ESTIMATED:  # the token-count cache is written as the build reads
        with write_transaction(engine) as conn:
            inputs, candidates, ctx, vid_of = select_for(
                conn, as_of, subject, query, top, candidates_file, asked
            )
            return record_pack(conn, inputs, candidates, ctx, vid_of, trace)
    with read_transaction(engine) as conn:  # no lock: other writers go on
        inputs, candidates, ctx, vid_of = select_for(
            conn, as_of, subject, query, top, candidates_file, asked
        )
    digests = pack_digests(inputs, candidates, ctx)
    with write_transaction(engine) as conn:  # the lock, for the append alone
        return record_pack(conn, inputs, candidates, ctx, vid_of, trace, digests)


def select_for(
    conn: Connection,
    as_of: str,
    subject: str,
    query: str | None,
    top: int | None,
    candidates_file: str | bytes | None,
    asked: Asked,
) -> tuple[Inputs, list[Candidate], Context, dict[str, int]]:
    """A build's decision at its ledger mark, nothing written (but the token cache)."""
    inputs = resolve_inputs(conn, as_of, subject, **asked)
    inputs = with_retrieval(conn, inputs, query, top, candidates_file)
    candidates, vid_of = candidates_for(conn, inputs)
    return inputs, candidates, decide(inputs, candidates), vid_of


def build_transcript_pack(
    engine: Engine,
    source_version: str,
    header: int,
    budget: int,
    subject: str = "transcript",
    ledger_at: int | None = None,
    *,
    source: str = "the transcript",
    ingest_hint: str = "ledger ingest --format transcript",
    as_of: str | None = None,
) -> int:
    """Record, as a pack, the continuation `ledger transcript export` would write.

    `source_version` names the annotated transcript's exchanges, `header` the
    fixed bytes of continuation.md around them; `budget` counts the whole file,
    as for export, so the pack's budget is what remains after the header.
    `source` names the transcript in messages, `ingest_hint` the command that
    would ingest its missing exchanges. `as_of` labels the pack (an export's last
    day; None: 1970-01-01, the strict transcript's).
    """
    check_budget(budget)
    if budget < header:
        raise InputError(
            f"budget: {budget} is below the continuation's fixed header of {header} bytes",
            param="budget",
        )
    with write_transaction(engine) as conn:
        inputs = transcript_inputs(conn, source_version, budget - header, subject, ledger_at, as_of)
        candidates, vid_of = load_candidates(conn, inputs.mark, inputs.counter, inputs.scope)
        if not candidates:
            raise InputError(
                f"{source}: its exchanges (with these priorities) are not in the ledger at entry "
                f"{inputs.mark}; run `{ingest_hint}` first"
            )
        try:
            ctx = decide(inputs, candidates)
        except RequiredOverBudgetError as exc:
            raise InputError(
                f"budget: {budget} is below the pinned exchanges plus the Markdown framing "
                f"(needs at least {exc.needed + header} bytes)",
                param="budget",
            ) from None
        return record_pack(conn, inputs, candidates, ctx, vid_of)
