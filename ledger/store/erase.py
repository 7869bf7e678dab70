"""`ledger erase`: remove bodies, keep the audit (docs/reference/retention.md).

One write transaction per command: the `erase` entry, one `erasures` row per
erased version, the body set to NULL, its full-text entry removed (the title,
which is metadata, is indexed again alone), and, on SQLite, the index merged so
that no segment keeps the body's words. SQLite overwrites the freed bytes
(`secure_delete` for the transaction) and a `wal_checkpoint(TRUNCATE)` after the
commit moves the rewritten pages into the file and empties the WAL; PostgreSQL
vacuums and re-analyzes the tables after the commit (the planner statistics held
sampled bodies). A SIGKILL before the commit leaves nothing of the erase; after
it, everything.

Token counts under every counter are cached before a body goes, so builds and
replays with `--counter` still cost an erased version; replay says where it used
the recorded count instead of a recount.
"""

from __future__ import annotations

import datetime
import sqlite3
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine, inspect, select, update
from sqlalchemy.exc import DBAPIError

from ledger.core.erasure import (
    VersionSpan,
    check_reason,
    ended_versions,
    erase_payload,
    metadata_digest,
)
from ledger.core.errors import InputError, IntegrityError, RefusedError
from ledger.core.reasons import is_date
from ledger.store import fulltext
from ledger.store.access import policy_at
from ledger.store.chain import reserve_entry, seal_entry
from ledger.store.engine import insert_tuples, write_transaction
from ledger.store.ingest import record_from_row
from ledger.store.readers import IN_LIST, erased_info, resolve_ref
from ledger.store.schema import erasures, retractions, versions
from ledger.store.token_cache import count_tokens
from ledger.store.verify_rows import bad_rows
from ledger.tokens import counter_id

_NOTHING = "nothing to erase: give refs, ended_before or retention"
COUNTERS = ("utf8-bytes", "cl100k_base", "o200k_base")  # besides estimated_tokens


def erase_entries(conn: Connection) -> dict[int, tuple[list[tuple[str, str]], set[str]]]:
    """Per erase entry: its (record digest, metadata digest) pairs and reasons."""
    out: dict[int, tuple[list[tuple[str, str]], set[str]]] = {}
    q = (
        select(
            erasures.c.entry_seq,
            versions.c.record_digest,
            erasures.c.metadata_digest,
            erasures.c.reason,
        )
        .select_from(erasures.outerjoin(versions, versions.c.vid == erasures.c.vid))
        .order_by(erasures.c.entry_seq, erasures.c.vid)
    )
    rows: Any = conn.execute(q)
    for seq, rd, md, reason in rows:
        items, reasons = out.setdefault(int(seq), ([], set()))
        items.append((str(rd), str(md)))
        reasons.add(reason)
    return out


def _ended(conn: Connection, date: str) -> list[int]:
    c = versions.c
    rows: Any = conn.execute(
        select(c.vid, c.chunk_id, c.effective_from, c.expires_on, c.batch_seq, c.record_digest)
    )
    spans = [
        VersionSpan(int(vid), cid, eff, exp, int(seq), rd) for vid, cid, eff, exp, seq, rd in rows
    ]
    marks: dict[str, list[tuple[int, str]]] = {}
    r = retractions.c
    marked: Any = conn.execute(select(r.chunk_id, r.entry_seq, r.from_date))
    for cid, seq, day in marked:
        marks.setdefault(cid, []).append((int(seq), day))
    return ended_versions(spans, marks, date)


def _targets(
    conn: Connection, refs: Sequence[str], ended_before: str | None, retention: bool, today: str
) -> tuple[list[int], str | None]:
    """The versions an erase names, and the `ended_before` date it used."""
    if refs:
        vids: set[int] = set()
        for ref in refs:
            vids.update(int(r.vid) for r in resolve_ref(conn, ref))
        return sorted(vids), None
    if retention:
        policy = policy_at(conn)
        if policy is None or policy.retain_bodies is None:
            raise RefusedError(
                "retention: the policy has no retention; set one (`retain_bodies`, in days), "
                "or name the date with `ended_before`",
                param="retention",
            )
        day = datetime.date.fromisoformat(today) - datetime.timedelta(days=policy.retain_bodies)
        ended_before = day.isoformat()
    if ended_before is None:  # `erase` lets no call through without one of the three
        raise InputError(_NOTHING)
    return _ended(conn, ended_before), ended_before


def _check_bodies(conn: Connection, vids: list[int]) -> None:
    """Refuse to erase a body that does not match its digests: erasing it would
    hide the tampering that verify would otherwise report."""
    for start in range(0, len(vids), IN_LIST):
        bad = next(bad_rows(conn, versions.c.vid.in_(vids[start : start + IN_LIST])), None)
        if bad is not None:
            raise IntegrityError(
                f"{bad}; nothing erased: the database was altered, run `ledger verify`"
            )


def _cache_counts(conn: Connection, vids: list[int]) -> None:
    for name in COUNTERS:
        count_tokens(conn, vids, counter_id(name))


