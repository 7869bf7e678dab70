"""Document readers on a generated hostile corpus: each case stored correctly or
refused by name."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from ledger.core.errors import InputError
from ledger.ingest.documents import (
    DocFile,
    assign_ids,
    chunk_document,
    content_dedupe_key,
    read_file_bytes,
    slugify,
    walk_paths,
)
from ledger.ingest.readers.base import split_anchor
from ledger.tokens import text_counter
from tests.documents.helpers import check_markdown_chunks, titles
from tests.documents.pdfmake import make_pdf

COUNT = text_counter("cl100k_base")


def chunks_of(data: bytes, path: str = "doc.md", max_tokens: int = 800) -> list:  # type: ignore[type-arg]
    out = chunk_document(data, path, path, COUNT, max_tokens)
    if path.endswith((".md", ".txt")):
        check_markdown_chunks(data, out, COUNT, max_tokens, where=path)
    return out


def test_atx_and_setext_headings_make_a_heading_path_with_lines() -> None:
    data = (
        b"Guide\n=====\n\nIntro text.\n\nInstall\n-------\n\nRun pip.\n\n"
        b"### Extras { #extras }\n\nAdd [pdf].\n\n# Other\nBody.\n"
    )
    out = chunks_of(data)
    assert titles(out) == ["Guide", "Guide > Install", "Guide > Install > Extras", "Other"]
    assert [c.location for c in out] == [(1, 4), (6, 9), (11, 13), (15, 16)]
    assert out[1].text == "Install\n-------\n\nRun pip."
    ids = assign_ids("kb", out)
    # The explicit anchor names the third section; the others slug their text.
    assert ids == [
        "kb-doc--guide",
        "kb-doc--guide-install",
        "kb-doc--guide-install-extras",
        "kb-doc--other",
    ]


def test_headings_inside_fences_are_text_and_an_unclosed_fence_runs_to_the_end() -> None:
    data = (
        b"# Real\n\n```python\n# not a heading\n## nor this\n```\n\n~~~\n# tilde\n~~~\n\n"
        b"## Second\n\n```\n# unclosed fence\n\n## still code\n"
    )
    out = chunks_of(data)
    assert titles(out) == ["Real", "Real > Second"]
    assert "# not a heading" in out[0].text and "# tilde" in out[0].text
    assert out[1].location == (12, 17) and "## still code" in out[1].text


def test_front_matter_is_skipped_and_html_blocks_are_kept() -> None:
    data = (
        b"---\ntitle: Secret meta\nowner: x\n---\n\n"
        b'# Page\n\n<div class="note">\n<b>Hi</b>\n</div>\n'
    )
    out = chunks_of(data)
    assert len(out) == 1 and out[0].location == (6, 10)
    assert "Secret meta" not in out[0].text and "<b>Hi</b>" in out[0].text
    # An unclosed `---` is a thematic break, not front matter: its text is kept.
    kept = chunks_of(b"---\nnot front matter\n")
    assert "not front matter" in kept[0].text


def test_duplicate_headings_in_one_file_get_distinct_stable_ids() -> None:
    data = b"# API\n\n## Example\n\nfirst\n\n## Example\n\nsecond\n\n## Example\n\nthird\n"
    out = chunks_of(data)
    ids = assign_ids("kb", out)
    assert ids == [
        "kb-doc--api",
        "kb-doc--api-example",
        "kb-doc--api-example-2",
        "kb-doc--api-example-3",
    ]
    assert assign_ids("kb", chunks_of(data)) == ids  # the same files give the same ids


def test_empty_sections_are_stored_as_their_heading_line() -> None:
    out = chunks_of(b"# A\n## B\n## C\ntext under C\n")
    assert [(c.title, c.text) for c in out] == [
        ("A", "# A"),
        ("A > B", "## B"),
        ("A > C", "## C\ntext under C"),
    ]


def test_crlf_and_a_bom_read_as_the_same_text_and_lines() -> None:
    lf = b"# Title\n\nOne.\n\n## Sub\n\nTwo.\n"
    crlf = lf.replace(b"\n", b"\r\n")
    bom = b"\xef\xbb\xbf" + crlf
    base = [(c.title, c.location, c.text) for c in chunks_of(lf)]
    assert [(c.title, c.location, c.text) for c in chunks_of(crlf)] == base
    assert [(c.title, c.location, c.text) for c in chunks_of(bom)] == base
    assert all("\r" not in c.text for c in chunks_of(bom))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"# ok\n\xff\xfe broken", "bad.md: not valid UTF-8 at byte 5"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "bad.md: looks like a binary file"),
        (b"", "bad.md: no text to store"),
        (b"---\na: 1\n---\n\n\n", "bad.md: no text to store"),
    ],
)
def test_broken_files_are_refused_by_name(data: bytes, message: str) -> None:
    with pytest.raises(InputError) as exc:
        chunk_document(data, "bad.md", "bad.md", COUNT, 800)
    assert str(exc.value).startswith(message)


def _paragraph(rnd: random.Random, words: int) -> str:
    vocab = [
        "ledger",
        "chunk",
        "token",
        "FastAPI",
        "request",
        "model",
        "über",
        "日本",
        "x=1",
        "(a)",
    ]
    return " ".join(rnd.choice(vocab) for _ in range(words))


def test_a_10_mb_file_is_split_within_the_limit_and_fully_covered() -> None:
    rnd = random.Random(15)
    parts: list[str] = []
    size = 0
    n = 0
    while size < 10 * 1024 * 1024:
        n += 1
        block = [f"## Section {n % 50}", ""]  # repeated headings: ids must stay unique
        for _ in range(rnd.randint(1, 12)):
            block.append(_paragraph(rnd, rnd.randint(5, 300)))
            block.append("")
        if n % 37 == 0:
            block += ["```", "\n".join(_paragraph(rnd, 20) for _ in range(400)), "```", ""]
        if n % 101 == 0:
            block += [_paragraph(rnd, 3000), ""]  # one line far over the limit
        text = "\n".join(block) + "\n"
        parts.append(text)
        size += len(text.encode())
    data = "".join(parts).encode()
    assert len(data) >= 10 * 1024 * 1024
    out = chunks_of(data, "big.md", max_tokens=500)
    ids = assign_ids("kb", out)
    assert len(set(ids)) == len(ids)
    assert any(c.fence_only and c.tokens > 500 for c in out)  # the long fences stayed whole
    assert max(c.tokens for c in out if not c.fence_only) <= 500


def test_a_section_over_the_limit_splits_on_paragraphs_and_keeps_a_small_fence_whole() -> None:
    para = "word " * 60
    fence = "```\n" + "\n".join(f"line {i} of code" for i in range(30)) + "\n```"
    data = f"# Big\n\n{para}\n\n{para}\n\n{fence}\n\n{para}\n".encode()
    out = chunks_of(data, max_tokens=150)
    assert len(out) > 1 and all(c.title == "Big" for c in out)
    assert sum(fence in c.text for c in out) == 1  # the fence is in one piece
    ids = assign_ids("kb", out)
    assert ids[0] == "kb-doc--big" and ids[1:] == [
        f"kb-doc--big-p{i}" for i in range(2, len(out) + 1)
    ]


def test_a_line_over_the_limit_inside_a_list_is_cut_into_pieces_of_that_line_alone() -> None:
    # As in FastAPI's cors.md: one list item longer than the limit between short
    # ones. Each piece of it is a chunk of its own, and the next items are their
    # own source lines, not joined to the last piece.
    items = ["* `a` - short.", "* `b` - " + "long words " * 120, "* `c` - short.", "* `d` - end."]
    data = ("# List\n\n" + "\n".join(items) + "\n").encode()
    out = chunks_of(data, max_tokens=60)  # check_markdown_chunks: lines point at the text
    cut = [c for c in out if c.location == (4, 4)]
    assert len(cut) > 1 and all(c.text in items[1] for c in cut)
    assert any(c.text == "* `c` - short.\n* `d` - end." for c in out)


def test_plain_text_splits_at_blank_lines() -> None:
    data = ("\n\n".join(f"Paragraph {i}. " + "text " * 50 for i in range(10)) + "\n").encode()
    out = chunks_of(data, "notes/a.txt", max_tokens=120)
    assert len(out) > 1
    assert all(c.text.startswith("Paragraph") for c in out)
    assert assign_ids("kb", out)[0] == "kb-notes-a"


def test_html_headings_are_structure_and_scripts_and_styles_are_dropped() -> None:
    data = (
        b"<html><head><title>T</title><style>h1 {color: red}</style></head>\n<body>\n"
        b'<h1 id="intro">Intro &amp; more</h1>\n<p>First\n   paragraph.</p>\n'
        b"<script>var secret = 1;</script>\n<h2>Details</h2>\n<ul><li>one</li><li>two</li></ul>\n"
        b"<pre>  code\n    indented</pre>\n</body></html>\n"
    )
    out = chunks_of(data, "page.html")
    assert titles(out) == ["Intro & more", "Intro & more > Details"]
    assert out[0].text == "Intro & more\n\nFirst paragraph."
    assert out[0].location == (3, 5)
    assert "secret" not in "".join(c.text for c in out) and "color" not in out[0].text
    assert "  code\n    indented" in out[1].text and out[1].location == (7, 10)
    assert assign_ids("kb", out) == ["kb-page--intro", "kb-page--intro-details"]


def test_pdf_pages_are_chunks_and_a_page_without_text_is_refused() -> None:
    out = chunks_of(make_pdf([["Refund policy", "Thirty days."], ["Page two text."]]), "a.pdf")
    assert [(c.location_kind, c.location, c.title) for c in out] == [
        ("pages", (1, 1), "a.pdf > Page 1"),
        ("pages", (2, 2), "a.pdf > Page 2"),
    ]
    assert "Thirty days." in out[0].text
    assert assign_ids("kb", out) == ["kb-a--page-1", "kb-a--page-2"]
    with pytest.raises(InputError, match=r"^scan\.pdf: page 2 has no extractable text"):
        chunk_document(make_pdf([["ok"], []]), "scan.pdf", "scan.pdf", COUNT, 800)
    with pytest.raises(InputError, match=r"^junk\.pdf: not a readable PDF"):
        chunk_document(b"%PDF-1.4 garbage", "junk.pdf", "junk.pdf", COUNT, 800)


def test_walk_is_sorted_skips_hidden_and_refuses_links_and_names_vanished_files(
    tmp_path: Path,
) -> None:
    root = tmp_path / "docs"
    (root / "b").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "x.md").write_text("# hidden")
    (root / ".draft.md").write_text("# hidden")
    (root / "z.md").write_text("# z")
    (root / "b" / "a.md").write_text("# a")
    (root / "a.md").write_text("# a")
    files = walk_paths([str(root)])
    assert [f.relpath for f in files] == ["a.md", "b/a.md", "z.md"]
    os.symlink(root / "a.md", root / "link.md")
    with pytest.raises(InputError, match=r"link\.md: is a symbolic link"):
        walk_paths([str(root)])
    with pytest.raises(InputError, match=r"link\.md: is a symbolic link"):
        walk_paths([str(root / "link.md")])
    gone = DocFile(str(root), "gone.md", str(root / "gone.md"))
    with pytest.raises(InputError, match=r"gone\.md: vanished during the run"):
        read_file_bytes(gone, 1000)


def test_a_file_swapped_for_a_link_after_the_walk_is_refused_not_read_through(
    tmp_path: Path,
) -> None:
    """Issue 38, item 4: the walk refuses links, then reads by name; a file that
    becomes a link in between must not be read through it (another file's
    content, a key, stored as a chunk)."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "page.md").write_text("# Page\n\nPublic text.\n")
    secret = tmp_path / "private.key"
    secret.write_text("-----BEGIN PRIVATE KEY-----\n")
    (f,) = walk_paths([str(root)])  # listed as a regular file
    (root / "page.md").unlink()
    os.symlink(secret, root / "page.md")  # swapped for a link before it is read
    with pytest.raises(InputError, match=r"page\.md: the document is a symbolic link") as exc:
        read_file_bytes(f, 1000)
    assert "PRIVATE" not in str(exc.value)


