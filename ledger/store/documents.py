"""Document ingest and retraction, store side: what one run of `ledger ingest
PATH... --rules` writes, and `ledger retract`.

A run (planned and chunked by `ledger.ingest.docplan`) is written in the caller's
transaction: the chunk versions that are new as one ingest entry; the location
(`lines`/`pages`, not hashed) of versions whose section only moved; the source's
file state (`document_files`, the incremental path); and, for a snapshot, one
`retract` entry for the source's ids that are absent now, from the run's
effective date. A run that stores nothing new writes no ingest entry.

Versions: a chunk id's newest version is *unchanged* when its hashed substance
(content, title, path, the rule's metadata, the counted tokens, the dedupe key)
is the same now, whatever the run's version and date, unless a retraction came
after it: the FastAPI docs at a newer commit keep the id, version and record
digest of every section whose text did not change. A changed text becomes a new
version of the same id, stamped with the run's version and effective date.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec
from sqlalchemy import Connection, Engine, bindparam, delete, func, insert, select, update

from ledger.core.canonical import content_digest, digest_value
from ledger.core.erasure import check_reason
from ledger.core.errors import InputError, IntegrityError, NotFoundError, RefusedError
from ledger.core.records import (
    RecordError,
    check_dedupe_groups,
    identifier,
    iso_date,
    printable,
)
from ledger.core.results import DocumentIngestSummary, RetractResult
from ledger.store.chain import reserve_entry, seal_entry
from ledger.store.engine import write_transaction
from ledger.store.fulltext import index_batch
from ledger.store.ingest import ingest_payload_digest, record_from_row
from ledger.store.schema import batches, document_files, reinstatements, retractions, versions

_IN = 900  # ids per IN (...) list: under SQLite's default variable limit


def retract_payload(ids: Sequence[str], from_date: str, reason: str | None) -> str:
    """Digest of a retract entry: the sorted ids, the date and the reason."""
    return digest_value(
        {"from": from_date, "ids": sorted(ids), "kind": "retract", "reason": reason}
    )


def reinstate_payload(ids: Sequence[str], from_date: str, reason: str | None) -> str:
    """Digest of a reinstate entry: the sorted ids, the date and the reason."""
    return digest_value(
        {"from": from_date, "ids": sorted(ids), "kind": "reinstate", "reason": reason}
    )


def stored_files(conn: Connection, source: str) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """The source's file state after its last run: path -> (file digest, rules digest, ids)."""
    t = document_files.c
    out: dict[str, tuple[str, str, tuple[str, ...]]] = {}
    rows: Iterable[tuple[str, str, str, str]] = conn.execute(
        select(t.path, t.file_digest, t.meta_digest, t.chunk_ids).where(t.source == source)
    )
    for path, file_digest, meta_digest, ids in rows:
        try:
            out[path] = (file_digest, meta_digest, tuple(_decode_ids(ids)))
        except (msgspec.DecodeError, TypeError):
            raise IntegrityError(
                f"the stored state of file {path!r} of source {source!r} is not a list of "
                "chunk ids: the database was altered; run `ledger verify`"
            ) from None
    return out


# A file's chunk ids as stored (a JSON list of strings), decoded and checked in C.
_decode_ids = msgspec.json.Decoder(list[str]).decode


_SUBSTANCE = (
    "content",
    "title",
    "path",
    "section",
    "trust",
    "required_permission",
    "priority",
    "required",
    "dedupe_key",
    "estimated_tokens",
    "expires_on",
)


def _substance(obj: Any) -> tuple[Any, ...]:
    return tuple(
        bool(obj.required) if name == "required" else getattr(obj, name) for name in _SUBSTANCE
    )


def _same(old: Any, rec: Any) -> bool:
    """Whether a stored version has the record's substance. An erased body (NULL)
    compares by its content digest: the same text again is no new version, and
    does not bring the body back."""
    if old.content is not None:
        return _substance(old) == _substance(rec)
    at = _SUBSTANCE.index("content")
    mine, theirs = list(_substance(old)), list(_substance(rec))
    mine[at], theirs[at] = old.content_digest, content_digest(rec.content)
    return mine == theirs


def _newest_retraction(conn: Connection, ids: Iterable[str]) -> dict[str, int]:
    """The newest retract entry of each id (ids never retracted are absent)."""
    return _newest_mark(conn, retractions, ids)


