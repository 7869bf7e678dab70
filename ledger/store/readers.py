"""Reading chunk versions: what a REF names (the versions of a chunk id or of a
digest prefix; docs/reference/commands.md), and which versions were erased, by
which entry and why (docs/reference/retention.md).

Read by `show`, `why-evicted`, `erase`, search and the reports; it reads only
the versions and erasures tables, so any store module can import it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, or_, select

from ledger.core.errors import InputError, NotFoundError
from ledger.store.engine import fetch_tuples
from ledger.store.schema import erasures, versions

IN_LIST = 500  # ids per IN (...) list

_HEX = re.compile(r"[0-9a-f]+")
_COLUMNS = (
    "vid",
    "chunk_id",
    "source_version",
    "record_digest",
    "content_digest",
    "batch_seq",
    "source_uri",
    "scope",
)


def resolve_ref(conn: Connection, ref: str) -> Sequence[Any]:
    """The versions a REF names: a chunk id, a full content or record digest, or a
    unique hex prefix (8+ characters) of one. Ambiguous prefixes are refused."""
    c = versions.c
    cols = [c[name] for name in _COLUMNS]
    rows = conn.execute(select(*cols).where(c.chunk_id == ref).order_by(c.vid)).all()
    if rows:
        return rows
    low = ref.lower()
    if not _HEX.fullmatch(low):
        raise NotFoundError(f"no chunk id or digest matches {ref!r}; `ledger chunks` lists them")
    if len(low) < 8:
        # Short hex is also a well-formed chunk id ("cafe"): a REF that matches no
        # chunk version is not found (docs/reference/exit-codes.md), whatever it
        # looks like.
        raise NotFoundError(
            f"no chunk id matches {ref!r}, and a digest prefix needs at least 8 hex characters; "
            "`ledger chunks` lists them"
        )
    if len(low) == 64:
        cond = or_(c.record_digest == low, c.content_digest == low)
    else:
        upper = low + "g"  # every hex string with this prefix sorts below prefix+"g"
        cond = or_(
            and_(c.record_digest >= low, c.record_digest < upper),
            and_(c.content_digest >= low, c.content_digest < upper),
        )
    rows = conn.execute(select(*cols).where(cond).order_by(c.vid).limit(50)).all()
    if not rows:
        raise NotFoundError(f"no chunk version has a digest starting with {low}")
    digests = {r.record_digest for r in rows if r.record_digest.startswith(low)}
    digests |= {r.content_digest for r in rows if r.content_digest.startswith(low)}
    if len(digests) > 1 and len({r.vid for r in rows}) > 1:
        listing = "; ".join(
            f"{r.chunk_id}@{r.source_version} (record {r.record_digest[:16]}, content "
            f"{r.content_digest[:16]})"
            for r in rows[:10]
        )
        raise InputError(
            f"ref: {low} is ambiguous, it matches: {listing}; give more characters", param="ref"
        )
    return rows


def contents_of(conn: Connection, vids: Sequence[int]) -> dict[int, str | None]:
    """The contents of these versions by version id (None: erased)."""
    out: dict[int, str | None] = {}
    for start in range(0, len(vids), IN_LIST):
        part = list(vids[start : start + IN_LIST])
        for vid, body in fetch_tuples(conn, _CONTENTS, {"vids": part}):
            out[int(vid)] = None if body is None else str(body)
    return out


# One statement for every read (its IN list expanded as it runs): compiled once.
_CONTENTS = select(versions.c.vid, versions.c.content).where(
    versions.c.vid.in_(bindparam("vids", expanding=True))
)


def erased_info(conn: Connection, vids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """`{"entry", "reason"}` of the erased versions among `vids` (what `show`,
    `export --with-content`, reports and `why` print instead of a body)."""
    out: dict[int, dict[str, Any]] = {}
    unique = sorted(set(vids))
    for start in range(0, len(unique), IN_LIST):
        part = unique[start : start + IN_LIST]
        q = select(erasures.c.vid, erasures.c.entry_seq, erasures.c.reason).where(
            erasures.c.vid.in_(part)
        )
        rows: Any = conn.execute(q)
        for vid, seq, reason in rows:
            out[int(vid)] = {"entry": int(seq), "reason": reason}
    return out


def erased_bodies(conn: Connection) -> int:
    """How many chunk bodies the ledger has erased."""
    return int(conn.execute(select(func.count()).select_from(erasures)).scalar_one())


def erased_by_digest(conn: Connection, record_digests: Sequence[str]) -> dict[str, dict[str, Any]]:
    """As `erased_info`, keyed by record digest."""
    out: dict[str, dict[str, Any]] = {}
    unique = sorted(set(record_digests))
    for start in range(0, len(unique), IN_LIST):
        part = unique[start : start + IN_LIST]
        q = (
            select(versions.c.record_digest, erasures.c.entry_seq, erasures.c.reason)
            .select_from(erasures.join(versions, versions.c.vid == erasures.c.vid))
            .where(versions.c.record_digest.in_(part))
        )
        rows: Any = conn.execute(q)
        for rd, seq, reason in rows:
            out[str(rd)] = {"entry": int(seq), "reason": reason}
    return out
