"""PDF (optional, `pypdf`): one section per page (`pages` [n, n]).

A page without extractable text is refused by name, not stored empty. The work
is bounded per file, not only per stream: pages may share one content stream
(a 14 KB file whose 40 pages each point at the same 3 MB of operations), so the
content every page would parse is summed before any text is extracted
(`MAX_CONTENT` bytes per file), and the operations run are counted while it is
(`MAX_OPERATIONS` per file, form XObjects included).
"""

from __future__ import annotations

import io
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ledger.core.errors import InputError
from ledger.ingest.readers.base import Block, Section, Work, paragraphs

MAX_CONTENT = 16 << 20  # decoded content-stream bytes parsed per file, shared ones each time
MAX_OPERATIONS = 4_000_000  # content-stream operations run per file


class _TooMuchWork(Exception):
    """Raised from inside pypdf's text extraction when the file's operations pass the cap."""


def _content_bytes(page: Any) -> int:
    """The decoded size of a page's own content streams (what its extraction parses)."""
    contents = page.get("/Contents")
    if contents is None:
        return 0
    obj = contents.get_object()
    streams = obj if isinstance(obj, list) else [obj]
    total = 0
    for stream in streams:
        stream = stream.get_object()
        try:
            total += len(stream.get_data())
        except Exception:  # not a stream, or one pypdf cannot decode: extraction says so
            continue
    return total


def _too_much(where: str, what: str) -> InputError:
    return InputError(
        f"{where}: the PDF needs more than {what} to extract its text (pages share or repeat "
        "content); split the file, or skip it with a rule `skip = true`"
    )


def _extract_pages(
    reader: Any, where: str, meter: Work, max_content: int, max_operations: int
) -> list[str]:
    """Every page's text, within the per-file bounds."""
    content = 0
    for page in reader.pages:
        size = _content_bytes(page)
        meter.steps += size
        content += size
        if content > max_content:
            raise _too_much(where, f"{max_content:,} bytes of page content")
    operations = [0]

    def count(_op: Any, _args: Any, _cm: Any, _tm: Any) -> None:
        operations[0] += 1
        if operations[0] > max_operations:
            raise _TooMuchWork

    pages: list[str] = []
    try:
        for page in reader.pages:
            pages.append(page.extract_text(visitor_operand_before=count) or "")
    except _TooMuchWork:
        raise _too_much(where, f"{max_operations:,} content operations") from None
    finally:
        meter.steps += operations[0]
    return pages


@contextmanager
def _pypdf_quiet() -> Iterator[None]:
    """While a PDF is read, pypdf's own warnings ("EOF marker not found") go
    nowhere: with no logging configured, Python prints them on stderr, a second
    line beside the one error the ledger gives. Scoped to the read: a null
    handler on the `pypdf` logger that stops there, and Python warnings ignored,
    both restored after (a program that logs pypdf itself keeps its logging)."""
    logger = logging.getLogger("pypdf")
    handler = logging.NullHandler()
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.propagate = propagate
        logger.removeHandler(handler)


def read_pdf(
    data: bytes,
    where: str,
    work: Work | None = None,
    *,
    max_content: int = MAX_CONTENT,
    max_operations: int = MAX_OPERATIONS,
) -> list[Section]:
    """One section per page (`pages` [n, n]); a page with no text is refused by name,
    as is a file whose text needs more than `max_content` bytes of content streams
    or `max_operations` operations."""
    try:
        import pypdf
    except ImportError:
        raise InputError(
            f"{where}: PDF needs the optional parser: pip install 'context-ledger[pdf]'"
        ) from None
    meter = work if work is not None else Work()
    try:
        with _pypdf_quiet():
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise InputError(f"{where}: the PDF is encrypted; decrypt it first")
            pages = _extract_pages(reader, where, meter, max_content, max_operations)
    except InputError:
        raise
    except Exception:  # pypdf raises many kinds on a broken file; its words name its code
        raise InputError(
            f"{where}: not a readable PDF (truncated or damaged); replace it with a "
            "complete copy, or skip it with a rule `skip = true`"
        ) from None
    sections: list[Section] = []
    for n, page_text in enumerate(pages, start=1):
        page_text = page_text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
        blocks = [Block(n, n, b.text, exact=False) for b in paragraphs(page_text)]
        if not blocks:
            raise InputError(
                f"{where}: page {n} has no extractable text (a scan?); "
                "OCR it, or skip the file with a rule `skip = true`"
            )
        sections.append(Section([f"Page {n}"], [f"page-{n}"], blocks, joiner="\n\n"))
    if not sections:
        raise InputError(f"{where}: the PDF has no pages")
    return sections
