"""The digests' named fast versions (`ledger.core.digests`) give the plain
versions' digests: on generated packs with every reason's detail, odd strings
(non-ASCII, escapes, quotes) and integers up to RFC 8785's limits."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.canonical import MAX_SAFE_INT, strings_json
from ledger.core.digests import (
    EvictedColumns,
    input_digest,
    input_digest_fast,
    pack_digest,
    pack_digest_fast,
)
from ledger.core.reasons import REASON, REASONS, REF, REF_KEYS

ODD = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6) | st.sampled_from(
    ['"', "\\", "\n", "\u2028", "é", "\U0001f600", "\x7f", "a b", "</x>"]
)
HEX = st.text(alphabet="0123456789abcdef", min_size=1, max_size=12)
DIGEST = HEX | ODD
INT = st.integers(-MAX_SAFE_INT, MAX_SAFE_INT) | st.sampled_from([0, MAX_SAFE_INT, -MAX_SAFE_INT])
VALUE = ODD | INT | st.none()


def _detail(reason: str) -> st.SearchStrategy[Any]:
    """A detail of `reason` with every key of the table, values of any kind."""
    keys = dict(REASON[reason].detail)
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for key, field in keys.items():
        if field == REF:
            parts[key] = st.fixed_dictionaries(dict.fromkeys(REF_KEYS, DIGEST)).map(
                lambda ref: MappingProxyType(ref)
            ) | st.fixed_dictionaries(dict.fromkeys(REF_KEYS, VALUE))
        else:
            parts[key] = VALUE
    return st.fixed_dictionaries(parts).map(lambda d: MappingProxyType(d)) | st.fixed_dictionaries(
        parts
    )


REASON_DETAIL = st.sampled_from(REASONS).flatmap(
    lambda reason: st.tuples(st.just(reason), _detail(reason))
)

# A retrieval build's record, as `Inputs.to_json` writes it (scores as text).
RETRIEVAL = st.fixed_dictionaries(
    {
        "query": ODD,
        "top": INT,
        "candidates_digest": st.none() | HEX,
        "ranked": st.lists(
            st.fixed_dictionaries(
                {"id": ODD, "source_version": ODD, "rank": INT, "score": st.just("7.59046") | ODD}
            ),
            max_size=4,
        ),
    }
)

INPUTS = st.fixed_dictionaries(
    {
        "as_of": st.just("2026-07-01"),
        "subject": ODD,
        "grants": st.lists(ODD, max_size=3),
        "policy": st.fixed_dictionaries(
            {"allowed_trust": st.lists(ODD, max_size=2), "budget": INT | st.none()}
        ),
        "budget": INT,
        "counter": st.just("estimated_tokens"),
        "selector_version": ODD,
    },
    optional={"scope": ODD, "retrieval": HEX | RETRIEVAL},
)


@settings(max_examples=200, deadline=None)
@given(
    inputs=INPUTS,
    admitted=st.lists(st.tuples(DIGEST, INT), max_size=5),
    shared=st.lists(REASON_DETAIL, min_size=1, max_size=4),
    picks=st.lists(st.tuples(st.integers(0, 3), DIGEST, INT), max_size=8, unique_by=lambda p: p[1]),
)
def test_pack_digest_fast_is_pack_digest(
    inputs: dict[str, Any],
    admitted: list[tuple[str, int]],
    shared: list[tuple[str, Any]],
    picks: list[tuple[int, str, int]],
) -> None:
    """Evictions share detail objects, as the selector's do: the fast version
    writes each distinct one once."""
    evictions = [(digest, *shared[at % len(shared)], tokens) for at, digest, tokens in picks]
    columns = EvictedColumns(
        [e[0] for e in evictions],
        [e[1] for e in evictions],
        [e[2] for e in evictions],
        [e[3] for e in evictions],
    )
    plain = pack_digest(inputs, "ab" * 32, admitted, columns.rows())
    assert pack_digest_fast(inputs, "ab" * 32, admitted, columns) == plain


@settings(max_examples=200, deadline=None)
@given(
    inputs=INPUTS,
    candidates=st.lists(DIGEST, max_size=8),
    retractions=st.dictionaries(
        ODD, st.lists(st.tuples(INT, ODD), min_size=1, max_size=2).map(tuple), max_size=3
    ),
)
def test_input_digest_fast_is_input_digest(
    inputs: dict[str, Any], candidates: list[str], retractions: dict[str, Any]
) -> None:
    fast = input_digest_fast(inputs, retractions, strings_json(sorted(candidates)))
    assert fast == input_digest(inputs, retractions, candidates)


def test_pack_digest_fast_refuses_what_the_plain_one_refuses() -> None:
    """Tokens outside RFC 8785's safe range: no digest from either."""
    inputs = {"as_of": "2026-07-01", "budget": 1}
    for admitted, tokens in (([("a", MAX_SAFE_INT + 1)], 1), ([], MAX_SAFE_INT + 1)):
        columns = EvictedColumns(["b"], ["budget"], [{"needed": 1, "remaining": 0}], [tokens])
        with pytest.raises(ValueError):
            pack_digest(inputs, "x", admitted, columns.rows())
        with pytest.raises(ValueError):
            pack_digest_fast(inputs, "x", admitted, columns)
