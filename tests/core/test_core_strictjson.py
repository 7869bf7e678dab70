"""Strict JSON: everything json.loads lets through that the ledger must refuse."""

from __future__ import annotations

import json

import pytest

from ledger.core.errors import InputError
from ledger.core.strictjson import (
    MAX_DEPTH,
    StrictJSONError,
    describe_position,
    loads_strict,
    max_depth,
    position,
)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\xef\xbb\xbf{}", "byte-order mark"),
        ("\ufeff{}", "byte-order mark"),
        (b"", "empty JSON text"),
        (b"  \n\t ", "empty JSON text"),
        (b'{"a": 1, "a": 2}', "duplicate JSON key: 'a'"),
        (b'[{"x": {"b": 1, "c": 2, "b": 3}}]', "duplicate JSON key: 'b'"),
        (b"[NaN]", "non-finite JSON number"),
        (b'{"a": Infinity}', "non-finite JSON number"),
        (b"[-Infinity]", "non-finite JSON number"),
        (b"[1e999]", "non-finite JSON number"),
        (b"[-1e999]", "non-finite JSON number"),
        (b'["\\ud800"]', "lone surrogate"),
        (b'["ok \\udfff end"]', "lone surrogate"),
        (b'{"\\udc00": 1}', "lone surrogate"),
        ('["\ud800"]', "lone surrogate"),
        (b"\xff\xfe", "invalid UTF-8"),
        (b'["\xed\xa0\x80"]', "invalid UTF-8"),  # an encoded surrogate
        (b"[" + b"1" * 5000 + b"]", "more than 4300 digits"),
        (b"[" * 100_000, f"deeper than {MAX_DEPTH}"),
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), f"deeper than {MAX_DEPTH}"),
        (b'{"a": [1, 2,]}', "invalid JSON at line 1, column 13"),
        (b'{\n  "a": tru\n}', "invalid JSON at line 2, column 8"),
        (b"[1] [2]", "invalid JSON at line 1, column 5: Extra data"),
    ],
)
def test_refuses_with_a_one_line_message(data: bytes | str, words: str) -> None:
    with pytest.raises(StrictJSONError) as caught:
        loads_strict(data)
    message = str(caught.value)
    assert words in message
    assert "\n" not in message
    assert isinstance(caught.value, InputError)


def test_deep_nesting_is_refused_before_recursion_even_with_brackets_in_strings() -> None:
    # The closers hidden in a string must not mask the real depth.
    deep = b'["' + b"]" * 600 + b'", ' + b"[" * 600 + b"]" * 600 + b"]"
    with pytest.raises(StrictJSONError, match="deeper than"):
        loads_strict(deep)


def test_nesting_up_to_the_limit_is_accepted() -> None:
    value = loads_strict(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    depth = 0
    while value:
        value = value[0]
        depth += 1
    assert depth == MAX_DEPTH - 1  # the innermost list is empty


@pytest.mark.parametrize(
    ("data", "depth"),
    [
        (b"1", 0),
        (b"[]", 1),
        (b'{"a": [{"b": []}]}', 4),
        (b'["[[[[", {"k": "]]"}]', 2),
        (b'["\\"[[[", ["\\\\"]]', 2),
        (b'["\\\\\\"[["]', 1),
    ],
)
def test_max_depth_ignores_brackets_inside_strings(data: bytes, depth: int) -> None:
    assert max_depth(data) == depth


def test_accepts_valid_json_and_keeps_floats_as_floats() -> None:
    value = loads_strict(b'{"a": [1, 2.5, 1e2, null, true], "b": "\\ud83d\\ude00 \\u00e9"}')
    assert value == {"a": [1, 2.5, 100.0, None, True], "b": "\U0001f600 é"}
    assert isinstance(value["a"][2], float)


def test_str_and_bytes_give_the_same_value() -> None:
    text = '{"é": ["x", {"y": null}]}'
    assert loads_strict(text) == loads_strict(text.encode("utf-8")) == json.loads(text)


def test_errors_carry_line_and_column() -> None:
    with pytest.raises(StrictJSONError) as caught:
        loads_strict(b'{\n  "a": 1,\n  "b": ]\n}')
    assert (caught.value.line, caught.value.column) == (3, 8)


def test_source_prefixes_messages() -> None:
    with pytest.raises(StrictJSONError, match=r"^chunks\.json: duplicate JSON key: 'a'$"):
        loads_strict(b'{"a": 1, "a": 1}', source="chunks.json")


def test_position_helpers() -> None:
    text = "ab\ncd\nef"
    assert position(text, 0) == (1, 1)
    assert position(text, 4) == (2, 2)
    assert position(text.encode(), 6) == (3, 1)
    assert describe_position(text, 7) == "line 3, column 2"
