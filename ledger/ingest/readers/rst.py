"""reStructuredText: docutils' parser -> sections.

Sections are docutils' sections, whatever characters underline their titles; a
`.. _label:` target right before a section title is that heading's explicit
anchor (as Markdown's `{#anchor}`). Each body element of a section is a block
of its rendered text: roles as their text, directives' content kept (a note
reads `Note: ...`), literal and code blocks kept whole (`fence`). `lines` point
at the source: a block owns the lines from where its element starts up to the
next element or title.

Sphinx's roles and directives that docutils does not know (`:ref:`, `:func:`,
`.. versionadded::`, `.. autofunction::`, `toctree`, `code-block`...) do not
fail the file: a role renders as its text (`:ref:`Title <label>`` as `Title`,
`:func:`~a.b.f`` as `f`), a directive as its name and argument followed by its
content (read as reStructuredText again, or kept as a code block for the
code-like ones), and so does a directive docutils knows given an option it does
not (`.. code-block:: python` with `:caption:`); each is counted in
`Work.unknown` (`"role:ref"`, `"directive:versionadded"`,
`"option:code-block:caption"`) for the ingest summary.

docutils never writes to stderr and never reads another file here: reports are
off (`report_level` 5, `halt_level` 5), `include` and `raw` are disabled, no
configuration file is read, and the parser runs without the transforms of a
publisher (nothing resolves references across files).
"""

from __future__ import annotations

import bisect
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from ledger.core.errors import InputError
from ledger.ingest.readers.base import Block, Section, Work, heading_slug

LINE_LIMIT = 10_000  # docutils' own line_length_limit: a longer line stops its parser
MAX_DEPTH = 6  # unknown directives inside unknown directives, read again as rst
# Unknown directives whose content is code: kept whole and verbatim, as a code block.
CODE_DIRECTIVES = frozenset(
    "code code-block sourcecode ipython ipython3 testcode testoutput doctest testsetup "
    "testcleanup jupyter-execute prompt console".split()
)
_ROLE_RE = re.compile(r":([\w:+.-]+):`(.*)`", re.DOTALL)
_TITLE_TARGET_RE = re.compile(r"(.*?)\s*<([^<>]*)>", re.DOTALL)
_DIRECTIVE_RE = re.compile(r"\.\.\s+([\w:+.-]+)\s*::[ \t]*(.*)")
_OPTION_RE = re.compile(r"^\s+:[\w.-]+:")
_LIST_TAGS = ("bullet_list", "enumerated_list")


_SETTINGS: Any = None


def _settings() -> Any:
    """docutils' settings: quiet, no file access, no config files, no raw HTML."""
    global _SETTINGS
    if _SETTINGS is None:
        from docutils.frontend import get_default_settings
        from docutils.parsers.rst import Parser

        settings = get_default_settings(Parser)
        settings.report_level = 5  # report nothing
        settings.halt_level = 5  # never stop on a problem
        settings.warning_stream = _Null()
        settings.file_insertion_enabled = False  # `include`, `csv-table :file:`: disabled
        settings.raw_enabled = False
        settings.line_length_limit = LINE_LIMIT
        settings.syntax_highlight = "none"  # `code`: plain text, Pygments not asked
        settings.pep_references = False
        settings.rfc_references = False
        settings.character_level_inline_markup = False
        _SETTINGS = settings
    return _SETTINGS


class _Null:
    """A stream that drops what it is given (docutils' warning stream)."""

    def write(self, _text: str) -> int:
        return 0

    def flush(self) -> None:
        return None


@dataclass(slots=True)
class Budget:
    """The inline parser's allowance for one file.

    docutils reads a paragraph's inline markup in time proportional to its length
    times the markup start-strings it holds (each is sliced off or searched to the
    end of the paragraph: `` `a `a `a...`` is quadratic). A paragraph whose cost
    would pass `cell`, and every paragraph once the file has spent `total`, is kept
    as plain text instead (counted as `inline:unparsed`), so a file's inline work
    stays within `total` plus `cell` per paragraph, linear in its size.
    """

    cell: int = 4_000_000
    total: int = 200_000_000
    spent: int = 0


# The characters that can start inline markup (emphasis, literals, roles, references,
# substitutions, footnotes, targets), counted to price a paragraph before parsing it.
_MARKUP_START = re.compile(r"[*`|_\[:]")


