"""The full-text index and its queries: search, retrieval for builds, `why`.

SQLite: a contentless FTS5 table `search_index(terms)` (rowid = the version's
`vid`, `ascii` tokenizer), ranked by `bm25()`. PostgreSQL: a table
`search_index(vid, terms tsvector)` with a GIN index (no foreign key to the
versions since revision 0011: see there), ranked by
`ts_rank_cd(terms, query, 1)` (cover density, divided by 1 + log(length)). Both
hold `ledger.core.query.index_terms(title, content)`: the words are normalized
once, in Python, so the two backends index the same words and a query matches
the same versions on both; only the scores differ (higher is better on both).
(FTS5 is given ASCII text as it is when its tokenizer finds the same words in
it, see `fts5_text`.)

The index holds no text of its own beyond the words (contentless on SQLite), so
erasing a body also removes its index row (`unindex`).
"""

from __future__ import annotations

import re
import struct
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, repeat
from typing import Any, NamedTuple, cast

from sqlalchemy import Connection, TextClause, text

from ledger.core.context import UNRANKED, Candidate
from ledger.core.errors import InputError
from ledger.core.query import (
    MAX_WORD,
    MAX_WORDS,
    Query,
    RetrievalRecord,
    index_terms,
    normalize_words,
    parse_candidates,
    round_score,
)
from ledger.core.tsvector import index_payload
from ledger.store.engine import copy_binary, fetch_tuples, fetch_tuples_fast, stream_tuples
from ledger.store.schema import versions

TABLE = "search_index"
INDEX_SLICE = 2000
DEFAULT_TOP = 20  # a query retrieval's `top` (docs/reference/commands.md)


def has_title(conn: Connection) -> bool:
    """Whether chunk versions carry a `title` (documents ingest adds it)."""
    from sqlalchemy import inspect

    return any(c["name"] == "title" for c in inspect(conn).get_columns("chunk_versions"))


def create_index(conn: Connection) -> None:
    """Create the index (empty), as revision 0005 did (0011 drops the foreign key)."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(
            f"CREATE VIRTUAL TABLE {TABLE} USING fts5(terms, content='', tokenize='ascii')"
        )
    else:
        conn.exec_driver_sql(
            f"CREATE TABLE {TABLE} (vid INTEGER PRIMARY KEY "
            "REFERENCES chunk_versions (vid), terms tsvector NOT NULL)"
        )
        conn.exec_driver_sql(f"CREATE INDEX ix_{TABLE}_terms ON {TABLE} USING gin (terms)")


def drop_index(conn: Connection) -> None:
    """Drop the index. Used by the migration's downgrade."""
    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {TABLE}")


def _insert_sql(conn: Connection) -> str:
    if conn.dialect.name == "sqlite":
        return f"INSERT INTO {TABLE} (rowid, terms) VALUES (?, ?)"
    # The terms only the server's parser can index (see `tsvector_binary`): one
    # statement per slice, its rows as two arrays (a row per statement would
    # cost more than the words themselves, a round trip of the protocol each).
    return (
        f"INSERT INTO {TABLE} (vid, terms) SELECT vid, to_tsvector('simple', terms) "
        "FROM unnest(%s::integer[], %s::text[]) AS t(vid, terms)"
    )


_ROW = struct.Struct(">hiii")  # a COPY row: 2 fields; vid (4 bytes); the tsvector's length
_COPY_ROWS = 100  # rows per write while their payloads are made (about 30 kB)

VersionRow = tuple[int, str | None, str | None]  # (vid, title, content)


