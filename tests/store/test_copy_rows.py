"""The full-text index's binary COPY rows (PostgreSQL): the named fast version
gives the plain version's bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 2**31 - 1), st.binary(max_size=40)), max_size=20))
def test_copy_rows_fast_is_copy_rows(rows: list[tuple[int, bytes]]) -> None:
    """The full-text index's COPY rows, made in C: the same bytes as row by row."""
    from ledger.store.fulltext import copy_rows, copy_rows_fast

    vids = [vid for vid, _ in rows]
    terms = [t for _, t in rows]
    assert copy_rows_fast(vids, terms) == copy_rows(vids, terms)
