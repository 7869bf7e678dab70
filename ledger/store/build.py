"""`ledger build`: select from the ledger for a subject on a date, record the pack.

The shell around the pure core: it reads the candidates, grants and policy as
they stood at a ledger time, lets `ledger.core.select` decide, and writes the pack,
one decision row per candidate and the pack's ledger entry in one transaction.
`replay` reuses `decide` with a pack's recorded inputs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import count, repeat
from json.encoder import encode_basestring as _json_str  # RFC 8785's string escapes
from operator import attrgetter, itemgetter
from types import MappingProxyType
from typing import Any, NamedTuple, TypedDict, TypeVar, Unpack

import msgspec
from sqlalchemy import Connection, Engine, Text, and_, cast, func, insert, select
from sqlalchemy.exc import DBAPIError

from ledger.core.canonical import canonical_json, plain_strings, strings_json, trusted_json
from ledger.core.chain import pack_entry_payload  # pure: proofs recompute it
from ledger.core.context import Context
from ledger.core.errors import InputError, IntegrityError, RefusedError
from ledger.core.query import RetrievalRecord
from ledger.core.reasons import check_date, row_of_detail
from ledger.core.records import EXCHANGE_SCOPE
from ledger.core.select import (
    CANDIDATE_ROW,
    DEFAULT_ORDER,
    SELECTOR_VERSION,
    Candidate,
    Order,
    Request,
    candidates_of_columns,
    collector_paused,
)
from ledger.core.select import select as run_selector
from ledger.store.access import Policy, check_budget, check_subject, grants_at, policy_at
from ledger.store.chain import read_head, reserve_entry, seal_entry
from ledger.store.engine import fetch_tuples, insert_tuples, write_transaction
from ledger.store.schema import decisions, packs, retractions, token_counts, versions
from ledger.tokens import ESTIMATED, counter_id, text_counter

_MAX_SAFE_INT = 2**53 - 1  # RFC 8785 (as ledger.core.canonical)

DOCUMENTS = "documents"
TRANSCRIPT_SCOPE = "transcript:"


@dataclass(frozen=True, slots=True)
class Inputs:
    """Everything a build decides from, besides the candidates."""

    as_of: str
    subject: str
    grants: tuple[str, ...]
    policy: Policy
    budget: int
    counter: str  # counter id: name and implementation version
    mark: int  # ledger time: the last entry the build could see
    scope: str = DOCUMENTS  # which versions are candidates, and with which order
    retrieval: RetrievalRecord | None = None  # a retrieval build's ranked candidates
    # Gate 5: id -> ((retract entry, from date), ...) at or before `mark` (documents only).
    retractions: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    # The selector a recorded pack names (verify and replay read it back, so a
    # changed `packs.selector_version` changes the input digest they recompute).
    selector_version: str = SELECTOR_VERSION

    def to_json(self) -> dict[str, Any]:
        # `scope` only when it is not the default: packs recorded under schema
        # 0001 (no scope) were document packs, and their digests must still hold.
        data: dict[str, Any] = {
            "as_of": self.as_of,
            "subject": self.subject,
            "grants": list(self.grants),
            "policy": self.policy.to_json(),
            "budget": self.budget,
            "counter": self.counter,
            "selector_version": self.selector_version,
        }
        if self.scope != DOCUMENTS:
            data["scope"] = self.scope
        if self.retrieval is not None:  # plain builds keep their digests
            data["retrieval"] = self.retrieval.digest_value()
        return data

    @property
    def is_transcript(self) -> bool:
        return self.scope.startswith(TRANSCRIPT_SCOPE)

    def request(self) -> Request:
        """The core's request: documents go through every gate; a transcript's
        exchanges are versions of one source, so gate 5 does not apply."""
        return Request(
            as_of=self.as_of,
            granted=frozenset(self.grants),
            allowed_trust=frozenset(self.policy.allowed_trust),
            budget=self.budget,
            supersede=not self.is_transcript,
            retractions=self.retractions,
        )

    def order(self) -> Order:
        """SPEC's preference order, or the transcript's (pinned, normal, aside; oldest first)."""
        if self.is_transcript:
            from ledger.core.transcript import TRANSCRIPT_ORDER

            return TRANSCRIPT_ORDER
        return DEFAULT_ORDER


# The Inputs fields a pack row holds as they are, each under its column's name:
# `record_pack` writes them and `audit.inputs_of` reads them back.
INPUT_COLUMNS = {
    "as_of": "as_of",
    "subject": "subject",
    "budget": "budget",
    "counter": "counter",
    "mark": "ledger_mark",
    "scope": "scope",
    "selector_version": "selector_version",
}


class Asked(TypedDict, total=False):
    """What a build is asked besides its date and subject: `budget` (default: the
    policy's), `counter` (default: the stored estimate) and `ledger_at` (default:
    now)."""

    budget: int | None
    counter: str
    ledger_at: int | None


def resolve_inputs(
    conn: Connection, as_of: str, subject: str = "default", **asked: Unpack[Asked]
) -> Inputs:
    """The grants, policy and budget in force at ledger time `ledger_at`."""
    budget = asked.get("budget")
    counter = asked.get("counter", ESTIMATED)
    ledger_at = asked.get("ledger_at")
    check_date(as_of)
    check_subject(subject)
    head = read_head(conn)
    if head.seq == 0:
        raise InputError(
            "the ledger is empty: ingest chunks (`ledger ingest FILE`) and set a policy "
            "(`ledger policy set --allow-trust LABEL --budget N`) first"
        )
    if ledger_at is None:
        mark = head.seq
    else:
        if not 1 <= ledger_at <= head.seq:
            raise InputError(
                f"--ledger-at: {ledger_at} is not an entry (the ledger has 1..{head.seq})"
            )
        mark = ledger_at
    policy = policy_at(conn, mark)
    if policy is None:
        raise InputError(
            f"no policy at ledger entry {mark}; run `ledger policy set --allow-trust LABEL ... "
            "--budget N`"
        )
    if budget is None:
        if policy.budget is None:
            raise InputError(
                "no budget: pass --budget N or set one with `ledger policy set --budget N`"
            )
        budget = policy.budget
    check_budget(budget)
    return Inputs(
        as_of=as_of,
        subject=subject,
        grants=tuple(grants_at(conn, subject, mark)),
        policy=policy,
        budget=budget,
        counter=counter_id(counter),
        mark=mark,
        retractions=retractions_at(conn, mark),
    )


def retractions_at(conn: Connection, mark: int) -> dict[str, tuple[tuple[int, str], ...]]:
    """Every retraction written at or before ledger time `mark`: id -> ((entry, from), ...)."""
    r = retractions.c
    out: dict[str, list[tuple[int, str]]] = {}
    query = select(r.chunk_id, r.entry_seq, r.from_date).where(r.entry_seq <= mark)
    rows: Iterable[tuple[str, int, str]] = conn.execute(query.order_by(r.chunk_id, r.entry_seq))
    for cid, seq, day in rows:
        out.setdefault(cid, []).append((int(seq), day))
    return {cid: tuple(marks) for cid, marks in out.items()}


def transcript_inputs(
    conn: Connection,
    source_version: str,
    budget: int,
    subject: str = "transcript",
    ledger_at: int | None = None,
    as_of: str | None = None,
) -> Inputs:
    """Inputs of a transcript continuation pack: the exchanges of one annotated
    transcript, `budget` bytes for the exchanges (the fixed header excluded).
    `as_of` is the export's last day (None: the strict transcript's 1970-01-01)."""
    from ledger.core.transcript import (
        TRANSCRIPT_EFFECTIVE_FROM,
        TRANSCRIPT_PERMISSION,
        TRANSCRIPT_TRUST,
    )

    check_subject(subject)
    head = read_head(conn)
    mark = head.seq if ledger_at is None else ledger_at
    if ledger_at is not None and not 1 <= ledger_at <= head.seq:
        raise InputError(f"--ledger-at: {ledger_at} is not an entry (the ledger has 1..{head.seq})")
    return Inputs(
        as_of=as_of or TRANSCRIPT_EFFECTIVE_FROM,
        subject=subject,
        grants=(TRANSCRIPT_PERMISSION,),
        policy=Policy((TRANSCRIPT_TRUST,), None),
        budget=budget,
        counter=ESTIMATED,
        mark=mark,
        scope=TRANSCRIPT_SCOPE + source_version,
    )


def load_candidates(
    conn: Connection, mark: int, counter: str, scope: str = DOCUMENTS, where: Any = None
) -> tuple[list[Candidate], dict[str, int]]:
    """The chunk versions of `scope` ingested at or before `mark`, costed by `counter`.

    Scope `documents` is every version except transcript exchanges; scope
    `transcript:<source_version>` is the exchanges of one transcript annotation.
    Returns the candidates and a map from record digest to version id.
    """
    c = versions.c
    # CANDIDATE_ROW's columns, then the version id. The cost is the stored
    # estimate (a build under another counter replaces it). Gate 5's tie-break is
    # "the later ingest wins": an ingest is a batch (one run), so ingest_rank is the
    # batch; two versions of an id in one batch tie on it and fall to the record
    # digest (the order of lines never matters).
    stored_as = {"id": c.chunk_id, "tokens": c.estimated_tokens, "ingest_rank": c.batch_seq}
    cols = [stored_as[name] if name in stored_as else c[name] for name in CANDIDATE_ROW]
    cols.append(c.vid)
    json_array = _JSON_ARRAY[conn.dialect.name]
    query = select(*map(json_array, cols)).where(c.batch_seq <= mark)
    # By the stored scope, which only the transcript ingest path writes: never
    # by a field a record carries (a `transcript://` URI is an ordinary URI).
    if scope == DOCUMENTS:
        query = query.where(c.scope.is_(None))
    elif scope.startswith(TRANSCRIPT_SCOPE):
        query = query.where(
            c.scope == EXCHANGE_SCOPE,
            c.source_version == scope[len(TRANSCRIPT_SCOPE) :],
        )
    else:
        raise InputError(f"unknown pack scope {scope!r}")
    if where is not None:
        query = query.where(where)
    try:
        (texts,) = fetch_tuples(conn, query)
    except DBAPIError as exc:
        if "JSON cannot hold BLOB" not in str(exc.orig):
            raise
        raise IntegrityError(
            "a chunk version holds a BLOB where a text or number belongs: the database "
            "was altered; run `ledger verify` to name the entry"
        ) from None
    columns = _stored_columns(texts)
    vids = columns[-1]
    if counter != ESTIMATED:
        tokens = count_tokens(conn, vids, counter)
        columns[_TOKENS_AT] = list(map(tokens.__getitem__, vids))
    digests = columns[_DIGEST_AT]
    return candidates_of_columns(columns), dict(zip(digests, vids, strict=True))


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
    from ledger.store.fulltext import apply_ranks, retrieval_filter

    condition = retrieval_filter(inputs.retrieval)
    if where is not None:
        condition = and_(condition, where)
    cands, vid_of = load_candidates(conn, inputs.mark, counter, inputs.scope, condition)
    return apply_ranks(inputs.retrieval, cands), vid_of


def with_retrieval(
    conn: Connection,
    inputs: Inputs,
    query: str | None = None,
    top: int | None = None,
    candidates: str | bytes | None = None,
) -> Inputs:
    """The inputs of a retrieval build (`--query TEXT [--top K]` or `--candidates
    FILE`; bytes: the candidates file's content, given in memory), or the inputs
    unchanged for a plain build."""
    from ledger.store.fulltext import DEFAULT_TOP, retrieve_data, retrieve_file, retrieve_query

    if query is not None and candidates is not None:
        raise InputError("--query and --candidates are two retrievers: give one")
    if query is not None:
        record = retrieve_query(conn, query, DEFAULT_TOP if top is None else top, inputs.mark)
    elif candidates is not None:
        if top is not None:
            raise InputError("--top goes with --query (a candidates file is already ranked)")
        if isinstance(candidates, bytes):
            record = retrieve_data(conn, candidates, "candidates", inputs.mark)
        else:
            record = retrieve_file(conn, candidates, inputs.mark)
    elif top is not None:
        raise InputError("--top goes with --query TEXT")
    else:
        return inputs
    if inputs.is_transcript:
        raise InputError("a transcript continuation is not a retrieval build")
    return replace(inputs, retrieval=record)


def count_tokens(conn: Connection, vids: Sequence[int], counter: str) -> dict[int, int]:
    """Token counts of versions under a counter id, computed once and cached."""
    cached = {
        r.vid: r.tokens
        for r in conn.execute(
            select(token_counts.c.vid, token_counts.c.tokens).where(
                token_counts.c.counter == counter
            )
        )
    }
    missing = [v for v in vids if v not in cached]
    if missing:
        count = text_counter(counter.split("@", 1)[0])
        new_rows = []
        for start in range(0, len(missing), 5000):
            part = missing[start : start + 5000]
            for r in conn.execute(
                select(
                    versions.c.vid,
                    versions.c.content,
                    versions.c.chunk_id,
                    versions.c.source_version,
                ).where(versions.c.vid.in_(part))
            ):
                if r.content is None:  # erased before this counter's count was cached
                    raise RefusedError(
                        f"chunk {r.chunk_id}@{r.source_version}: its body was erased and its "
                        f"{counter} count was not cached; build with --counter estimated_tokens"
                    )
                n = count(r.content)
                cached[r.vid] = n
                new_rows.append({"vid": r.vid, "counter": counter, "tokens": n})
        if new_rows and conn.get_execution_options().get("ledger_write"):
            conn.execute(insert(token_counts), new_rows)
    return {v: cached[v] for v in vids}


def decide(inputs: Inputs, candidates: Iterable[Candidate]) -> Context:
    """Run the pure core on the inputs."""
    return run_selector(candidates, inputs.request(), inputs.order())


def input_digest(inputs: Inputs, candidate_digests: Iterable[str]) -> str:
    """SPEC: policy snapshot, grants, as-of, budget, selector version, counter and
    the sorted candidate record digests (and the scope, which picks the order)."""
    return input_digest_of(inputs, strings_json(sorted(candidate_digests)))


def input_digest_of(inputs: Inputs, candidates: str) -> str:
    """`input_digest` from the JSON text of the sorted candidate digests (verify
    writes it once for the packs that share their candidates)."""
    data: dict[str, Any] = {
        "as_of": inputs.as_of,
        "budget": inputs.budget,
        "counter": inputs.counter,
        "grants": list(inputs.grants),
        "policy": inputs.policy.to_json(),
        "selector_version": inputs.selector_version,
    }
    if inputs.scope != DOCUMENTS:  # as in Inputs.to_json: schema-0001 packs hash unchanged
        data["scope"] = inputs.scope
    if inputs.retrieval is not None:
        data["retrieval"] = inputs.retrieval.digest_value()
    if inputs.retractions:  # only when there are any: packs before retractions hash unchanged
        data["retractions"] = [
            [cid, entry, day]
            for cid, marks in sorted(inputs.retractions.items())
            for entry, day in marks
        ]
    # `digest_trusted` of the whole object, member by member (its keys are ASCII).
    members: dict[str, str | list[str]] = {k: trusted_json(v) for k, v in data.items()}
    members["candidates"] = candidates
    return object_digest(members)


def object_digest(members: Mapping[str, str | list[str]]) -> str:
    """SHA-256 of the JSON object of these members, each given as its JSON text
    or, for an array, as its elements' texts; the keys are ASCII (Python's order
    is RFC 8785's). Fed to the hash a piece at a time: a pack's manifest is
    megabytes, and copying it whole into fresh memory costs more than hashing it."""
    digest = hashlib.sha256()
    opening = "{"
    for key in sorted(members):
        value = members[key]
        digest.update(f"{opening}{_text(key)}:".encode())
        opening = ","
        if isinstance(value, str):
            for start in range(0, len(value), _PIECE_CHARS):
                digest.update(value[start : start + _PIECE_CHARS].encode())
            continue
        digest.update(b"[")
        for start in range(0, len(value), _PIECE_TEXTS):
            piece = ",".join(value[start : start + _PIECE_TEXTS])
            digest.update((f",{piece}" if start else piece).encode())
        digest.update(b"]")
    digest.update(b"}")
    return digest.hexdigest()


# Pieces of a digest's text (above): small enough to reuse freed memory.
_PIECE_CHARS, _PIECE_TEXTS = 1 << 15, 256


def pack_manifest(
    inputs: Inputs,
    in_digest: str,
    admitted: list[tuple[str, int]],
    evicted: list[tuple[str, str, Any, int]],
) -> dict[str, Any]:
    """What the pack digest covers: the inputs (through the input digest, which
    covers the candidates), every admission in order and every eviction by digest.
    Not the pack's number or entry: two identical builds share a pack digest.

    Every object is built with its keys already in sorted order (the digest then
    skips a sort per object; `pack_digest` is checked against RFC 8785 in tests).
    """
    top = {
        **inputs.to_json(),
        "input_digest": in_digest,
        "admitted": [{"record_digest": d, "tokens": t} for d, t in admitted],
        "evicted": [
            {"detail": _sorted_detail(det), "reason": r, "record_digest": d, "tokens": t}
            for d, r, det, t in sorted(evicted, key=lambda e: e[0])
        ],
    }
    top["policy"] = dict(sorted(top["policy"].items()))
    return dict(sorted(top.items()))


def pack_digest(
    inputs: Inputs, in_digest: str, admitted: list[tuple[str, int]], evicted: Evictions
) -> str:
    """SHA-256 of the canonical JSON of `pack_manifest(...)`, written out directly.

    The hot part of build and verify (one entry per candidate): each distinct
    detail object (the selector shares them) is written once, as the head of its
    evictions' entries (`eviction_head`); `eviction_entries` and `manifest_digest`
    write the rest. tests/store/test_canonical.py checks it against RFC 8785.
    """
    heads = evicted.per_detail(eviction_head)
    entries = eviction_entries(heads, evicted.digests, evicted.tokens)
    by_digest = sorted(range(len(entries)), key=evicted.digests.__getitem__)
    return manifest_digest(inputs, in_digest, admitted, list(map(entries.__getitem__, by_digest)))


_T = TypeVar("_T")


class Evictions(NamedTuple):
    """A decision's evictions, a column each in the decision's order: what its
    pack digest and its decision rows are written from, read once (in C)."""

    digests: list[str]  # record digests
    tokens: list[int]
    # Each eviction's (reason, id of its detail), and the detail of each such key:
    # the selector shares equal details, so 100,000 evictions hold a few thousand.
    keys: list[tuple[str, int]]
    details: dict[tuple[str, int], Any]

    @classmethod
    def of(cls, ctx: Context) -> Evictions:
        """The columns of `ctx`'s evictions."""
        evicted = ctx.evicted
        losers = list(map(_candidate_of, evicted))
        details = list(map(_detail_of, evicted))  # held: their ids stay unique meanwhile
        keys = list(zip(map(_reason_of, evicted), map(id, details), strict=True))
        return cls(
            list(map(_digest_of, losers)),
            list(map(_tokens_of, losers)),
            keys,
            dict(zip(keys, details, strict=True)),
        )

    def per_detail(self, make: Callable[[str, Any], _T]) -> list[_T]:
        """`make(reason, detail)` of each eviction, called once per distinct detail."""
        made = {key: make(key[0], detail) for key, detail in self.details.items()}
        return list(map(made.__getitem__, self.keys))


def eviction_head(reason: str, detail: Any) -> str:
    """The text of an eviction in the pack manifest up to its record digest.

    A detail is built by the ledger (ASCII keys; strings, integers, null and one
    nested object): its canonical text is `json`'s, written in C."""
    return f'{{"detail":{detail_json(detail)},"reason":{_text(reason)},"record_digest":'


def detail_json(detail: Any) -> str:
    """`trusted_json(detail)`; the details a pack holds thousands of distinct ones
    of are written directly, the same text (tests/store/test_canonical.py checks
    it): a budget eviction's (two integers) and a superseded or duplicate one's
    (the version it names, three strings)."""
    if len(detail) == 2:
        needed, remaining = detail.get("needed"), detail.get("remaining")
        if type(needed) is int and type(remaining) is int:
            return f'{{"needed":{needed},"remaining":{remaining}}}'
    elif len(detail) == 1:
        key = "by" if "by" in detail else "kept"
        ref = detail.get(key)
        if type(ref) in _PLAIN_MAPPINGS and len(ref) == 3:
            cid, version, digest = (
                ref.get("id"),
                ref.get("source_version"),
                ref.get("record_digest"),
            )
            if type(cid) is str and type(version) is str and type(digest) is str:
                return (
                    f'{{"{key}":{{"id":{_json_str(cid)},"record_digest":{_json_str(digest)},'
                    f'"source_version":{_json_str(version)}}}}}'
                )
    return trusted_json(detail)


_PLAIN_MAPPINGS = (dict, MappingProxyType)  # the ledger's details: no abstract-class check


def eviction_entry(head: str, digest: str, tokens: int) -> str:
    """The text of an eviction in the pack manifest, from its `eviction_head`."""
    return f'{head}{_text(digest)},"tokens":{_number(tokens)}}}'


def eviction_entries(heads: list[str], digests: list[Any], tokens: list[Any]) -> list[str]:
    """`eviction_entry` of many evictions, the same texts (tests/store/test_canonical.py
    checks it), with no call per eviction when the digests are `plain_strings` and
    the tokens integers in RFC 8785's safe range (what the ledger writes)."""
    if plain_strings(digests) and safe_ints(tokens):
        return [f'{h}"{d}","tokens":{t}}}' for h, d, t in zip(heads, digests, tokens, strict=True)]
    return list(map(eviction_entry, heads, digests, tokens))


def _ints(values: Iterable[Any]) -> bool:
    """Whether every value is an `int` (not a bool)."""
    return set(map(type, values)) <= {int}


def safe_ints(values: list[Any]) -> bool:
    """Whether every value is an `int` (not a bool) in RFC 8785's safe range."""
    return _ints(values) and (
        not values or (-_MAX_SAFE_INT <= min(values) and max(values) <= _MAX_SAFE_INT)
    )


def _columns(rows: Sequence[Sequence[Any]], width: int) -> list[list[Any]]:
    """The columns of `width`-field rows (`width` empty lists when there are none)."""
    return [list(column) for column in zip(*rows, strict=True)] if rows else [[]] * width


def manifest_digest(
    inputs: Inputs, in_digest: str, admitted: list[tuple[str, int]], evicted: list[str]
) -> str:
    """The pack digest (`pack_digest`) from the admissions in order and the
    evictions' entries (`eviction_entry`) in record digest order: the one writer
    of the manifest's text, for build and verify."""
    top: dict[str, Any] = {**inputs.to_json(), "input_digest": in_digest}
    members: dict[str, str | list[str]] = {k: canonical_json(v) for k, v in top.items()}
    members["admitted"] = [
        f'{{"record_digest":{_text(d)},"tokens":{_number(t)}}}' for d, t in admitted
    ]
    members["evicted"] = evicted
    return object_digest(members)


# An Eviction's fields (a named tuple) and the Candidate's a pack records.
_candidate_of, _reason_of, _detail_of = itemgetter(0), itemgetter(1), itemgetter(2)
_digest_of, _tokens_of = attrgetter("record_digest"), attrgetter("tokens")


def _text(value: Any) -> str:
    # A stored string (digests, reasons) in RFC 8785 form; anything else through
    # the general encoder, so a tampered row hashes as what it holds.
    return _json_str(value) if type(value) is str else canonical_json(value)


def _number(value: Any) -> str:
    if type(value) is int and -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
        return str(value)
    return canonical_json(value)


def _sorted_detail(detail: Any) -> dict[str, Any]:
    """A plain dict of an eviction detail, keys sorted, one level of nesting."""
    return {
        k: (dict(sorted(v.items())) if isinstance(v, Mapping) else v)
        for k, v in sorted(detail.items())
    }


def context_digests(
    inputs: Inputs, candidates: list[Candidate], ctx: Context, evicted: Evictions | None = None
) -> tuple[str, str]:
    """(input digest, pack digest) of a decision made by the core (`evicted`: its
    evictions' columns, when the caller has them)."""
    ind = input_digest(inputs, map(_digest_of, candidates))
    items = ctx.items
    admitted = list(zip(map(_digest_of, items), map(_tokens_of, items), strict=True))
    return ind, pack_digest(
        inputs, ind, admitted, Evictions.of(ctx) if evicted is None else evicted
    )


# An OpenTelemetry trace id (32 hex) and span id (16 hex, or None) a build ran in.
Trace = tuple[str, str | None]  # the pack payload's formula is pure: ledger.core.chain


def record_pack(
    conn: Connection,
    inputs: Inputs,
    candidates: list[Candidate],
    ctx: Context,
    vid_of: dict[str, int],
    trace: Trace | None = None,
) -> int:
    """Write the pack, its decisions and its entry (inside a write transaction)."""
    evicted = Evictions.of(ctx)
    in_digest, pack_dig = context_digests(inputs, candidates, ctx, evicted)
    seq = reserve_entry(conn, "pack")
    pack_no = (
        int(conn.execute(select(func.coalesce(func.max(packs.c.pack_no), 0))).scalar_one()) + 1
    )
    conn.execute(
        insert(packs).values(
            pack_no=pack_no,
            entry_seq=seq,
            **{column: getattr(inputs, name) for name, column in INPUT_COLUMNS.items()},
            used=ctx.admitted_tokens(),
            grants=canonical_json(list(inputs.grants)),
            policy=canonical_json(inputs.policy.to_json()),
            candidate_count=len(candidates),
            input_digest=in_digest,
            pack_digest=pack_dig,
            retrieval=None
            if inputs.retrieval is None
            else json.dumps(inputs.retrieval.to_json(), sort_keys=True, separators=(",", ":")),
            trace_id=None if trace is None else trace[0],
            span_id=None if trace is None else trace[1],
        )
    )
    # One row per candidate, each column a loop in C: admissions in order, then
    # the evictions, whose status, `remaining` and `ref_vid` come from their detail.
    vid = vid_of.__getitem__
    items = ctx.items
    tails = evicted.per_detail(lambda reason, detail: decision_tail(reason, detail, vid_of))
    statuses, remaining, refs = _columns(tails, 3)
    rows: list[tuple[Any, ...]] = [
        *zip(
            repeat(pack_no),
            map(vid, map(_digest_of, items)),
            repeat(0),
            map(_tokens_of, items),
            count(),
            repeat(None),
            repeat(None),
        ),
        *zip(
            repeat(pack_no),
            map(vid, evicted.digests),
            statuses,
            evicted.tokens,
            repeat(None),
            remaining,
            refs,
        ),
    ]
    # Written in version id order: both of the table's B-trees (its key, pack then
    # version, and the index by version) then take each row next to the last
    # instead of at a random page: 100,000 rows 320 -> 270 ms.
    rows.sort(key=itemgetter(1))
    for start in range(0, len(rows), 20_000):
        insert_decisions(conn, rows[start : start + 20_000])
    seal_entry(conn, seq, pack_entry_payload(pack_no, pack_dig, in_digest, inputs.mark, trace))
    return pack_no


def decision_tail(
    reason: str, detail: Mapping[str, Any], vid_of: Mapping[str, int]
) -> tuple[int, int | None, int | None]:
    """An eviction's status, `remaining` (a retraction's: its retract entry) and
    the version its detail names (`by`, `kept`) in its decision row."""
    return row_of_detail(reason, detail, vid_of)


_DECISION_COLUMNS = ("pack_no", "vid", "status", "tokens", "position", "remaining", "ref_vid")


def insert_decisions(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    """One executemany of decision rows (tuples in `_DECISION_COLUMNS` order)."""
    insert_tuples(conn, decisions, _DECISION_COLUMNS, rows)


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
    with write_transaction(engine) as conn:
        inputs = resolve_inputs(conn, as_of, subject, **asked)
        inputs = with_retrieval(conn, inputs, query, top, candidates_file)
        with collector_paused():
            candidates, vid_of = candidates_for(conn, inputs)
            ctx = decide(inputs, candidates)
            pack_no = record_pack(conn, inputs, candidates, ctx, vid_of, trace)
            # Freed before the collector resumes, which would otherwise walk every
            # one of them (11-15 ms at 20,000 candidates).
            del candidates, vid_of, ctx
        return pack_no


def parse_batch_line(raw: bytes, where: str) -> dict[str, Any]:
    """One `--batch` line: {"subject", "as_of", "budget"?, "query"?, "top"?, "candidates"?}."""
    from ledger.core.strictjson import loads_object

    obj = loads_object(
        raw,
        where,
        "an object with subject, as_of and optional budget",
        frozenset({"subject", "as_of", "budget", "query", "top", "candidates"}),
        frozenset({"subject", "as_of"}),
    )
    if not isinstance(obj["subject"], str) or not isinstance(obj["as_of"], str):
        raise InputError(f"{where}: subject and as_of must be strings")
    b = obj.get("budget")
    if b is not None and (isinstance(b, bool) or not isinstance(b, int)):
        raise InputError(f"{where}: field 'budget': must be an integer")
    for name, kind in (("query", str), ("candidates", str), ("top", int)):
        value = obj.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
            words = "an integer" if kind is int else "a string"
            raise InputError(f"{where}: field '{name}': must be {words}")
    return {
        "subject": obj["subject"],
        "as_of": obj["as_of"],
        "budget": b,
        "query": obj.get("query"),
        "top": obj.get("top"),
        "candidates": obj.get("candidates"),
    }


def json_list(text: str) -> list[Any]:
    return list(json.loads(text))


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
    from ledger.core.select import RequiredOverBudgetError

    check_budget(budget)
    if budget < header:
        raise InputError(
            f"--budget {budget} is below the continuation's fixed header of {header} bytes"
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
                f"--budget {budget} is below the pinned exchanges plus the Markdown framing "
                f"(needs at least {exc.needed + header} bytes)"
            ) from None
        return record_pack(conn, inputs, candidates, ctx, vid_of)
