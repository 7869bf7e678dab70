"""Markdown: markdown-it-py's block tokens and their line maps -> sections.

Headings (ATX and setext) at the top level open sections; a heading inside a
fence, a list or a block quote is text. Front matter (`---` ... `---` on the
first lines) is skipped. A chunk's content is its source lines exactly (line
endings as `\\n`, trailing white space of the chunk removed), so `lines` point
at it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger.ingest.readers.base import Block, Section, heading_slug, split_anchor

_MD: Any = None
_INLINE: Any = None


def _markdown() -> Any:
    global _MD, _INLINE
    if _MD is None:
        from markdown_it import MarkdownIt

        _INLINE = MarkdownIt("commonmark")

        # CommonMark, plus tables so a table is one block to split on. Inline
        # parsing is off (a third of the parse time): only headings need it, and
        # `_heading_text` parses just their text.
        _MD = MarkdownIt("commonmark").enable("table").disable("inline")
    return _MD


def front_matter_end(lines: Sequence[str]) -> int:
    """The number of lines of a YAML front matter block at the start, else 0."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return i + 1
    return 0  # not closed: a thematic break, not front matter


def _heading_text(token: Any) -> str:
    """The plain text of a heading's inline source (code spans without backticks)."""
    parts: list[str] = []
    children: list[Any] = []
    _markdown()
    for tok in _INLINE.parseInline(token.content):
        children.extend(tok.children or ())
    for child in children:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return " ".join("".join(parts).split())


def read_markdown(text: str) -> list[Section]:
    """The sections of a Markdown text; every non-blank line outside front matter
    belongs to exactly one block of one section."""
    lines = text.split("\n")
    skip = front_matter_end(lines)
    if skip:
        # Blank lines in place of the front matter keep the parser's line numbers.
        parsed = "\n".join([""] * skip + lines[skip:])
    else:
        parsed = text
    tokens = _markdown().parse(parsed)
    # Top-level blocks: (start line 0-based, end exclusive, heading info or None, fence).
    starts: list[tuple[int, int, tuple[int, str, str | None] | None, bool]] = []
    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.map is None or tok.nesting == -1:
            continue
        if tok.type == "heading_open":
            title, anchor = split_anchor(_heading_text(tokens[i + 1]))
            starts.append((tok.map[0], tok.map[1], (int(tok.tag[1]), title, anchor), False))
        else:
            starts.append((tok.map[0], tok.map[1], None, tok.type == "fence"))
    sections: list[Section] = []
    stack: list[tuple[int, str, str]] = []  # (level, title, slug)
    current = Section([], [], source=lines)
    n = len(lines)
    for k, (start, _end, heading, fence) in enumerate(starts):
        # A block owns the lines up to the next block (reference definitions and
        # other lines that make no token stay with the block before them).
        stop = starts[k + 1][0] if k + 1 < len(starts) else n
        body = "\n".join(lines[start:stop]).rstrip()
        last = start + body.count("\n") + 1
        if heading is not None:
            level, title, anchor = heading
            if current.blocks:
                sections.append(current)
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title, heading_slug(title, anchor)))
            current = Section([t for _, t, _ in stack], [s for _, _, s in stack], source=lines)
        if body.strip():
            current.blocks.append(Block(start + 1, last, body, fence))
    if current.blocks:
        sections.append(current)
    return sections