def _newest_mark(conn: Connection, table: Any, ids: Iterable[str]) -> dict[str, int]:
    """The newest entry of `table` (retractions or reinstatements) naming each id:
    the table read whole when it holds no more rows than there are ids (an
    unchanged snapshot asks about every id it holds), else by the ids."""
    out: dict[str, int] = {}
    wanted = set(ids)
    r = table.c
    newest = select(r.chunk_id, func.max(r.entry_seq)).group_by(r.chunk_id)
    rows: Iterable[tuple[str, int]]
    if conn.execute(select(func.count()).select_from(table)).scalar_one() <= len(wanted):
        rows = conn.execute(newest)
        return {cid: int(seq) for cid, seq in rows if cid in wanted}
    id_list = sorted(wanted)
    for start in range(0, len(id_list), _IN):
        rows = conn.execute(newest.where(r.chunk_id.in_(id_list[start : start + _IN])))
        for cid, seq in rows:
            out[cid] = int(seq)
    return out


def _withdrawn(conn: Connection, ids: Iterable[str], newest: Mapping[str, Any]) -> set[str]:
    """Those of `ids` whose newest stored version a retraction withdraws at the
    head: a retract entry after that version's ingest, and no reinstate entry
    after it. `newest`: the newest versions already read (`_newest_versions`);
    those of the other retracted ids are read here."""
    retracted = _newest_retraction(conn, ids)
    if not retracted:
        return set()
    ingested = {cid: row.batch_seq for cid, row in newest.items()}
    missing = [cid for cid in retracted if cid not in ingested]
    ingested.update((cid, row.batch_seq) for cid, row in _newest_versions(conn, missing).items())
    reinstated = _newest_mark(conn, reinstatements, retracted)
    return {
        cid
        for cid, seq in retracted.items()
        if cid in ingested and seq > ingested[cid] and seq > reinstated.get(cid, 0)
    }


def _newest_versions(conn: Connection, ids: Iterable[str]) -> dict[str, Any]:
    """The newest stored version (by ingest) of each id."""
    c = versions.c
    cols = [
        versions.c[name]
        for name in (
            "vid",
            "chunk_id",
            "batch_seq",
            "loc_kind",
            "loc_first",
            "loc_last",
            "content_digest",
            *_SUBSTANCE,
        )
    ]
    out: dict[str, Any] = {}
    id_list = sorted(set(ids))
    for start in range(0, len(id_list), _IN):
        part = id_list[start : start + _IN]
        for row in conn.execute(select(*cols).where(c.chunk_id.in_(part)).order_by(c.vid)):
            out[row.chunk_id] = row  # ascending vid: the newest wins
    return out


def _insert_retraction(
    conn: Connection, ids: Sequence[str], from_date: str, reason: str | None
) -> int:
    return _insert_mark(conn, retractions, "retract", ids, from_date, reason)


def _insert_mark(
    conn: Connection, table: Any, kind: str, ids: Sequence[str], from_date: str, reason: str | None
) -> int:
    """One `retract` or `reinstate` entry naming `ids` from `from_date`."""
    seq = reserve_entry(conn, kind)
    conn.execute(
        insert(table),
        [
            {"entry_seq": seq, "chunk_id": cid, "from_date": from_date, "reason": reason}
            for cid in sorted(ids)
        ],
    )
    payload = retract_payload if kind == "retract" else reinstate_payload
    seal_entry(conn, seq, payload(ids, from_date, reason))
    return seq


def _row(p: Any, batch_seq: int) -> dict[str, Any]:
    rec = p.record
    return {
        "chunk_id": rec.id,
        "source_version": rec.source_version,
        "section": rec.section,
        "source_uri": rec.source_uri,
        "effective_from": rec.effective_from,
        "expires_on": rec.expires_on,
        "required_permission": rec.required_permission,
        "trust": rec.trust,
        "dedupe_key": rec.dedupe_key,
        "estimated_tokens": rec.estimated_tokens,
        "priority": rec.priority,
        "required": rec.required,
        "content": rec.content,
        "content_digest": content_digest(rec.content),
        "record_digest": p.digest,
        "batch_seq": batch_seq,
        "title": rec.title,
        "path": rec.path,
        "loc_kind": p.location_kind,
        "loc_first": p.location[0],
        "loc_last": p.location[1],
    }


