"""`ledger search` and `ledger why`: the questions in words, answered from the index.

`search` lists the best-matching chunk versions. `why` finds the versions that
match a text, reads what one pack decided about each (or why it was no
candidate), computes the hints with the core (`admission_hint` on the pack's
own inputs, or on the inputs of the build that would retrieve it) and lets
`ledger.core.why` decide the verdict and write the sentence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection, func, select

from ledger.core.errors import InputError, NotFoundError
from ledger.core.query import Query, parse_query
from ledger.core.reasons import GATE
from ledger.core.results import SearchResult
from ledger.core.why import (
    Decided,
    Found,
    PackView,
    Retrieval,
    WhyAnswer,
    answer,
    order_found,
)
from ledger.store.candidates import candidates_for
from ledger.store.chain import read_head
from ledger.store.fulltext import Hit, closest_terms, search_versions
from ledger.store.inputs import inputs_now, resolve_inputs
from ledger.store.readers import erased_bodies, erased_info
from ledger.store.rebuild import Rebuilt, checked_hint, first_causes
from ledger.store.retriever import rank_of, retrieve_query, with_retrieval
from ledger.store.schema import packs, versions

MAX_LIMIT = 1000
SNIPPET = 160  # characters of context around the first matching word


def check_limit(limit: object, where: str = "limit") -> int:
    """A result count: an integer from 1 to `MAX_LIMIT`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InputError(
            f"{where}: must be an integer between 1 and {MAX_LIMIT}, not {limit!r}", param=where
        )
    return limit


def _optional(name: str) -> Any:
    """A column that the documents ingest adds (title, path), or NULL without it."""
    from sqlalchemy import null

    col = versions.c.get(name)
    return col if col is not None else null()


def _version_rows(conn: Connection, vids: list[int]) -> dict[int, Any]:
    if not vids:
        return {}
    c = versions.c
    title, path = _optional("title"), _optional("path")
    rows = conn.execute(
        select(
            c.vid, c.chunk_id, c.source_version, c.section, c.source_uri, c.effective_from,
            c.batch_seq, c.record_digest, c.content_digest, c.scope,
            title.label("title"), path.label("path"),
        ).where(c.vid.in_(vids))
    )  # fmt: skip
    return {r.vid: r for r in rows}


