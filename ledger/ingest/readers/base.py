"""What every reader gives back: sections of blocks, and the slugs of headings.

A reader turns one file into `Section`s (a heading path and its blocks, each
block with its 1-based source lines); `ledger.ingest.documents` cuts them into
chunks and names them. `decode_document` is the strict text of a file's bytes.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field

from ledger.core.errors import InputError


@dataclass(frozen=True, slots=True)
class Block:
    """A unit a section is split on: a paragraph, list, fence, table, heading...

    `first`/`last` are 1-based source lines (pages for a PDF). `fence` marks a
    fenced code block, which stays whole unless it alone exceeds the limit.
    """

    first: int
    last: int
    text: str
    fence: bool = False
    exact: bool = True  # `text` is the source lines first..last (Markdown)


@dataclass(slots=True)
class Section:
    """A heading and what follows it up to the next heading.

    `titles` is the heading path's text (`["Tutorial", "CORS"]`), `slugs` what
    each heading contributes to the id (its `{#anchor}`, else its slugified text).
    A Markdown chunk's text is its exact source lines (`source`); other chunks
    join their blocks' extracted texts with `joiner`.
    """

    titles: list[str]
    slugs: list[str]
    blocks: list[Block] = field(default_factory=list)
    joiner: str = "\n\n"
    source: list[str] | None = None  # Markdown: the file's lines, for exact chunk text


@dataclass(slots=True)
class Work:
    """What a reader did with one file, counted, not timed.

    `steps` grows with the characters a parser scanned and the operations it ran
    (each reader says what it counts); the per-file bounds cap the same things,
    and the property tests check it grows no more than linearly with the input.
    `unknown` counts the markup a reader did not know and rendered as its text
    (reStructuredText: `"role:ref"`, `"directive:versionadded"`).
    """

    steps: int = 0
    unknown: dict[str, int] = field(default_factory=dict)

    def note_unknown(self, name: str) -> None:
        self.unknown[name] = self.unknown.get(name, 0) + 1


_SLUG_RUN = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    """Lower-case ASCII letters and digits, every other run one `-`, none at the ends.

    Accents are folded (`Café` -> `cafe`); a text with no ASCII letter or digit at
    all (a heading in Chinese) slugs to a short hash of itself, so it still
    contributes something stable to the id.
    """
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG_RUN.sub("-", folded.lower()).strip("-")
    if slug:
        return slug
    if not text.strip():
        return ""
    return "h" + hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:6]


# `## Title { #anchor }` and `## Title {#anchor}` (MkDocs attr_list, Pandoc), at the end.
_ANCHOR_RE = re.compile(r"\s*\{\s*#([A-Za-z0-9][A-Za-z0-9_:.-]*)\s*\}\s*$")


def split_anchor(title: str) -> tuple[str, str | None]:
    """The title and its explicit anchor, if any.

    `"Use X { #use-x }"` -> `("Use X", "use-x")`; `"Plain"` -> `("Plain", None)`.
    """
    m = _ANCHOR_RE.search(title)
    if m is None:
        return title.strip(), None
    return title[: m.start()].strip(), m.group(1)


def heading_slug(title: str, anchor: str | None) -> str:
    return slugify(anchor) if anchor else slugify(title)


def decode_document(data: bytes, where: str) -> str:
    """Strict UTF-8 text of a document: BOM dropped, CRLF and CR read as LF.

    Refuses a binary file (a NUL byte in its first 8 KiB, as git and grep judge)
    and invalid UTF-8, naming the file and the byte offset.
    """
    if b"\x00" in data[:8192]:
        raise InputError(f"{where}: looks like a binary file (a NUL byte); not a text document")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where}: not valid UTF-8 at byte {exc.start}; save the file as UTF-8"
        ) from None
    if "\x00" in text:
        raise InputError(f"{where}: contains a NUL character; not a text document")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def paragraphs(text: str, first_line: int = 1) -> list[Block]:
    """The blank-line separated paragraphs of `text`, with their lines."""
    blocks: list[Block] = []
    start: int | None = None
    lines = text.split("\n")
    for i, line in enumerate(lines + [""]):
        if line.strip():
            if start is None:
                start = i
        elif start is not None:
            body = "\n".join(lines[start:i]).rstrip()
            blocks.append(Block(first_line + start, first_line + i - 1, body))
            start = None
    return blocks
