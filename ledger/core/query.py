"""Search text: what the full-text index holds and what a user's query asks.

Pure: no I/O. The ledger never hands a user's text to an FTS engine as syntax.
Both sides go through one normalization, done here in Python, so SQLite and
PostgreSQL index and query exactly the same words:

- `index_terms(title, content)`: the words of a chunk version, lower-cased
  (Unicode case folding), diacritics removed (NFKD, combining marks dropped),
  split on everything that is not a letter or a digit, words longer than
  `MAX_WORD` characters dropped, at most `MAX_WORDS` words (title first). The
  result is one space-separated string of words: SQLite's FTS5 `ascii`
  tokenizer and PostgreSQL's `simple` configuration both split it back into the
  same words, in the same positions (PostgreSQL caps positions at 16,383, hence
  `MAX_WORDS`).
- `parse_query(text)`: plain words and `"quoted phrases"` into a `Query`; a
  chunk matches when it holds any of the terms (a phrase only as written).
  Every character that is not a letter or a digit is a separator, so FTS
  operators (`AND`, `OR`, `NEAR(`, `*`, `-x`, `^`, `:`) are just words or
  nothing. A lone `"` opens a phrase that runs to the end of the text.
- `Query.fts5()` and `Query.tsquery()` render the only syntax either engine sees.

    >>> q = parse_query('cache "CORS responses" NEAR(x*')
    >>> q.fts5()
    '"cache" OR "cors responses" OR "near" OR "x"'
    >>> q.tsquery()
    "'cache' | 'cors' <-> 'responses' | 'near' | 'x'"
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ledger.errors import InputError

__all__ = [
    "MAX_QUERY_TERMS",
    "MAX_WORD",
    "MAX_WORDS",
    "Query",
    "clean_text",
    "index_terms",
    "normalize_words",
    "parse_query",
]

MAX_WORD = 128  # longer runs (base64 blobs, minified code) are not words anyone types
MAX_WORDS = 16_383  # PostgreSQL's highest tsvector position
MAX_QUERY_TERMS = 64  # a query of 10,000 words keeps its first 64 distinct terms
MAX_PHRASE_WORDS = 32

_WORD = re.compile(r"[^\W_]+")
# Control characters and lone surrogates (undecodable bytes of a command line)
# cannot be stored (PostgreSQL text refuses NUL) or printed: the recorded text
# shows them as a space and U+FFFD.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` safe to store and print: control characters as spaces, lone
    surrogates as U+FFFD, surrounding white space stripped."""
    return _SURROGATE.sub("\ufffd", _CONTROL.sub(" ", text)).strip()


def _fold(text: str) -> str:
    """Case-folded, without diacritics: "Ça Straße" -> "ca strasse"."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def normalize_words(text: str) -> list[str]:
    """The words of `text` as the index sees them (folded; long runs dropped)."""
    return [w for w in _WORD.findall(_fold(text)) if len(w) <= MAX_WORD]


def index_terms(title: str | None, content: str) -> str:
    """What the full-text index stores for one chunk version: its title's and its
    content's words, space-separated, at most `MAX_WORDS` of them.

    >>> index_terms("CORS > Use CORSMiddleware", "Allow-Origin: *; café")
    'cors use corsmiddleware allow origin cafe'
    """
    words = normalize_words(title) if title else []
    if len(words) < MAX_WORDS:
        # Only the head of a huge body can be indexed; fold no more than needed.
        words += normalize_words(content[: MAX_WORDS * (MAX_WORD + 1)])
    return " ".join(words[:MAX_WORDS])


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query: terms, each a tuple of words (one word, or a phrase).

    `text` is what the user typed (for answers and records); the terms are all
    that reaches the database.
    """

    text: str
    terms: tuple[tuple[str, ...], ...]

    @property
    def words(self) -> tuple[str, ...]:
        """Every distinct word of the terms, in order."""
        return tuple(dict.fromkeys(w for term in self.terms for w in term))

    def fts5(self) -> str:
        """An FTS5 MATCH expression: every term a quoted string, joined by OR.

        Words hold only letters and digits, but quotes are doubled anyway, as
        FTS5 escapes them, so the rendering is safe by construction.
        """
        return " OR ".join('"' + " ".join(term).replace('"', '""') + '"' for term in self.terms)

    def tsquery(self) -> str:
        """A PostgreSQL tsquery: quoted lexemes, `<->` within a phrase, `|` between terms."""
        return " | ".join(" <-> ".join(_quote_lexeme(w) for w in term) for term in self.terms)


def _quote_lexeme(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def parse_query(text: str) -> Query:
    """Plain words and "quoted phrases" of `text` as a `Query`.

    Raises `InputError` when the text holds no word at all (blank, or only
    punctuation and operators). Never raises anything else, whatever the text.

    >>> parse_query('refund  "damaged items" refund').terms
    (('refund',), ('damaged', 'items'))
    """
    if not isinstance(text, str):
        raise InputError("the query must be text")
    terms: list[tuple[str, ...]] = []
    seen: set[tuple[str, ...]] = set()
    # Even pieces are outside quotes, odd ones inside; a lone quote's phrase
    # simply runs to the end.
    for i, piece in enumerate(text.split('"')):
        words = normalize_words(piece)
        if not words:
            continue
        found: list[tuple[str, ...]]
        if i % 2 == 1 and len(words) > 1:
            found = [tuple(words[:MAX_PHRASE_WORDS])]
        else:
            found = [(w,) for w in words]
        for term in found:
            if term not in seen:
                seen.add(term)
                terms.append(term)
            if len(terms) >= MAX_QUERY_TERMS:
                break
        if len(terms) >= MAX_QUERY_TERMS:
            break
    if not terms:
        raise InputError(
            "the query has no words to search for (blank, or only punctuation); "
            'give words or a "quoted phrase"'
        )
    return Query(text=clean_text(text), terms=tuple(terms))
