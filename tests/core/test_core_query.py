"""The query parser and index normalization: safe by construction, for any text."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.core.query import (
    MAX_QUERY_TERMS,
    MAX_WORD,
    MAX_WORDS,
    clean_text,
    index_terms,
    normalize_words,
    parse_query,
)

# What a rendering may contain: quoted words joined by OR (FTS5), quoted
# lexemes joined by <-> and | (tsquery). Nothing else reaches the engines.
FTS5 = re.compile(r'^"[^\W_]+( [^\W_]+)*"( OR "[^\W_]+( [^\W_]+)*")*$')
TSQ = re.compile(r"^'[^\W_]+'( <-> '[^\W_]+')*( \| '[^\W_]+'( <-> '[^\W_]+')*)*$")


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("refund window", (("refund",), ("window",))),
        ('"damaged items" refund', (("damaged", "items"), ("refund",))),
        ('AND OR "', (("and",), ("or",))),
        ("NEAR(a b, 3)", (("near",), ("a",), ("b",), ("3",))),
        ("-x", (("x",),)),
        ('say "lone quote runs on', (("say",), ("lone", "quote", "runs", "on"))),
        ('"single"', (("single",),)),
        ("Café CAFÉ cafe", (("cafe",),)),
        ("snake_case x:y^z", (("snake",), ("case",), ("x",), ("y",), ("z",))),
        ("a\x00b\x1fc", (("a",), ("b",), ("c",))),
    ],
)
def test_words_and_phrases(text: str, terms: tuple[tuple[str, ...], ...]) -> None:
    q = parse_query(text)
    assert q.terms == terms
    assert FTS5.match(q.fts5())
    assert TSQ.match(q.tsquery())


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "*", '"', '""', "-", "()", "\x00", "…"])
def test_a_query_without_words_is_invalid_input(text: str) -> None:
    with pytest.raises(InputError, match="no words"):
        parse_query(text)


def test_ten_thousand_words_keep_the_first_distinct_terms() -> None:
    q = parse_query(" ".join(f"w{i}" for i in range(10_000)))
    assert len(q.terms) == MAX_QUERY_TERMS
    assert q.terms[0] == ("w0",) and q.terms[-1] == (f"w{MAX_QUERY_TERMS - 1}",)


def test_rendering_exactly() -> None:
    q = parse_query('cache "CORS responses"')
    assert q.fts5() == '"cache" OR "cors responses"'
    assert q.tsquery() == "'cache' | 'cors' <-> 'responses'"


def test_recorded_text_holds_no_control_characters_or_surrogates() -> None:
    assert clean_text(" a\x00b\udcff\x7fc ") == "a b\ufffd c"
    assert parse_query("x\x00y").text == "x y"


def test_index_terms_folds_like_the_query() -> None:
    assert index_terms("CORS > Middleware", "Straße café-au-lait") == (
        "cors middleware strasse cafe au lait"
    )
    assert index_terms(None, "x" * (MAX_WORD + 1) + " kept") == "kept"


def test_index_terms_are_capped_at_postgresql_positions() -> None:
    text = " ".join("w" for _ in range(MAX_WORDS + 10))
    assert len(index_terms("title", text).split()) == MAX_WORDS


def test_query_words_are_index_words() -> None:
    """A phrase typed as it appears in a body is a phrase of the body's terms."""
    body = "Cache the CORS-responses for 10 minutes, Müller said."
    q = parse_query('"CORS-responses for 10" müller')
    indexed = index_terms(None, body)
    for term in q.terms:
        assert " ".join(term) in indexed


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from('"*-()^:'), max_size=300))
def test_no_text_raises_anything_but_input_error(text: str) -> None:
    try:
        q = parse_query(text)
    except InputError:
        assert normalize_words(text) == []  # only a text without words is refused
        return
    assert FTS5.match(q.fts5()), q.fts5()
    assert TSQ.match(q.tsquery()), q.tsquery()
    assert not any(unicodedata.category(ch) in ("Cc", "Cs") and ch not in "\t\n" for ch in q.text)
    q.text.encode("utf-8")  # storable and printable


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), st.one_of(st.none(), st.text(max_size=40)))
def test_index_terms_never_raise_and_hold_only_words(content: str, title: str | None) -> None:
    terms = index_terms(title, content)
    assert all(re.fullmatch(r"[^\W_]+", w) for w in terms.split())
    assert terms == terms.strip()
