"""Reading recorded packs: resolve a PACK reference, a pack's row and decisions,
its JSON (docs/reference/json.md), exports.

A decision row stores only what its version cannot tell (status, tokens,
position, the budget's `remaining`, the superseding or kept version); `detail_of`
rebuilds the detail object from it (docs/reference/gates.md), for show,
why-evicted and verify alike.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple
from collections.abc import Iterable
from functools import cache
from typing import Any

from sqlalchemy import Connection, Integer, bindparam, func, select

from ledger.core.errors import EXIT_USAGE, InputError, IntegrityError, NotFoundError
from ledger.core.numbers import ascii_int, backend_max
from ledger.core.query import RetrievalRecord
from ledger.core.reasons import (
    ADMITTED,
    REASON_CODES,
    REASON_NAMES,
    RETRACTED,
    SECTIONS,
    detail_of_row,
)
from ledger.core.records import printable
from ledger.core.transcript import budget_unit, counted_by
from ledger.store.engine import fetch_tuples
from ledger.store.readers import erased_by_digest
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
            f"pack {_shown(ref)!r}: give a pack number (ASCII digits) or at least 6 hex "
            "characters of a pack digest",
            param="pack",
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
            f"pack {ref} matches several pack digests (packs {', '.join(map(str, numbers))}); "
            "give more characters",
            param="pack",
        )
    # Identical builds share a digest: the prefix names the newest of them.
    return numbers[-1]


def reason_of(status: int, pack_no: int) -> str | None:
    """The reason code of a decision's status (None: admitted).

    A status outside 0-8 only comes from a changed database: one line, exit 4,
    rather than a traceback from a reader."""
    if status == ADMITTED:
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


def retrieval_of(head: Any) -> RetrievalRecord | None:
    """A recorded pack's retrieval record (None: a plain build), or IntegrityError."""
    text = getattr(head, "retrieval", None)
    if text is None:
        return None
    try:
        return RetrievalRecord.from_json(snapshot_of(text, "retrieval", head.pack_no))
    except InputError:
        raise IntegrityError(
            f"pack {head.pack_no}: its recorded retrieval does not have the recorded shape; "
            "the database was altered: run `ledger verify`"
        ) from None


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
    """Every decision of a pack joined with its version (and referenced version);
    with `vids`, the decisions about those versions only."""
    params: dict[str, Any] = {"pack_no": pack_no}
    if vids is not None:
        params["vids"] = list(vids)
    # Plain tuples from the driver, named once: packs hold up to 100,000s of rows,
    # and SQLAlchemy's per-row processing would double the cost of verify and show.
    rows = fetch_tuples(conn, _decisions_query(vids is not None), params)
    if conn.dialect.name == "sqlite" and not _typed_decisions(rows):
        raise IntegrityError(
            f"pack {pack_no}: a decision has a field of the wrong type; "
            "the database was altered: run `ledger verify`"
        )
    return [DecisionRow._make(t) for t in rows]


@cache
def _decisions_query(some: bool) -> Any:
    """`decision_rows`' statement, made once per shape (`some`: only the
    versions `:vids`): `ledger why` reads a few rows of it per answer, and
    making it anew cost more than running it."""
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
        .where(d.c.pack_no == bindparam("pack_no"))
    )
    if some:  # `ledger why`: the decisions about a few versions only
        query = query.where(d.c.vid.in_(bindparam("vids", expanding=True)))
    return query


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
    """`show PACK --json`'s shape (docs/reference/json.md), plus the pack's
    snapshots and ledger mark. An admitted or evicted version whose body was
    erased also has `"erased": {"entry", "reason"}`."""
    data = _pack_json(conn, pack_no)
    items = data["admitted"] + data["evicted"]
    erased = erased_by_digest(conn, [i["record_digest"] for i in items])
    for item in items:
        if item["record_digest"] in erased:
            item["erased"] = erased[item["record_digest"]]
    return data


def _pack_json(conn: Connection, pack_no: int) -> dict[str, Any]:
    head = pack_header(conn, pack_no)
    retrieval = retrieval_of(head)
    rows = decision_rows(conn, pack_no)
    admitted = sorted((r for r in rows if r.status == ADMITTED), key=lambda r: r.position)
    evicted = sorted(
        (r for r in rows if r.status != ADMITTED), key=lambda r: (r.chunk_id, r.source_version)
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
        "unit": budget_unit(head.scope),  # of budget, used, remaining and every item's tokens
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
        "evicted": [_evicted_json(r, pack_no) for r in evicted],
    }


def _evicted_json(row: Any, pack_no: int) -> dict[str, Any]:
    """An evicted item of `show PACK --json`."""
    reason = reason_of(row.status, pack_no) or ""
    return {
        "id": row.chunk_id,
        "source_version": row.source_version,
        "reason": reason,
        "detail": detail_of(reason, row),
        "tokens": row.tokens,
        "record_digest": row.record_digest,
        "content_digest": row.content_digest,
        **location_json(row),
    }


def list_packs(conn: Connection, trace_id: str | None = None) -> list[dict[str, Any]]:
    """`packs --json`'s items (docs/reference/json.md), oldest first; with `trace_id` only the packs
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
    rows = {r.record_digest: r for r in decision_rows(conn, pack_no) if r.status == ADMITTED}
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
        for key in (
            "id", "source_uri", "source_version", "effective_from", "expires_on", "trust",
            "title", "path",
        ):  # fmt: skip
            if item.get(key) is not None:
                item[key] = printable(item[key])
    data["subject"] = printable(data["subject"])
    lines = [
        f"# Context pack {data['pack']}",
        "",
        f"As of {data['as_of']} for subject `{data['subject']}`: {data['used']} of "
        f"{data['budget']} {data['unit']} ({counted_by(data['scope'], data['counter'])}). "
        f"Pack digest `{data['pack_digest']}`.",
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