def _refuse_shared_ids(
    conn: Connection,
    source: str,
    plans: Sequence[Any],
    newest: Mapping[str, Any],
    held: set[str],
) -> None:
    """Two files must never give one chunk id: `Security-keys.md` would otherwise
    take over the id of `security/keys.md` and supersede its text. Refused when
    the run's files collide, or when the stored id belongs to another file the
    source still holds (`held`) or another source holds (source `kb-security`'s
    `keys.md` slugs like source `kb`'s `security-keys.md`); a file renamed away
    gives its ids to the new name."""
    first: dict[str, Any] = {}
    for p in plans:
        other = first.setdefault(p.record.id, p)
        if other.record.path != p.record.path:
            raise RefusedError(_shared(p.record.id, other.record.path, p.record.path))
        old = newest.get(p.record.id)
        if old is None or old.path in (None, p.record.path):
            continue
        if old.path in held or _held_elsewhere(conn, source, old.path, p.record.id):
            raise RefusedError(_shared(p.record.id, old.path, p.record.path))


def _held_elsewhere(conn: Connection, source: str, path: str, chunk_id: str) -> bool:
    """Whether another source's file at `path` still gives `chunk_id`."""
    t = document_files.c
    rows = conn.execute(select(t.chunk_ids).where(t.path == path, t.source != source))
    return any(chunk_id in json.loads(row.chunk_ids) for row in rows)


def _shared(chunk_id: str, one: str, two: str) -> str:
    return (
        f"chunk id '{chunk_id}' would come from two files, {printable(one)!r} and "
        f"{printable(two)!r} (their paths and headings slug alike); rename one of them, "
        "or give one an explicit heading anchor (if the first was renamed or removed, "
        "ingest the folder as a snapshot so the source lets it go); nothing was stored"
    )


def _check_versions_free(conn: Connection, plans: Sequence[Any]) -> None:
    """A new version must not reuse a stored (id, source_version) with other text."""
    c = versions.c
    by_key = {(p.record.id, p.record.source_version): p for p in plans}
    ids = sorted({p.record.id for p in plans})
    for start in range(0, len(ids), _IN):
        part = ids[start : start + _IN]
        query = select(c.chunk_id, c.source_version, c.record_digest).where(c.chunk_id.in_(part))
        for row in conn.execute(query):
            p = by_key.get((row.chunk_id, row.source_version))
            if p is not None and row.record_digest == p.digest:
                # The same text under the same version, withdrawn since: a retraction
                # holds for the versions before it, so a restore needs a new version.
                raise RefusedError(
                    f"{p.where}: chunk '{row.chunk_id}' version '{row.source_version}' was "
                    "retracted; to bring it back, ingest it under a new source_version",
                    param="source_version",
                )
            if p is not None:
                raise RefusedError(
                    f"{p.where}: chunk '{row.chunk_id}' changed, but version "
                    f"'{row.source_version}' is already stored with other text (record digest "
                    f"{row.record_digest[:12]}); versions are immutable: run with a new "
                    'source_version (or commit the change when version = "git")'
                )


def _check_dedupe(conn: Connection, plans: Sequence[Any]) -> None:
    """The dedupe-group rules (docs/reference/records.md) over everything stored,
    for the keys this run added."""
    keys = sorted({p.record.dedupe_key for p in plans})
    c = versions.c
    for start in range(0, len(keys), _IN):
        part = keys[start : start + _IN]
        groups: Sequence[str] = (
            conn.execute(
                select(c.dedupe_key)
                .where(c.dedupe_key.in_(part))
                .group_by(c.dedupe_key)
                .having(func.count(c.chunk_id.distinct()) > 1)
            )
            .scalars()
            .all()
        )
        if not groups:
            continue
        rows = conn.execute(select(versions).where(c.dedupe_key.in_(groups)).order_by(c.vid)).all()
        try:
            check_dedupe_groups(record_from_row(r) for r in rows)
        except RecordError as exc:
            raise RefusedError(f"{exc}; nothing was stored") from None


