"""Document readers: Markdown, HTML, plain text and PDF files -> heading sections -> chunks.

Each reader turns a file into `Section`s (a heading path and its blocks, each
block with its 1-based source lines); `split_section` cuts a section into
chunks of at most `max_tokens` (the rules' counter) on block boundaries; `chunk
ids` come from the source name, the path and the heading path (`assign_ids`).

- Markdown: markdown-it-py's block tokens and their line maps. Headings (ATX and
  setext) at the top level open sections; a heading inside a fence, a list or a
  block quote is text. Front matter (`---` ... `---` on the first lines) is
  skipped. A chunk's content is its source lines exactly (line endings as
  `\\n`, trailing white space of the chunk removed), so `lines` point at it.
- HTML: the standard library's `html.parser`; `h1`-`h6` open sections, the text
  of block elements forms blocks, `script`, `style` and `template` are dropped.
- Text: one section per file, split at blank lines when over the limit.
- PDF (optional, `pypdf`): one section per page; a page without extractable text
  is refused by name, not stored empty.

A file is decoded strictly: invalid UTF-8 and binary content (a NUL byte) are
refused naming the file; a UTF-8 byte-order mark is dropped and CRLF read as LF.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from ledger.core.errors import InputError
from ledger.ingest.source import lstat_named

MARKDOWN_EXTENSIONS = (".md", ".markdown")
TEXT_EXTENSIONS = (".txt",)
HTML_EXTENSIONS = (".html", ".htm")
PDF_EXTENSIONS = (".pdf",)
ID_MAX = 64
HASH_LEN = 8

Counter = Callable[[str], int]


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


@dataclass(frozen=True, slots=True)
class DocChunk:
    """One chunk of a document, before it becomes a chunk record.

    `location` is `lines` (or `pages` for a PDF): `[first, last]`, 1-based.
    `part` counts the pieces of a split section from 1.
    """

    path: str
    title: str
    slugs: tuple[str, ...]
    part: int
    location_kind: str  # "lines" or "pages"
    location: tuple[int, int]
    text: str
    tokens: int
    fence_only: bool

    @property
    def key(self) -> str:
        """The id before shortening: path slug, `--`, heading path slug, part."""
        head = "-".join(s for s in self.slugs if s)
        base = slugify(strip_extension(self.path))
        key = f"{base}--{head}" if head else base
        return key if self.part == 1 else f"{key}-p{self.part}"


def strip_extension(path: str) -> str:
    root, ext = os.path.splitext(path)
    return root if ext else path


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


# --------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------

_HTML_BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption dd details dialog div dl dt fieldset "
    "figcaption figure footer form header hr li main nav ol p pre section summary table "
    "tbody td tfoot th thead tr ul br".split()
)
_HTML_DROPPED = frozenset({"script", "style", "template", "noscript", "svg", "head"})
_HEADINGS = {f"h{i}": i for i in range(1, 7)}


class _HTMLSections(HTMLParser):
    """Collects sections of text blocks, with the source lines of each block."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = []
        self.current = Section([], [], joiner="\n\n")
        self.stack: list[tuple[int, str, str]] = []
        self.dropped = 0
        self.pre = 0
        self.buf: list[str] = []
        self.first = 0
        self.last = 0
        self.heading: tuple[int, str | None, int] | None = None  # (level, id, line)

    def _flush(self) -> None:
        text = "".join(self.buf)
        self.buf = []
        if self.pre == 0:
            text = " ".join(text.split())
        else:
            text = text.strip("\n").rstrip()
        if text.strip():
            self.current.blocks.append(Block(self.first, self.last, text))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HTML_DROPPED:
            self.dropped += 1
            return
        if self.dropped:
            return
        if tag in _HEADINGS:
            self._flush()
            anchor = dict(attrs).get("id")
            self.heading = (_HEADINGS[tag], anchor, self.getpos()[0])
            return
        if tag in _HTML_BLOCK_TAGS and self.heading is None:
            self._flush()
            if tag == "pre":
                self.pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _HTML_DROPPED:
            self.dropped = max(0, self.dropped - 1)
            return
        if self.dropped:
            return
        if tag in _HEADINGS and self.heading is not None:
            level, anchor, line = self.heading
            title = " ".join("".join(self.buf).split())
            self.buf = []
            self.heading = None
            if self.current.blocks:
                self.sections.append(self.current)
            while self.stack and self.stack[-1][0] >= level:
                self.stack.pop()
            self.stack.append((level, title, heading_slug(title, anchor)))
            self.current = Section(
                [t for _, t, _ in self.stack], [s for _, _, s in self.stack], joiner="\n\n"
            )
            if title:
                self.current.blocks.append(Block(line, self.getpos()[0], title))
            return
        if tag in _HTML_BLOCK_TAGS and self.heading is None:
            self._flush()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)

    def handle_data(self, data: str) -> None:
        if self.dropped or not data:
            return
        line = self.getpos()[0]
        if not "".join(self.buf).strip():
            # The block starts at its first non-blank character's line.
            leading = data[: len(data) - len(data.lstrip())]
            self.first = line + leading.count("\n")
        self.buf.append(data)
        if data.strip():
            self.last = line + data.rstrip().count("\n")

    def close(self) -> None:
        super().close()
        self._flush()
        if self.current.blocks:
            self.sections.append(self.current)


