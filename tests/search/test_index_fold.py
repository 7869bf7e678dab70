"""The index's fast fold of non-ASCII text: FTS5 finds in `fts5_text` exactly
the words `index_terms` holds, in order, whatever the text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.query import MAX_WORD, index_terms
from ledger.store.fulltext import fts5_text
from tests.search.test_index import fts5_words

# Letters, digits, separators, and what prose brings: accents (composed and
# combining), ligatures, typographic quotes and dashes, no-break and thin
# spaces, fractions, Greek and Cyrillic, CJK, a letter NFKD leaves alone (ø),
# underscores, control characters.
PIECES = list("aZ09 _-.,;:!?'\"\t\n") + [
    "é", "e\u0301", "ß", "ﬁ", "“", "”", "—", "\u00a0", "\u2009", "½", "Σ", "ς", "Ж",
    "中", "ø", "İ", "Ⅻ", "①", "\x00", "\x7f", "€", "ǅ", "ﬀ", "ᾧ",
]  # fmt: skip
texts = st.lists(st.sampled_from(PIECES), max_size=300).map("".join)
long_runs = st.builds(
    lambda a, b, c: a + "x" * b + c,
    texts,
    st.integers(MAX_WORD - 2, MAX_WORD + 2),
    texts,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), texts), st.one_of(texts, long_runs)), max_size=8))
def test_fts5_finds_the_index_words_in_the_text_it_is_given(
    versions: list[tuple[str | None, str]],
) -> None:
    given_texts = [fts5_text(title, content) for title, content in versions]
    assert fts5_words(given_texts) == [index_terms(t, c).split() for t, c in versions]


def test_prose_is_folded_and_its_marks_made_spaces() -> None:
    prose = "The “Café” déjà-vu costs 10 € — straße, ﬁle_name"
    text = fts5_text("Guide", prose)
    # Its non-ASCII characters folded, with "“", "”", "€" and "—" (no letters)
    # made spaces; ASCII letters keep their case (FTS5's tokenizer folds them).
    assert text == "Guide The  Cafe  deja-vu costs 10     strasse, file_name"
    assert fts5_words([text]) == [index_terms("Guide", prose).split()]
