"""`ledger select`: the budgeted-select contract. Pure: dict in, dict out.
(docs/reference/compatibility.md)

Budget and costs are non-negative integers in one unit. Required items are taken
first (an error if they cost more than the budget); then the optional ones by
priority high first, then id, each taken if it fits. The result lists ids in input
order. This is the one selector (`ledger.core.select.select`) with this contract's own
`Order`, not a second implementation: every item is a candidate that passes gates
1-6 and has its own dedupe key, so only gate 8 (budget) decides.

    >>> run({"budget": 8, "items": [
    ...     {"id": "contract", "cost": 3, "priority": 0, "required": True, "content": "a"},
    ...     {"id": "recent", "cost": 4, "priority": 9, "required": False, "content": "b"},
    ...     {"id": "older", "cost": 3, "priority": 2, "required": False, "content": "c"}]})
    {'selected': ['contract', 'recent'], 'omitted': ['older'], 'used': 7}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.core.candidates import candidate_of
from ledger.core.canonical import content_digest
from ledger.core.context import Candidate
from ledger.core.errors import InputError
from ledger.core.select import Order, Request, RequiredOverBudgetError, select

ROOT_FIELDS = frozenset({"budget", "items"})
ITEM_FIELDS = frozenset({"id", "cost", "priority", "required", "content"})
# Every item passes gates 1-4 under these constant values.
_DAY = "2000-01-01"
_PERMISSION = "any"
_TRUST = "any"
# The rest of every item's chunk record.
_ITEM_RECORD: dict[str, Any] = {
    "source_version": "1",
    "section": "evidence",
    "effective_from": _DAY,
    "expires_on": None,
    "required_permission": _PERMISSION,
    "trust": _TRUST,
}


class SelectInputError(InputError):
    """Input that the budgeted-select contract refuses (one line)."""


def _preference(c: Candidate) -> tuple[int, str]:
    # This contract: priority high first, then id.
    return (-c.priority, c.id)


def _fields(value: Any, expected: frozenset[str], where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SelectInputError(f"{where} must be an object")
    missing = sorted(expected - set(value))
    unknown = sorted(map(str, set(value) - expected))
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if unknown:
            parts.append(f"unknown {', '.join(unknown)}")
        raise SelectInputError(f"{where} has invalid fields: {'; '.join(parts)}")
    return value


def _integer(value: Any, where: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SelectInputError(f"{where} must be an integer")
    if minimum is not None and value < minimum:
        raise SelectInputError(f"{where} must be a non-negative integer")
    return int(value)  # an int already; int() tells the type checker


def _string(value: Any, where: str, *, non_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise SelectInputError(f"{where} must be a string")
    if non_empty and not value:
        raise SelectInputError(f"{where} must be a non-empty string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SelectInputError(f"{where} must not contain a lone surrogate") from None
    return value


def run(input_dict: Any) -> dict[str, Any]:
    """Select per the budgeted-select contract; return `{"selected", "omitted", "used"}`.

    Raises `SelectInputError` for invalid input and when the required items cost
    more than the budget.
    """
    root = _fields(input_dict, ROOT_FIELDS, "input")
    budget = _integer(root["budget"], "budget", minimum=0)
    items = root["items"]
    if not isinstance(items, list):
        raise SelectInputError("items must be an array")
    position: dict[str, int] = {}
    candidates = []
    for index, raw in enumerate(items):
        where = f"items[{index}]"
        item = _fields(raw, ITEM_FIELDS, where)
        item_id = _string(item["id"], f"{where}.id", non_empty=True)
        cost = _integer(item["cost"], f"{where}.cost", minimum=0)
        priority = _integer(item["priority"], f"{where}.priority")
        required = item["required"]
        if not isinstance(required, bool):
            raise SelectInputError(f"{where}.required must be a boolean")
        content = _string(item["content"], f"{where}.content")
        if item_id in position:
            raise SelectInputError(f"{where}.id duplicates an earlier id: {item_id!r}")
        position[item_id] = index
        digest = content_digest(content)
        record = {
            **_ITEM_RECORD,
            "id": item_id,
            "dedupe_key": item_id,  # unique: nothing is anyone's duplicate
            "estimated_tokens": cost,
            "priority": priority,
            "required": required,
        }
        candidates.append(candidate_of(record, record_digest=digest, content_digest=digest))
    request = Request(
        as_of=_DAY,
        granted=frozenset({_PERMISSION}),
        allowed_trust=frozenset({_TRUST}),
        budget=budget,
    )
    order = Order(preference=_preference, output=lambda c: (position[c.id],))
    try:
        context = select(candidates, request, order)
    except RequiredOverBudgetError as exc:
        raise SelectInputError(
            f"required items cost {exc.needed}, more than the budget {exc.budget}"
        ) from exc
    selected = [c.id for c in context.items]
    omitted = sorted((e.candidate.id for e in context.evicted), key=position.__getitem__)
    return {"selected": selected, "omitted": omitted, "used": context.admitted_tokens()}