# SQLite's `ascii` tokenizer splits ASCII text into the words `normalize_words`
# finds (runs of letters and digits, lower-cased; every other character a
# separator). An ASCII text with no run longer than MAX_WORD, and too short to
# hold more than MAX_WORDS words (a text of n characters holds at most
# (n + 1) // 2), is given to FTS5 as it is: FTS5 finds the same words at the
# same positions, and folding it here first cost more than FTS5's own insert.
# A long run is looked for in the text's bytes with every letter and digit made
# "a" and every other byte a space (one `bytes.translate` and one substring
# search, both in C): a regular expression `[0-9A-Za-z]{129}` tried a run at
# every position and cost 3.7 us per 400-character body, this 0.5 us.
_AS_IS_MAX = 2 * MAX_WORDS - 1
_RUN_BYTES = bytes(ord("a") if chr(b).isalnum() and b < 128 else ord(" ") for b in range(256))
_LONG_RUN = b"a" * (MAX_WORD + 1)


def fts5_text(title: str | None, content: str) -> str:
    """What FTS5 is given for a version: text whose words are `index_terms`'."""
    text = title + " " + content if title else content
    if len(text) > _AS_IS_MAX:
        return index_terms(title, content)
    if text.isascii():
        if len(text) <= MAX_WORD or _LONG_RUN not in text.encode("ascii").translate(_RUN_BYTES):
            return text
        return index_terms(title, content)
    folded = _folded_fast(text)
    if len(folded) <= _AS_IS_MAX and _LONG_RUN not in folded.encode().translate(_RUN_UTF8):
        return folded
    return index_terms(title, content)


# A text that is not all ASCII (prose with an accent, a typographic quote or
# dash) is folded as `normalize_words` folds it, and FTS5 left to split it:
# FTS5's `ascii` tokenizer takes a non-ASCII character as part of a word, so
# each one left is a letter or a digit, and every other one a space. Folding
# and splitting it in Python, word by word, cost 3.4x the raw floor on ingest
# of such prose (bench_ingest's "prose" row); this works per distinct character.
# A run is measured with each byte of a non-ASCII character as a letter: a
# character of several bytes makes a run look longer, never shorter, so a long
# word is never missed (the text then takes the plain path).
_RUN_UTF8 = bytes(ord("a") if b >= 128 or chr(b).isalnum() else ord(" ") for b in range(256))


def _folded_fast(text: str) -> str:
    """`text` with each distinct non-ASCII character folded (`_fold_char`): FTS5
    finds in it `normalize_words(text)` (a property test holds them equal).
    ASCII letters keep their case, as in an all-ASCII text: the `ascii`
    tokenizer folds them itself."""
    for ch in set(_NON_ASCII.findall(text)):
        text = text.replace(ch, _fold_char(ch))
    return text


_NON_ASCII = re.compile("[^\x00-\x7f]")


@lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    """A non-ASCII character case-folded and decomposed (NFKD), without
    combining marks, and with each non-ASCII character left that is not a
    letter or digit made a space. Both steps work one character at a time, so
    folding a text's characters one by one folds the text."""
    out = []
    for c in unicodedata.normalize("NFKD", ch.casefold()):
        if c > "\x7f" and unicodedata.combining(c):
            continue
        out.append(" " if c > "\x7f" and not c.isalnum() else c)
    return "".join(out)


def _insert_slice(conn: Connection, sql: str, batch: list[VersionRow]) -> None:
    if conn.dialect.name == "sqlite":
        texts = [(vid, fts5_text(title, content or "")) for vid, title, content in batch]
        conn.exec_driver_sql(sql, texts)
        return
    # Made a block at a time while the COPY goes on: the server stores one
    # block while the next is made.
    blocks = (
        ([vid for vid, _, _ in block], [index_payload(t, c or "") for _, t, c in block])
        for block in (batch[i : i + _COPY_ROWS] for i in range(0, len(batch), _COPY_ROWS))
    )
    index_payloads(conn, blocks)


Payloads = tuple[Sequence[int], Sequence[bytes | str]]  # version ids, and their index_payload