def _inliner(work: Work, budget: Budget) -> Any:
    """docutils' `Inliner`, whose `parse` reads a paragraph only if its cost fits the
    budget (set on the instance: docutils prices its patterns from the class's own
    attributes, so a subclass would not do)."""
    from docutils import nodes
    from docutils.parsers.rst.states import Inliner

    inliner = Inliner()
    parse = inliner.parse

    def bounded(text: str, lineno: int, memo: Any, parent: Any) -> Any:
        cost = len(text) * (len(_MARKUP_START.findall(text)) + 1)
        if cost > budget.cell or budget.spent + cost > budget.total:
            work.steps += len(text)
            work.note_unknown("inline:unparsed")
            return [nodes.Text(text)], []
        budget.spent += cost
        work.steps += cost
        return parse(text, lineno, memo, parent)

    inliner.parse = bounded
    return inliner


def _parse(text: str, where: str, work: Work, budget: Budget) -> Any:
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    for number, line in enumerate(text.split("\n"), start=1):
        if len(line) > LINE_LIMIT:
            raise InputError(
                f"{where}: line {number} is longer than {LINE_LIMIT:,} characters, more than "
                "the reStructuredText parser reads; wrap it or skip the file with a rule "
                "`skip = true`"
            )
    document = new_document("<rst>", _settings())
    Parser(inliner=_inliner(work, budget)).parse(text, document)
    return document


# --------------------------------------------------------------------------
# Rendering nodes as text
# --------------------------------------------------------------------------


def _role_text(raw: str, work: Work) -> str:
    """`:ref:`Title <label>`` -> `Title`; `:func:`~a.b.f`` -> `f`; counted as unknown."""
    m = _ROLE_RE.fullmatch(raw)
    if m is None:
        return raw
    name, body = m.group(1), m.group(2)
    work.note_unknown(f"role:{name}")
    titled = _TITLE_TARGET_RE.fullmatch(body)
    if titled is not None and titled.group(1).strip():
        return titled.group(1).strip()
    body = body.strip().lstrip("!")
    if body.startswith("~"):
        body = body[1:].rsplit(".", 1)[-1]
    return body


@dataclass(slots=True)
class _Unknown:
    """A directive docutils could not run (unknown, or with an option it does not
    know), from the source its error message keeps; `counted` names it for the
    summary: `directive:versionadded`, `option:code-block:caption`."""

    name: str
    argument: str
    content: str
    counted: str
    code: bool = field(init=False)

    def __post_init__(self) -> None:
        self.code = self.name.split(":")[-1].lower() in CODE_DIRECTIVES


_UNKNOWN_OPTION_RE = re.compile(r'unknown option: "([^"]*)"')


def _unknown_directive(node: Any) -> _Unknown | None:
    """The directive an error message of docutils carries, else None (a message about
    something else, or `include`/`raw`, which are disabled: their text is dropped)."""
    from docutils import nodes

    blocks = [c for c in node.children if isinstance(c, nodes.literal_block)]
    message = node.children[0].astext() if node.children else ""
    if not blocks or "directive disabled" in message:
        return None
    lines = blocks[0].astext().split("\n")
    m = _DIRECTIVE_RE.fullmatch(lines[0])
    if m is None:
        return None
    name = m.group(1)
    option = _UNKNOWN_OPTION_RE.search(message)
    if message.startswith("Unknown directive type") or option is None:
        counted = f"directive:{name}"
    else:
        counted = f"option:{name}:{option.group(1)}"
    rest = lines[1:]
    while rest and _OPTION_RE.match(rest[0]):
        rest = rest[1:]  # `:maxdepth: 2` and other options: not text
    content = textwrap.dedent("\n".join(rest)).strip("\n")
    return _Unknown(name, m.group(2).strip(), content, counted)


@dataclass(slots=True)
class _Reading:
    """What rendering one file carries along: its meter and its inline budget."""

    work: Work
    budget: Budget


def _render_unknown(unknown: _Unknown, ctx: _Reading, depth: int) -> str:
    ctx.work.note_unknown(unknown.counted)
    head = f"{unknown.name} {unknown.argument}".strip()
    if unknown.code:
        return unknown.content or head
    if not unknown.content.strip():
        return head
    if depth >= MAX_DEPTH:
        body = unknown.content
    else:
        ctx.work.steps += len(unknown.content)
        document = _parse(unknown.content, "<directive>", ctx.work, ctx.budget)
        body = _render_children(document, ctx, depth + 1)
    return f"{head}\n\n{body}".strip() if body else head


def _render_list(node: Any, ctx: _Reading, depth: int) -> str:
    items = []
    for item in node.children:
        text = _render(item, ctx, depth)
        if text:
            items.append("- " + text.replace("\n", "\n  "))
    return "\n".join(items)


