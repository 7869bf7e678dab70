"""`ledger verify`'s check of the packs: every pack's figures, input digest and
pack digest recomputed from its decision rows (docs/reference/digests.md).

A large ledger holds millions of decisions over a few versions each: the
versions are read once (the fields a pack's digests and details are made of),
each pack's decision rows alone (the driver's tuples, beside their versions').
Where a row is needed (an admission, an eviction entry not in the previous
pack) it is its decision's fields followed by its version's, laid out as
`VerifyRow` (the last four only in the rows whose detail reads them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from ledger.core.canonical import canonical_json, trusted_json
from ledger.core.digests import eviction_entries, eviction_head, safe_ints
from ledger.core.errors import IntegrityError
from ledger.core.reasons import ADMITTED, REASON_CODES, REF, RETRACTED, TABLE, Reason
from ledger.core.transcript import budget_unit
from ledger.store.engine import fetch_tuples, row_type
from ledger.store.inputs import inputs_of
from ledger.store.packs import bad_pack_types, detail_of
from ledger.store.recording import input_digest_of, manifest_digest
from ledger.store.schema import decisions, packs, retractions, versions
from ledger.store.verify_rows import VERSION_COLUMNS
from ledger.tokens import ESTIMATED

_DECISION_FIELDS = ("vid", "status", "tokens", "position", "remaining", "ref_vid")
# A version's fields as the reader keeps them: its columns read by the check of
# the versions, without the vid and the priority (only type-checked).
_VERSION_FIELDS = VERSION_COLUMNS[1:-1]
# Read only for the rows whose detail needs them (`VerifyReader.extended`).
_EXTRA_FIELDS = ("retracted_from", "ref_id", "ref_version", "ref_digest")
VerifyRow = row_type("VerifyRow", [*_DECISION_FIELDS, *_VERSION_FIELDS, *_EXTRA_FIELDS])
_SHORT = len(_DECISION_FIELDS) + len(_VERSION_FIELDS)
_STATUS, _TOKENS, _POSITION, _REMAINING, _REF_VID = 1, 2, 3, 4, 5
_ID = VerifyRow._fields.index("chunk_id")  # then source_version
_DIGEST = VerifyRow._fields.index("record_digest")
_ESTIMATED = VerifyRow._fields.index("estimated_tokens")
_NAMED_ESTIMATED = _ESTIMATED - _DIGEST  # among a version's fields alone

# The decision row fields of a detail that are read through others: a
# retraction's date through its retract entry (`remaining`) and chunk, the
# version referred to through its vid.
_READ_BY = {"retracted_from": ("remaining", "chunk_id"), REF: ("ref_vid",)}


def _deciding_fields(reason: Reason) -> tuple[str, ...]:
    """The fields of a short row that decide a reason's detail: equal fields,
    equal details (from the table's detail fields)."""
    out: list[str] = []
    for _key, field in reason.detail:
        for name in _READ_BY.get(field, (field,)):
            if name not in out:
                out.append(name)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class DetailMaker:
    """How verify makes the eviction head of one stored status: its reason, the
    row positions that decide its detail, whether the detail reads the last four
    fields (`extended`) and whether those positions reach into the version's
    fields (`versioned`: the decision's own are not enough)."""

    reason: str
    positions: tuple[int, ...]
    extended: bool
    versioned: bool

    def key(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(row[i] for i in self.positions)


def _maker(reason: Reason) -> DetailMaker:
    fields = _deciding_fields(reason)
    read = [f for _key, f in reason.detail]
    return DetailMaker(
        reason.name,
        tuple(VerifyRow._fields.index(f) for f in fields),
        any(f in _EXTRA_FIELDS or f == REF for f in read),
        not set(fields) <= set(_DECISION_FIELDS),
    )


# Per stored status, read from the one table of reasons.
VERIFY_DETAIL: dict[int, DetailMaker] = {r.status: _maker(r) for r in TABLE if r.status is not None}
# Evictions whose detail names another version: a row must have it.
_REFERRING = {r.status for r in TABLE if r.status is not None and r.ref_key is not None}


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


def _int_or_none(value: Any) -> bool:
    return value is None or type(value) is int


def decisions_typed(found: list[tuple[Any, ...]]) -> bool:
    """Whether every decision's status and tokens are integers, and its position
    and remaining integers or None (SQLite keeps any type in any column; its
    storage class is the Python type the driver returns)."""
    for row in found:
        if type(row[_STATUS]) is not int or type(row[_TOKENS]) is not int:
            return False
        if not (_int_or_none(row[_POSITION]) and _int_or_none(row[_REMAINING])):
            return False
    return True


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
            read = _read_versions(conn, after)
        self.versions: dict[int, tuple[Any, ...]] = {}
        # SQLite keeps any type in any column: a decision naming a version whose
        # integers are not, or whose record digest is not text, is reported as
        # the pack's, as `decision_rows` does.
        self.untyped: set[int] = set()
        for vid, *fields, priority in read:
            self.versions[vid] = tuple(fields)
            digest, estimated = fields[0], fields[1]
            if type(estimated) is not int or type(priority) is not int or type(digest) is not str:
                self.untyped.add(vid)
        # The previous pack's vids, decisions and eviction entries (kept by `check_pack`).
        self.entries: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
        # The previous pack's versions: the next pack mostly names the same.
        self.last = PackVersions([], None, [], [])
        # Per status, the eviction heads made so far, by the fields that decide
        # them. Equal fields, one head written once, in any pack (a budget
        # eviction's amounts recur from pack to pack, under new budgets).
        self.heads: dict[int, dict[tuple[Any, ...], str]] = {s: {} for s in VERIFY_DETAIL}
        t = retractions.c
        self.retracted: dict[tuple[Any, Any], Any] = {
            (seq, cid): day
            for seq, cid, day in fetch_tuples(conn, select(t.entry_seq, t.chunk_id, t.from_date))
        }

    def _versions_of(self, vids: list[Any]) -> PackVersions:
        """The versions of a pack's decisions (as an inner join: a decision naming
        no version is left out), in vid order, and their order by record digest."""
        named = [self.versions.get(vid) for vid in vids]
        kept = None
        if None in named:
            kept = [n is not None for n in named]
        present = [n for n in named if n is not None]
        digests = [n[0] for n in present]
        try:  # by record digest: the order of the candidates and the evictions
            order = sorted(range(len(digests)), key=digests.__getitem__)
        except TypeError:  # a digest of another type (SQLite): the digests tell
            order = list(range(len(digests)))
        return PackVersions(vids, kept, present, order)

    def decisions(self, pack_no: int) -> tuple[list[tuple[Any, ...]], PackVersions]:
        """A pack's decisions whose version exists (as an inner join), by vid, and
        their versions; IntegrityError if a field has the wrong type. A decision
        and its version's fields make a row laid out as `VerifyRow`."""
        d = decisions.c
        query = select(*(d[name] for name in _DECISION_FIELDS)).where(d.pack_no == pack_no)
        found = fetch_tuples(self.conn, query.order_by(d.vid))
        vids = [row[0] for row in found]
        if vids != self.last.vids:
            self.last = self._versions_of(vids)
        last = self.last
        if last.kept is not None:
            found = [row for row, kept in zip(found, last.kept, strict=True) if kept]
        if self.sqlite and not self._typed(found):
            raise IntegrityError(
                f"pack {pack_no}: a decision has a field of the wrong type; "
                "the database was altered: run `ledger verify`"
            )
        return found, last

    def _typed(self, found: list[tuple[Any, ...]]) -> bool:
        if not decisions_typed(found):
            return False
        return not (self.untyped and any(row[0] in self.untyped for row in found))

    def extended(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """A row with its last four fields: the retraction's date (a retracted
        row), the id, version and record digest of the version it refers to."""
        if len(row) > _SHORT:
            return row
        retracted = None
        if row[_STATUS] == REASON_CODES[RETRACTED]:  # `remaining` holds the retract entry
            retracted = self.retracted.get((row[_REMAINING], row[_ID]))
        ref: tuple[Any, ...] = (None, None, None)
        ref_vid = row[_REF_VID]
        if ref_vid is not None:
            named = self.versions.get(ref_vid)
            if named is None:  # not among the checked packs' versions
                c = versions.c
                hit = self.conn.execute(
                    select(c.chunk_id, c.source_version, c.record_digest).where(c.vid == ref_vid)
                ).first()
                ref = tuple(hit) if hit is not None else ref
            else:
                ref = (named[_ID - _DIGEST], named[_ID - _DIGEST + 1], named[0])
        return (*row, retracted, *ref)

    @staticmethod
    def named(row: tuple[Any, ...]) -> Any:
        """A row as a `VerifyRow` (its last four fields read by `extended`)."""
        return VerifyRow._make(row if len(row) > _SHORT else (*row, None, None, None, None))

    @staticmethod
    def name(row: tuple[Any, ...]) -> str:
        """`id@version` of a row's version, to name it in a problem."""
        return f"{row[_ID]}@{row[_ID + 1]}"


def _read_versions(conn: Connection, after: int) -> list[tuple[Any, ...]]:
    """Every version's `VERSION_COLUMNS`; with `after`, of the versions that the
    packs recorded after that entry name."""
    v = versions.c
    query = select(*(v[name] for name in VERSION_COLUMNS))
    if after:
        named = select(decisions.c.vid).join(packs, packs.c.pack_no == decisions.c.pack_no)
        query = query.where(v.vid.in_(named.where(packs.c.entry_seq > after)))
    return fetch_tuples(conn, query)


def _position(row: tuple[Any, ...]) -> int:
    position = row[_POSITION]
    return -1 if position is None else position


def _figures_problem(
    reader: VerifyReader, head: Any, found: list[Any], named: list[Any], admitted: list[Any]
) -> str | None:
    """A pack's recorded figures against its decisions: positions, used, budget,
    and every token count (safe integers; the version's estimate under it)."""
    if [r[_POSITION] for r in admitted] != list(range(len(admitted))):
        return "admitted positions are not 0..n-1"
    used = sum(r[_TOKENS] for r in admitted)
    if used != head.used:
        unit = budget_unit(head.scope)
        return f"admitted {unit} add up to {used}, the pack records used {head.used}"
    if used > head.budget:
        return f"used {used} exceeds the budget {head.budget}"
    tokens = [row[_TOKENS] for row in found]
    if not safe_ints(tokens):
        # No build writes one (the manifest is RFC 8785 JSON): a changed row.
        for row, version in zip(found, named, strict=True):
            if not safe_ints([row[_TOKENS]]):
                return f"{reader.name(row + version)}: tokens outside JSON's safe integer range"
    if head.counter == ESTIMATED and tokens != [v[_NAMED_ESTIMATED] for v in named]:
        for row, version in zip(found, named, strict=True):
            if row[_TOKENS] != version[_NAMED_ESTIMATED]:
                return f"{reader.name(row + version)}: tokens differ from the version's estimate"
    return None


def _snapshots_problem(head: Any, inputs: Any) -> str | None:
    if (
        canonical_json(list(inputs.grants)) != head.grants
        or canonical_json(inputs.policy.to_json()) != head.policy
    ):
        # The input digest covers the parsed snapshots; what is stored (and shown by
        # `show --json`) must be exactly their canonical form, without extra keys.
        return "its grants or policy snapshot is not in its recorded form"
    return None


def check_pack(reader: VerifyReader, head: Any) -> tuple[str | None, int]:
    """Recompute a pack's figures, input digest and pack digest from its rows:
    (what is wrong or None, the number of decisions read)."""
    bad = bad_pack_types(head)
    if bad is not None:
        return bad, 0
    try:
        found, pv = reader.decisions(head.pack_no)
    except IntegrityError as exc:
        return str(exc).split(": ", 1)[-1], 0
    n = len(found)
    try:
        inputs = inputs_of(head, reader.conn)
    except IntegrityError:
        return "its recorded grants or policy snapshot is not readable", n
    why = _snapshots_problem(head, inputs)
    if why is None and n != head.candidate_count:
        why = f"{n} decision rows, the pack records {head.candidate_count} candidates"
    if why is not None:
        return why, n
    named = pv.named
    admitted = sorted(
        (row + version for row, version in zip(found, named, strict=True) if not row[_STATUS]),
        key=_position,
    )
    why = _figures_problem(reader, head, found, named, admitted)
    if why is not None:
        return why, n
    why, entries = eviction_entries_of(reader, found, named)
    if why is not None:
        return why, n
    if pv.candidates is None:  # else the same as the previous pack's
        pv.candidates = trusted_json([named[i][0] for i in pv.order])
    ind = input_digest_of(inputs, pv.candidates)
    if ind != head.input_digest:
        return "input digest does not match the recorded inputs and candidates", n
    # The evictions by record digest (an admitted decision has no entry).
    evicted: list[str] = []
    for i in pv.order:
        entry = entries[i]
        if entry is not None:
            evicted.append(entry)
    pd = manifest_digest(inputs, ind, [(r[_DIGEST], r[_TOKENS]) for r in admitted], evicted)
    if pd != head.pack_digest:
        return "pack digest does not match its decisions", n
    return None, n


def _previous(reader: VerifyReader, vids: list[Any]) -> tuple[list[Any], list[str | None]]:
    """The previous pack's decisions and eviction entries at this pack's vids."""
    last_vids, last_found, last_entries = reader.entries
    if vids == last_vids:
        return last_found, last_entries
    at = {vid: j for j, vid in enumerate(last_vids)}
    where = [at.get(vid) for vid in vids]
    return (
        [None if j is None else last_found[j] for j in where],
        [None if j is None else last_entries[j] for j in where],
    )


def _eviction_head(reader: VerifyReader, row: tuple[Any, ...], version: tuple[Any, ...]) -> str:
    """The eviction head of a decision (its status known to be an eviction's),
    made once per distinct set of the fields that decide it; ValueError naming
    what is wrong when it cannot be made."""
    status = row[_STATUS]
    maker = VERIFY_DETAIL.get(status)
    if maker is None:
        raise ValueError(f"{reader.name(row + version)}: unknown status {status}")
    texts = reader.heads[status]
    # A detail decided by the decision's own fields: no row with its version's.
    key = maker.key(row + version if maker.versioned else row)
    text = texts.get(key)
    if text is None:
        whole = row + version
        named = reader.named(reader.extended(whole) if maker.extended else whole)
        if status in _REFERRING and named.ref_digest is None:
            raise ValueError(
                f"{reader.name(whole)}: {maker.reason} without the version it refers to"
            )
        text = texts[key] = eviction_head(maker.reason, detail_of(maker.reason, named))
    return text


def eviction_entries_of(
    reader: VerifyReader, found: list[tuple[Any, ...]], named: list[tuple[Any, ...]]
) -> tuple[str | None, list[str | None]]:
    """The eviction entry of each decision as `manifest_digest` takes them (None:
    admitted), or the first decision whose status is unknown or whose detail cannot
    be made.

    An entry is decided by its decision's fields (its version's are the same in
    every pack): a decision equal to the previous pack's of its vid keeps its
    entry, as the same versions are mostly decided alike from pack to pack."""
    vids = [row[0] for row in found]
    last_found, last_entries = _previous(reader, vids)
    entries: list[str | None] = list(last_entries)
    changed: list[int] = []  # the decisions whose entries are made here
    made: list[str] = []  # their heads
    for i, (row, before) in enumerate(zip(found, last_found, strict=True)):
        if row == before:
            continue
        if row[_STATUS] == ADMITTED:
            entries[i] = None
            continue
        try:
            made.append(_eviction_head(reader, row, named[i]))
        except ValueError as exc:
            return str(exc), []
        changed.append(i)
    # The entries at once (each version's record digest and each decision's
    # tokens, checked to be in JSON's safe range before).
    digests = [named[i][0] for i in changed]
    tokens = [found[i][_TOKENS] for i in changed]
    for i, entry in zip(changed, eviction_entries(made, digests, tokens), strict=True):
        entries[i] = entry
    reader.entries = (vids, found, entries)
    return None, entries
