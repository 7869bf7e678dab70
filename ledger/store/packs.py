"""Reading recorded packs: resolve a PACK reference, the SPEC JSON, exports.

A decision row stores only what its version cannot tell (status, tokens,
position, the budget's `remaining`, the superseding or kept version); `detail_of`
rebuilds SPEC's detail object from it, for show, why-evicted and verify alike.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress, repeat
from operator import is_not, itemgetter
from typing import Any

from sqlalchemy import Connection, Integer, func, select

from ledger.core.errors import EXIT_USAGE, InputError, IntegrityError, NotFoundError
from ledger.core.numbers import ascii_int, backend_max
from ledger.core.reasons import (
    REASON_CODES,
    REASON_NAMES,
    REF,
    REF_ROW_FIELDS,
    RETRACTED,
    SECTIONS,
    TABLE,
    detail_of_row,
)
from ledger.core.records import printable
from ledger.store.engine import fetch_tuples, row_type
from ledger.store.schema import decisions, packs, retractions, versions

_HEX = re.compile(r"[0-9a-f]+")


class PackRefError(InputError):
    """A PACK argument that is neither a number nor a digest prefix (a usage error)."""

    exit_code = EXIT_USAGE


def parse_pack_number(ref: str, dialect: str) -> int | None:
    """The one parser of PACK numbers: ASCII digits only (`²`, `1 ` and `+1` are
    no numbers; `ledger.core.numbers`), range-checked for the backend. None: not
    a number; 0: out of range."""
    n = ascii_int(ref)
    if n is None:
        return None
    return n if 1 <= n <= backend_max(dialect) else 0


def _shown(ref: str) -> str:
    """A PACK argument as a message shows it: at most 40 characters of it."""
    return ref if len(ref) <= 40 else ref[:40] + "..."


def resolve_pack(conn: Connection, ref: str) -> int:
    """PACK: a pack number, or a unique prefix (6+ hex characters) of a pack digest.

    A number out of the backend's range names no pack (NotFoundError, exit 3);
    text that is neither is a usage error (exit 2). Nothing is stripped: a
    value with a space or a newline is not what the user meant to name."""
    n = parse_pack_number(ref, conn.dialect.name)
    no_number = ""
    if n is not None:
        if n and conn.execute(select(packs.c.pack_no).where(packs.c.pack_no == n)).first():
            return n
        top = backend_max(conn.dialect.name)
        limit = f" (pack numbers end at {top} here)" if (ascii_int(ref) or 0) > top else ""
        no_number = f"no pack {_shown(ref)}{limit}"
        if len(ref) < 6:
            raise NotFoundError(f"{no_number}; `ledger packs` lists them")
    ref = ref.lower()
    if len(ref) < 6 or not _HEX.fullmatch(ref):
        raise PackRefError(
            f"PACK {_shown(ref)!r}: give a pack number (ASCII digits) or at least 6 hex "
            "characters of a pack digest"
        )
    rows = conn.execute(
        select(packs.c.pack_no, packs.c.pack_digest)
        .where(packs.c.pack_digest.like(ref + "%"))
        .limit(11)
    ).all()
    if not rows:
        if no_number:  # digits are hex too: neither a number nor a digest prefix
            raise NotFoundError(f"{no_number}, and no pack digest starts with it")
        raise NotFoundError(f"no pack whose digest starts with {ref}")
    numbers: list[int] = sorted({r.pack_no for r in rows})
    if len({r.pack_digest for r in rows}) > 1:
        raise InputError(
            f"PACK {ref} matches several pack digests (packs {', '.join(map(str, numbers))}); "
            "give more characters"
        )
    # Identical builds share a digest: the prefix names the newest of them.
    return numbers[-1]


def reason_of(status: int, pack_no: int) -> str | None:
    """The reason code of a decision's status (None: admitted).

    A status outside 0-8 only comes from a changed database: one line, exit 4,
    rather than a traceback from a reader."""
    if status == 0:
        return None
    reason = REASON_NAMES.get(status)
    if reason is None:
        raise IntegrityError(
            f"pack {pack_no} has a decision with unknown status {status!r}; "
            "the database was altered: run `ledger verify`"
        )
    return reason


def snapshot_of(text: str, what: str, pack_no: int) -> Any:
    """A pack's recorded grants or policy snapshot (JSON text), or exit 4."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        raise IntegrityError(
            f"pack {pack_no}: its recorded {what} are not valid JSON; "
            "the database was altered: run `ledger verify`"
        ) from None