def index_payloads(conn: Connection, blocks: Iterable[Payloads]) -> None:
    """PostgreSQL: index versions from blocks of (vids, `index_payload`s): the
    tsvectors known beforehand stream in by one binary COPY, a write per block;
    the terms are parsed.

    A block's COPY rows are made by `copy_rows_fast`.
    """
    parse: list[tuple[int, str]] = []

    def known() -> Iterator[bytes]:
        for vids, payloads in blocks:
            tsvectors: Sequence[bytes]
            if set(map(type, payloads)) <= {bytes}:
                tsvectors = cast("Sequence[bytes]", payloads)
            else:
                rows = list(zip(vids, payloads, strict=True))
                parse.extend((v, p) for v, p in rows if isinstance(p, str))
                vids = [v for v, p in rows if isinstance(p, bytes)]
                tsvectors = [p for _, p in rows if isinstance(p, bytes)]
            yield copy_rows_fast(vids, tsvectors)

    copy_binary(conn, TABLE, "vid, terms", known())
    if parse:
        conn.exec_driver_sql(
            _insert_sql(conn), ([vid for vid, _ in parse], [terms for _, terms in parse])
        )


def copy_rows(vids: Sequence[int], tsvectors: Sequence[bytes]) -> bytes:
    """The binary COPY rows of (vid, terms): per row, its two fields' header
    (`_ROW`: field count, the vid's width, the vid, the terms' width), then the terms."""
    return b"".join(
        _ROW.pack(2, 4, vid, len(terms)) + terms for vid, terms in zip(vids, tsvectors, strict=True)
    )


def copy_rows_fast(vids: Sequence[int], tsvectors: Sequence[bytes]) -> bytes:
    """`copy_rows` made in C, with no Python step per row (bench row `ingest` on
    PostgreSQL: a step per row cost about 0.1 s per 100,000 versions)."""
    heads = map(_ROW.pack, repeat(2), repeat(4), vids, map(len, tsvectors))
    return b"".join(chain.from_iterable(zip(heads, tsvectors, strict=True)))


def index_rows(conn: Connection, rows: Iterable[VersionRow]) -> int:
    """Index (vid, title, content) rows in slices; return how many."""
    sql = _insert_sql(conn)
    batch: list[VersionRow] = []
    n = 0
    for row in rows:
        batch.append(row)
        if len(batch) >= INDEX_SLICE:
            _insert_slice(conn, sql, batch)
            n += len(batch)
            batch = []
    if batch:
        _insert_slice(conn, sql, batch)
        n += len(batch)
    return n


def _version_rows(conn: Connection, where: str, params: dict[str, Any]) -> Any:
    title = "title" if has_title(conn) else "NULL"
    # Streamed in slices from the driver (SQLAlchemy's per-row processing would
    # cost as much as the index's words). FTS5 takes its rows in rowid order (the
    # batch_seq index gives them so); PostgreSQL's COPY in any order, and sorting
    # a batch's bodies there spilled to disk (the planner expects a few rows).
    order = " ORDER BY vid" if conn.dialect.name == "sqlite" else ""
    query = text(f"SELECT vid, {title}, content FROM chunk_versions WHERE {where}{order}")
    return stream_tuples(conn, query.bindparams(**params), INDEX_SLICE)


def index_batch(conn: Connection, seq: int, unindexed: bool = False) -> int:
    """Index the versions an ingest batch added (inside the ingest's transaction);
    with `unindexed`, only those not indexed yet (PostgreSQL: some were, slice
    by slice, from rows a reader process made).

    A database whose schema predates the index (only reachable below the
    commands, which refuse a schema that is behind) has nothing to keep:
    migration 0005 indexes every version it finds.
    """
    if not has_index(conn):
        return 0
    where = "batch_seq = :s"
    if unindexed:
        where += f" AND NOT EXISTS (SELECT 1 FROM {TABLE} i WHERE i.vid = chunk_versions.vid)"
    return index_rows(conn, _version_rows(conn, where, {"s": seq}))


def has_index(conn: Connection) -> bool:
    """Whether the database has the full-text index (revision 0005 made it)."""
    from sqlalchemy import inspect

    return bool(inspect(conn).has_table(TABLE))


def index_all(conn: Connection) -> int:
    """Index every stored version (the migration indexes an existing ledger)."""
    return index_rows(conn, _version_rows(conn, "1 = 1", {}))


