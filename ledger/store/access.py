"""Who may see what, kept as history: subject grants and the application policy.

Every change is a ledger entry and a set of rows that reference it; nothing is
updated or deleted, so the grants and policy in force at any ledger time can be
read back (`grants_at`, `policy_at`) and old packs stay explainable.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, insert, select

from ledger.core.canonical import canonical_json, digest_value
from ledger.core.errors import InputError, IntegrityError, RefusedError
from ledger.core.records import TRUST_LABELS
from ledger.store.chain import reserve_entry, seal_entry
from ledger.store.engine import write_transaction
from ledger.store.schema import grants, policies

SUBJECT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}")
PERMISSION_RE = re.compile(r"[a-z0-9][a-z0-9-]{1,63}")
MAX_BUDGET = 10_000_000


@dataclass(frozen=True, slots=True)
class Policy:
    """The application policy in force: allowed trust labels and default budget."""

    allowed_trust: tuple[str, ...]
    budget: int | None
    # Erasure's retention (days a body is kept after its version ends), or None.
    # Not a selection input: packs snapshot `to_json()`, which leaves it out.
    retain_bodies: int | None = None

    def to_json(self) -> dict[str, Any]:
        """What selection uses: the snapshot a pack records (its input digest)."""
        return {"allowed_trust": list(self.allowed_trust), "budget": self.budget}

    def record_json(self) -> dict[str, Any]:
        """The policy as its entry records it: `to_json()`, and `retain_bodies` when
        set (only then, so the entries of policies without one keep their digests)."""
        data = self.to_json()
        if self.retain_bodies is not None:
            data["retain_bodies"] = self.retain_bodies
        return data


def check_subject(subject: str) -> str:
    if not isinstance(subject, str) or not SUBJECT_RE.fullmatch(subject):
        raise InputError(
            f"subject {subject!r}: use letters, digits and . _ @ : - (at most 128 characters)",
            param="subject",
        )
    return subject


def check_budget(budget: int, where: str = "budget") -> int:
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise InputError(
            f"{where}: must be a whole number between 1 and {MAX_BUDGET}, not {budget!r}",
            param=where,
        )
    if not 1 <= budget <= MAX_BUDGET:
        raise InputError(f"{where}: must be between 1 and {MAX_BUDGET}, got {budget}", param=where)
    return budget


def _check_permissions(permissions: list[str]) -> list[str]:
    if not permissions:
        raise InputError("name at least one permission")
    for p in permissions:
        if not PERMISSION_RE.fullmatch(p):
            raise InputError(
                f"permission {p!r}: must be an identifier (lower-case letters, digits, '-'; 2-64 "
                "characters)"
            )
    return sorted(set(permissions))


def grants_at(conn: Connection, subject: str, mark: int | None = None) -> list[str]:
    """The permissions a subject held at ledger time `mark` (default: now), sorted."""
    query = select(grants.c.permission, grants.c.action).where(grants.c.subject == subject)
    if mark is not None:
        query = query.where(grants.c.entry_seq <= mark)
    held: set[str] = set()
    for row in conn.execute(query.order_by(grants.c.entry_seq, grants.c.id)):
        if row.action == "grant":
            held.add(row.permission)
        else:
            held.discard(row.permission)
    return sorted(held)


def grant_history(conn: Connection, subject: str) -> list[dict[str, Any]]:
    """Every grant and revoke of a subject, oldest first, one item per entry."""
    out: dict[int, dict[str, Any]] = {}
    for row in conn.execute(
        select(grants.c.entry_seq, grants.c.action, grants.c.permission)
        .where(grants.c.subject == subject)
        .order_by(grants.c.entry_seq, grants.c.permission)
    ):
        item = out.setdefault(
            row.entry_seq, {"entry": row.entry_seq, "action": row.action, "permissions": []}
        )
        item["permissions"].append(row.permission)
    return list(out.values())


def grant_payload(subject: str, action: str, permissions: list[str]) -> str:
    return digest_value({"kind": action, "subject": subject, "permissions": sorted(permissions)})


def change_grants(
    engine: Engine, subject: str, permissions: list[str], action: str
) -> tuple[int | None, list[str]]:
    """Grant or revoke: (the entry, or None when nothing changed; the changed permissions)."""
    check_subject(subject)
    perms = _check_permissions(permissions)
    with write_transaction(engine) as conn:
        held = set(grants_at(conn, subject))
        if action == "grant":
            changed = [p for p in perms if p not in held]
        else:
            missing = [p for p in perms if p not in held]
            if missing:
                raise RefusedError(
                    f"subject '{subject}' does not hold {', '.join(missing)}; it holds "
                    f"{', '.join(sorted(held)) or 'nothing'}"
                )
            changed = perms
        if not changed:
            return None, []
        seq = reserve_entry(conn, action)
        conn.execute(
            insert(grants),
            [
                {"entry_seq": seq, "subject": subject, "permission": p, "action": action}
                for p in changed
            ],
        )
        seal_entry(conn, seq, grant_payload(subject, action, changed))
    return seq, changed


def _trust_list(text: str, entry_seq: int) -> list[str]:
    """A stored allowed-trust list; anything else only comes from an altered database."""
    try:
        labels = json.loads(text)
    except (TypeError, ValueError):
        labels = None
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise IntegrityError(
            f"the policy of entry {entry_seq} is not readable; the database was altered: run "
            "`ledger verify`"
        )
    return labels


def policy_at(conn: Connection, mark: int | None = None) -> Policy | None:
    """The policy in force at ledger time `mark` (default: now), or None if never set."""
    query = select(
        policies.c.entry_seq,
        policies.c.allowed_trust,
        policies.c.budget,
        policies.c.retain_bodies,
    )
    if mark is not None:
        query = query.where(policies.c.entry_seq <= mark)
    row = conn.execute(query.order_by(policies.c.entry_seq.desc()).limit(1)).first()
    if row is None:
        return None
    return _policy_of(row)


def _policy_of(row: Any) -> Policy:
    """A stored policy row, read with its types checked: what only an altered
    database holds (a budget that is text, a float, a negative number) is one
    line and exit 4, as `ledger verify` says it, never a crash further on."""
    trust = tuple(_trust_list(row.allowed_trust, row.entry_seq))
    for name in ("budget", "retain_bodies"):
        value = getattr(row, name)
        if value is not None and (type(value) is not int or value < 0):
            raise IntegrityError(
                f"the policy of entry {row.entry_seq} has a {name} of {value!r}, not a "
                "non-negative integer; the database was altered: run `ledger verify`"
            )
    return Policy(trust, row.budget, row.retain_bodies)


def policy_history(conn: Connection) -> list[dict[str, Any]]:
    return [
        {"entry": r.entry_seq, **_policy_of(r).record_json()}
        for r in conn.execute(select(policies).order_by(policies.c.entry_seq))
    ]


def policy_payload(policy: Policy) -> str:
    return digest_value({"kind": "policy", **policy.record_json()})


MAX_RETAIN_DAYS = 36_600  # a hundred years


def check_retain_days(days: int) -> int:
    """A policy's `retain_bodies`: a whole number of days, 0 to 36,600."""
    if isinstance(days, bool) or not isinstance(days, int) or not 0 <= days <= MAX_RETAIN_DAYS:
        raise InputError(
            f"retain_bodies: must be a number of days between 0 and {MAX_RETAIN_DAYS} "
            f"(or 'off' to remove the retention), got {days!r}",
            param="retain_bodies",
        )
    return days