# The fields of a decision row (and its versions) each reason's detail is made of.
DETAIL_FIELDS: dict[str, tuple[str, ...]] = {
    r.name: tuple(
        f for _key, field in r.detail for f in (REF_ROW_FIELDS if field == REF else (field,))
    )
    for r in TABLE
    if r.status is not None
}


# The version columns a reason's detail reads (the others are the decision's).
_VERSION_DETAIL = ("required_permission", "trust", "effective_from", "expires_on")


def detail_of(reason: str, row: Any) -> dict[str, Any]:
    """The detail object of an eviction, from its decision row and version."""
    return detail_of_row(reason, row)


DecisionRow = namedtuple(  # noqa: PYI024 - a plain row type, built per decision
    "DecisionRow",
    "vid status tokens position remaining ref_vid chunk_id source_version section source_uri "
    "required "
    "priority record_digest content_digest required_permission trust effective_from expires_on "
    "dedupe_key estimated_tokens ref_id ref_version ref_digest "
    "title path loc_kind loc_first loc_last retracted_from",
)


def location_json(row: Any) -> dict[str, Any]:
    """`title`, `path` and `lines` (or `pages`) of a document version (from `ledger
    ingest --rules`); nothing for other versions, whose JSON stays as it was."""
    if row.path is None:
        return {}
    span = None if row.loc_first is None else [row.loc_first, row.loc_last]
    return {
        "title": row.title,
        "path": row.path,
        "lines": span if row.loc_kind != "pages" else None,
        "pages": span if row.loc_kind == "pages" else None,
    }


def decision_rows(conn: Connection, pack_no: int, vids: Iterable[int] | None = None) -> list[Any]:
    """Every decision of a pack joined with its version (and referenced version)."""
    v = versions.alias("v")
    r = versions.alias("r")
    t = retractions
    d = decisions
    query = (
        select(
            d.c.vid,
            d.c.status,
            d.c.tokens,
            d.c.position,
            d.c.remaining,
            d.c.ref_vid,
            v.c.chunk_id,
            v.c.source_version,
            v.c.section,
            v.c.source_uri,
            v.c.required,
            v.c.priority,
            v.c.record_digest,
            v.c.content_digest,
            v.c.required_permission,
            v.c.trust,
            v.c.effective_from,
            v.c.expires_on,
            v.c.dedupe_key,
            v.c.estimated_tokens,
            r.c.chunk_id.label("ref_id"),
            r.c.source_version.label("ref_version"),
            r.c.record_digest.label("ref_digest"),
            v.c.title,
            v.c.path,
            v.c.loc_kind,
            v.c.loc_first,
            v.c.loc_last,
            t.c.from_date.label("retracted_from"),
        )
        .select_from(
            d.join(v, v.c.vid == d.c.vid)
            .outerjoin(r, r.c.vid == d.c.ref_vid)
            # A retracted row's `remaining` is its retract entry (status 8).
            .outerjoin(
                t,
                (d.c.status == REASON_CODES[RETRACTED])
                & (t.c.entry_seq == d.c.remaining)
                & (t.c.chunk_id == v.c.chunk_id),
            )
        )
        .where(d.c.pack_no == pack_no)
    )
    if vids is not None:  # `ledger why`: the decisions about a few versions only
        query = query.where(d.c.vid.in_(list(vids)))
    # Plain tuples from the driver, named once: packs hold up to 100,000s of rows,
    # and SQLAlchemy's per-row processing would double the cost of verify and show.
    rows = fetch_tuples(conn, query)
    if conn.dialect.name == "sqlite" and not _typed_decisions(rows):
        raise IntegrityError(
            f"pack {pack_no}: a decision has a field of the wrong type; "
            "the database was altered: run `ledger verify`"
        )
    return [DecisionRow._make(t) for t in rows]


def _typed_decisions(rows: list[tuple[Any, ...]]) -> bool:
    """SQLite keeps any type in any column: the integers a reader computes with
    (status, tokens, position, remaining, estimated tokens, priority) and the
    digests it sorts and prints are checked."""
    return all(
        type(t[1]) is int
        and type(t[2]) is int
        and (t[3] is None or type(t[3]) is int)
        and (t[4] is None or type(t[4]) is int)
        and type(t[19]) is int
        and type(t[11]) is int
        and type(t[12]) is str
        and type(t[13]) is str
        and (t[22] is None or type(t[22]) is str)
        for t in rows
    )