def erase(
    engine: Engine,
    refs: Sequence[str] = (),
    *,
    reason: str | None,
    ended_before: str | None = None,
    retention: bool = False,
    today: str | None = None,
) -> dict[str, Any]:
    """Erase the bodies named by REFs, or of every version ended by a date (or by
    the policy's retention); `erase --json`. Idempotent: bodies erased before are
    listed under `already_erased`, and a run that erases nothing new writes no
    entry (`"entry": null`)."""
    given = sum((bool(refs), ended_before is not None, retention))
    if given != 1:
        raise InputError(
            "name what to erase one way: refs, ended_before or retention" if given else _NOTHING
        )
    try:
        why = check_reason(reason)
    except ValueError as exc:
        raise InputError(str(exc), param="reason") from None
    if ended_before is not None and not is_date(ended_before):
        raise InputError(
            f"ended_before: {ended_before!r} must use YYYY-MM-DD and be a real date",
            param="ended_before",
        )
    day = today or datetime.date.today().isoformat()
    sqlite = engine.dialect.name == "sqlite"
    with write_transaction(engine) as conn:
        if sqlite:
            # Freed cells and pages are zeroed as this transaction frees them. A
            # pragma is no part of the transaction: it is set back in any case.
            before: Any = conn.exec_driver_sql("PRAGMA secure_delete").scalar_one()
            conn.exec_driver_sql("PRAGMA secure_delete = ON")
        try:
            vids, date = _targets(conn, list(refs), ended_before, retention, day)
            done = erased_info(conn, vids)
            new = [v for v in vids if v not in done]
            seq = _erase(conn, new, why) if new else None
            listed = _listing(conn, vids)
        finally:
            if sqlite:
                conn.exec_driver_sql(f"PRAGMA secure_delete = {int(before)}")
    checkpoint = _scrub(engine)  # also finishes what an earlier erase could not
    return {
        "entry": seq,
        "reason": why,
        "ended_before": date,
        "erased": [listed[v] for v in new],
        "already_erased": [{**listed[v], "erased": done[v]} for v in vids if v in done],
        "scrubbed": checkpoint,
    }


def _listing(conn: Connection, vids: list[int]) -> dict[int, dict[str, Any]]:
    c = versions.c
    out: dict[int, dict[str, Any]] = {}
    for start in range(0, len(vids), IN_LIST):
        q = select(c.vid, c.chunk_id, c.source_version, c.record_digest, c.content_digest).where(
            c.vid.in_(vids[start : start + IN_LIST])
        )
        rows: Any = conn.execute(q)
        for vid, cid, sv, rd, cd in rows:
            out[int(vid)] = {
                "id": cid,
                "source_version": sv,
                "record_digest": rd,
                "content_digest": cd,
            }
    return out


def _erase(conn: Connection, vids: list[int], reason: str) -> int:
    _check_bodies(conn, vids)
    _cache_counts(conn, vids)
    rows: list[Any] = []
    for start in range(0, len(vids), IN_LIST):
        part = vids[start : start + IN_LIST]
        rows += conn.execute(select(versions).where(versions.c.vid.in_(part)))
    items: list[tuple[int, str, str]] = []
    for r in rows:
        rec = record_from_row(r).to_json()
        items.append((int(r.vid), r.record_digest, metadata_digest(rec, r.content_digest)))
    seq = reserve_entry(conn, "erase")
    insert_tuples(
        conn,
        erasures,
        ("vid", "entry_seq", "reason", "metadata_digest"),
        [(vid, seq, reason, md) for vid, _rd, md in items],
    )
    if _has_index(conn):
        fulltext.unindex(conn, [(int(r.vid), r.title, r.content) for r in rows])
        # The title is metadata and stays searchable; the body's words are gone.
        fulltext.index_rows(conn, [(int(r.vid), r.title, None) for r in rows if r.title])
        if conn.dialect.name == "sqlite":
            # FTS5 records a delete as a marker in a new segment; merging every
            # segment drops the old ones that still hold the body's words.
            conn.exec_driver_sql(
                f"INSERT INTO {fulltext.TABLE} ({fulltext.TABLE}) VALUES ('optimize')"
            )
    for start in range(0, len(vids), IN_LIST):
        conn.execute(
            update(versions)
            .where(versions.c.vid.in_(vids[start : start + IN_LIST]))
            .values(content=None)
        )
    seal_entry(conn, seq, erase_payload([(rd, md) for _vid, rd, md in items], reason))
    return seq


def _has_index(conn: Connection) -> bool:
    return inspect(conn).has_table(fulltext.TABLE)


def _scrub(engine: Engine) -> dict[str, Any]:
    """After the commit: SQLite moves the rewritten pages into the file and empties
    the WAL; PostgreSQL vacuums the tables that held the bodies. Says whether it
    could do all of it (a reader holding an old snapshot delays the checkpoint); a
    failure here is no failure of the erase, which is committed: it is reported."""
    if engine.dialect.name == "sqlite":
        method = "sqlite wal_checkpoint(TRUNCATE)"
        # On the driver's connection, outside any transaction: a transaction of
        # this connection would hold a snapshot and stop the checkpoint itself.
        raw = engine.raw_connection()
        try:
            cur = raw.cursor()
            cur.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            row: Any = cur.fetchone()
            busy, log, done = row
            cur.close()
        except sqlite3.Error as exc:
            return {"method": method, "complete": False, "error": " ".join(str(exc).split())}
        finally:
            raw.close()
        return {"method": method, "complete": bool(busy == 0 and log == done)}
    # VACUUM ANALYZE: the freed tuples, and the planner statistics (pg_stats:
    # most common values, histograms, lexemes) sampled by autovacuum while the
    # bodies were there, recomputed without them.
    method = "postgresql VACUUM ANALYZE"
    try:
        with engine.connect() as conn:
            auto = conn.execution_options(isolation_level="AUTOCOMMIT")
            for table in ("chunk_versions", "search_index"):
                auto.exec_driver_sql(f"VACUUM ANALYZE {table}")
    except DBAPIError as exc:
        return {"method": method, "complete": False, "error": " ".join(str(exc.orig).split())}
    return {"method": method, "complete": True}


__all__ = ["erase", "erase_entries"]
