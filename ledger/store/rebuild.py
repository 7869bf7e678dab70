"""Hints checked by rebuilding: what admits a chunk a pack never considered.

A chunk a retrieval pack never took as a candidate is out for a reason that a
change can move: the retriever ranks only what passes gates 1-6 for the build,
so granting a permission, allowing a trust label or moving the as-of date also
changes what is retrieved. Such a hint is therefore checked the way the user
will use it: the pack is rebuilt exactly as it was built (its inputs at its
ledger mark, its retrieval re-run for a query, every gate; nothing recorded)
with the change applied, and the next cause is read from that rebuild, until
the chunk is admitted or no change of a build's options admits it. Each step
is the core's fix for the cause (`ledger.core.hints.fix_for`), so a hint here
and a hint on an eviction say the same thing for the same gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection, select

from ledger.core.context import Context, Eviction
from ledger.core.errors import RefusedError
from ledger.core.hints import fix_for
from ledger.core.query import parse_query
from ledger.core.select import Candidate, Request, standing
from ledger.store.build import decide
from ledger.store.candidates import candidates_for, load_candidates
from ledger.store.check_reads import CheckReads
from ledger.store.inputs import Inputs
from ledger.store.retriever import rank_of, with_retrieval
from ledger.store.schema import versions
from ledger.tokens import ESTIMATED

MAX_STEPS = 6


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """A pack decided again from inputs, nothing recorded."""

    inputs: Inputs
    candidates: list[Candidate]
    context: Context | None  # None: the rebuild fails closed (a required chunk)


def rebuild(
    conn: Connection, inputs: Inputs, query: str | None, reads: CheckReads | None = None
) -> Rebuilt:
    """The pack these inputs decide: a query build's retrieval re-run at its
    mark (a candidates file's list is kept), then every gate. `reads`: memos
    of the reads at the inputs' mark (`CheckReads`), which give what the plain
    reads give."""
    live_of = None if reads is None else reads.live_of
    if query is not None:
        top = inputs.retrieval.top if inputs.retrieval is not None else None
        inputs = with_retrieval(conn, replace(inputs, retrieval=None), query, top, None, live_of)
    if reads is None:
        candidates, _vids = candidates_for(conn, inputs)
    else:
        candidates, _vids = reads.candidates(inputs)
    try:
        return Rebuilt(inputs, candidates, decide(inputs, candidates))
    except RefusedError:
        return Rebuilt(inputs, candidates, None)


def first_causes(
    conn: Connection, inputs: Inputs, targets: Mapping[str, str]
) -> dict[str, tuple[Candidate, Eviction] | None]:
    """Gates 1-6 at the inputs for each version of `targets` (record digest:
    its chunk id): the version and its eviction, or None when it passes them
    (its id's live one). One read of the ids' versions: the gates judge each id
    on its own versions, so judging them together changes no answer."""
    if not targets:
        return {}
    ids = sorted(set(targets.values()))
    candidates, _vids = load_candidates(
        conn, inputs.mark, ESTIMATED, inputs.scope, versions.c.chunk_id.in_(ids)
    )
    _live, out = standing(candidates, inputs.request())
    evictions = {e.candidate.record_digest: e for e in out}
    return {
        c.record_digest: (c, evictions[c.record_digest]) if c.record_digest in evictions else None
        for c in candidates
        if c.record_digest in targets
    }


def _judged(
    conn: Connection, inputs: Inputs, target: str, chunk_id: str
) -> tuple[Candidate, Eviction, Context] | None:
    """`first_cause`, and gates 1-6's decision over the versions of the
    target's id as a Context (what the core's fix reads: a superseding
    version's date)."""
    candidates, _vids = load_candidates(
        conn, inputs.mark, ESTIMATED, inputs.scope, versions.c.chunk_id == chunk_id
    )
    version = next(c for c in candidates if c.record_digest == target)
    live, out = standing(candidates, inputs.request())
    eviction = next((e for e in out if e.candidate.record_digest == target), None)
    if eviction is None:
        return None
    return version, eviction, Context(items=tuple(live), evicted=tuple(out), budget=inputs.budget)


def _ref(conn: Connection, record_digest: str) -> dict[str, str]:
    """How a hint names its target: `{"id", "source_version", "record_digest"}`."""
    v = versions.c
    row = conn.execute(
        select(v.chunk_id, v.source_version).where(v.record_digest == record_digest)
    ).one()
    return {
        "id": row.chunk_id,
        "source_version": row.source_version,
        "record_digest": record_digest,
    }


def checked_hint(
    conn: Connection,
    inputs: Inputs,
    target: str,
    asked: str | None = None,
    built: Rebuilt | None = None,
) -> dict[str, Any]:
    """`{"target", "steps", "admits"}` for the version with record digest
    `target`: each step the fix for the cause the last rebuild found, and
    `admits` true only when the rebuild with every step admits it. `asked`: the
    words of the question, a query that may retrieve it when the pack's does not.
    `built`: the pack as `rebuild(conn, inputs, query)` decides it, when the
    caller has just decided it by the same steps (a `ledger check` case); else
    the first round rebuilds it."""
    query = None if inputs.retrieval is None else inputs.retrieval.query
    steps: list[dict[str, Any]] = []
    current = inputs
    ref = _ref(conn, target)
    # The rounds rebuild at one mark: each id's versions are read once for all.
    reads = CheckReads(conn, inputs.mark)
    for _round in range(MAX_STEPS):
        if built is None:
            built = rebuild(conn, current, query, reads)
        if built.context is None:
            return {"target": ref, "steps": steps, "admits": False}
        if any(c.record_digest == target for c in built.context.items):
            return {"target": ref, "steps": steps, "admits": True}
        step, changed = _next_step(
            conn, built.inputs, built.context, (target, ref["id"]), query, asked, reads
        )
        if step is None:
            return {"target": ref, "steps": steps, "admits": False}
        steps.append(step)
        if changed is None:
            return {"target": ref, "steps": steps, "admits": False}
        current, query = changed
        built = None
    return {"target": ref, "steps": steps, "admits": False}


_Next = tuple[dict[str, Any] | None, tuple[Inputs, str | None] | None]


def _next_step(
    conn: Connection,
    inputs: Inputs,
    context: Context,
    target: tuple[str, str],
    query: str | None,
    asked: str | None,
    reads: CheckReads,
) -> _Next:
    """The fix for what keeps the target (its record digest and chunk id) out of
    the pack these inputs decided (`context`), and the inputs (and query) with
    it applied (None when no change of a build's options moves it)."""
    digest, chunk_id = target
    evicted = next((e for e in context.evicted if e.candidate.record_digest == digest), None)
    if evicted is None:  # not a candidate: gates 1-6 first, then the retriever
        judged = _judged(conn, inputs, digest, chunk_id)
        if judged is None:
            return _retrieve_step(conn, inputs, chunk_id, query, asked, reads)
        version, evicted, context = judged
    else:
        version = evicted.candidate
    step, request = fix_for(evicted, inputs.request(), context, inputs.order(), version)
    changed = None if request is None else (_with_request(inputs, request), query)
    return step, changed


def _retrieve_step(
    conn: Connection,
    inputs: Inputs,
    chunk_id: str,
    query: str | None,
    asked: str | None,
    reads: CheckReads,
) -> _Next:
    """For a live version of `chunk_id` the retriever did not rank high enough:
    the query (the pack's, else the question's words) and the top K that would
    take it."""
    if inputs.retrieval is None or query is None:  # a file's list: not ours to widen
        return None, None
    for text in (query, asked):
        if text is None:
            continue
        ranked = rank_of(conn, parse_query(text), chunk_id, inputs, reads.live_of)
        if ranked is not None:
            top = max(ranked[0], inputs.retrieval.top or 0)
            step = {"kind": "retrieve", "query": parse_query(text).text, "top": top}
            widened = replace(inputs, retrieval=replace(inputs.retrieval, top=top))
            return step, (widened, text)
    return None, None


def _with_request(inputs: Inputs, request: Request) -> Inputs:
    """The inputs a changed request stands for (grants, allowed trust, as-of
    date, budget, reinstatements): the same build, with the user's change."""
    return replace(
        inputs,
        as_of=request.as_of,
        grants=tuple(sorted(request.granted)),
        policy=replace(inputs.policy, allowed_trust=tuple(sorted(request.allowed_trust))),
        budget=request.budget,
        reinstatements=dict(request.reinstatements),
    )


__all__ = ["Rebuilt", "checked_hint", "first_causes", "rebuild"]