def read_html(text: str) -> list[Section]:
    """The sections of an HTML text: headings as structure, block text as blocks."""
    parser = _HTMLSections()
    parser.feed(text)
    parser.close()
    return parser.sections


# --------------------------------------------------------------------------
# Plain text and PDF
# --------------------------------------------------------------------------


def _paragraphs(text: str, first_line: int = 1) -> list[Block]:
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


def read_text(text: str) -> list[Section]:
    """A plain text file: one section of paragraphs (split at blank lines)."""
    blocks = _paragraphs(text)
    return [Section([], [], blocks, source=text.split("\n"))] if blocks else []


def read_pdf(data: bytes, where: str) -> list[Section]:
    """One section per page (`pages` [n, n]); a page with no text is refused by name."""
    try:
        import pypdf
    except ImportError:
        raise InputError(
            f"{where}: PDF needs the optional parser: pip install 'context-ledger[pdf]'"
        ) from None
    import io

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise InputError(f"{where}: the PDF is encrypted; decrypt it first")
        pages = [page.extract_text() or "" for page in reader.pages]
    except InputError:
        raise
    except Exception as exc:  # pypdf raises many kinds on a broken file
        raise InputError(f"{where}: not a readable PDF ({type(exc).__name__})") from None
    sections: list[Section] = []
    for n, page_text in enumerate(pages, start=1):
        page_text = page_text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
        blocks = [Block(n, n, b.text, exact=False) for b in _paragraphs(page_text)]
        if not blocks:
            raise InputError(
                f"{where}: page {n} has no extractable text (a scan?); "
                "OCR it, or skip the file with a rule `skip = true`"
            )
        sections.append(Section([f"Page {n}"], [f"page-{n}"], blocks, joiner="\n\n"))
    if not sections:
        raise InputError(f"{where}: the PDF has no pages")
    return sections


# --------------------------------------------------------------------------
# Splitting at max_tokens
# --------------------------------------------------------------------------


def render(section: Section, blocks: Sequence[Block]) -> str:
    """The text of a chunk made of `blocks`: the exact source lines from the first
    block's first line to the last block's last (Markdown), else the blocks' texts
    joined; trailing white space removed."""
    if section.source is not None and all(b.exact for b in blocks):
        first = blocks[0].first
        last = max(b.last for b in blocks)
        return "\n".join(section.source[first - 1 : last]).rstrip()
    return section.joiner.join(b.text for b in blocks).rstrip()


def _line_blocks(block: Block, section: Section) -> list[Block]:
    """An oversized non-fence block as one block per non-blank line."""
    lines = block.text.split("\n")
    if section.source is not None and block.exact:
        return [
            Block(block.first + i, block.first + i, line)
            for i, line in enumerate(lines)
            if line.strip()
        ]
    return [Block(block.first, block.last, line, exact=False) for line in lines if line.strip()]


