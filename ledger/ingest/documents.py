"""Documents -> chunks: the reader by extension, sections cut at `max_tokens`, ids.

A reader (`ledger.ingest.readers`: Markdown, reStructuredText, HTML, plain text,
PDF) turns a file into `Section`s (a heading path and its blocks, each block
with its 1-based source lines); `split_section` cuts a section into chunks of
at most `max_tokens` (the rules' counter) on block boundaries; `chunk ids` come
from the source name, the path and the heading path (`assign_ids`).

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
from dataclasses import dataclass

from ledger.core.errors import InputError
from ledger.core.records import RecordError, one_line, printable, refuse_controls
from ledger.ingest.readers.base import Block, Section, Work, decode_document, slugify
from ledger.ingest.readers.html import read_html
from ledger.ingest.readers.markdown import read_markdown
from ledger.ingest.readers.pdf import read_pdf
from ledger.ingest.readers.rst import read_rst
from ledger.ingest.readers.text import read_text
from ledger.ingest.source import lstat_named
from ledger.safeio import UnreadableInputError, open_regular, read_bounded

MARKDOWN_EXTENSIONS = (".md", ".markdown")
RST_EXTENSIONS = (".rst",)
TEXT_EXTENSIONS = (".txt",)
HTML_EXTENSIONS = (".html", ".htm")
PDF_EXTENSIONS = (".pdf",)
ID_MAX = 64
HASH_LEN = 8

Counter = Callable[[str], int]


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
    """`markdown`, `rst`, `html`, `text`, `pdf`, or None for a file of another type."""
    lower = path.lower()
    if lower.endswith(MARKDOWN_EXTENSIONS):
        return "markdown"
    if lower.endswith(RST_EXTENSIONS):
        return "rst"
    if lower.endswith(HTML_EXTENSIONS):
        return "html"
    if lower.endswith(TEXT_EXTENSIONS):
        return "text"
    if lower.endswith(PDF_EXTENSIONS):
        return "pdf"
    return None


def read_sections(data: bytes, kind: str, where: str, work: Work) -> list[Section]:
    """The sections of one file's bytes by the reader of its `kind`."""
    if kind == "pdf":
        return read_pdf(data, where, work)
    text = decode_document(data, where)
    if kind == "markdown":
        return read_markdown(text)
    if kind == "rst":
        return read_rst(text, where, work)
    if kind == "html":
        return read_html(text, where, work)
    return read_text(text)


def chunk_document(
    data: bytes,
    relpath: str,
    where: str,
    count: Counter,
    max_tokens: int,
    work: Work | None = None,
) -> list[DocChunk]:
    """Every chunk of one file's bytes, in file order.

    `relpath` is the path relative to its PATH (POSIX separators; it names the
    chunk and enters its id), `where` how messages name the file. `work`, when
    given, collects what the reader did (its steps, the markup it did not know).
    """
    try:  # a file name becomes the chunk's `path`, printed and put in headings
        refuse_controls(relpath, "path")
    except RecordError as exc:
        raise InputError(f"{where}: the file's {exc}; rename the file") from None
    kind = document_kind(relpath)
    if kind is None:
        raise InputError(
            f"{where}: not a document type ledger reads (.md, .rst, .html, .txt, .pdf)"
        )
    sections = read_sections(data, kind, where, work if work is not None else Work())
    location_kind = "pages" if kind == "pdf" else "lines"
    stem = relpath
    chunks: list[DocChunk] = []
    for section in sections:
        title = " > ".join(t for t in section.titles if t) or stem
        if kind == "pdf":
            title = f"{stem} > {section.titles[0]}"
        title = one_line(title)
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
            _check_name(full, entry.name)
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


def _check_name(full: str, name: str) -> None:
    """A file or folder name becomes a chunk's `path`, printed on terminals and
    put in Markdown headings: one with a control character is refused, named
    with it escaped (the message itself stays one line)."""
    try:
        refuse_controls(name, "name")
    except RecordError as exc:
        raise InputError(
            f"{printable(full)}: the file's {exc}; rename the file (or move it out of the folder)"
        ) from None


def read_file_bytes(f: DocFile, limit: int) -> tuple[bytes, os.stat_result]:
    """The bytes of a file that must still be there, and its stat, or InputError by
    name. Opened once, without following a link (a file swapped for a link after
    the walk is refused, never read through), checked on the opened descriptor,
    and read up to `limit` bytes (the rules' `max_file_bytes`)."""
    try:
        handle = open_regular(f.full, "document", follow=False)
    except UnreadableInputError as exc:
        if exc.problem == "missing":
            raise InputError(
                f"{f.full}: vanished during the run (it was listed, then could not be opened); "
                "run again when the folder is settled"
            ) from None
        raise
    with handle:
        st = os.fstat(handle.fileno())
        raise_it = "raise [source] max_file_bytes in the rules file to read it"
        return read_bounded(handle, f.full, "document", limit, raise_it), st
