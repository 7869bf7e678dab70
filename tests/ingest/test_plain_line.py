"""Ingest's line fast path (`ledger.ingest.files.plain_line`): a shortcut for the
strict reader then `validate_chunk`, never a second set of rules."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.core.records import validate_chunk
from ledger.core.strictjson import loads_strict
from ledger.ingest.files import plain_line
from tests.core.test_core_records import _EDGES, raw


def _line_variants(obj: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """`obj` as one line of JSON Lines, plainly or with what the strict parser or
    the line rules refuse (a duplicate key, plain, escaped or spaced, a non-finite
    number, nesting, a lone surrogate, escaped or encoded, a byte-order mark, white
    space or text around the object), or with a `":` the fast path leaves alone."""
    text = json.dumps(obj)
    compact = json.dumps(obj, separators=(",", ":"))
    body = text[1:-1]
    return st.sampled_from(
        [
            text + "\n",
            text,
            compact + "\n",
            text + "\r\n",
            text + " \t\n",
            json.dumps(obj, ensure_ascii=False, indent=None) + "\n",
            " " + text + "\n",
            "\ufeff" + text + "\n",
            text + " x\n",
            text + text + "\n",
            "{" + body + ', "id": "dup-id"}\n',
            "{" + body + ', "\\u0069d": "dup-id"}\n',
            "{" + body + ', "id" : "dup-id"}\n',
            "{" + body + ', "id"\t:"dup-id"}\n',
            "{" + body.replace('"priority": ', '"priority" : ', 1) + "}\n",
            # 13 `":` still: the content's own `":` stands for the repeated key's.
            "{"
            + body.replace('"priority": ', '"priority" :', 1).replace(
                '"content": "', '"content": "say \\":', 1
            )
            + ', "id" :"dup-id"}\n',
            text.replace('"content": "', '"content": "a \\"quote\\": b ', 1) + "\n",
            text.replace('"content": "', '"content": "\\u0000', 1) + "\n",
            "{" + body.replace('"priority": ', '"priority": NaN, "x": ', 1) + "}\n",
            "{" + body.replace('"content": ', '"content": "\\ud800" "', 1) + "}\n",
            text.replace('"content": "', '"content": "\\ud800', 1) + "\n",
            text.replace('"content": "', '"content": "\ud800', 1) + "\n",
            text.replace('"estimated_tokens": ', '"estimated_tokens": [', 1).replace(
                ', "priority"', '], "priority"', 1
            )
            + "\n",
            text.replace('"required": false', '"required": 0', 1) + "\n",
            "[" + text + "]\n",
            "\n",
        ]
    ).map(lambda line: line.encode("utf-8", "surrogatepass"))


@settings(max_examples=3000, deadline=None)
@given(
    line=st.lists(st.sampled_from(sorted(_EDGES)), max_size=2, unique=True)
    .flatmap(lambda names: st.fixed_dictionaries({n: _EDGES[n] for n in names}))
    .flatmap(lambda overrides: _line_variants(raw(**overrides)))
)
def test_the_plain_line_path_accepts_only_what_the_full_path_accepts(line: bytes) -> None:
    """Whatever the line path accepts, the strict reader and `validate_chunk` in
    ingest's mode accept as the same record; whatever they refuse, it leaves to
    them (their error, their message)."""
    fast = plain_line(line)
    try:
        full = validate_chunk(loads_strict(line), allow_nul=False, ledger=True)
    except InputError:
        assert fast is None
    else:
        assert fast is None or fast == full


def test_the_plain_line_path_takes_the_common_lines() -> None:
    """The shortcut is taken for ordinary lines, as `json.dumps` writes them
    (else it would be dead code), and never for a repeated key."""
    record = validate_chunk(raw(), ledger=True)
    line = (json.dumps(raw()) + "\n").encode()
    assert plain_line(line) == record
    assert plain_line(json.dumps(raw(), separators=(",", ":")).encode()) == record
    assert plain_line((json.dumps(raw(content="caf\u00e9 \u2603")) + "\r\n").encode()) is not None
    for repeated in (b'"id": "x", "id": ', b'"\\u0069d": "x", "id": ', b'"id" : "x", "id": '):
        assert plain_line(line.replace(b'"id": ', repeated)) is None
