"""A build's candidates: the chunk versions it chooses from, read in one query.

`load_candidates` reads the versions of a scope at a ledger time, costed by a
counter; `candidates_for` those of a build's inputs (a retrieval build's with
their ranks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

import msgspec
from sqlalchemy import Connection, String, Text, and_, bindparam, cast, func, select, text
from sqlalchemy.exc import DBAPIError

from ledger.core.candidates import CANDIDATE_ROW, candidates_of_columns
from ledger.core.errors import InputError, IntegrityError
from ledger.core.records import EXCHANGE_SCOPE
from ledger.core.select import SELECTOR_V1, Candidate
from ledger.store.engine import fetch_tuples_fast
from ledger.store.fulltext import apply_ranks, retrieval_filter
from ledger.store.inputs import DOCUMENTS, TRANSCRIPT_SCOPE, Inputs
from ledger.store.schema import versions
from ledger.store.token_cache import count_tokens
from ledger.tokens import ESTIMATED


def load_candidates(
    conn: Connection,
    mark: int,
    counter: str,
    scope: str = DOCUMENTS,
    where: Any = None,
    params: Mapping[str, Any] | None = None,
) -> tuple[list[Candidate], dict[str, int]]:
    """The chunk versions of `scope` ingested at or before `mark`, costed by `counter`.

    Scope `documents` is every version except transcript exchanges; scope
    `transcript:<source_version>` is the exchanges of one transcript annotation.
    `where`: a condition on them, with the values of its bound parameters in
    `params`. Returns the candidates and a map from record digest to version id.
    """
    query = candidates_query(conn.dialect.name, scope, where)
    return read_candidates(conn, query, mark, scope, counter, params)


def candidates_query(dialect: str, scope: str, where: Any = None, contents: bool = False) -> Any:
    """`load_candidates`' statement, for a caller that runs one shape many
    times (`read_candidates`): a statement made once is compiled once.
    `contents`: with the versions' contents too (`read_candidates_and_contents`)."""
    if scope != DOCUMENTS and not scope.startswith(TRANSCRIPT_SCOPE):
        raise InputError(f"unknown pack scope {scope!r}")
    query = _scope_rows(dialect, scope == DOCUMENTS, contents)
    return query if where is None else query.where(where)


def read_candidates(
    conn: Connection,
    query: Any,
    mark: int,
    scope: str,
    counter: str,
    params: Mapping[str, Any] | None = None,
) -> tuple[list[Candidate], dict[str, int]]:
    """Run `candidates_query(dialect, scope, ...)`: `load_candidates`' answer."""
    return _candidates_of(conn, _column_texts(conn, query, mark, scope, params), counter)


def json_list_in(column: Any, name: str, dialect: str) -> Any:
    """`column IN` the strings of a JSON array bound as `:name`: one statement
    for any number of ids, compiled once (an IN list of bound values is
    written anew for each execution; `read_candidates_and_contents` reads many).
    On PostgreSQL as `= ANY(ARRAY(...))`, which the planner reads as it reads a
    list of values (the column's index, whatever the table's statistics); `IN
    (subquery)` may hash the whole table when they are stale (after an ingest)."""
    if dialect == "sqlite":
        values = text(f"SELECT value FROM json_each(:{name})").columns(value=String)
        return column.in_(values)
    return column.op("=")(
        text(f"ANY(ARRAY(SELECT json_array_elements_text(CAST(:{name} AS json))))")
    )


def read_candidates_and_contents(
    conn: Connection,
    query: Any,
    mark: int,
    counter: str,
    params: Mapping[str, Any] | None = None,
) -> tuple[list[Candidate], dict[str, int], dict[int, str | None]]:
    """`read_candidates` of `candidates_query(dialect, DOCUMENTS, ..., contents=True)`,
    and the versions' contents by version id (None: erased), read with them.
    Read by `fetch_tuples_fast` (a check run reads the versions of a few ids per
    case): the query holds no IN list to expand (`json_list_in`)."""
    texts = _column_texts(conn, query, mark, DOCUMENTS, params, fast=True)
    # As the plain read of a content gives it: a text, or a number the file
    # holds instead (changed by hand) as its text, or None.
    contents = [None if v is None else str(v) for v in msgspec.json.decode(texts.pop())]
    cands, vid_of = _candidates_of(conn, texts, counter)  # checks the version ids
    vids: list[int] = msgspec.json.decode(texts[-1])
    return cands, vid_of, dict(zip(vids, contents, strict=True))


def _column_texts(
    conn: Connection,
    query: Any,
    mark: int,
    scope: str,
    params: Mapping[str, Any] | None,
    fast: bool = False,
) -> list[Any]:
    """The one row of a candidates query: a JSON array per column (with
    `fast`, read by `fetch_tuples_fast`)."""
    params = {**(params or {}), "mark": mark}
    if scope.startswith(TRANSCRIPT_SCOPE):
        params["transcript"] = scope[len(TRANSCRIPT_SCOPE) :]
    try:
        # One row: SQLAlchemy's statement cache compiles the query's shape once.
        if fast:
            return list(fetch_tuples_fast(conn, query, params)[0])
        return list(conn.execute(query, params).one())
    except DBAPIError as exc:
        if "JSON cannot hold BLOB" not in str(exc.orig):
            raise
        raise IntegrityError(
            "a chunk version holds a BLOB where a text or number belongs: the database "
            "was altered; run `ledger verify` to name the entry"
        ) from None


def _candidates_of(
    conn: Connection, texts: list[Any], counter: str
) -> tuple[list[Candidate], dict[str, int]]:
    """The candidates of a candidates query's row, costed by `counter`."""
    columns = _stored_columns(texts)
    vids = columns[-1]
    if counter != ESTIMATED:
        tokens = count_tokens(conn, vids, counter)
        columns[_TOKENS_AT] = [tokens[vid] for vid in vids]
    digests = columns[_DIGEST_AT]
    return candidates_of_columns(columns), dict(zip(digests, vids, strict=True))


