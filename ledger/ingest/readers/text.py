"""Plain text: one section per file, split at blank lines when over the limit."""

from __future__ import annotations

from ledger.ingest.readers.base import Section, paragraphs


def read_text(text: str) -> list[Section]:
    """A plain text file: one section of paragraphs (split at blank lines)."""
    blocks = paragraphs(text)
    return [Section([], [], blocks, source=text.split("\n"))] if blocks else []
