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

from ledger.core.errors import InputError
from ledger.core.results import SearchResult

__all__ = [
    "MAX_QUERY_TERMS",
    "MAX_WORD",
    "MAX_WORDS",
    "Query",
    "SearchResult",
    "clean_text",
    "index_terms",
    "index_words",
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


# ASCII text (the common case) is split in C: a letter becomes its lower case, a
# digit stays, every other byte a space; the same words as `_WORD` on `_fold`.
_ASCII_WORDS = bytes(
    ord(chr(b).lower()) if b < 128 and chr(b).isalnum() else ord(" ") for b in range(256)
)


def normalize_words(text: str) -> list[str]:
    """The words of `text` as the index sees them (folded; long runs dropped)."""
    if text.isascii():
        words = text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    else:
        words = _WORD.findall(_fold(text))
    if words and max(map(len, words)) > MAX_WORD:
        return [w for w in words if len(w) <= MAX_WORD]
    return words


def holds_words(content: str, phrase: str) -> bool:
    """Whether `content` holds the words of `phrase` one after another, as the
    index sees words: what stands between them (punctuation, markup) does not
    count, as it does not for a quoted phrase in `why`.

    >>> holds_words("the refund policy; formal decisions", "Refund policy formal")
    True
    >>> holds_words("the refund policy", "policy refund")
    False
    """
    wanted = normalize_words(phrase)
    words = normalize_words(content)
    n = len(wanted)
    return n > 0 and any(words[i : i + n] == wanted for i in range(len(words) - n + 1))


def index_words(title: str | None, content: str) -> list[str]:
    """The words the full-text index holds for one chunk version, in order: its
    title's, then its content's, at most `MAX_WORDS` of them.

    >>> index_words("CORS > Use CORSMiddleware", "Allow-Origin: *; café")
    ['cors', 'use', 'corsmiddleware', 'allow', 'origin', 'cafe']
    """
    words = normalize_words(title) if title else []
    if len(words) < MAX_WORDS:
        # Only the head of a huge body can be indexed; fold no more than needed.
        words += normalize_words(content[: MAX_WORDS * (MAX_WORD + 1)])
    return words[:MAX_WORDS]


def index_terms(title: str | None, content: str) -> str:
    """What the full-text index stores for one chunk version: `index_words`,
    space-separated.

    >>> index_terms("CORS > Use CORSMiddleware", "Allow-Origin: *; café")
    'cors use corsmiddleware allow origin cafe'
    """
    return " ".join(index_words(title, content))


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


# --------------------------------------------------------------------------
# Retrieval builds: what the retriever offered, as the pack records it.
# --------------------------------------------------------------------------

MAX_TOP = 10_000
MAX_CANDIDATE_LINES = 10_000
_ID = re.compile(r"[a-z0-9][a-z0-9-]{1,63}")
# A line of a --candidates file.
_LINE_KEYS = frozenset({"id", "source_version", "score"})
_MAX_SCORE = 10**308  # about the largest float
_LINE_SHAPE = 'an object {"id", "source_version"?, "score"?}'


def round_score(score: float) -> float:
    """Six significant digits: recorded and shown scores are stable text on every
    platform, and still order matches (BM25 scores of small ledgers are tiny)."""
    return float(f"{score:.6g}")


@dataclass(frozen=True, slots=True)
class Ranked:
    """One ranked item: a chunk id (and, from a candidates file, one version), its
    rank (1 = best) and score (None when the retriever gave none)."""

    id: str
    source_version: str | None
    rank: int
    score: float | None

    def to_json(self) -> dict[str, object]:
        """`{"id", "source_version", "rank", "score"}`: its fields."""
        return {
            "id": self.id,
            "source_version": self.source_version,
            "rank": self.rank,
            "score": self.score,
        }


@dataclass(frozen=True, slots=True)
class RetrievalRecord:
    """A retrieval build's record: the query and K, or the candidates file's
    digest, and the ranked list.

    From a query each ranked id names its one live version (selector version
    2; version 1 named the best-matching version and took every version of the
    id); from a file an item with a `source_version` offers that version only,
    one without offers every version of the id.
    """

    query: str | None
    top: int | None
    candidates_digest: str | None
    ranked: tuple[Ranked, ...]

    def lowest_score(self) -> float | None:
        """The lowest score retrieved (None: nothing retrieved, or unscored)."""
        scores = [r.score for r in self.ranked if r.score is not None]
        return min(scores) if scores else None

    def to_json(self) -> dict[str, object]:
        """`{"query", "top", "candidates_digest", "ranked": [...]}` (show --json, storage)."""
        return {
            "query": self.query,
            "top": self.top,
            "candidates_digest": self.candidates_digest,
            "ranked": [r.to_json() for r in self.ranked],
        }

    def digest_value(self) -> dict[str, object]:
        """What the input digest covers: `to_json()` with scores as their shortest
        decimal text (canonical JSON holds no floats)."""
        return {
            "query": self.query,
            "top": self.top,
            "candidates_digest": self.candidates_digest,
            "ranked": [
                {**r.to_json(), "score": None if r.score is None else repr(r.score)}
                for r in self.ranked
            ],
        }

    @classmethod
    def from_json(cls, data: object) -> RetrievalRecord:
        """The inverse of `to_json`; `InputError` when the shape is not that."""
        try:
            assert_shape = isinstance(data, dict) and isinstance(data["ranked"], list)
            if not assert_shape:
                raise TypeError("not an object with a ranked list")
            obj: dict[str, object] = data  # type: ignore[assignment]
            ranked = tuple(
                Ranked(
                    _str(r["id"]),
                    None if r["source_version"] is None else _str(r["source_version"]),
                    _int(r["rank"]),
                    None if r["score"] is None else float(r["score"]),
                )
                for r in obj["ranked"]  # type: ignore[attr-defined]
            )
            return cls(
                query=None if obj["query"] is None else _str(obj["query"]),
                top=None if obj["top"] is None else _int(obj["top"]),
                candidates_digest=(
                    None if obj["candidates_digest"] is None else _str(obj["candidates_digest"])
                ),
                ranked=ranked,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"retrieval record does not have the recorded shape ({exc})") from None


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    return value


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{value!r} is not an integer")
    return value


def check_top(top: object, where: str = "top") -> int:
    """K of a retrieval build: an integer from 1 to `MAX_TOP`; else an
    InputError about the parameter `where`."""
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= MAX_TOP:
        raise InputError(
            f"{where}: must be an integer between 1 and {MAX_TOP}, not {top!r}", param=where
        )
    return top


def parse_candidates(data: bytes, where: str) -> list[Ranked]:
    """A candidates file: JSON Lines `{"id", "source_version"?, "score"?}` in rank
    order. Every line is checked (strict JSON, known fields, the id rule, a
    finite number for `score`); a repeated item is refused, as it would rank
    one chunk twice.
    """
    from ledger.core.strictjson import loads_object

    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        raise InputError(f'{where}: empty candidates file; one {{"id": ...}} per line')
    if len(lines) > MAX_CANDIDATE_LINES:
        raise InputError(f"{where}: more than {MAX_CANDIDATE_LINES} candidate lines")
    out: list[Ranked] = []
    seen: dict[str, str | None] = {}
    for n, raw in enumerate(lines, start=1):
        at = f"{where}:{n}"
        obj = loads_object(raw, at, _LINE_SHAPE, _LINE_KEYS, frozenset({"id"}))
        cid = obj["id"]
        if not isinstance(cid, str) or not _ID.fullmatch(cid):
            raise InputError(f"{at}: field 'id': must be a chunk id ({_ID.pattern})")
        sv = obj.get("source_version")
        if sv is not None and (not isinstance(sv, str) or not sv.strip() or len(sv) > 80):
            raise InputError(f"{at}: field 'source_version': must be non-blank text of 80 at most")
        score = obj.get("score")
        if score is not None:
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise InputError(f"{at}: field 'score': must be a number")
            if isinstance(score, int) and not -_MAX_SCORE <= score <= _MAX_SCORE:
                # float() of a 400-digit integer overflows: refused by name.
                raise InputError(f"{at}: field 'score': must be a number a float can hold")
            score = round_score(float(score))
        sv = None if sv is None else sv.strip()
        if cid in seen and (seen[cid] is None or sv is None or seen[cid] == sv):
            raise InputError(f"{at}: chunk '{cid}' is already ranked on an earlier line")
        seen[cid] = sv
        out.append(Ranked(cid, sv, n, score))
    return out