def _render_children(node: Any, ctx: _Reading, depth: int) -> str:
    parts = (_render(child, ctx, depth) for child in node.children)
    return "\n\n".join(p for p in parts if p)


_SKIPPED = ("comment", "target", "substitution_definition", "pending", "raw")


def _render(node: Any, ctx: _Reading, depth: int = 0) -> str:
    """The text of a node: inline markup as its text, blocks separated by blank lines."""
    from docutils import nodes

    ctx.work.steps += 1
    if isinstance(node, nodes.Text):
        return str(node.astext())  # backslash escapes resolved (docutils keeps them as NUL)
    tag = node.tagname
    if tag in _SKIPPED:
        return ""
    if tag == "problematic":
        return _role_text(node.astext(), ctx.work)
    if tag == "system_message":
        unknown = _unknown_directive(node)
        return _render_unknown(unknown, ctx, depth) if unknown is not None else ""
    if isinstance(node, nodes.TextElement):
        return "".join(_render(child, ctx, depth) for child in node.children)
    if tag in _LIST_TAGS:
        return _render_list(node, ctx, depth)
    if tag == "row":
        return " | ".join(" ".join(_render(c, ctx, depth).split()) for c in node.children)
    if tag in ("thead", "tbody"):
        return "\n".join(_render(c, ctx, depth) for c in node.children)
    body = _render_children(node, ctx, depth)
    if isinstance(node, nodes.Admonition) and tag != "admonition":
        return f"{tag.capitalize()}: {body}" if body else tag.capitalize()
    return body


def _is_code(node: Any) -> bool:
    from docutils import nodes

    if isinstance(node, (nodes.literal_block, nodes.doctest_block)):
        return True
    if node.tagname == "system_message":
        unknown = _unknown_directive(node)
        return unknown is not None and unknown.code
    return False


# --------------------------------------------------------------------------
# Lines: where each element starts in the source
# --------------------------------------------------------------------------


def _node_line(node: Any) -> int | None:
    """The line docutils gives a node or its first descendant that has one."""
    if node.tagname == "system_message":
        line = node.get("line")
        if isinstance(line, int):
            return line
    for each in node.findall(include_self=True):
        line = getattr(each, "line", None)
        if isinstance(line, int):
            return line
    return None


def _title_lines(title: Any, lines: list[str]) -> tuple[int, int]:
    """A title's first and last line: docutils names its underline (the last line)."""
    last = title.line if isinstance(title.line, int) else 1
    last = max(1, min(last, len(lines)))
    first = max(1, last - 1)
    if first > 1:
        over = lines[first - 2].strip()
        under = lines[last - 1].strip()
        if over and under and over[0] == under[0] and set(over) == {over[0]}:
            first -= 1  # an overline
    return first, last


def _segment_starts(lines: list[str]) -> list[int]:
    """Lines that can begin an element: a non-blank line after a blank one (or the first)."""
    starts: list[int] = []
    previous_blank = True
    for number, line in enumerate(lines, start=1):
        blank = not line.strip()
        if not blank and previous_blank:
            starts.append(number)
        previous_blank = blank
    return starts


# --------------------------------------------------------------------------
# The walk: sections, anchors, blocks
# --------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    """A title or a body element in document order, before lines are settled."""

    start: int  # the line its element starts on (approximate for body elements)
    text: str
    fence: bool = False
    title: tuple[int, str, str | None] | None = None  # (depth, title, anchor)
    end: int | None = None  # a title's last line


