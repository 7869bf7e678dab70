"""The built-in retriever, and a retrieval build's inputs (`with_retrieval`).

The retriever ranks only what the subject could be given (docs/reference/
commands.md, "ledger build", retrieval builds): per evidence chunk id, the one
version that passes gates 1-6 for this build (its permission, trust, dates,
retraction and supersession as of the build's date, at its ledger mark:
`ledger.core.select.standing`), scored on that version's own content and title.
No other version's text ranks an id, and an id with no such version is not
ranked: a retracted, superseded or not yet valid text never takes a slot from a
live one. (Packs of selector version 1 ranked an id by its best-matching
version, whatever its fate; they replay from their recorded list.)

How: the matching versions are read best first, a band of scores at a time
(`hits_band`; the plain reading is `hits_page`); the ids of each band are
judged by gates 1-6 on all their versions at the mark, and a match counts when
it is its id's live version; reading stops once `top` have counted. The ids
judged are only those that matched, so the cost follows the matches read, not
the size of the ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from functools import partial

from sqlalchemy import Connection

from ledger.core.errors import InputError
from ledger.core.query import Query, Ranked, RetrievalRecord, check_top, parse_query
from ledger.core.select import standing
from ledger.store.candidates import load_candidates
from ledger.store.fulltext import (
    DEFAULT_TOP,
    After,
    Hit,
    hits_band,
    matches_version,
    retrieve_data,
    retrieve_file,
)
from ledger.store.inputs import Inputs
from ledger.store.schema import versions
from ledger.tokens import ESTIMATED

FIRST_PAGE = 64  # matches read at first; each further band twice the last
LAST_PAGE = 4096
# A retrieval of `top` reads a band of 2 x top matches at first (at least
# MIN_PAGE), in case some are not live, and judges them top at a time: most
# matches are live, and each id judged is its versions read.
MIN_PAGE = 8

# How the retriever learns each id's live version (`live_versions`' answer for
# the inputs and ids); a check run gives one that reads each id once per run.
LiveOf = Callable[[Inputs, Sequence[str]], dict[str, int | None]]


def live_versions(conn: Connection, inputs: Inputs, ids: Sequence[str]) -> dict[str, int | None]:
    """Per chunk id, the version id (vid) of its one version that passes gates
    1-6 for a build with these inputs, or None when none does."""
    candidates, vid_of = load_candidates(
        conn, inputs.mark, ESTIMATED, inputs.scope, versions.c.chunk_id.in_(list(ids))
    )
    live, _out = standing(candidates, inputs.request())
    found: dict[str, int | None] = dict.fromkeys(ids)
    for c in live:
        found[c.id] = vid_of[c.record_digest]
    return found


def live_hits(
    conn: Connection,
    query: Query,
    inputs: Inputs,
    live_of: LiveOf | None = None,
    first: int = FIRST_PAGE,
    step: int | None = None,
) -> Iterator[Hit]:
    """The evidence versions matching `query` that are their id's live version
    for these inputs, best first (score, then id): at most one per id.
    `live_of`: how ids are judged (default: `live_versions` on `conn`);
    `first`: how many matches the first band reads (`hits_band`); `step`: how
    many of a band's matches are judged at a time (default: the band's size),
    so that a caller who takes fewer hits than a band holds judges no more ids
    than it reads."""
    if live_of is None:
        live_of = partial(live_versions, conn)
    live: dict[str, int | None] = {}
    after: After | None = None
    size = first
    while True:
        band, after = hits_band(conn, query, inputs.mark, after, size)
        judged = step or size
        for start in range(0, len(band), judged):
            part = band[start : start + judged]
            unjudged = sorted({h.chunk_id for h in part} - live.keys())
            if unjudged:
                live.update(live_of(inputs, unjudged))
            for hit in part:
                if live[hit.chunk_id] == hit.vid:
                    yield hit
        if after is None:
            return
        size = min(size * 2, LAST_PAGE)


def retrieve_query(
    conn: Connection, query_text: str, top: int, inputs: Inputs, live_of: LiveOf | None = None
) -> RetrievalRecord:
    """The built-in retriever: the `top` best live evidence versions, one per id."""
    q = parse_query(query_text)
    check_top(top)
    ranked: list[Ranked] = []
    for hit in live_hits(conn, q, inputs, live_of, max(2 * top, MIN_PAGE), top):
        ranked.append(Ranked(hit.chunk_id, hit.source_version, len(ranked) + 1, hit.score))
        if len(ranked) == top:
            break
    return RetrievalRecord(query=q.text, top=top, candidates_digest=None, ranked=tuple(ranked))


def rank_of(
    conn: Connection,
    query: Query,
    chunk_id: str,
    inputs: Inputs,
    live_of: LiveOf | None = None,
) -> tuple[int, float] | None:
    """The rank (1-based) and score `chunk_id`'s live version has among the live
    matches of `query` (as `retrieve_query` ranks them); None when it has no
    live version or that version does not match (found without reading the
    other matches). `live_of`: as `live_hits` takes it."""
    if live_of is None:
        live_of = partial(live_versions, conn)
    live = live_of(inputs, [chunk_id])[chunk_id]
    if live is None or not matches_version(conn, query, live):
        return None
    for rank, hit in enumerate(live_hits(conn, query, inputs, live_of), 1):
        if hit.chunk_id == chunk_id:
            return rank, hit.score
    return None


def with_retrieval(
    conn: Connection,
    inputs: Inputs,
    query: str | None = None,
    top: int | None = None,
    candidates: str | bytes | None = None,
    live_of: LiveOf | None = None,
) -> Inputs:
    """The inputs of a retrieval build (`query` and its `top`, or a `candidates`
    file; bytes: the candidates file's content, given in memory), or the inputs
    unchanged for a plain build. `live_of`: as `live_hits` takes it."""
    if query is not None and candidates is not None:
        raise InputError("query, candidates: two retrievers; give one", param="candidates")
    if query is not None:
        record = retrieve_query(conn, query, DEFAULT_TOP if top is None else top, inputs, live_of)
    elif candidates is not None:
        if top is not None:
            raise InputError(
                "top: goes with query (a candidates file is already ranked)", param="top"
            )
        if isinstance(candidates, bytes):
            record = retrieve_data(conn, candidates, "candidates", inputs.mark)
        else:
            record = retrieve_file(conn, candidates, inputs.mark)
    elif top is not None:
        raise InputError("top: goes with query", param="top")
    else:
        return inputs
    if inputs.is_transcript:
        raise InputError("a transcript continuation is not a retrieval build")
    return replace(inputs, retrieval=record)


__all__ = ["LiveOf", "live_hits", "live_versions", "rank_of", "retrieve_query", "with_retrieval"]