def unindex(conn: Connection, rows: Iterable[VersionRow]) -> None:
    """Remove versions from the index: (vid, title, content) as they were indexed.

    A contentless FTS5 table forgets a row only when told its indexed words,
    which `fts5_text` gives again from the same title and content.
    """
    for vid, title, content in rows:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql(
                f"INSERT INTO {TABLE} ({TABLE}, rowid, terms) VALUES ('delete', ?, ?)",
                (vid, fts5_text(title, content or "")),
            )
        else:
            conn.exec_driver_sql(f"DELETE FROM {TABLE} WHERE vid = %(vid)s", {"vid": vid})


# --------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hit:
    """One matching chunk version and its score (higher is better)."""

    vid: int
    chunk_id: str
    source_version: str
    score: float


def _matches(
    conn: Connection, query: Query, vids: Sequence[int] | None = None
) -> tuple[str, dict[str, Any]]:
    """A CTE `m(vid, score)`: every version matching the query, found by the index
    alone (with `vids`: those of these versions only, each looked up in the
    index by its id, not found among all the matches). Materialized, so that
    the planner never drives the match from `chunk_versions` (a scan of the
    ledger), and because SQLite's `bm25()` may only be called in the statement
    that runs the match. A score does not depend on which versions are asked:
    bm25 weighs a word by the whole index, ts_rank_cd a version alone."""
    sqlite = conn.dialect.name == "sqlite"
    params: dict[str, Any] = {}
    only = ""
    if vids is not None:
        params = {f"vid{i}": vid for i, vid in enumerate(vids)}
        names = ", ".join(f":{name}" for name in params) or "NULL"
        only = f" AND {'rowid' if sqlite else 's.vid'} IN ({names})"
    if sqlite:
        return (
            f"WITH m AS MATERIALIZED (SELECT rowid AS vid, -bm25({TABLE}) AS score "
            f"FROM {TABLE} WHERE {TABLE} MATCH :q{only})",
            {**params, "q": query.fts5()},
        )
    return (
        "WITH m AS MATERIALIZED (SELECT s.vid AS vid, CAST(ts_rank_cd(s.terms, q.q, 1) "
        f"AS DOUBLE PRECISION) AS score FROM {TABLE} s, to_tsquery('simple', :q) AS q(q) "
        f"WHERE s.terms @@ q.q{only})",
        {**params, "q": query.tsquery()},
    )


def matches_version(conn: Connection, query: Query, vid: int) -> bool:
    """Whether the version `vid` matches the query: one look-up in the index,
    whatever the number of other matches."""
    if conn.dialect.name == "sqlite":
        sql = f"SELECT 1 FROM {TABLE} WHERE {TABLE} MATCH :q AND rowid = :vid"
        q = query.fts5()
    else:
        sql = f"SELECT 1 FROM {TABLE} WHERE vid = :vid AND terms @@ to_tsquery('simple', :q)"
        q = query.tsquery()
    return conn.execute(_text(sql), {"q": q, "vid": vid}).first() is not None


def _filters(
    as_of: str | None,
    mark: int | None,
    section: str | None,
    documents_only: bool,
    params: dict[str, Any],
) -> str:
    """The conditions on the matched versions `v`, their values put in `params`
    (which versions were asked for is `_matches`' own condition)."""
    where = []
    if as_of is not None:
        where.append(
            "v.effective_from <= :as_of AND (v.expires_on IS NULL OR v.expires_on > :as_of)"
        )
        params["as_of"] = as_of
    if mark is not None:
        where.append("v.batch_seq <= :mark")
        params["mark"] = mark
    if section is not None:
        where.append("v.section = :section")
        params["section"] = section
    if documents_only:
        where.append("v.scope IS NULL")
    return "".join(f" AND {w}" for w in where)


