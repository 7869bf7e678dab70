"""`ledger select` in the library: the seed-000 contract for a Python caller."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import ledger.core.budgeted
from ledger.core.budgeted import SelectInputError, run
from ledger.core.errors import InputError
from ledger.core.select import DEFAULT_ORDER

EXAMPLE: dict[str, Any] = {
    "budget": 8,
    "items": [
        {
            "id": "contract",
            "cost": 3,
            "priority": 0,
            "required": True,
            "content": "Requested outcome",
        },
        {"id": "recent", "cost": 4, "priority": 9, "required": False, "content": "Recent result"},
        {"id": "older", "cost": 3, "priority": 2, "required": False, "content": "Old result"},
    ],
}


def item(item_id: str, cost: int, priority: int = 0, required: bool = False) -> dict[str, Any]:
    return {
        "id": item_id,
        "cost": cost,
        "priority": priority,
        "required": required,
        "content": item_id,
    }


def test_seed_example() -> None:
    assert run(copy.deepcopy(EXAMPLE)) == {
        "selected": ["contract", "recent"],
        "omitted": ["older"],
        "used": 7,
    }


def test_ids_in_input_order_and_priority_then_id() -> None:
    items = [item("zz", 2, 5), item("big", 9, 9), item("aa", 2, 5), item("must", 1, -3, True)]
    # must (1), then big (9) does not fit 6, then aa (2) and zz (2) tie on priority: id order.
    result = run({"budget": 5, "items": items})
    assert result == {"selected": ["zz", "aa", "must"], "omitted": ["big"], "used": 5}
    result = run({"budget": 3, "items": items})
    assert result == {"selected": ["aa", "must"], "omitted": ["zz", "big"], "used": 3}


def test_zero_budget_and_zero_costs() -> None:
    result = run({"budget": 0, "items": [item("free", 0), item("paid", 1)]})
    assert result == {"selected": ["free"], "omitted": ["paid"], "used": 0}
    assert run({"budget": 0, "items": []}) == {"selected": [], "omitted": [], "used": 0}


def test_required_over_budget_is_an_exception() -> None:
    with pytest.raises(SelectInputError, match="required items cost 9, more than the budget 8"):
        run({"budget": 8, "items": [item("a", 5, required=True), item("b", 4, required=True)]})


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ([], "input must be an object"),
        ({"budget": 1}, "input has invalid fields: missing items"),
        ({"budget": 1, "items": [], "extra": 0}, "unknown extra"),
        ({"budget": -1, "items": []}, "budget must be a non-negative integer"),
        ({"budget": True, "items": []}, "budget must be an integer"),
        ({"budget": 1.0, "items": []}, "budget must be an integer"),
        ({"budget": 1, "items": {}}, "items must be an array"),
        ({"budget": 1, "items": [1]}, "items[0] must be an object"),
        ({"budget": 1, "items": [{**item("a", 1), "note": ""}]}, "items[0] has invalid fields"),
        ({"budget": 1, "items": [{"id": "a"}]}, "missing content, cost, priority, required"),
        ({"budget": 1, "items": [item("", 1)]}, "items[0].id must be a non-empty string"),
        ({"budget": 1, "items": [{**item("a", 1), "id": 5}]}, "items[0].id must be a string"),
        ({"budget": 1, "items": [item("a", -1)]}, "items[0].cost must be a non-negative"),
        ({"budget": 1, "items": [item("a", False)]}, "items[0].cost must be an integer"),
        (
            {"budget": 1, "items": [{**item("a", 1), "priority": 1.5}]},
            "priority must be an integer",
        ),
        (
            {"budget": 1, "items": [{**item("a", 1), "priority": True}]},
            "priority must be an integer",
        ),
        ({"budget": 1, "items": [{**item("a", 1), "required": 1}]}, "required must be a boolean"),
        ({"budget": 1, "items": [{**item("a", 1), "content": None}]}, "content must be a string"),
        ({"budget": 1, "items": [item("a", 1), item("a", 1)]}, "items[1].id duplicates"),
    ],
)
def test_invalid_input_raises(data: Any, words: str) -> None:
    with pytest.raises(SelectInputError) as caught:
        run(data)
    assert words in str(caught.value)
    assert isinstance(caught.value, InputError)


def test_uses_the_one_selector_with_its_own_order(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = ledger.core.budgeted.select

    def spy(candidates: Any, request: Any, order: Any) -> Any:
        calls.append(order)
        return real(candidates, request, order)

    monkeypatch.setattr(ledger.core.budgeted, "select", spy)
    assert run(copy.deepcopy(EXAMPLE))["used"] == 7
    assert len(calls) == 1 and calls[0] is not DEFAULT_ORDER