def store_run(
    conn: Connection,
    *,
    source: str,
    snapshot: bool,
    version: str,
    effective_from: str,
    paths: Sequence[str],
    files: Sequence[Any],
    plans: Sequence[Any],
    before: dict[str, tuple[str, str, tuple[str, ...]]],
) -> DocumentIngestSummary:
    """Write one document run inside the caller's write transaction.

    `files` are the run's file results (`relpath`, digests, `ids`, `reused`),
    `plans` the chunks of the files that were parsed (`record`, `digest`,
    `location_kind`, `location`, `where`), `before` the source's file state read
    at the start of the transaction. Raises `RefusedError` for a changed text
    under a stored id and version, or a broken dedupe group.
    """
    reused = sum(len(f.ids) for f in files if f.reused)
    kept = [cid for f in files if f.reused for cid in f.ids]  # files unchanged since
    planned = [p.record.id for p in plans]
    newest = _newest_versions(conn, planned)
    _refuse_shared_ids(
        conn,
        source,
        plans,
        newest,
        {f.relpath for f in files} | (set() if snapshot else set(before)),
    )
    withdrawn = _withdrawn(conn, planned + kept, newest)
    new_plans: list[Any] = []
    moves: list[dict[str, Any]] = []
    # Withdrawn ids the snapshot holds with the same text: reinstated below.
    back: list[str] = [cid for cid in kept if cid in withdrawn] if snapshot else []
    unchanged = reused
    for p in plans:
        old = newest.get(p.record.id)
        if old is None or not _same(old, p.record):
            new_plans.append(p)
            continue
        if p.record.id in withdrawn and snapshot:
            back.append(p.record.id)
        if p.record.id not in withdrawn or snapshot:
            unchanged += 1
            if (old.loc_kind, old.loc_first, old.loc_last) != (p.location_kind, *p.location):
                moves.append(
                    {
                        "b_vid": old.vid,
                        "b_kind": p.location_kind,
                        "b_first": p.location[0],
                        "b_last": p.location[1],
                    }
                )
            continue
        new_plans.append(p)
    _check_versions_free(conn, new_plans)
    read = len(plans) + reused

    batch_seq: int | None = None
    if new_plans:
        batch_seq = reserve_entry(conn, "ingest")
        names = sorted({os.path.basename(os.path.normpath(p)) for p in paths})
        conn.execute(
            insert(batches).values(
                seq=batch_seq,
                read_count=read,
                new_count=len(new_plans),
                unchanged_count=unchanged,
                sources=json.dumps(names),
            )
        )
        for start in range(0, len(new_plans), 2000):
            conn.execute(
                insert(versions), [_row(p, batch_seq) for p in new_plans[start : start + 2000]]
            )
        _check_dedupe(conn, new_plans)
        index_batch(conn, batch_seq)  # the full-text index, in the same transaction
        seal_entry(conn, batch_seq, ingest_payload_digest(conn, batch_seq, read, unchanged, names))
    if moves:
        conn.execute(
            update(versions)
            .where(versions.c.vid == bindparam("b_vid"))
            .values(
                loc_kind=bindparam("b_kind"),
                loc_first=bindparam("b_first"),
                loc_last=bindparam("b_last"),
            ),
            moves,
        )

    # The source's file state after the run: rows of files that changed are
    # rewritten, and a snapshot drops the rows of files it no longer has.
    t = document_files.c
    now_paths = {f.relpath for f in files}
    stale = sorted(p for p in before if p not in now_paths) if snapshot else []
    changed = [
        f for f in files if before.get(f.relpath) != (f.file_digest, f.meta_digest, tuple(f.ids))
    ]
    drop = stale + [f.relpath for f in changed if f.relpath in before]
    for start in range(0, len(drop), _IN):
        conn.execute(
            delete(document_files).where(t.source == source, t.path.in_(drop[start : start + _IN]))
        )
    if changed:
        conn.execute(
            insert(document_files),
            [
                {
                    "source": source,
                    "path": f.relpath,
                    "file_digest": f.file_digest,
                    "meta_digest": f.meta_digest,
                    "chunk_ids": json.dumps(f.ids),
                }
                for f in changed
            ],
        )

    retract_seq: int | None = None
    absent: list[str] = []
    if snapshot:
        now = {cid for f in files for cid in f.ids}
        gone = {cid for _d, _m, ids in before.values() for cid in ids} - now
        if gone:
            last = _newest_versions(conn, gone)
            out = _withdrawn(conn, last, last)
            absent = sorted(c for c in gone if c in last and c not in out)
        if absent:
            retract_seq = _insert_retraction(
                conn, absent, effective_from, f"absent from snapshot {version} of source {source}"
            )
    reinstate_seq: int | None = None
    if back:  # docs/reference/retention.md: a snapshot that holds a retracted id
        reinstate_seq = _insert_mark(
            conn, reinstatements, "reinstate", back, effective_from,
            f"held by snapshot {version} of source {source}",
        )  # fmt: skip
    return DocumentIngestSummary(
        batch=batch_seq,
        read=read,
        new=len(new_plans),
        unchanged=unchanged,
        files=len(files),
        retracted=tuple(absent),
        retract_entry=retract_seq,
        reinstated=tuple(sorted(back)),
        reinstate_entry=reinstate_seq,
        moved=len(moves),
        parsed_files=sum(1 for f in files if not f.reused),
    )