def search_versions(
    conn: Connection,
    query: Query,
    *,
    limit: int,
    as_of: str | None = None,
    mark: int | None = None,
    section: str | None = None,
    documents_only: bool = False,
    vids: Sequence[int] | None = None,
) -> list[Hit]:
    """The best-matching chunk versions, best first (ties: id, source_version);
    with `vids`, of those versions only."""
    cte, params = _matches(conn, query, vids)
    more = _filters(as_of, mark, section, documents_only, params)
    params["limit"] = limit
    sql = (
        f"{cte} SELECT v.vid, v.chunk_id, v.source_version, m.score FROM m "
        f"JOIN chunk_versions v ON v.vid = m.vid WHERE 1 = 1{more} "
        "ORDER BY m.score DESC, v.chunk_id, v.source_version LIMIT :limit"
    )
    return [
        Hit(r[0], r[1], r[2], round_score(float(r[3]))) for r in conn.execute(text(sql), params)
    ]


def _hits(conn: Connection, query: Query, mark: int, section: str) -> tuple[str, dict[str, Any]]:
    """CTEs ending in `hits(vid, chunk_id, source_version, score)`: the matching
    versions of a section at `mark` (document scope)."""
    cte, params = _matches(conn, query)
    more = _filters(None, mark, section, True, params)
    return (
        f"{cte}, hits AS MATERIALIZED (SELECT v.vid AS vid, v.chunk_id AS chunk_id, "
        "v.source_version AS source_version, m.score AS score FROM m "
        f"JOIN chunk_versions v ON v.vid = m.vid WHERE 1 = 1{more}) ",
        params,
    )


def hits_page(
    conn: Connection, query: Query, mark: int, offset: int, limit: int, section: str = "evidence"
) -> list[Hit]:
    """Matching versions of a section at ledger time `mark` (document scope),
    best first (score, then id, then version id): `limit` of them from `offset`.
    The plain reading of the retriever's matches (`ledger.store.retriever`),
    which reads them by `hits_band`."""
    cte, params = _hits(conn, query, mark, section)
    tail = (
        "SELECT vid, chunk_id, source_version, score FROM hits "
        "ORDER BY score DESC, chunk_id, vid LIMIT :limit OFFSET :offset"
    )
    rows = fetch_tuples(conn, _text(cte + tail), {**params, "limit": limit, "offset": offset})
    return [Hit(vid, cid, version, round_score(float(score))) for vid, cid, version, score in rows]


class After(NamedTuple):
    """Where the next band of `hits_band` starts: after the match scored
    `score` with this chunk id and version id (id None: after every match
    scored `score`). The score is the index's own, not rounded."""

    score: float
    chunk_id: str | None = None
    vid: int | None = None


def hits_band(
    conn: Connection,
    query: Query,
    mark: int,
    after: After | None,
    size: int,
    section: str = "evidence",
) -> tuple[list[Hit], After | None]:
    """`hits_page`, read a band at a time: the retriever's fast path (bench rows
    `check` and `build --query`), which joins to the versions only the matches
    of one band, not every match of the query (a query of common words
    matches thousands). A property test (tests/search/test_hits_band.py) holds
    the bands, laid end to end, equal to `hits_page` from offset 0.

    A band: of the matches after `after` in `hits_page`'s order (None: from
    the first), those scored at least the `size`-th best score among them
    (every match tied with it too), of the section at `mark` (document scope),
    at most `size` of them in that order. Returns the band's hits and where the
    next band starts, or None when no match is left after them."""
    cte, params = _matches(conn, query)
    more = _filters(None, mark, section, True, params)
    # One row at least (the cut, and no hit when the band holds none of the
    # section's), so where the next band starts is read with this one.
    sql = (
        f"{cte}, cut AS (SELECT score FROM m WHERE {_SCORED_AFTER} "
        "ORDER BY score DESC LIMIT 1 OFFSET :skip) "
        "SELECT c.score, b.vid, b.chunk_id, b.source_version, b.score "
        "FROM (SELECT (SELECT score FROM cut) AS score) c LEFT JOIN ("
        "SELECT v.vid AS vid, v.chunk_id AS chunk_id, v.source_version AS source_version, "
        f"m.score AS score FROM m JOIN chunk_versions v ON v.vid = m.vid WHERE {_AFTER} "
        f"AND (m.score >= (SELECT score FROM cut) OR NOT EXISTS (SELECT 1 FROM cut)){more} "
        "ORDER BY m.score DESC, v.chunk_id, v.vid LIMIT :size) b ON 1 = 1 "
        "ORDER BY b.score DESC, b.chunk_id, b.vid"
    )
    score, chunk_id, vid = after if after is not None else (None, None, None)
    bound = {"below": score, "after_id": chunk_id, "after_vid": vid}
    rows = fetch_tuples_fast(conn, _text(sql), {**params, **bound, "skip": size - 1, "size": size})
    cut = rows[0][0]
    band = [row for row in rows if row[1] is not None]
    hits = [Hit(vid, cid, ver, round_score(float(score))) for _c, vid, cid, ver, score in band]
    if len(band) == size:  # the band may go on past its last hit
        _c, vid, cid, _version, score = band[-1]
        return hits, After(float(score), cid, vid)
    # Every match of the band was read: the next starts below its cut.
    return hits, None if cut is None else After(float(cut))


