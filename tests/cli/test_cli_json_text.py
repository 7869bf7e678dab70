"""`--json` output: the fast writer prints exactly what `json.dumps(..., indent=2)` does."""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_cli.common import json_text

EXAMPLES = int(os.environ.get("LEDGER_FUZZ_EXAMPLES", "300"))


def reference(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, indent=2)


# Every JSON value, with the text JSON escapes (quotes, backslashes, control
# characters), text beyond ASCII and the BMP, integers beyond 64 bits, and
# floats in both notations; plus what JSON cannot hold (NaN, infinities, lone
# surrogates), which the standard writer prints anyway.
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES)
def test_json_text_is_the_standard_indented_text(data: Any) -> None:
    assert json_text(data) == reference(data)


def test_json_text_cases() -> None:
    cases: list[Any] = [
        [],
        {},
        "x",
        5,
        {"b": [1, 2.5, 1e16, 1e-7, -0.0], "a": {"e": [], "f": {}, "g": [[], {}]}},
        {"z": 'café \x1f \u2028 "q" \\ \n\t \U0001f600', "": ""},
        {"nan": float("nan"), "inf": [float("-inf")]},  # not JSON: the standard way
        {"lone": "\ud800"},
        {2: "integer keys", 1: [0.1]},
    ]
    for data in cases:
        assert json_text(data) == reference(data)