KEEP = object()  # `set_policy(retain_bodies=KEEP)`: the retention stays as it is


def set_policy(
    engine: Engine,
    allow_trust: list[str] | None,
    budget: int | None,
    retain_bodies: Any = KEEP,
) -> tuple[int | None, Policy]:
    """Record a new policy. Parts not given keep their current values;
    `retain_bodies` None removes the retention, KEEP keeps it."""
    if allow_trust is not None:
        for label in allow_trust:
            if label not in TRUST_LABELS:
                raise InputError(
                    f"allow_trust: unsupported trust label {label!r}; use one of "
                    f"{', '.join(TRUST_LABELS)}",
                    param="allow_trust",
                )
    if budget is not None:
        check_budget(budget)
    if retain_bodies is not KEEP and retain_bodies is not None:
        check_retain_days(retain_bodies)
    with write_transaction(engine) as conn:
        current = policy_at(conn)
        if allow_trust is not None:
            trust = tuple(sorted(set(allow_trust)))
        elif current is None:
            raise InputError(
                "allow_trust: no policy yet, so the first one needs its allowed trust labels",
                param="allow_trust",
            )
        else:
            trust = current.allowed_trust
        retain = (
            (current.retain_bodies if current else None) if retain_bodies is KEEP else retain_bodies
        )
        new = Policy(
            trust,
            budget if budget is not None else (current.budget if current else None),
            retain,
        )
        if new == current:
            return None, new
        seq = reserve_entry(conn, "policy")
        conn.execute(
            insert(policies).values(
                entry_seq=seq,
                allowed_trust=canonical_json(list(new.allowed_trust)),
                budget=new.budget,
                retain_bodies=new.retain_bodies,
            )
        )
        seal_entry(conn, seq, policy_payload(new))
    return seq, new