# The matches after a band's start (`After`), typed for PostgreSQL: by score
# alone (_SCORED_AFTER, a superset: those tied with the start's score, when it
# names a match), and exactly (_AFTER).
_BELOW = "CAST(:below AS DOUBLE PRECISION)"
_SCORED_AFTER = (
    f"({_BELOW} IS NULL OR m.score < {_BELOW} "
    f"OR (m.score = {_BELOW} AND CAST(:after_id AS VARCHAR) IS NOT NULL))"
)
_AFTER = (
    f"({_BELOW} IS NULL OR m.score < {_BELOW} OR (m.score = {_BELOW} "
    "AND (v.chunk_id > CAST(:after_id AS VARCHAR) OR (v.chunk_id = CAST(:after_id AS VARCHAR) "
    "AND v.vid > CAST(:after_vid AS INTEGER)))))"
)


@lru_cache(maxsize=64)
def _text(sql: str) -> TextClause:
    """`text(sql)`, made once per SQL text: the hits' few shapes are read once
    per retrieval page, and making one parses its parameters anew."""
    return text(sql)


def closest_terms(conn: Connection, query: Query, limit: int = 5) -> list[str]:
    """Words the index knows that look like the query's words.

    Per query word, the versions holding a word with its first three letters
    (a prefix query on the index, at most 20 versions, lowest vid first) are
    read, and their words with that prefix ranked by similarity. The same words
    on both backends, as the index holds the same words.
    """
    import difflib  # only for suggestions: not every import of this module

    scored: dict[str, float] = {}
    title = "v.title" if has_title(conn) else "NULL"
    for word in query.words[:8]:
        prefix = word[:3]
        if conn.dialect.name == "sqlite":
            first = f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH :q ORDER BY rowid LIMIT 20"
            q = '"' + prefix + '"*'
        else:
            first = (
                f"SELECT vid FROM {TABLE} WHERE terms @@ to_tsquery('simple', :q) "
                "ORDER BY vid LIMIT 20"
            )
            q = "'" + prefix + "':*"
        vids = [r[0] for r in conn.execute(text(first), {"q": q})]
        if not vids:
            continue
        params = {f"v{i}": vid for i, vid in enumerate(vids)}
        names = ", ".join(f":v{i}" for i in range(len(vids)))
        rows = conn.execute(
            text(f"SELECT {title}, v.content FROM chunk_versions v WHERE v.vid IN ({names})"),
            params,
        )
        for t, content in rows:
            words = normalize_words(str(t or "")) + normalize_words(str(content or ""))
            for known in set(words):
                if known.startswith(prefix) and known != word:
                    ratio = difflib.SequenceMatcher(None, word, known).ratio()
                    scored[known] = max(scored.get(known, 0.0), ratio)
    ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
    return [w for w, _ in ranked[:limit]]


