"""A build's inputs: everything it decides from besides the candidates.

The grants, policy, budget and retractions in force at a ledger time
(`resolve_inputs`) and a transcript continuation's (`transcript_inputs`); a
retrieval build's ranked list is added by `ledger.store.retriever`. What they
mean for the digests: docs/reference/digests.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict, Unpack

from sqlalchemy import Connection, select

from ledger.core.errors import InputError, IntegrityError
from ledger.core.query import RetrievalRecord
from ledger.core.reasons import check_date
from ledger.core.select import SELECTOR_VERSION, Order, Request, order_of_version
from ledger.core.transcript import (
    TRANSCRIPT_EFFECTIVE_FROM,
    TRANSCRIPT_ORDER,
    TRANSCRIPT_PERMISSION,
    TRANSCRIPT_TRUST,
)
from ledger.store.access import Policy, check_budget, check_subject, grants_at, policy_at
from ledger.store.chain import read_head
from ledger.store.packs import retrieval_of, snapshot_of
from ledger.store.schema import entries, reinstatements, retractions, versions
from ledger.tokens import COUNTERS, ESTIMATED, counter_id

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
    # Gate 5: id -> ((reinstate entry, from date), ...) at or before `mark`.
    reinstatements: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
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
        if self.reinstatements:  # as the retractions: [id, entry, from date], by id then entry
            data["reinstatements"] = [
                [chunk_id, entry, day]
                for chunk_id, marks in sorted(self.reinstatements.items())
                for entry, day in marks
            ]
        return data

    @property
    def is_transcript(self) -> bool:
        return self.scope.startswith(TRANSCRIPT_SCOPE)

    def request(self) -> Request:
        """The core's request: documents go through every gate; a transcript's
        exchanges are versions of one source, so gate 6 (superseded) does not apply."""
        return Request(
            as_of=self.as_of,
            granted=frozenset(self.grants),
            allowed_trust=frozenset(self.policy.allowed_trust),
            budget=self.budget,
            supersede=not self.is_transcript,
            retractions=self.retractions,
            reinstatements=self.reinstatements,
        )

    def order(self) -> Order:
        """The preference order (docs/reference/gates.md), or the transcript's
        (pinned, normal, aside; oldest first)."""
        if self.is_transcript:
            return TRANSCRIPT_ORDER
        return order_of_version(self.selector_version)


# The Inputs fields a pack row holds as they are, each under its column's name:
# `record_pack` writes them and `inputs_of` (below) reads them back.
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
            "the ledger is empty: ingest chunks and set a policy (its allowed trust "
            "labels and budget) first"
        )
    mark = ledger_mark(head.seq, ledger_at)
    policy = policy_at(conn, mark)
    if policy is None:
        raise InputError(
            f"no policy at ledger entry {mark}: set one (its allowed trust labels and budget)"
        )
    if budget is None:
        if policy.budget is None:
            raise InputError(
                "budget: none given and the policy sets none (pass one, or set the policy's)",
                param="budget",
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
        reinstatements=reinstatements_at(conn, mark),
    )


def inputs_now(conn: Connection, inputs: Inputs, now: int) -> Inputs | None:
    """A recorded pack's options (as-of date, subject, budget, counter, its
    retrieval) as a build at ledger entry `now` resolves them, when an entry
    after the pack's mark changes what that build decides from: a version
    ingested in its scope, the subject's grants, the allowed trust labels, a
    retraction or reinstatement, or the selector (a pack of an older one). None
    when nothing did: a build now decides from the pack's own inputs.

    A hint holds for its pack as built; `why` says when a build now would not
    share the pack's inputs (docs/reference/gates.md, "Hints"). A transcript
    pack answers for its own session: None."""
    if inputs.is_transcript or now <= inputs.mark:
        return None
    e = entries.c
    later_entry = conn.execute(
        select(e.seq).where(e.seq > inputs.mark, e.seq <= now, e.kind != "pack").limit(1)
    ).first()
    if later_entry is None and inputs.selector_version == SELECTOR_VERSION:
        return None  # only packs since: a pack changes nothing a build reads
    later = resolve_inputs(
        conn, inputs.as_of, inputs.subject, budget=inputs.budget,
        counter=inputs.counter.split("@")[0], ledger_at=now,
    )  # fmt: skip
    later = replace(later, retrieval=inputs.retrieval)
    v = versions.c
    ingested = conn.execute(
        select(v.vid)
        .where(v.batch_seq > inputs.mark, v.batch_seq <= now, v.scope.is_(None))
        .limit(1)
    ).first()
    unchanged = (
        ingested is None
        and later.grants == inputs.grants
        and later.policy.allowed_trust == inputs.policy.allowed_trust
        and later.retractions == inputs.retractions
        and later.reinstatements == inputs.reinstatements
        and later.selector_version == inputs.selector_version
    )
    return None if unchanged else later


def check_ledger_at(ledger_at: object) -> int | None:
    """`ledger_at` when it is None or a whole number (not a bool, text or float):
    what the API takes before it reads the ledger (`ledger_mark` checks the range)."""
    if ledger_at is not None and (isinstance(ledger_at, bool) or not isinstance(ledger_at, int)):
        raise InputError(
            f"ledger_at: {ledger_at!r} is not an entry number; give a whole number "
            "(an entry of the ledger) or None for the head",
            param="ledger_at",
        )
    return ledger_at


def ledger_mark(head: int, ledger_at: int | None) -> int:
    """The ledger time a build sees: `ledger_at`, an entry of 1..`head`, or the head."""
    ledger_at = check_ledger_at(ledger_at)
    if ledger_at is None:
        return head
    if not 1 <= ledger_at <= head:
        raise InputError(
            f"ledger_at: {ledger_at} is not an entry (the ledger has 1..{head})",
            param="ledger_at",
        )
    return ledger_at


def retractions_at(conn: Connection, mark: int) -> dict[str, tuple[tuple[int, str], ...]]:
    """Every retraction written at or before ledger time `mark`: id -> ((entry, from), ...)."""
    return _marks_at(conn, retractions, mark)


def reinstatements_at(conn: Connection, mark: int) -> dict[str, tuple[tuple[int, str], ...]]:
    """Every reinstatement written at or before `mark`: id -> ((entry, from), ...)."""
    return _marks_at(conn, reinstatements, mark)


def _marks_at(conn: Connection, table: Any, mark: int) -> dict[str, tuple[tuple[int, str], ...]]:
    r = table.c
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
    check_subject(subject)
    mark = ledger_mark(read_head(conn).seq, ledger_at)
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


def check_counter(counter: str) -> str:
    """`counter` when it names one of the token counters (`ledger.tokens.COUNTERS`)."""
    if counter not in COUNTERS:
        raise InputError(
            f"counter: {counter!r} is not a counter; use one of {', '.join(COUNTERS)}",
            param="counter",
        )
    return counter


# The build's checks of the values it is asked whose rules are not in the core
# (the core checks as_of, query and top): a tests file (`ledger check`) is
# checked with them when it is parsed, so a value a build would refuse is
# refused before any case runs.
INPUT_RULES: dict[str, Callable[[Any], object]] = {
    "subject": check_subject,
    "budget": check_budget,
    "counter": check_counter,
}


def candidates_source(
    candidates: str | os.PathLike[str] | Sequence[str | Mapping[str, Any]] | None,
) -> str | bytes | None:
    """A build's `candidates` as `with_retrieval` takes them: a file's path, or an
    in-memory list (ids, or `{"id", "source_version"?, "score"?}` objects, best
    first) as the JSON Lines a candidates file holds (its digest is what the pack
    records)."""
    if candidates is None or isinstance(candidates, str | os.PathLike):
        return None if candidates is None else os.fspath(candidates)
    items = [{"id": c} if isinstance(c, str) else dict(c) for c in candidates]
    return b"".join(
        json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        for item in items
    )


def inputs_of(head: Any, conn: Connection | None = None) -> Inputs:
    """A recorded pack's inputs, from its snapshots (IntegrityError if unreadable);
    with `conn`, also the retractions at its ledger mark (gate 5)."""
    pol = snapshot_of(head.policy, "policy", head.pack_no)
    grants_list = snapshot_of(head.grants, "grants", head.pack_no)
    try:
        if not isinstance(pol, dict) or not isinstance(grants_list, list):
            raise TypeError
        policy = Policy(tuple(pol["allowed_trust"]), pol["budget"])
        grants_tuple = tuple(grants_list)
    except (KeyError, TypeError):
        raise IntegrityError(
            f"pack {head.pack_no}: its recorded grants or policy do not have the recorded shape; "
            "the database was altered: run `ledger verify`"
        ) from None
    return Inputs(
        **{name: getattr(head, column) for name, column in INPUT_COLUMNS.items()},
        grants=grants_tuple,
        policy=policy,
        retrieval=retrieval_of(head),
        retractions=(
            retractions_at(conn, head.ledger_mark)
            if conn is not None and head.scope == DOCUMENTS
            else {}
        ),
        reinstatements=(
            reinstatements_at(conn, head.ledger_mark)
            if conn is not None and head.scope == DOCUMENTS
            else {}
        ),
    )


def trace_ids(head: Any) -> tuple[str, str | None] | None:
    """A recorded pack's (trace_id, span_id), as its entry payload covers them."""
    return None if head.trace_id is None else (head.trace_id, head.span_id)
