"""Checks shared by the reader tests and the FastAPI acceptance test."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from ledger.ingest.readers.base import decode_document
from ledger.ingest.readers.markdown import front_matter_end


class ChunkLike(Protocol):
    text: str
    location: tuple[int, int]
    tokens: int
    fence_only: bool


def lines_of(data: bytes) -> list[str]:
    return decode_document(data, "test").split("\n")


def check_markdown_chunks(
    data: bytes,
    chunks: Sequence[Any],
    count: Callable[[str], int],
    max_tokens: int,
    *,
    where: str = "file",
) -> None:
    """SPEC's promises for the chunks of one Markdown or text file.

    Each chunk's `lines` point at its text (the text is those source lines, or a
    piece of the one line it names); every non-blank line outside front matter
    lies in some chunk; no chunk is over `max_tokens` unless it is one fenced
    block; every count is the counter's count of the stored text.
    """
    lines = lines_of(data)
    skip = front_matter_end(lines)
    covered: set[int] = set()
    for c in chunks:
        first, last = c.location
        assert 1 <= first <= last <= len(lines), (where, c.location)
        span = "\n".join(lines[first - 1 : last]).rstrip()
        if c.text != span:
            # A piece of one overlong line, cut at white space.
            assert first == last and c.text in lines[first - 1], (where, c.location, c.text[:80])
        assert c.text.strip(), (where, c.location)
        assert c.tokens == count(c.text), (where, c.location)
        assert c.tokens <= max_tokens or c.fence_only, (where, c.location, c.tokens)
        assert first > skip, (where, "front matter stored", c.location)
        covered.update(range(first, last + 1))
    uncovered = [
        i for i, line in enumerate(lines, start=1) if i > skip and line.strip() and i not in covered
    ]
    assert not uncovered, (where, uncovered[:5])


def titles(chunks: Iterable[Any]) -> list[str]:
    return [c.title for c in chunks]