def outside_models(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic `include_name`: the index tables (an FTS5 virtual table and its
    shadow tables, or the tsvector table) are made by the migration in SQL, not
    by the models, so autogenerate leaves them out."""
    return not (type_ == "table" and name is not None and name.startswith(TABLE))


# --------------------------------------------------------------------------
# Retrieval builds
# --------------------------------------------------------------------------


def retrieve_file(conn: Connection, path: str, mark: int) -> RetrievalRecord:
    """The team's retriever: a candidates file, checked against the ledger at `mark`.

    An id (or id and version) that is not a document chunk in the ledger at
    `mark` refuses the build, naming its line.
    """
    from ledger.safeio import read_input

    # Bounded and checked like every input: a FIFO or /dev/zero is refused at once.
    data = read_input(path, what="candidates file")
    return retrieve_data(conn, data, path, mark)


def retrieve_data(conn: Connection, data: bytes, path: str, mark: int) -> RetrievalRecord:
    """A candidates file's bytes (`path` names it in messages), as `retrieve_file`:
    the Python API and the integrations pass their ranked list in memory."""
    import hashlib

    ranked = parse_candidates(data, path)
    known: dict[str, set[str]] = {}
    ids = sorted({r.id for r in ranked})
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        params: dict[str, Any] = {"mark": mark}
        names = []
        for i, cid in enumerate(part):
            params[f"c{i}"] = cid
            names.append(f":c{i}")
        rows = conn.execute(
            text(
                "SELECT chunk_id, source_version FROM chunk_versions WHERE batch_seq <= :mark "
                f"AND scope IS NULL AND chunk_id IN ({', '.join(names)})"
            ),
            params,
        )
        for found_id, found_version in rows:
            known.setdefault(str(found_id), set()).add(str(found_version))
    for r in ranked:
        if r.id not in known:
            raise InputError(
                f"{path}:{r.rank}: unknown chunk id '{r.id}' (no document chunk of that id in the "
                f"ledger at entry {mark}); `ledger chunks` lists them"
            )
        if r.source_version is not None and r.source_version not in known[r.id]:
            raise InputError(
                f"{path}:{r.rank}: chunk '{r.id}' has no version '{r.source_version}' in the "
                f"ledger at entry {mark}; drop source_version to take every version"
            )
    return RetrievalRecord(
        query=None,
        top=None,
        candidates_digest=hashlib.sha256(data).hexdigest(),
        ranked=tuple(ranked),
    )


def retrieval_filter(record: RetrievalRecord) -> Any:
    """The chunk-version condition of a retrieval build's candidates: every chunk
    outside the evidence section, and the ranked ids (uses the section index)."""
    from sqlalchemy import or_

    ids = sorted({r.id for r in record.ranked})
    return or_(unranked_sections(), versions.c.chunk_id.in_(ids))


def unranked_sections() -> Any:
    """The chunk-version condition of the sections a retrieval build takes whole:
    every section but evidence (the retriever ranks evidence alone)."""
    return versions.c.section.in_(["policy", "state", "current-input"])


def apply_ranks(
    record: RetrievalRecord, candidates: list[Candidate], all_versions: bool = False
) -> list[Candidate]:
    """The candidates of a retrieval build with their ranks: the named versions
    (every version of an id named without one, or of every ranked id with
    `all_versions`) get their rank; evidence that was not ranked is dropped;
    other sections are UNRANKED."""
    by_id: dict[str, int] = {}
    by_version: dict[tuple[str, str], int] = {}
    for r in record.ranked:
        if r.source_version is None or all_versions:
            by_id.setdefault(r.id, r.rank)
        else:
            by_version[(r.id, r.source_version)] = r.rank
    out = []
    for c in candidates:
        rank = by_version.get((c.id, c.source_version), by_id.get(c.id))
        if rank is not None:
            out.append(c.ranked(rank))
        elif c.section != "evidence":
            out.append(c.ranked(UNRANKED))
    return out