# What verify reads of the packs' decisions. A large ledger holds millions of
# decisions over a few versions each: the versions are read once (the fields a
# pack's digests and details are made of), each pack's decision rows alone (the
# driver's tuples, beside their versions'). Where a row is needed (an admission,
# an eviction entry not in the previous pack) it is its decision's fields followed
# by its version's, laid out as `VerifyRow` (the last four only in the rows whose
# detail reads them).
_DECISION_FIELDS = ("vid", "status", "tokens", "position", "remaining", "ref_vid")
_VERSION_FIELDS = (
    "record_digest",
    "estimated_tokens",
    *_VERSION_DETAIL,
    "chunk_id",
    "source_version",
)
_EXTRA_FIELDS = ("retracted_from", "ref_id", "ref_version", "ref_digest")
# The columns of a version the reader takes (its priority only for the type check).
VERSION_COLUMNS = ("vid", *_VERSION_FIELDS, "priority")
# Built once per distinct detail.
VerifyRow = row_type("VerifyRow", [*_DECISION_FIELDS, *_VERSION_FIELDS, *_EXTRA_FIELDS])
_SHORT = len(_DECISION_FIELDS) + len(_VERSION_FIELDS)
_ID = VerifyRow._fields.index("chunk_id")  # then source_version
# The fields of a short row that decide each reason's detail (equal fields, equal
# details): the detail's own, or those it is read by (a retraction's date by its
# retract entry and chunk; the version referred to by its vid).
_DETAIL_KEYS = {
    **DETAIL_FIELDS,
    "retracted": ("remaining", "chunk_id"),
    "superseded": ("ref_vid",),
    "duplicate": ("ref_vid",),
}
# Per status: its reason, the getter of the fields that decide its detail,
# whether the detail reads the last four fields and whether those fields are
# not all the decision's own (its getter then needs its version's fields too).
VERIFY_DETAIL: dict[int, tuple[str, Any, bool, bool]] = {
    REASON_CODES[reason]: (
        reason,
        itemgetter(*(VerifyRow._fields.index(f) for f in _DETAIL_KEYS[reason])),
        any(f in _EXTRA_FIELDS for f in fields),
        not set(_DETAIL_KEYS[reason]) <= set(_DECISION_FIELDS),
    )
    for reason, fields in DETAIL_FIELDS.items()
}


_first = itemgetter(0)
_INT: set[type] = {int}
_INT_OR_NONE: set[type] = {int, type(None)}
# A decision's integers as the ledger writes them (SQLite keeps any type in any
# column; its storage class is the Python type the driver returns): status and
# tokens, then position and remaining.
_TYPED = [(itemgetter(i), _INT if i < 3 else _INT_OR_NONE) for i in range(1, 5)]


@dataclass(slots=True)
class PackVersions:
    """The versions a pack's decisions name (in vid order), as the previous pack's
    when they are the same: `vids` as read, `kept` (None: all) the decisions whose
    version exists, `named` their versions' fields, `order` the decisions by
    record digest, `candidates` the JSON text of the sorted digests."""

    vids: list[Any]
    kept: list[bool] | None
    named: list[tuple[Any, ...]]
    order: list[int]
    candidates: str | None = None