def test_a_document_over_the_cap_is_refused_by_name_before_it_is_read_whole(
    tmp_path: Path,
) -> None:
    """Issue 38, item 6: a document file is read up to the rules' max_file_bytes."""
    root = tmp_path / "docs"
    root.mkdir()
    big = root / "big.txt"
    with open(big, "wb") as handle:  # sparse: 2 GB on paper, nothing on disk
        handle.truncate(2 * 1024 * 1024 * 1024)
    (f,) = walk_paths([str(root)])
    with pytest.raises(InputError, match=r"big\.txt: the document is over 1,000 bytes") as exc:
        read_file_bytes(f, 1000)
    assert "max_file_bytes" in str(exc.value)
    (root / "small.txt").write_text("x" * 1000)
    data, _st = read_file_bytes(walk_paths([str(root / "small.txt")])[0], 1000)
    assert data == b"x" * 1000


def test_slugs_anchors_and_content_keys() -> None:
    assert split_anchor("Use `X` { #use-x }") == ("Use `X`", "use-x")
    assert split_anchor("Plain {#p}") == ("Plain", "p")
    assert split_anchor("No anchor") == ("No anchor", None)
    assert slugify("Café  Déjà-vu!") == "cafe-deja-vu"
    assert slugify("日本語") == slugify("日本語") != slugify("中文")
    assert slugify("日本語").startswith("h")
    key = content_dedupe_key("Same  text\n", "evidence", "docs-read", "approved-source")
    assert key == content_dedupe_key("Same text", "evidence", "docs-read", "approved-source")
    assert key != content_dedupe_key("Same text", "evidence", "other-read", "approved-source")
    assert key != content_dedupe_key("Same text", "policy", "docs-read", "approved-source")


def test_long_and_colliding_ids_are_shortened_deterministically() -> None:
    data = b"# " + b"Very long heading words " * 8 + b"\n\ntext\n\n## Child\n\nmore\n"
    out = chunks_of(data, "deeply/nested/folder/with/a/long/name.md")
    ids = assign_ids("kb", out)
    assert all(len(i) <= 64 for i in ids) and len(set(ids)) == 2
    assert ids[1].startswith("kb-deeply-nested-folder-with-a-long-name--child-")
    assert assign_ids("kb", chunks_of(data, "deeply/nested/folder/with/a/long/name.md")) == ids
    # `a/b.md` and `a-b.md` slug alike: the second is salted with its path.
    one = chunk_document(b"# T\n", "a/b.md", "x", COUNT, 800)
    two = chunk_document(b"# T\n", "a-b.md", "x", COUNT, 800)
    both = assign_ids("kb", one + two)
    assert both[0] == "kb-a-b--t" and both[1] != both[0] and both[1].startswith("kb-a-b--t-")