def snippet(content: str | None, query: Query) -> str | None:
    """About `SNIPPET` characters of `content` around the first word of the query."""
    import re

    from ledger.core.query import normalize_words

    if not content:
        return None
    wanted = set(query.words)
    for m in re.finditer(r"[^\W_]+", content):
        if set(normalize_words(m.group())) & wanted:
            start = max(0, m.start() - SNIPPET // 2)
            end = min(len(content), start + SNIPPET)
            text = " ".join(content[start:end].split())
            return ("…" if start else "") + text + ("…" if end < len(content) else "")
    return " ".join(content[:SNIPPET].split()) + ("…" if len(content) > SNIPPET else "")


def search(
    conn: Connection,
    text: str,
    as_of: str | None = None,
    limit: int = 10,
    with_content: bool = False,
) -> SearchResult:
    """The chunk versions best matching `text` (valid on `as_of` when given)."""
    q = parse_query(text)
    check_limit(limit)
    if as_of is not None:
        from ledger.core.reasons import check_date

        check_date(as_of)

    hits = search_versions(conn, q, limit=limit, as_of=as_of)
    rows = _version_rows(conn, [h.vid for h in hits])
    erased = erased_info(conn, [h.vid for h in hits])
    contents: dict[int, str] = {}
    if with_content and hits:
        contents = dict(
            conn.execute(
                select(versions.c.vid, versions.c.content).where(
                    versions.c.vid.in_([h.vid for h in hits])
                )
            ).all()
        )
    results = []
    for h in hits:
        r = rows[h.vid]
        item = {
            "id": r.chunk_id,
            "source_version": r.source_version,
            "title": r.title,
            "path": r.path,
            "score": h.score,
            "record_digest": r.record_digest,
            "content_digest": r.content_digest,
        }
        if with_content:
            item["snippet"] = snippet(contents.get(h.vid), q)
        if h.vid in erased:  # found by its title: the body is gone
            item["erased"] = erased[h.vid]
        results.append(item)
    return SearchResult(q.text, tuple(results))


# --------------------------------------------------------------------------
# why
# --------------------------------------------------------------------------


def _scope_of(row: Any) -> str:
    if row.scope is not None:
        return f"transcript:{row.source_version}"
    return "documents"


def _pack_for(conn: Connection, pack_no: int | None, subject: str) -> Any | None:
    from ledger.store.packs import pack_header

    if pack_no is not None:
        return pack_header(conn, pack_no)
    newest: int | None = conn.execute(
        select(func.max(packs.c.pack_no)).where(packs.c.subject == subject)
    ).scalar_one()
    return None if newest is None else pack_header(conn, int(newest))


def why(
    conn: Connection,
    text: str,
    pack_no: int | None = None,
    subject: str = "default",
    limit: int = 5,
    label: str | None = None,
    built: Rebuilt | None = None,
    asker: Asker | None = None,
) -> WhyAnswer:
    """`ledger why TEXT --json` (docs/reference/json.md): the matching versions'
    fate in one pack (default: the subject's newest), the verdict and the sentence
    (`label`: how it names the pack; default "pack N"; `built`: the pack as
    `checked_hint` takes it; `asker`: who asks, default a user at the ledger's
    newest entry)."""
    from ledger.store.access import check_subject

    q = parse_query(text)
    check_limit(limit)
    check_subject(subject)
    head = _pack_for(conn, pack_no, subject)
    # A few more versions than asked: per id its current version heads the
    # answer, and it may score below an older one.
    hits = search_versions(conn, q, limit=limit * 4 + 8)
    if not hits:
        return answer(
            q.text, None if head is None else _view(head), [], limit, closest_terms(conn, q),
            erased_bodies(conn),
        )  # fmt: skip
    if head is None:
        raise NotFoundError(
            f"no pack has been built for subject {subject!r}: build one for it first "
            "(or name a pack)",
            param="pack",
        )
    return _answer(conn, head, q, hits, limit, label, built=built, asker=asker)


@dataclass(frozen=True, slots=True)
class Asker:
    """Who a `why` answers, for its hints. `now`: the ledger entry the asker
    builds at (a pack's hints are checked on a build then: `inputs_now`);
    `retrieve_asked`: whether the words asked may stand as a retrieval query in
    a hint (a user asking `why`), or only the pack's own query may (a context
    test, whose case's question is its query, not the expected answer)."""

    now: int
    retrieve_asked: bool = True


def why_chunk(
    conn: Connection,
    chunk_id: str,
    pack_no: int,
    label: str | None = None,
    built: Rebuilt | None = None,
    asker: Asker | None = None,
) -> WhyAnswer:
    """`why` about one chunk id in a pack: every version of it, as `why TEXT`
    gives a match (`ledger check` explains an expected id with it; `label`
    names the pack in the sentence; `built` and `asker` as `why` takes them).
    No version: the verdict `never_ingested`."""
    from ledger.store.packs import pack_header

    head = pack_header(conn, pack_no)
    v = versions.c
    hits = [
        Hit(int(r.vid), r.chunk_id, r.source_version, 0.0)
        for r in conn.execute(
            select(v.vid, v.chunk_id, v.source_version).where(v.chunk_id == chunk_id)
        )
    ]
    if not hits:
        sentence = f"No chunk {chunk_id!r} is in the ledger: it was never ingested."
        return WhyAnswer(chunk_id, pack_no, "never_ingested", sentence, ())
    return _answer(conn, head, None, hits, 1, label, chunk_id, built, asker)


def _answer(
    conn: Connection,
    head: Any,
    q: Query | None,
    hits: list[Hit],
    limit: int,
    label: str | None = None,
    asked: str | None = None,
    built: Rebuilt | None = None,
    asker: Asker | None = None,
) -> WhyAnswer:
    """The answer about `hits` (matching versions) in the pack `head` (`built`
    and `asker`: as `why` takes them)."""
    from ledger.store.inputs import inputs_of
    from ledger.store.packs import decision_rows, detail_of, reason_of
    from ledger.store.why_evicted import hint_for

    view = replace(_view(head), label=label)
    inputs = inputs_of(head, conn)  # with the retractions and reinstatements at its mark
    unmatched = _weighed_versions(conn, head.pack_no, hits)
    hits = hits + unmatched
    rows = _version_rows(conn, [h.vid for h in hits])
    decided = {d.vid: d for d in decision_rows(conn, head.pack_no, [h.vid for h in hits])}
    # Scores under the pack's own query, for the versions it did not retrieve.
    pack_query = None
    if inputs.retrieval is not None and inputs.retrieval.query is not None:
        pack_query = parse_query(inputs.retrieval.query)
    missing = [h.vid for h in hits if h.vid not in decided]
    query_scores: dict[int, float] = {}
    if pack_query is not None and missing:
        query_scores = {
            h.vid: h.score
            for h in search_versions(conn, pack_query, limit=len(missing), vids=missing)
        }

    erased = erased_info(conn, [h.vid for h in hits])
    # The versions the pack never considered: every gate at its own inputs.
    causes = first_causes(
        conn,
        inputs,
        {
            rows[h.vid].record_digest: rows[h.vid].chunk_id
            for h in hits
            if h.vid not in decided
            and rows[h.vid].batch_seq <= head.ledger_mark
            and _scope_of(rows[h.vid]) == inputs.scope
        },
    )
    found = []
    for h in hits:
        r = rows[h.vid]
        d = decided.get(h.vid)
        dec = None
        gate = None
        if d is not None:
            reason = reason_of(d.status, head.pack_no)
            dec = Decided(reason, None if reason is None else detail_of(reason, d))
        elif r.record_digest in causes:
            cause = causes[r.record_digest]
            if cause is not None:
                gate = Decided(cause[1].reason, dict(cause[1].detail))
        found.append(
            Found(
                id=r.chunk_id,
                source_version=r.source_version,
                title=r.title,
                score=h.score,
                batch=r.batch_seq,
                section=r.section,
                scope=_scope_of(r),
                effective_from=r.effective_from,
                decided=dec,
                query_score=query_scores.get(h.vid),
                erased=erased.get(h.vid),
                gate=gate,
                matched=h not in unmatched,
            )
        )
    # Hints re-run the selector: only for the versions the answer shows.
    # Hints only for what the answer shows: the versions of its first `limit` ids.
    ordered = order_found(found, view)
    shown_ids = list(dict.fromkeys(f.id for f in ordered))[:limit]
    shown = [f for f in ordered if f.id in shown_ids]
    if asker is None:
        asker = Asker(read_head(conn).seq)
    words = q.text if q is not None and asker.retrieve_asked else None
    queries = [x for x in (pack_query, None if words is None else q) if x is not None]
    vid_of = {(rows[h.vid].chunk_id, rows[h.vid].source_version): h.vid for h in hits}
    cache: dict[Any, Any] = {}
    hinted = []
    for f in shown:
        r = rows[vid_of[(f.id, f.source_version)]]
        if f.decided is not None:
            if f.decided.reason is not None:
                f = replace(
                    f,
                    decided=replace(f.decided, hint=hint_for(conn, head, r.record_digest, cache)),
                )
        elif r.batch_seq > head.ledger_mark:
            f = replace(f, hint=_rebuild_hint(conn, head, inputs, r, queries, asker.now))
        elif f.scope == inputs.scope:
            # Checked by rebuilding the pack as it was built, with each change.
            f = replace(f, hint=checked_hint(conn, inputs, r.record_digest, words, built))
        hinted.append(f)
    if not all(f.decided is not None and f.decided.reason is None for f in shown):
        # A hint holds for the pack as built: the answer says when a build now
        # decides from other inputs (docs/reference/gates.md, "Hints").
        later = inputs_now(conn, inputs, asker.now)
        if later is not None:
            view = replace(view, changed_to=later.mark)
    return answer(q.text if q is not None else str(asked), view, hinted, limit)


def _weighed_versions(conn: Connection, pack_no: int, hits: list[Hit]) -> list[Hit]:
    """The version the pack weighed (passed gates 1-6: admitted, or left out as
    a duplicate or by the budget) of each matched id whose matching versions do
    not include it: an id is shown as the pack saw it, even when the words asked
    are only in an older or newer version's text."""
    from ledger.store.packs import decision_rows, reason_of

    have = {h.vid for h in hits}
    ids = sorted({h.chunk_id for h in hits})
    v = versions.c
    stored: Iterable[int] = conn.execute(select(v.vid).where(v.chunk_id.in_(ids))).scalars()
    others = [vid for vid in stored if vid not in have]
    if not others:
        return []
    weighed = []
    for d in decision_rows(conn, pack_no, others):
        reason = reason_of(d.status, pack_no)
        if reason is None or GATE[reason] > 6:
            weighed.append(Hit(int(d.vid), d.chunk_id, d.source_version, 0.0))
    return weighed


def _view(head: Any) -> PackView:
    from ledger.store.packs import retrieval_of

    record = retrieval_of(head)
    retrieval = None
    if record is not None:
        retrieval = Retrieval(record.query, record.top, record.lowest_score())
    return PackView(
        number=head.pack_no,
        as_of=head.as_of,
        subject=head.subject,
        mark=head.ledger_mark,
        scope=head.scope,
        retrieval=retrieval,
    )


def _simulated_hint(
    conn: Connection, inputs: Any, record_digest: str, first: dict[str, Any]
) -> dict[str, Any]:
    """The core's hint on the inputs of another build, after `first` (the step that
    makes the version a candidate): `{"target", "steps", "admits"}`."""
    from ledger.core.hints import admission_hint

    candidates, _ = candidates_for(conn, inputs)
    if not any(c.record_digest == record_digest for c in candidates):
        return {"target": None, "steps": [first], "admits": False}
    hint = admission_hint(candidates, inputs.request(), record_digest, inputs.order()).to_json()
    hint["steps"] = [first, *hint["steps"]]
    return hint


def _retrieve_hint(conn: Connection, inputs: Any, row: Any, queries: list[Query]) -> dict[str, Any]:
    """For a version a retrieval build did not take: the query and K that would
    retrieve its id (the pack's query when the version matches it, else the
    asked text), then whatever else the selector needs to admit it."""
    for query in queries:
        ranked = rank_of(conn, query, row.chunk_id, inputs)
        if ranked is not None:
            break
    else:
        return {"target": None, "steps": [], "admits": False}
    top = max(ranked[0], inputs.retrieval.top or 0)
    record = retrieve_query(conn, query.text, top, inputs)
    step = {"kind": "retrieve", "query": query.text, "top": top}
    return _simulated_hint(conn, replace(inputs, retrieval=record), row.record_digest, step)


def _rebuild_hint(
    conn: Connection, head: Any, inputs: Any, row: Any, queries: list[Query], at: int
) -> dict[str, Any]:
    """For a version ingested after the pack: a build now (at entry `at`), with
    the pack's date, subject, budget and retrieval query (grants and policy as
    they stand now), and the retrieval that offers it if that query would not."""
    now = resolve_inputs(
        conn, head.as_of, head.subject, budget=head.budget, counter=head.counter.split("@")[0],
        ledger_at=at,
    )  # fmt: skip
    retrieval = inputs.retrieval
    if retrieval is not None and retrieval.query is not None:
        now = with_retrieval(conn, now, retrieval.query, retrieval.top)
    step = {"kind": "rebuild", "mark": now.mark}
    if (
        now.retrieval is not None
        and row.section == "evidence"
        and row.chunk_id not in {r.id for r in now.retrieval.ranked}
    ):
        hint = _retrieve_hint(conn, now, row, queries)
        hint["steps"] = [step, *hint["steps"]]
        return hint
    return _simulated_hint(conn, now, row.record_digest, step)


__all__ = ["Asker", "Hit", "SearchResult", "check_limit", "search", "snippet", "why", "why_chunk"]