@cache
def _scope_rows(dialect: str, documents: bool, contents: bool = False) -> Any:
    """The candidates query of a scope before its `where`, built once per shape:
    CANDIDATE_ROW's columns, then the version id (and with `contents`, the
    content), of the versions at `:mark`."""
    c = versions.c
    # The cost is the stored estimate (a build under another counter replaces
    # it). Gate 6's tie-break (superseded) is "the later ingest wins": an ingest
    # is a batch (one run), so ingest_rank is the batch; two versions of an id in
    # one batch tie on it and fall to the record digest (the order of lines
    # never matters).
    stored_as = {"id": c.chunk_id, "tokens": c.estimated_tokens, "ingest_rank": c.batch_seq}
    cols = [stored_as[name] if name in stored_as else c[name] for name in CANDIDATE_ROW]
    cols.append(c.vid)
    if contents:
        cols.append(c.content)
    json_array = _JSON_ARRAY[dialect]
    query = select(*[json_array(col) for col in cols]).where(c.batch_seq <= bindparam("mark"))
    # By the stored scope, which only the transcript ingest path writes: never
    # by a field a record carries (a `transcript://` URI is an ordinary URI).
    if documents:
        return query.where(c.scope.is_(None))
    return query.where(c.scope == EXCHANGE_SCOPE, c.source_version == bindparam("transcript"))


# The candidates are read as one row of JSON arrays, one per column (the
# aggregates of one scan see the rows in the same order), decoded by msgspec
# with each column's type checked in C, and made into Candidates a column at a
# time. 100,000 versions on SQLite: 255 ms, against 325 ms for a tuple per row
# (the driver converts every value through the C API), a type check after and
# the rows' columns taken apart; on PostgreSQL about the same either way.
_JSON_ARRAY: dict[str, Callable[[Any], Any]] = {
    "sqlite": func.json_group_array,
    # json_agg of no rows is NULL, not [].
    "postgresql": lambda col: func.coalesce(cast(func.json_agg(col), Text), "[]"),
}
# Each column's decoder, and the check that names the row it refused.
_KIND_OF = {
    "expires_on": "text or null",
    "required": "flag",  # 0/1 in SQLite, a boolean in PostgreSQL
    **dict.fromkeys(("tokens", "priority", "ingest_rank", "vid"), "integer"),
}
_KINDS: dict[str, tuple[Callable[[str], list[Any]], Callable[[Any], bool]]] = {
    "text": (msgspec.json.Decoder(list[str]).decode, lambda v: type(v) is str),
    "text or null": (
        msgspec.json.Decoder(list[str | None]).decode,
        lambda v: v is None or type(v) is str,
    ),
    "integer": (msgspec.json.Decoder(list[int]).decode, lambda v: type(v) is int),
    "flag": (
        msgspec.json.Decoder(list[bool | int]).decode,
        lambda v: type(v) in (bool, int) and v in (0, 1),
    ),
}
_COLUMN_KINDS = tuple(_KINDS[_KIND_OF.get(name, "text")] for name in (*CANDIDATE_ROW, "vid"))
_TOKENS_AT, _REQUIRED_AT = CANDIDATE_ROW.index("tokens"), CANDIDATE_ROW.index("required")
_DIGEST_AT, _INGEST_AT = CANDIDATE_ROW.index("record_digest"), CANDIDATE_ROW.index("ingest_rank")


def _stored_columns(texts: Sequence[str]) -> list[list[Any]]:
    """The decoded columns of `load_candidates`' row. SQLite keeps any type in any
    column: a value of the wrong type (a number the selector computes with that
    is not an integer, a `required` not 0 or 1) is a changed file, named by its
    chunk version and entry, not a selector crash."""
    try:
        columns = [kind[0](text) for kind, text in zip(_COLUMN_KINDS, texts, strict=True)]
        if set(columns[_REQUIRED_AT]) <= {0, 1}:
            return columns
    except msgspec.ValidationError:
        pass
    rows = zip(*map(msgspec.json.decode, texts), strict=True)
    odd = next(
        (r for r in rows if not all(k[1](v) for k, v in zip(_COLUMN_KINDS, r, strict=True))),
        None,
    )
    where = (
        "a chunk version" if odd is None else f"chunk {odd[0]}@{odd[1]} (entry {odd[_INGEST_AT]})"
    )
    raise IntegrityError(
        f"{where}: a stored field has the wrong type; the database was altered: run `ledger verify`"
    )


def candidates_for(
    conn: Connection, inputs: Inputs, counter: str | None = None, where: Any = None
) -> tuple[list[Candidate], dict[str, int]]:
    """The candidates of a build with these inputs: every version of the scope at
    the mark, or, for a retrieval build, the ranked evidence and every other
    section, with their ranks. `counter` overrides the inputs' (replay recounts);
    `where` keeps only the candidates of that condition (a hint's pool)."""
    counter = inputs.counter if counter is None else counter
    if inputs.retrieval is None:
        return load_candidates(conn, inputs.mark, counter, inputs.scope, where)
    condition = retrieval_filter(inputs.retrieval)
    if where is not None:
        condition = and_(condition, where)
    cands, vid_of = load_candidates(conn, inputs.mark, counter, inputs.scope, condition)
    # Selector version 1 took every version of an id its query ranked; version 2
    # ranks one live version per id (ledger.store.retriever) and takes it alone.
    every_version = inputs.retrieval.query is not None and inputs.selector_version == SELECTOR_V1
    return apply_ranks(inputs.retrieval, cands, every_version), vid_of