class VerifyReader:
    """The decisions of packs and the versions they name, read for verify.

    `after`: only the packs recorded after that entry are read (`verify --since`),
    and only the versions their decisions name. `read`: every version's
    `VERSION_COLUMNS` (the driver's values), when verify's check of the versions
    has read them all already (else they are read here)."""

    def __init__(
        self, conn: Connection, after: int, read: list[tuple[Any, ...]] | None = None
    ) -> None:
        self.conn = conn
        self.sqlite = conn.dialect.name == "sqlite"
        if read is None:
            v = versions.c
            query = select(*(v[name] for name in VERSION_COLUMNS))
            if after:
                named = select(decisions.c.vid).join(packs, packs.c.pack_no == decisions.c.pack_no)
                query = query.where(v.vid.in_(named.where(packs.c.entry_seq > after)))
            read = fetch_tuples(conn, query)
        self.versions: dict[int, tuple[Any, ...]] = {}
        # SQLite keeps any type in any column: a decision naming a version whose
        # integers are not, or whose record digest is not text, is reported as
        # the pack's, as `decision_rows` does.
        self.untyped: set[int] = set()
        common: dict[Any, Any] = {}  # equal dates, labels and permissions as one object
        one = common.setdefault
        # The four `_VERSION_DETAIL` fields by name: a starred target and a list
        # per version made this loop 2.5 times as slow.
        for vid, digest, estimated, permission, trust, since, until, cid, sv, priority in read:
            self.versions[vid] = (
                digest,
                estimated,
                one(permission, permission),
                one(trust, trust),
                one(since, since),
                one(until, until),
                cid,
                sv,
            )
            if type(estimated) is not int or type(priority) is not int or type(digest) is not str:
                self.untyped.add(vid)
        # The previous pack's vids, decisions and eviction entries (kept by verify's check).
        self.entries: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
        # The previous pack's versions: the next pack mostly names the same.
        self.last = PackVersions([], None, [], [])
        # Per status: its `VERIFY_DETAIL` and the eviction heads made so far, by the
        # fields that decide them. Equal fields, one head written once, in any pack
        # (a budget eviction's amounts recur from pack to pack, under new budgets).
        self.heads: dict[int, tuple[str, Any, bool, bool, dict[Any, str]]] = {
            status: (*known, {}) for status, known in VERIFY_DETAIL.items()
        }
        t = retractions.c
        self.retracted: dict[tuple[Any, Any], Any] = {
            (seq, cid): day
            for seq, cid, day in fetch_tuples(conn, select(t.entry_seq, t.chunk_id, t.from_date))
        }

    def decisions(self, pack_no: int) -> tuple[list[tuple[Any, ...]], PackVersions]:
        """A pack's decisions whose version exists (as an inner join), by vid, and
        their versions; IntegrityError if a field has the wrong type. A decision
        and its version's fields make a row laid out as `VerifyRow`."""
        d = decisions.c
        query = select(*(d[name] for name in _DECISION_FIELDS)).where(d.pack_no == pack_no)
        found = fetch_tuples(self.conn, query.order_by(d.vid))
        vids = list(map(_first, found))
        last = self.last
        if vids != last.vids:
            # Joined in C: a pack holds up to 100,000s of decisions.
            named: list[Any] = list(map(self.versions.get, vids))
            kept = None
            if None in named:  # a decision naming no version: as an inner join, left out
                kept = list(map(is_not, named, repeat(None)))
                named = list(compress(named, kept))
            digests = list(map(_first, named))
            try:  # by record digest: the order of the candidates and the evictions
                order = sorted(range(len(digests)), key=digests.__getitem__)
            except TypeError:  # a digest of another type (SQLite): the digests tell
                order = list(range(len(digests)))
            last = self.last = PackVersions(vids, kept, named, order)
        if last.kept is not None:
            found = list(compress(found, last.kept))
        if self.sqlite and (
            not all(set(map(type, map(field, found))) <= kinds for field, kinds in _TYPED)
            or (self.untyped and not self.untyped.isdisjoint(map(_first, found)))
        ):
            raise IntegrityError(
                f"pack {pack_no}: a decision has a field of the wrong type; "
                "the database was altered: run `ledger verify`"
            )
        return found, last

    def extended(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """A row with its last four fields: the retraction's date (a retracted
        row), the id, version and record digest of the version it refers to."""
        if len(row) > _SHORT:
            return row
        retracted = None
        if row[1] == REASON_CODES[RETRACTED]:  # `remaining` holds the retract entry
            retracted = self.retracted.get((row[4], row[_ID]))
        ref: tuple[Any, ...] = (None, None, None)
        if row[5] is not None:
            named = self.versions.get(row[5])
            if named is None:  # not among the checked packs' versions
                c = versions.c
                hit = self.conn.execute(
                    select(c.chunk_id, c.source_version, c.record_digest).where(c.vid == row[5])
                ).first()
                ref = tuple(hit) if hit is not None else ref
            else:
                ref = (named[6], named[7], named[0])
        return (*row, retracted, *ref)

    @staticmethod
    def named(row: tuple[Any, ...]) -> Any:
        """A row as a `VerifyRow` (its last four fields read by `extended`)."""
        return VerifyRow._make(row if len(row) > _SHORT else (*row, None, None, None, None))

    @staticmethod
    def name(row: tuple[Any, ...]) -> str:
        """`id@version` of a row's version, to name it in a problem."""
        return f"{row[_ID]}@{row[_ID + 1]}"


# What a pack row always holds: the table's NOT NULL columns, integers or text
# by their SQL type (a changed SQLite file can store any value in any column).
_PACK_TYPES = tuple(
    (column.name, int if isinstance(column.type, Integer) else str)
    for column in packs.c
    if not column.nullable
)


def bad_pack_types(head: Any) -> str | None:
    """The first field of a pack row whose type is not what the ledger writes."""
    for name, kind in _PACK_TYPES:
        value = getattr(head, name)
        if kind is int and type(value) is not int:
            return f"its {name} is not an integer"
        if kind is str and not isinstance(value, str):
            return f"its {name} is not text"
    return None


def pack_header(conn: Connection, pack_no: int, *, checked: bool = True) -> Any:
    """A pack's row; with `checked`, a field of the wrong type (only a changed
    SQLite file can hold one) is one line, exit 4, not a crash further on."""
    row = conn.execute(select(packs).where(packs.c.pack_no == pack_no)).first()
    if row is None:
        raise NotFoundError(f"no pack {pack_no}; `ledger packs` lists them")
    if checked:
        bad = bad_pack_types(row)
        if bad is not None:
            raise IntegrityError(
                f"pack {pack_no}: {bad}; the database was altered: run `ledger verify`"
            )
    return row


def trace_of(head: Any) -> dict[str, Any] | None:
    """The OpenTelemetry trace a pack was built in (`show --json` "trace"), or None."""
    return None if head.trace_id is None else {"trace_id": head.trace_id, "span_id": head.span_id}


def pack_json(conn: Connection, pack_no: int) -> dict[str, Any]:
    """SPEC's `show PACK --json` shape, plus the pack's snapshots and ledger mark.
    An admitted or evicted version whose body was erased also has `"erased":
    {"entry", "reason"}`."""
    data = _pack_json(conn, pack_no)
    from ledger.store.erase import erased_by_digest

    items = data["admitted"] + data["evicted"]
    erased = erased_by_digest(conn, [i["record_digest"] for i in items])
    for item in items:
        if item["record_digest"] in erased:
            item["erased"] = erased[item["record_digest"]]
    return data


def _pack_json(conn: Connection, pack_no: int) -> dict[str, Any]:
    from ledger.store.audit import retrieval_of

    head = pack_header(conn, pack_no)
    retrieval = retrieval_of(head)
    rows = decision_rows(conn, pack_no)
    admitted = sorted((r for r in rows if r.status == 0), key=lambda r: r.position)
    evicted = sorted(
        (r for r in rows if r.status != 0), key=lambda r: (r.chunk_id, r.source_version)
    )
    return {
        "pack": head.pack_no,
        "entry": head.entry_seq,
        "ledger_mark": head.ledger_mark,
        "pack_digest": head.pack_digest,
        "input_digest": head.input_digest,
        "as_of": head.as_of,
        "subject": head.subject,
        "grants": snapshot_of(head.grants, "grants", head.pack_no),
        "policy": snapshot_of(head.policy, "policy", head.pack_no),
        "counter": head.counter,
        "scope": head.scope,
        "selector_version": head.selector_version,
        "candidates": head.candidate_count,
        "budget": head.budget,
        "used": head.used,
        "remaining": head.budget - head.used,
        "retrieval": None if retrieval is None else retrieval.to_json(),
        "trace": trace_of(head),
        "admitted": [
            {
                "id": r.chunk_id,
                "source_version": r.source_version,
                "section": r.section,
                "tokens": r.tokens,
                "required": bool(r.required),
                "record_digest": r.record_digest,
                "content_digest": r.content_digest,
                **location_json(r),
            }
            for r in admitted
        ],
        "evicted": [
            {
                "id": r.chunk_id,
                "source_version": r.source_version,
                "reason": reason,
                "detail": detail_of(reason, r),
                "tokens": r.tokens,
                "record_digest": r.record_digest,
                "content_digest": r.content_digest,
                **location_json(r),
            }
            for r in evicted
            for reason in (reason_of(r.status, pack_no) or "",)
        ],
    }


def list_packs(conn: Connection, trace_id: str | None = None) -> list[dict[str, Any]]:
    """SPEC's `packs --json` items, oldest first; with `trace_id` only the packs
    built in that OpenTelemetry trace."""
    query = select(packs).order_by(packs.c.pack_no)
    if trace_id is not None:
        query = query.where(packs.c.trace_id == trace_id)
    return [
        {
            "pack": r.pack_no,
            "entry": r.entry_seq,
            "pack_digest": r.pack_digest,
            "as_of": r.as_of,
            "subject": r.subject,
            "budget": r.budget,
            "used": r.used,
            "trace": trace_of(r),
        }
        for r in conn.execute(query)
    ]


# What an export adds to each admitted item of the pack's JSON, in this order:
# the version's columns of the same names.
EXPORT_PROVENANCE = (
    "source_uri",
    "effective_from",
    "expires_on",
    "trust",
    "required_permission",
    "priority",
)


def export_manifest(conn: Connection, pack_no: int, with_content: bool) -> dict[str, Any]:
    """The pack with full provenance of every admitted chunk (bodies on request)."""
    data = pack_json(conn, pack_no)
    rows = {r.record_digest: r for r in decision_rows(conn, pack_no) if r.status == 0}
    contents: dict[str, str] = {}
    if with_content:
        contents = {
            r.record_digest: r.content
            for r in conn.execute(
                select(versions.c.record_digest, versions.c.content).where(
                    versions.c.record_digest.in_(list(rows))
                )
            )
        }
    for item in data["admitted"]:
        r = rows[item["record_digest"]]
        item.update({key: getattr(r, key) for key in EXPORT_PROVENANCE})
        if with_content and "erased" in item:
            continue  # no body: the item says which entry erased it, and why
        if with_content:
            body = contents[item["record_digest"]]
            if not isinstance(body, str):
                raise IntegrityError(
                    f"pack {pack_no}: the body of {item['id']}@{item['source_version']} is not "
                    "stored as text; the database was altered: run `ledger verify`"
                )
            item["content"] = body
    return data


def export_markdown(conn: Connection, pack_no: int, with_content: bool) -> str:
    """Markdown for a model: sections in order, each chunk with source and version."""
    data = export_manifest(conn, pack_no, with_content)
    # Metadata is escaped (a changed database could hold a newline and an
    # injected heading); bodies are fenced, as given.
    for item in data["admitted"]:
        for key in ("id", "source_uri", "source_version", "effective_from", "expires_on", "trust"):
            if item.get(key) is not None:
                item[key] = printable(item[key])
    data["subject"] = printable(data["subject"])
    lines = [
        f"# Context pack {data['pack']}",
        "",
        f"As of {data['as_of']} for subject `{data['subject']}`: {data['used']} of "
        f"{data['budget']} tokens ({data['counter']}). Pack digest `{data['pack_digest']}`.",
    ]
    for section in SECTIONS:
        items = [i for i in data["admitted"] if i["section"] == section]
        if not items:
            continue
        lines += ["", f"## {section}"]
        for i in items:
            lines += [
                "",
                f"### {i['id']}",
                "",
                f"Source: {i['source_uri']} (version {i['source_version']}, "
                "valid from "
                f"{i['effective_from']}{' until ' + i['expires_on'] if i['expires_on'] else ''}, "
                f"trust {i['trust']})",
            ]
            if i.get("path"):  # a document version: where its text stands
                span = i["lines"] or i["pages"]
                kind = "lines" if i["lines"] else "pages"
                where = f", {kind} {span[0]}-{span[1]}" if span else ""
                lines += ["", f"From {i['path']}{where}: {i['title']}"]
            if with_content and "erased" in i:
                erased = i["erased"]
                lines += [
                    "",
                    f"(body erased by entry {erased['entry']}: {printable(erased['reason'])})",
                ]
            elif with_content:
                body = i["content"]
                fence = "`" * max(3, _longest_backtick_run(body) + 1)
                lines += ["", fence, body, fence]
            else:
                lines += ["", "(body not exported; pass --with-content)"]
    return "\n".join(lines) + "\n"


def _longest_backtick_run(text: str) -> int:
    runs = re.findall(r"`+", text)
    return max((len(r) for r in runs), default=0)


def pack_count(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(packs)).scalar_one())