def _word_pieces(block: Block, count: Counter, max_tokens: int) -> list[Block]:
    """A single line over the limit, cut at white space (or, for one endless word, by
    characters) into pieces that each fit. A piece is part of a line: not `exact`."""
    words = re.findall(r"\S+\s*", block.text)
    pieces: list[Block] = []
    current = ""

    def piece(text: str) -> None:
        pieces.append(Block(block.first, block.last, text.rstrip(), exact=False))

    for word in words:
        while count(word.rstrip()) > max_tokens:
            # One "word" longer than the limit: halve the cut until it fits.
            cut = max(1, len(word) // 2)
            while cut > 1 and count(word[:cut]) > max_tokens:
                cut //= 2
            if current.strip():
                piece(current)
                current = ""
            piece(word[:cut])
            word = word[cut:]
        if not word.strip():
            continue
        candidate = current + word
        if current and count(candidate.rstrip()) > max_tokens:
            piece(current)
            current = word
        else:
            current = candidate
    if current.strip():
        piece(current)
    return pieces


Piece = tuple[list[Block], str, int, bool]  # blocks, text, tokens, is one fenced block


def _pack(section: Section, blocks: list[Block], count: Counter, max_tokens: int) -> list[Piece]:
    """Greedy grouping of blocks that each fit into chunks that fit.

    A running sum of the blocks' own counts is a cheap estimate; the rendered text
    is counted for real only near the limit, and always for the final answer.
    """
    groups: list[Piece] = []
    current: list[Block] = []
    estimate = 0

    def close() -> None:
        text = render(section, current)
        groups.append((list(current), text, count(text), False))

    for block in blocks:
        own = count(block.text)
        if current and estimate + own + 2 > max_tokens * 0.9:
            if count(render(section, current + [block])) > max_tokens:
                close()
                current, estimate = [block], own
                continue
        current.append(block)
        estimate += own + 2
    if current:
        close()
    return groups


def split_section(section: Section, count: Counter, max_tokens: int) -> list[Piece]:
    """The section's chunks: (blocks, text, token count, is one fenced block).

    A section that fits is one chunk. Otherwise blocks are grouped greedily in
    order; a fence over the limit stays whole as its own chunk; any other block
    over the limit is cut at line boundaries, and a single line over it at white
    space, each piece of that line a chunk of its own.
    """
    whole = render(section, section.blocks)
    total = count(whole)
    if total <= max_tokens:
        only_fence = len(section.blocks) == 1 and section.blocks[0].fence
        return [(section.blocks, whole, total, only_fence)]
    out: list[Piece] = []
    run: list[Block] = []

    def flush() -> None:
        if run:
            out.extend(_pack(section, run, count, max_tokens))
            run.clear()

    for block in section.blocks:
        own = count(block.text)
        if own <= max_tokens:
            run.append(block)
            continue
        flush()
        if block.fence:
            out.append(([block], render(section, [block]), own, True))
            continue
        lines: list[Block] = []
        for line in _line_blocks(block, section):
            if count(line.text) <= max_tokens:
                lines.append(line)
                continue
            if lines:
                out.extend(_pack(section, lines, count, max_tokens))
                lines = []
            # Each piece of a cut line is a chunk of its own: grouped with the next
            # lines, its text would be joined, not the source's, and its `lines`
            # would name text the file does not hold (found on the FastAPI docs).
            for piece in _word_pieces(line, count, max_tokens):
                out.append(([piece], piece.text, count(piece.text), False))
        out.extend(_pack(section, lines, count, max_tokens))
    flush()
    return out


# --------------------------------------------------------------------------
# Files -> chunks
# --------------------------------------------------------------------------


def document_kind(path: str) -> str | None:
    """`markdown`, `html`, `text`, `pdf`, or None for a file of another type."""
    lower = path.lower()
    if lower.endswith(MARKDOWN_EXTENSIONS):
        return "markdown"
    if lower.endswith(HTML_EXTENSIONS):
        return "html"
    if lower.endswith(TEXT_EXTENSIONS):
        return "text"
    if lower.endswith(PDF_EXTENSIONS):
        return "pdf"
    return None


def chunk_document(
    data: bytes, relpath: str, where: str, count: Counter, max_tokens: int
) -> list[DocChunk]:
    """Every chunk of one file's bytes, in file order.

    `relpath` is the path relative to its PATH (POSIX separators; it names the
    chunk and enters its id), `where` how messages name the file.
    """
    kind = document_kind(relpath)
    if kind is None:
        raise InputError(f"{where}: not a document type ledger reads (.md, .html, .txt, .pdf)")
    if kind == "pdf":
        sections = read_pdf(data, where)
        location_kind = "pages"
    else:
        text = decode_document(data, where)
        reader = {"markdown": read_markdown, "html": read_html, "text": read_text}[kind]
        sections = reader(text)
        location_kind = "lines"
    stem = relpath
    chunks: list[DocChunk] = []
    for section in sections:
        title = " > ".join(t for t in section.titles if t) or stem
        if kind == "pdf":
            title = f"{stem} > {section.titles[0]}"
        parts = split_section(section, count, max_tokens)
        for part, (blocks, body, tokens, fence_only) in enumerate(parts, start=1):
            chunks.append(
                DocChunk(
                    path=relpath,
                    title=title,
                    slugs=tuple(section.slugs),
                    part=part,
                    location_kind=location_kind,
                    location=(blocks[0].first, max(b.last for b in blocks)),
                    text=body,
                    tokens=tokens,
                    fence_only=fence_only,
                )
            )
    if not chunks:
        raise InputError(
            f"{where}: no text to store (empty or only front matter); "
            "remove it or skip it with a rule `skip = true`"
        )
    return chunks


def _shorten(chunk: DocChunk, source: str, name: str, salt: str) -> str:
    """A name over 64 characters: the path slug and the innermost heading's slug
    (the parents dropped), cut to fit, then 8 hex digits of the whole name's SHA-256."""
    digest = hashlib.sha256((name + "\x00" + salt).encode("utf-8")).hexdigest()[:HASH_LEN]
    tail = chunk.slugs[-1] if chunk.slugs else ""
    short = f"{source}-{slugify(strip_extension(chunk.path))}"
    if tail:
        short = f"{short}--{tail}"
    room = ID_MAX - HASH_LEN - 1
    return short[:room].rstrip("-") + "-" + digest


def assign_ids(source: str, chunks: Sequence[DocChunk], taken: Iterable[str] = ()) -> list[str]:
    """The chunk ids of one run, in the order of `chunks` (files in sorted order).

    `<source>-<path slug>--<heading path slug>`, `-pN` for the N-th piece of a
    split section. The first chunk (in file order) with a given name keeps it; a
    later one with the same name (a duplicate heading) takes `-2`, `-3`...; a
    name over 64 characters is cut and ends in 8 hex digits of the SHA-256 of the
    whole name, so each is the same in every run that sees the same files.
    `taken` are ids already held by unchanged files of the run (not re-parsed).
    """
    used: set[str] = set(taken)
    seen: dict[str, int] = {}
    ids: list[str] = []
    for chunk in chunks:
        full = f"{source}-{chunk.key}"
        n = seen.get(full, 0) + 1
        seen[full] = n
        name = full if n == 1 else f"{full}-{n}"
        candidate = name if len(name) <= ID_MAX else _shorten(chunk, source, name, "")
        bump = 0
        while candidate in used:
            # A slug collision across files (`a/b.md` and `a-b.md`): salt the hash.
            bump += 1
            salt = f"{chunk.path}\x00{bump}"
            candidate = _shorten(chunk, source, name, salt)
        used.add(candidate)
        ids.append(candidate)
    return ids


def normalized_text(text: str) -> str:
    """The text `dedupe = "content"` compares: NFC, white space runs as one space."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def content_dedupe_key(text: str, section: str, permission: str, trust: str) -> str:
    """One key per normalized text within the same section, permission and trust, so
    a dedupe group can never cross those boundaries."""
    material = "\x1f".join((section, permission, trust, normalized_text(text)))
    return "dc-" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:40]


# --------------------------------------------------------------------------
# Walking the PATHs
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DocFile:
    """A file to read: its PATH, its path relative to it (POSIX), its full path."""

    root: str
    relpath: str
    full: str

    @property
    def where(self) -> str:
        return self.full


def walk_paths(paths: Sequence[str]) -> list[DocFile]:
    """Every file under `paths`, folders walked recursively in sorted order.

    Hidden entries (a name starting with `.`) are skipped inside folders; a
    symbolic link anywhere is refused by name, as is anything that is not a
    regular file or a folder. A file named directly is relative to its folder.
    """
    files: list[DocFile] = []
    for path in paths:
        st = lstat_named(path, "file or folder")
        if stat.S_ISREG(st.st_mode):
            files.append(DocFile(os.path.dirname(path) or ".", os.path.basename(path), path))
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise InputError(f"{path}: is not a regular file or folder")
        files.extend(_walk_folder(path))
    seen: dict[str, str] = {}
    for f in files if len(paths) > 1 else ():  # one PATH cannot name a file twice
        real = os.path.realpath(f.full)
        if real in seen:
            raise InputError(f"{f.full}: named twice (also as {seen[real]}); pass it once")
        seen[real] = f.full
    return files


def _walk_folder(root: str) -> Iterator[DocFile]:
    def visit(folder: str, rel: str) -> Iterator[DocFile]:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            raise InputError(f"{folder}: cannot list ({exc.strerror})") from None
        for entry in entries:
            if entry.name.startswith("."):
                continue
            full = os.path.join(folder, entry.name)
            relpath = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_symlink():
                raise InputError(
                    f"{full}: is a symbolic link; links are refused (copy the file, or "
                    "name its target as a PATH)"
                )
            if entry.is_dir(follow_symlinks=False):
                yield from visit(full, relpath)
            elif entry.is_file(follow_symlinks=False):
                yield DocFile(root, relpath, full)
            else:
                raise InputError(f"{full}: is not a regular file (device, pipe or socket)")

    yield from visit(root, "")


def read_file_bytes(f: DocFile) -> tuple[bytes, os.stat_result]:
    """The bytes of a file that must still be there, and its stat, or InputError by name."""
    try:
        with open(f.full, "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise InputError(f"{f.full}: is no longer a regular file")
            return handle.read(), st
    except FileNotFoundError:
        raise InputError(
            f"{f.full}: vanished during the run (it was listed, then could not be opened); "
            "run again when the folder is settled"
        ) from None
    except OSError as exc:
        raise InputError(f"{f.full}: cannot read ({exc.strerror})") from None