def retract(
    engine: Engine, ids: Sequence[str], from_date: str, reason: str | None = None
) -> RetractResult:
    """Withdraw chunk ids from `from_date` on (valid time), as one `retract` entry.

    Builds whose ledger mark includes the entry evict every version of those ids
    ingested before it with `retracted {from, entry}`. Raises `NotFoundError`
    (exit 3) for an id the ledger does not hold; nothing is written then.
    """
    unique, reason = _checked_request(ids, from_date, reason, "retract")
    with write_transaction(engine) as conn:
        _refuse_unknown(conn, unique)
        seq = _insert_retraction(conn, unique, from_date, reason)
    return RetractResult(seq, tuple(unique), from_date, reason)


def reinstate(
    engine: Engine, ids: Sequence[str], from_date: str, reason: str | None = None
) -> RetractResult:
    """Undo the retractions of chunk ids from `from_date` on, as one `reinstate`
    entry: builds whose ledger mark includes it no longer evict their versions
    by the retract entries written before it (a later retraction withdraws them
    again). An unknown id raises `NotFoundError` (exit 3); an id no retraction
    names, `InputError`; nothing is written then."""
    unique, reason = _checked_request(ids, from_date, reason, "reinstate")
    with write_transaction(engine) as conn:
        _refuse_unknown(conn, unique)
        withdrawn = _newest_retraction(conn, unique)
        never = [cid for cid in unique if cid not in withdrawn]
        if never:
            raise InputError(
                f"chunk id '{never[0]}' was never retracted: there is nothing to reinstate "
                "(`ledger chunks` shows each version's state); nothing reinstated"
            )
        seq = _insert_mark(conn, reinstatements, "reinstate", unique, from_date, reason)
    return RetractResult(seq, tuple(unique), from_date, reason)


def _checked_request(
    ids: Sequence[str], from_date: str, reason: str | None, verb: str
) -> tuple[list[str], str | None]:
    """The ids (valid, sorted, once each) and the reason (stripped) of a retract
    or reinstate request, its date checked."""
    if not ids:
        raise InputError(f"no ID: name one or more chunk ids to {verb}")
    clean: list[str] = []
    for cid in ids:
        try:
            clean.append(identifier(cid, "id"))
        except RecordError as exc:
            raise InputError(f"{cid!r}: not a chunk id ({exc.rule})") from None
    try:
        iso_date(from_date, "from")
    except RecordError:
        raise InputError(
            f"from_date: {from_date!r} must use YYYY-MM-DD", param="from_date"
        ) from None
    if reason is not None:
        try:
            reason = check_reason(reason, "leave it out, or say why")
        except ValueError as exc:
            raise InputError(str(exc), param="reason") from None
    return sorted(set(clean)), reason


def _refuse_unknown(conn: Connection, ids: Sequence[str]) -> None:
    known: set[str] = set()
    for start in range(0, len(ids), _IN):
        part = list(ids[start : start + _IN])
        query = select(versions.c.chunk_id).where(versions.c.chunk_id.in_(part)).distinct()
        known.update(conn.execute(query).scalars())
    missing = [cid for cid in ids if cid not in known]
    if missing:
        raise NotFoundError(
            f"chunk id '{missing[0]}' is not in the ledger (see `ledger chunks`); "
            "nothing was written"
        )