@dataclass(slots=True)
class _Walk:
    lines: list[str]
    ctx: _Reading
    starts: list[int]
    items: list[_Item] = field(default_factory=list)
    labels: list[tuple[str, int]] = field(default_factory=list)  # (label, its line)

    def segment(self, line: int | None) -> int:
        """The start of the blank-line separated run that holds `line`."""
        floor = self.items[-1].start if self.items else 1
        if line is None:
            return floor
        k = bisect.bisect_right(self.starts, line) - 1
        # An indented run (a directive's content, docutils' line for a `code`
        # block) belongs to the `.. name::` line that opens it.
        back = k
        while back > 0 and self.lines[self.starts[back] - 1][:1].isspace():
            back -= 1
        if back >= 0 and back != k and self.lines[self.starts[back] - 1].startswith(".. "):
            k = back
        start = self.starts[k] if k >= 0 else 1
        return max(start, floor)

    def visit(self, container: Any, depth: int) -> None:
        from docutils import nodes

        for child in container.children:
            self.ctx.work.steps += 1
            if isinstance(child, nodes.section):
                self.section(child, depth + 1)
            elif isinstance(child, nodes.target) and _is_anchor(child):
                self.labels.append((_label(child), self.segment(_node_line(child))))
            elif isinstance(child, nodes.title):
                continue  # read by `section`
            else:
                self.body(child)

    def section(self, node: Any, depth: int) -> None:
        from docutils import nodes

        title_node = next((c for c in node.children if isinstance(c, nodes.title)), None)
        title = " ".join(_render(title_node, self.ctx).split()) if title_node else ""
        first, last = _title_lines(title_node, self.lines) if title_node else (1, 1)
        anchor = self.labels[0][0] if self.labels else None
        if self.labels:
            first = min(first, self.labels[0][1])  # the label's lines go with its section
        self.labels = []
        first = max(first, self.items[-1].start + 1 if self.items else 1)
        last = max(first, last)
        self.items.append(_Item(first, title, title=(depth, title, anchor), end=last))
        self.visit(node, depth)

    def body(self, node: Any) -> None:
        text = _render(node, self.ctx).strip("\n")
        if not text.strip():
            return
        self.labels = []
        start = self.segment(_node_line(node))
        previous = self.items[-1] if self.items else None
        if previous is not None and previous.end is not None and start <= previous.end:
            start = previous.end + 1
        if previous is not None and previous.title is None and previous.start == start:
            previous.text = f"{previous.text}\n\n{text}"
            previous.fence = previous.fence or _is_code(node)
            return
        self.items.append(_Item(start, text, _is_code(node)))


def _is_anchor(node: Any) -> bool:
    """`.. _label:` on its own: an internal target, not a link to elsewhere."""
    return not node.get("refuri") and not node.get("refname") and not node.children


def _label(node: Any) -> str:
    m = re.fullmatch(r"\.\.\s+_(.+):\s*", node.rawsource.strip(), re.DOTALL)
    if m is not None:
        return m.group(1).strip().strip("`")
    names = node.get("names") or node.get("ids") or [""]
    return str(names[0])


def _last_line(lines: list[str], first: int, stop: int) -> int:
    """The last non-blank line in first..stop-1 (or `first` when there is none)."""
    last = stop - 1
    while last > first and not lines[last - 1].strip():
        last -= 1
    return max(first, last)


def _sections(items: list[_Item], lines: list[str]) -> list[Section]:
    """The items as sections: each body block owns the lines up to the next item."""
    sections: list[Section] = []
    stack: list[tuple[int, str, str]] = []
    current = Section([], [], joiner="\n\n")
    first_text = next((n for n, line in enumerate(lines, start=1) if line.strip()), 1)
    for k, item in enumerate(items):
        stop = items[k + 1].start if k + 1 < len(items) else len(lines) + 1
        first = first_text if k == 0 else item.start
        if item.title is not None:
            depth, title, anchor = item.title
            if current.blocks:
                sections.append(current)
            while stack and stack[-1][0] >= depth:
                stack.pop()
            stack.append((depth, title, heading_slug(title, anchor)))
            current = Section([t for _, t, _ in stack], [s for _, _, s in stack], joiner="\n\n")
            if title:
                # A title owns the lines up to the next item too: the comments, targets
                # and disabled directives right under it.
                current.blocks.append(Block(first, _last_line(lines, first, stop), title))
            continue
        last = _last_line(lines, first, stop)
        current.blocks.append(Block(first, last, item.text, fence=item.fence, exact=False))
    if current.blocks:
        sections.append(current)
    return sections


def read_rst(
    text: str, where: str = "rst", work: Work | None = None, budget: Budget | None = None
) -> list[Section]:
    """The sections of a reStructuredText text, with each block's source lines.

    Refuses, by name, a line docutils would not read and a document nested deeper
    than the parser can follow (lists or quotes inside each other)."""
    ctx = _Reading(work if work is not None else Work(), budget if budget is not None else Budget())
    ctx.work.steps += len(text)
    lines = text.split("\n")
    try:
        document = _parse(text, where, ctx.work, ctx.budget)
        walk = _Walk(lines, ctx, _segment_starts(lines))
        walk.visit(document, 0)
    except RecursionError:
        raise InputError(
            f"{where}: nested deeper than the reStructuredText parser follows (lists or "
            "block quotes inside each other); flatten it or skip the file with a rule "
            "`skip = true`"
        ) from None
    return _sections(walk.items, lines)
