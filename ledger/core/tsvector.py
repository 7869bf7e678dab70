"""PostgreSQL's index row for a chunk version, made in Python: the tsvector in
its binary form when it is known beforehand, else the terms for the server's
parser. Pure (no SQL, no SQLAlchemy): ingest's reader process makes them too.
"""

from __future__ import annotations

import re
from functools import cache
from itertools import islice

from ledger.core.query import MAX_WORDS, index_words

# PostgreSQL's parser (`to_tsvector`) was most of the index step's cost, and for
# most terms its answer is known beforehand: lower-case ASCII words one space
# apart get one lexeme each, at positions 1, 2, 3, ... Two exceptions (found by
# comparing with the server every word of up to 3 letters and digits and 200,000
# longer ones): a word that starts with a number in scientific notation and goes
# on with a letter ("1e5abc" is "1e5" and "abc"), and a word met more than 255
# times (to_tsvector keeps 255 of its positions, a tsvector's input 256). Other
# terms (folded from non-ASCII text, which the server's parser and case folding
# may split or lower differently) still go through `to_tsvector`: either way
# the index holds the same tsvector, so search and ranking do not change.
#
# The known tsvectors go to the server in COPY's binary form (each word once,
# with all its positions): reading the text form (`cors:1,3 use:2`) cost the
# server as much again as the rest of the index row, and the binary one costs
# no more to make here.
_NUMBER_WORD = re.compile(r"[0-9]+e[0-9]+[a-z]")
_NUMBER_LATER = re.compile(r" [0-9]+e[0-9]+[a-z]")
_MAX_POSITIONS = 255


@cache
def _uint16() -> list[bytes]:
    """0 to 16383 as 2 big-endian bytes (a position, weight D, or a count), made
    on the first index step (not by every import)."""
    return [i.to_bytes(2, "big") for i in range(MAX_WORDS + 1)]


def tsvector_binary(words: list[str]) -> bytes | None:
    """`to_tsvector('simple', " ".join(words))` in the binary form the server
    reads (`tsvectorrecv`: the number of words; per word, in sorted order, its
    bytes, a zero byte, the number of its positions and the positions, 2 bytes
    each); None when only the server's parser can say.

    `words` is `index_words`' output (letters and digits, at most `MAX_WORDS`).
    The plain rule; ingest runs `tsvector_binary_fast`, which equals it.
    """
    terms = " ".join(words)
    if not (terms.isascii() and terms.islower()):
        return None
    if _NUMBER_WORD.match(terms) or _NUMBER_LATER.search(terms):
        return None
    at: dict[str, list[int]] = {}
    for position, word in enumerate(words, start=1):
        at.setdefault(word, []).append(position)
    if any(len(positions) > _MAX_POSITIONS for positions in at.values()):
        return None
    parts = [len(at).to_bytes(4, "big")]
    # In the server's order of lexemes (bytes, then length: Python's for ASCII).
    for word, positions in sorted(at.items()):
        parts.append(word.encode() + b"\x00" + len(positions).to_bytes(2, "big"))
        parts.extend(position.to_bytes(2, "big") for position in positions)
    return b"".join(parts)


def tsvector_binary_fast(words: list[str]) -> bytes | None:
    """`tsvector_binary(words)`, made faster for the bench row "pg ingest with
    the FTS index <= 1.3": the 2-byte numbers come from a table made once, and
    the positions are paired with the words without a Python index per word."""
    terms = " ".join(words)
    if not (terms.isascii() and terms.islower()):
        return None
    if _NUMBER_WORD.match(terms) or _NUMBER_LATER.search(terms):
        return None
    uint16 = _uint16()
    at: dict[str, list[bytes]] = {}
    for word, position in zip(words, islice(uint16, 1, None), strict=False):
        positions = at.get(word)
        if positions is None:
            at[word] = [position]
        else:
            positions.append(position)
    if len(words) > _MAX_POSITIONS and any(len(p) > _MAX_POSITIONS for p in at.values()):
        return None
    # In the server's order of lexemes (bytes, then length: Python's for ASCII),
    # which it would otherwise sort itself, row by row (a tenth of its COPY).
    body = [
        word.encode() + b"\x00" + uint16[len(positions)] + b"".join(positions)
        for word, positions in sorted(at.items())
    ]
    return len(at).to_bytes(4, "big") + b"".join(body)


def index_payload(title: str | None, content: str) -> bytes | str:
    """A version's PostgreSQL index row: its tsvector (`tsvector_binary`) or,
    when only the server's parser can say, its terms for `to_tsvector`."""
    words = index_words(title, content)
    tsv = tsvector_binary_fast(words)
    return " ".join(words) if tsv is None else tsv
