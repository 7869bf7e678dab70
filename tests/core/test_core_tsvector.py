"""`tsvector_binary_fast` (ingest's) is `tsvector_binary` (the plain rule)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.query import index_words
from ledger.core.tsvector import tsvector_binary, tsvector_binary_fast

# Few distinct words, so that some repeat past the 255 positions a lexeme keeps;
# upper case and non-ASCII letters for the server's parser, "1e5a" for the
# number exception.
_WORD = st.sampled_from(["a", "b", "cors", "use", "1e5a", "x1", "Zed", "été", "9"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORD, max_size=600))
def test_the_fast_tsvector_is_the_plain_one(words: list[str]) -> None:
    assert tsvector_binary_fast(words) == tsvector_binary(words)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.none() | st.text(max_size=40))
def test_the_fast_tsvector_of_indexed_text_is_the_plain_one(
    content: str, title: str | None
) -> None:
    words = index_words(title, content)
    assert tsvector_binary_fast(words) == tsvector_binary(words)


def test_the_binary_form() -> None:
    # 2 lexemes; "cors" at 1 and 3, "use" at 2.
    assert tsvector_binary(["cors", "use", "cors"]) == (
        b"\x00\x00\x00\x02" + b"cors\x00\x00\x02\x00\x01\x00\x03" + b"use\x00\x00\x01\x00\x02"
    )
    assert tsvector_binary(["a"] * 256) is None and tsvector_binary_fast(["a"] * 256) is None
    assert tsvector_binary(["a"] * 255) == tsvector_binary_fast(["a"] * 255)
