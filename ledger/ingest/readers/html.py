"""HTML: the standard library's `html.parser` -> sections.

`h1`-`h6` open sections, the text of block elements forms blocks, `script`,
`style` and `template` are dropped. The work is linear in the file: the text
of a block is gathered in a list and joined once, and the parser is fed in
chunks, so a construct left open (`<!--` with no `-->`, `<a<a<a...`) is
rescanned at most once per chunk and refused once its pending text passes
`MAX_PENDING`; what is still open at the end is read once, as text.
"""

from __future__ import annotations

from html import unescape
from html.parser import HTMLParser

from ledger.core.errors import InputError
from ledger.ingest.readers.base import Block, Section, Work, heading_slug

# The parser's input per `feed`; and the most text it may hold unparsed (an open
# comment, tag or script) before the file is refused: each feed rescans that text,
# so the work per file stays within (file size / FEED_CHUNK) * MAX_PENDING.
FEED_CHUNK = 1 << 20
MAX_PENDING = 16 << 20

_HTML_BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption dd details dialog div dl dt fieldset "
    "figcaption figure footer form header hr li main nav ol p pre section summary table "
    "tbody td tfoot th thead tr ul br".split()
)
_HTML_DROPPED = frozenset({"script", "style", "template", "noscript", "svg", "head"})
_HEADINGS = {f"h{i}": i for i in range(1, 7)}


class _HTMLSections(HTMLParser):
    """Collects sections of text blocks, with the source lines of each block."""

    def __init__(self, work: Work) -> None:
        super().__init__(convert_charrefs=True)
        self.work = work
        self.sections: list[Section] = []
        self.current = Section([], [], joiner="\n\n")
        self.stack: list[tuple[int, str, str]] = []
        self.dropped = 0
        self.pre = 0
        self.buf: list[str] = []
        self.has_text = False  # some non-blank text in `buf`
        self.first = 0
        self.last = 0
        self.heading: tuple[int, str | None, int] | None = None  # (level, id, line)

    def _take(self) -> str:
        text = "".join(self.buf)
        self.work.steps += len(text)
        self.buf = []
        self.has_text = False
        return text

    def _flush(self) -> None:
        text = self._take()
        if self.pre == 0:
            text = " ".join(text.split())
        else:
            text = text.strip("\n").rstrip()
        if text.strip():
            self.current.blocks.append(Block(self.first, self.last, text))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.work.steps += 1
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

    def _close_heading(self) -> None:
        if self.heading is None:
            return
        level, anchor, line = self.heading
        title = " ".join(self._take().split())
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

    def handle_endtag(self, tag: str) -> None:
        self.work.steps += 1
        if tag in _HTML_DROPPED:
            self.dropped = max(0, self.dropped - 1)
            return
        if self.dropped:
            return
        if tag in _HEADINGS and self.heading is not None:
            self._close_heading()
            return
        if tag in _HTML_BLOCK_TAGS and self.heading is None:
            self._flush()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)

    def handle_data(self, data: str) -> None:
        self.work.steps += 1
        if self.dropped or not data:
            return
        line = self.getpos()[0]
        if not self.has_text:
            # The block starts at its first non-blank character's line.
            leading = data[: len(data) - len(data.lstrip())]
            self.first = line + leading.count("\n")
        self.buf.append(data)
        if data.strip():
            self.has_text = True
            self.last = line + data.rstrip().count("\n")

    def close(self) -> None:
        super().close()
        self._flush()
        if self.current.blocks:
            self.sections.append(self.current)


def read_html(
    text: str, where: str = "html", work: Work | None = None, *, feed_chunk: int = FEED_CHUNK
) -> list[Section]:
    """The sections of an HTML text: headings as structure, block text as blocks.

    Refuses, naming the file and the line, a file whose parser would hold more than
    `MAX_PENDING` characters unparsed (a comment, tag or script never closed).
    The sections do not depend on `feed_chunk` (the parser reads incrementally).
    """
    meter = work if work is not None else Work()
    parser = _HTMLSections(meter)
    for start in range(0, len(text), feed_chunk):
        parser.feed(text[start : start + feed_chunk])
        pending = len(parser.rawdata)
        meter.steps += pending  # each feed rescans what is still unparsed
        if pending > MAX_PENDING:
            line = parser.getpos()[0]
            raise InputError(
                f"{where}: line {line}: more than {MAX_PENDING >> 20} MiB of HTML left open "
                "(a comment, tag or script never closed); close it or skip the file with a "
                "rule `skip = true`"
            )
    _close(parser, meter)
    return parser.sections


def _close(parser: _HTMLSections, meter: Work) -> None:
    """End the parse. What is still unparsed at the end of the file (a tag, comment
    or declaration never closed) is read as text, once: `HTMLParser.close` would
    rescan it to its end for every `<` it holds (quadratic: `<a<a<a...`)."""
    tail = parser.rawdata
    meter.steps += len(tail)
    if "<" in tail:
        parser.rawdata = ""
        parser.handle_data(unescape(tail))
    parser.close()
