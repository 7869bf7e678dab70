"""Every reader's work is bounded per file: doubling the input at most doubles the
steps (counted, not timed), and no input gives a traceback.

Steps are counted two ways: the readers' own meter (`Work.steps`: characters a
parser scans, including what it rescans, and operations it runs) and the Python
lines executed while reading (`sys.settrace`), which counts the loops of the
pure-Python parsers (html.parser, markdown-it-py, docutils, pypdf) whatever the
meter says.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.ingest.documents import chunk_document
from ledger.ingest.readers.base import Work
from ledger.ingest.readers.html import read_html
from ledger.ingest.readers.markdown import read_markdown
from ledger.ingest.readers.pdf import MAX_CONTENT, read_pdf
from ledger.ingest.readers.rst import Budget, read_rst
from ledger.tokens import text_counter
from tests.documents.pdfmake import make_pdf

COUNT = text_counter("utf8-bytes")


def count_steps(read: Callable[[Work], Any]) -> tuple[int, int]:
    """(the meter's steps, Python lines executed) of one read; InputError allowed."""
    work = Work()
    lines = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal lines
        if event == "line":
            lines += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        read(work)
    except InputError:
        pass
    finally:
        sys.settrace(previous)
    return work.steps, lines


def assert_linear(read_n: Callable[[int], Callable[[Work], Any]], n: int) -> None:
    """Steps at 2n are at most 2.3 times the steps at n (a quadratic reader gives 4)."""
    small = count_steps(read_n(n))
    large = count_steps(read_n(2 * n))
    for name, a, b in (("meter", small[0], large[0]), ("lines", small[1], large[1])):
        assert b <= 2.3 * a + 200, (name, n, a, b)


# --------------------------------------------------------------------------
# HTML: the quadratic paragraph and html.parser's open constructs
# --------------------------------------------------------------------------

HTML_UNITS = {
    "inline elements in one paragraph": ("<p>", "<b>x</b> <i>y</i> ", "</p>"),
    "open tags": ("<p>", "<a", ""),
    "open comments": ("", "<!--", ""),
    "open end tags": ("", "</a", ""),
    "open declarations": ("", "<!", ""),
    "open processing instructions": ("", "<?", ""),
    "bare less-than signs": ("<p>", "< ", "</p>"),
    "open attribute": ('<a title="', "x<y ", ""),
    "entities": ("<p>", "&amp;&#x41;&bogus", "</p>"),
    "nested blocks": ("", "<div><p>t", ""),
}


@pytest.mark.parametrize("unit", sorted(HTML_UNITS))
def test_html_work_grows_linearly(unit: str) -> None:
    head, body, tail = HTML_UNITS[unit]

    def read_n(n: int) -> Callable[[Work], Any]:
        text = head + body * n + tail
        return lambda work: read_html(text, "t.html", work)

    assert_linear(read_n, 4000)


def test_the_880_kb_paragraph_and_the_open_tag_flood_are_read_in_linear_steps() -> None:
    paragraph = "<p>" + "<b>bold</b> and <i>it</i> " * 32_000 + "</p>"  # ~880 KB
    work = Work()
    sections = read_html(paragraph, "big.html", work)
    assert sections[0].blocks[0].text.startswith("bold and it bold")
    assert work.steps <= 4 * len(paragraph)
    flood = "<p>" + "<a" * 200_000
    work = Work()
    read_html(flood, "flood.html", work)
    assert work.steps <= 4 * len(flood)


def test_html_left_open_past_the_pending_cap_is_refused_by_line() -> None:
    from ledger.ingest.readers.html import MAX_PENDING

    text = "<p>ok</p>\n<!-- never closed " + "x" * (MAX_PENDING + 2_000_000)
    with pytest.raises(InputError, match=r"big\.html: line 2: more than 16 MiB of HTML left open"):
        read_html(text, "big.html")


def test_a_truncated_tag_at_the_end_is_text_as_html_parser_reads_it() -> None:
    sections = read_html("<h1>T</h1><p>Hello <b", "t.html")
    assert [b.text for b in sections[0].blocks] == ["T", "Hello <b"]


# --------------------------------------------------------------------------
# PDF: one shared content stream, many pages
# --------------------------------------------------------------------------


def shared_stream_pdf(pages: int, stream_bytes: int) -> bytes:
    """`pages` pages that all point at one compressed content stream."""
    ops = b"BT /F1 12 Tf 72 720 Td (Hello world) Tj ET\n"
    stream = zlib.compress(ops * (stream_bytes // len(ops)), 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        (
            "<< /Type /Pages /Kids ["
            + " ".join(f"{5 + i} 0 R" for i in range(pages))
            + f"] /Count {pages} >>"
        ).encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length "
        + str(len(stream)).encode()
        + b" /Filter /FlateDecode >>\nstream\n"
        + stream
        + b"\nendstream",
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    )
    objects += [page] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n".encode()
    out += f"startxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def test_a_small_pdf_whose_40_pages_share_a_3_mb_stream_is_refused_before_extracting() -> None:
    data = shared_stream_pdf(40, 3_000_000)
    assert len(data) < 20_000
    work = Work()
    with pytest.raises(InputError, match=r"x\.pdf: the PDF needs more than 16,777,216 bytes"):
        read_pdf(data, "x.pdf", work)
    # It stopped at the cap: the pages it priced, no text extracted.
    assert work.steps <= MAX_CONTENT + 3_100_000


def test_pdf_operations_are_capped_per_file_across_pages() -> None:
    data = shared_stream_pdf(6, 20_000)
    sections = read_pdf(data, "ok.pdf")
    assert len(sections) == 6
    with pytest.raises(InputError, match=r"more than 5,000 content operations"):
        read_pdf(data, "ops.pdf", max_operations=5_000)


def test_pdf_work_grows_linearly_in_pages() -> None:
    def read_n(n: int) -> Callable[[Work], Any]:
        data = make_pdf([[f"Page {i} line {j}" for j in range(20)] for i in range(n)])
        return lambda work: read_pdf(data, "p.pdf", work)

    assert_linear(read_n, 8)


# --------------------------------------------------------------------------
# reStructuredText and Markdown
# --------------------------------------------------------------------------

RST_UNITS = {
    "unmatched backquotes": "`a ",
    "unmatched emphasis": "*a ",
    "substitution bars": "|a ",
    "references": "a_ ",
    "roles": ":ref:`x` ",
    "footnote brackets": "[#]_ ",
}


@pytest.mark.parametrize("unit", sorted(RST_UNITS))
def test_rst_inline_work_grows_linearly_in_one_paragraph(unit: str) -> None:
    def read_n(n: int) -> Callable[[Work], Any]:
        # One paragraph over many short lines (each under docutils' line limit).
        words = [RST_UNITS[unit]] * n
        text = "\n".join("".join(words[i : i + 20]) for i in range(0, n, 20)) + "\n"
        budget = Budget(cell=200_000, total=5_000_000)
        return lambda work: read_rst(text, "t.rst", work, budget)

    assert_linear(read_n, 3000)


@pytest.mark.parametrize(
    "unit",
    [
        "Title {i}\n=========\n\nText {i}.\n\n",
        ".. _label-{i}:\n\n",
        "- item {i}\n",
        ".. versionadded:: {i}\n\n   Added.\n\n",
        "+---+---+\n| a | b |\n+---+---+\n\n",
    ],
)
def test_rst_structure_grows_linearly(unit: str) -> None:
    def read_n(n: int) -> Callable[[Work], Any]:
        text = "Top\n===\n\n" + "".join(unit.format(i=i) for i in range(n))
        return lambda work: read_rst(text, "t.rst", work)

    assert_linear(read_n, 150)


def test_rst_a_dense_paragraph_is_kept_as_text_and_counted() -> None:
    text = "Title\n=====\n\n" + "\n".join("`a " * 30 for _ in range(200)) + "\n"
    work = Work()
    sections = read_rst(text, "t.rst", work, Budget(cell=100_000))
    assert work.unknown == {"inline:unparsed": 1}
    assert sections[0].blocks[1].text.startswith("`a `a `a")


def test_rst_nesting_deeper_than_the_parser_follows_is_refused_by_name() -> None:
    text = "".join("  " * i + "- item\n\n" for i in range(400))
    with pytest.raises(InputError, match=r"deep\.rst: nested deeper than the reStructuredText"):
        read_rst(text, "deep.rst")


@pytest.mark.parametrize(
    "unit", ["# H{i}\n\ntext\n\n", "- item {i}\n", "> quote {i}\n", "`a ", "[a]: ", "<div>\n"]
)
def test_markdown_work_grows_linearly(unit: str) -> None:
    def read_n(n: int) -> Callable[[Work], Any]:
        text = "".join(unit.format(i=i) for i in range(n))
        return lambda work: read_markdown(text)

    assert_linear(read_n, 400)


# --------------------------------------------------------------------------
# No traceback, whatever the input
# --------------------------------------------------------------------------

MARKUP = st.lists(
    st.sampled_from(
        list("ab \n\t`*_|:.-=~#<>/![]()\\{}&;\"'")
        + ["<p>", "</p>", "<h1>", "</h1>", "<!--", "-->", "<script>", "</script>", "\x00"]
        + [".. ", "::", ":ref:`", "`_", "\n   ", "```", "---\n", "&#", "\ud7ff", "é"]
        + [".. note::", ".. code-block::", ".. _a:", "Title\n=====\n", "+--+\n|a|\n+--+"]
    ),
    max_size=200,
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MARKUP, st.sampled_from(["d.md", "d.rst", "d.html", "d.txt"]))
def test_text_readers_store_or_refuse_by_name_never_a_traceback(text: str, path: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    try:
        chunks = chunk_document(data, path, path, COUNT, 50)
    except InputError as exc:
        assert str(exc).startswith(path + ":"), str(exc)
        return
    for c in chunks:
        assert c.text.strip() and "\x00" not in c.text
        assert c.location[0] <= c.location[1]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_damaged_pdf_is_refused_by_name_never_a_traceback(data: st.DataObject) -> None:
    pdf = bytearray(make_pdf([["Hello world", "second line"], ["Page two"]]))
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(pdf) - 1))
        pdf[at] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        del pdf[data.draw(st.integers(0, len(pdf) - 1)) :]
    try:
        chunk_document(bytes(pdf), "d.pdf", "d.pdf", COUNT, 50)
    except InputError as exc:
        assert str(exc).startswith("d.pdf:"), str(exc)


HTML_PIECES = st.lists(
    st.sampled_from(
        [
            "<h1>",
            "</h1>",
            "<h2 id='x'>",
            "</h2>",
            "<p>",
            "</p>",
            "<pre>",
            "</pre>",
            "<b>",
            "</b>",
            "<script>",
            "</script>",
            "<style>a{}</style>",
            "<!-- c -->",
            "<!--",
            "-->",
            "<br>",
            "<li>",
            "&amp;",
            "&#65;",
            "&lt",
            "&",
            "<",
            ">",
            "\n",
            "  ",
            "text",
            "more words",
            "é",
            "<a href='x'>",
            "</a>",
            "<!DOCTYPE html>",
            "<?pi?>",
            "<a",
            "</scr",
            "ipt>",
        ]
    ),
    max_size=120,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(HTML_PIECES, st.integers(min_value=1, max_value=9))
def test_html_read_in_chunks_equals_html_read_at_once(text: str, chunk: int) -> None:
    whole = read_html(text, "t.html", feed_chunk=max(1, len(text)))
    pieces = read_html(text, "t.html", feed_chunk=chunk)
    assert [(s.titles, s.slugs, s.blocks) for s in pieces] == [
        (s.titles, s.slugs, s.blocks) for s in whole
    ]
