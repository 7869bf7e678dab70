"""reStructuredText documents: generated cases for every construct, and a real
Sphinx corpus (the Jinja documentation, fixtures/docs/jinja) through the command
line."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.ingest.documents import assign_ids, chunk_document
from ledger.ingest.readers.base import Work, slugify
from ledger.ingest.readers.rst import LINE_LIMIT, read_rst
from ledger.tokens import text_counter
from tests.conftest import ledger_json, run_ledger
from tests.documents.rstgen import check_rst_chunks, generate

COUNT = text_counter("cl100k_base")
JINJA = Path(__file__).resolve().parents[2] / "fixtures" / "docs" / "jinja"


def read(source: str, path: str = "doc.rst", max_tokens: int = 800) -> tuple[list[Any], Work]:
    work = Work()
    chunks = chunk_document(source.encode("utf-8"), path, path, COUNT, max_tokens, work)
    check_rst_chunks(source, chunks)
    return chunks, work


def test_sections_by_title_whatever_the_adornment_with_anchors_and_lines() -> None:
    source = (
        "Intro before any title.\n"
        "\n"
        "#######\n"
        "Guide\n"
        "#######\n"
        "\n"
        "Welcome text.\n"
        "\n"
        ".. _install-label:\n"
        "\n"
        "Install\n"
        "~~~~~~~\n"
        "Run pip.\n"
        "\n"
        "Extras\n"
        "^^^^^^\n"
        "\n"
        "Add pdf.\n"
        "\n"
        "Other\n"
        "~~~~~\n"
        "\n"
        "Last.\n"
    )
    chunks, work = read(source)
    assert [c.title for c in chunks] == [
        "doc.rst",
        "Guide",
        "Guide > Install",
        "Guide > Install > Extras",
        "Guide > Other",
    ]
    assert [c.location for c in chunks] == [(1, 1), (3, 7), (9, 13), (15, 18), (20, 23)]
    assert chunks[2].text == "Install\n\nRun pip."
    assert assign_ids("kb", chunks) == [
        "kb-doc",
        "kb-doc--guide",
        "kb-doc--guide-install-label",  # the label, not the title's slug
        "kb-doc--guide-install-label-extras",
        "kb-doc--guide-other",
    ]
    assert work.unknown == {}


def test_literal_and_code_blocks_stay_whole_and_code_is_not_markup() -> None:
    code = "\n".join(f"value_{i} = compute(:ref:`x`, *args)  # line {i}" for i in range(60))
    indented = "\n".join("   " + line for line in code.split("\n"))
    source = (
        "Code\n====\n\nThe example::\n\n"
        + indented
        + "\n\n.. code-block:: python\n   :caption: Sphinx only\n\n"
        + indented
        + "\n\n.. code:: python\n\n"
        + indented
        + "\n\nAfter.\n"
    )
    # Each block alone is over the limit: each stays one chunk, verbatim.
    chunks, work = read(source, max_tokens=120)
    whole = [c for c in chunks if c.text == code]
    assert len(whole) == 3 and all(c.fence_only for c in whole)
    lines = source.split("\n")
    starts = []
    for c in whole:
        first, last = c.location
        span = lines[first - 1 : last]
        body = [line[3:] for line in span if line.startswith("   ") and ":caption:" not in line]
        assert "\n".join(body) == code, c.location  # its lines hold the block, only it
        starts.append(first)
    assert starts == [6, 67, 131]  # the literal, then each directive from its `..` line
    # Only Sphinx's option is unknown; the `:ref:` inside code is code.
    assert work.unknown == {"option:code-block:caption": 1}


def test_directives_keep_their_text_and_roles_render_as_their_text() -> None:
    source = (
        "API\n===\n\n"
        "Use :func:`~pkg.mod.render`, :ref:`the guide <guide-label>`, :class:`pkg.Env`,\n"
        ":doc:`intro` and :emphasis:`known` with :sub:`2` here.\n\n"
        ".. note:: Keep this note.\n\n"
        ".. warning::\n\n   And this warning.\n\n"
        ".. admonition:: Custom title\n\n   Custom body.\n\n"
        ".. versionadded:: 2.1\n   The *render* function.\n\n"
        ".. deprecated:: 3.0\n\n   Use :func:`other` instead.\n\n"
        ".. autofunction:: pkg.mod.render\n\n"
        ".. toctree::\n   :maxdepth: 2\n\n   intro\n   api\n\n"
        ".. include:: /etc/passwd\n\n"
        ".. raw:: html\n\n   <script>alert(1)</script>\n"
    )
    chunks, work = read(source)
    text = "\n".join(c.text for c in chunks)
    assert "Use render, the guide, pkg.Env,\nintro and known with 2 here." in text
    assert "Note: Keep this note." in text
    assert "Warning: And this warning." in text
    assert "Custom title\n\nCustom body." in text
    assert "versionadded 2.1\n\nThe render function." in text
    assert "deprecated 3.0\n\nUse other instead." in text
    assert "autofunction pkg.mod.render" in text
    assert "toctree\n\nintro\napi" in text
    assert "root:" not in text and "alert" not in text and ":func:" not in text
    assert work.unknown == {
        "role:func": 2,
        "role:ref": 1,
        "role:class": 1,
        "role:doc": 1,
        "directive:versionadded": 1,
        "directive:deprecated": 1,
        "directive:autofunction": 1,
        "directive:toctree": 1,
    }


def test_docutils_writes_nothing_and_reads_no_other_file(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-MARKER\n", encoding="utf-8")
    conf = tmp_path / "docutils.conf"
    conf.write_text("[general]\nreport_level: 1\nhalt_level: 1\n", encoding="utf-8")
    source = (
        f"Title\n=====\n\n.. include:: {secret}\n\n.. csv-table::\n   :file: {secret}\n\n"
        f".. raw:: html\n   :file: {secret}\n\n:unknown-role:`x` and `unclosed\n\n"
        "Bad\n==\n\n.. |sub| unknown-directive:: x\n\nEnd |missing|.\n"
    )
    import os

    cwd = os.getcwd()
    os.chdir(tmp_path)  # a docutils.conf here is not read either
    try:
        chunks, _work = read(source)
    finally:
        os.chdir(cwd)
    assert "TOP-SECRET-MARKER" not in "".join(c.text for c in chunks)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_a_line_over_docutils_limit_is_refused_by_name() -> None:
    source = "Title\n=====\n\n" + "x" * (LINE_LIMIT + 1) + "\n"
    with pytest.raises(InputError, match=r"doc\.rst: line 4 is longer than 10,000 characters"):
        read(source)


def test_a_file_of_only_an_include_is_refused_as_empty() -> None:
    with pytest.raises(InputError, match=r"no text to store"):
        read(".. include:: other.rst\n")


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_generated_documents_give_back_what_was_written(seed: int) -> None:
    source, exp = generate(seed)
    chunks, work = read(source, max_tokens=10_000)
    titles = [c.title for c in chunks]
    # Each section is one chunk here (the limit is high): its heading path, in order.
    assert titles == [t or "doc.rst" for t in exp.titles]
    assert len(chunks) == len(exp.titles)
    ids = assign_ids("kb", chunks)
    for c, chunk_id in zip(chunks, ids, strict=True):
        label = exp.anchors.get(c.title)
        if label is not None:
            assert slugify(label) in chunk_id, (c.title, label, chunk_id)
    text = "\n\n".join(c.text for c in chunks)
    for block in exp.code:
        assert sum(block in c.text for c in chunks) >= 1, block
    for words in exp.words:
        assert words in text, words
    assert work.unknown == exp.unknown
    # The sections' texts hold no role or directive markup of their own.
    outside_code = text
    for block in sorted(exp.code, key=len, reverse=True):
        outside_code = outside_code.replace(block, "")
    assert not re.search(r":[a-z:]+:`", outside_code), outside_code[:300]
    assert ".. " not in outside_code


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=20, max_value=200))
def test_generated_documents_split_at_the_limit_keep_code_whole(seed: int, limit: int) -> None:
    source, exp = generate(seed)
    chunks, _work = read(source, max_tokens=limit)
    for c in chunks:
        assert c.tokens == COUNT(c.text)
        assert c.tokens <= limit or c.fence_only or "\n" not in c.text.strip(), c.text[:80]
    for block in exp.code:
        assert any(block in c.text for c in chunks), block


# --------------------------------------------------------------------------
# A real Sphinx corpus: the Jinja documentation
# --------------------------------------------------------------------------


def test_the_jinja_docs_read_with_sections_anchors_code_and_unknown_counts() -> None:
    files = sorted(JINJA.glob("*.rst"))
    assert len(files) == 7
    total: Counter[str] = Counter()
    by_file: dict[str, list[Any]] = {}
    for f in files:
        source = f.read_text(encoding="utf-8")
        chunks, work = read(source, path=f.name)
        by_file[f.name] = chunks
        total.update(work.unknown)
    # A Sphinx directive before the first title: its text, under the file's name.
    native = by_file["nativetypes.rst"]
    assert [c.title for c in native[:2]] == ["nativetypes.rst", "Native Python Types"]
    assert native[0].text == "module jinja2.nativetypes" and native[0].location == (1, 1)
    # Titles under `=`, `-` and `~`, nested as the underlines say.
    titles = [c.title for c in by_file["extensions.rst"]]
    assert "Extensions > i18n Extension > Newstyle Gettext" in titles
    assert "Extensions > Writing Extensions > Parser API" in titles
    ids = assign_ids("jinja", by_file["extensions.rst"])
    # `.. _loopcontrols-extension:` above "Loop Controls" names that section.
    loops = titles.index("Extensions > Loop Controls")
    assert ids[loops].endswith("-loopcontrols-extension")
    assert assign_ids("jinja", native)[1] == "jinja-nativetypes--nativetypes"  # `.. _nativetypes:`
    # A literal block comes back whole: the sandbox's example, blank lines and all.
    [intercept] = [c for c in by_file["sandbox.rst"] if c.title.endswith("Operator Intercepting")]
    assert (
        "from jinja2.sandbox import SandboxedEnvironment\n\n\n"
        "class MyEnvironment(SandboxedEnvironment):\n"
        "    intercepted_binops = frozenset(['**'])\n\n"
        "    def call_binop(self, context, operator, left, right):"
    ) in intercept.text
    # Sphinx's roles and directives, counted (read off the files with grep).
    assert total["role:ref"] == 7 and total["role:class"] == 9
    assert total["directive:autoclass"] == 8 and total["directive:versionadded"] == 5
    assert total["directive:literalinclude"] == 1 and total["directive:jinjanodes"] == 1
    api = "\n".join(c.text for c in by_file["sandbox.rst"])
    assert ":class:" not in api and ".. autoclass" not in api
    assert "autoclass SandboxedEnvironment([options])" in api


def _jinja_rules(tmp: Path, uri: str) -> Path:
    rules = tmp / "rules.toml"
    rules.write_text(
        "[source]\n"
        'name = "jinja"\n'
        f'uri = "{uri}"\n'
        'version = "jinja2-docs"\n'
        'effective_from = "2025-06-14"\n'
        "max_tokens = 400\n\n"
        "[[rule]]\n"
        'match = "**"\n'
        'section = "evidence"\n'
        'trust = "approved-source"\n'
        'required_permission = "docs-read"\n'
        "priority = 50\n",
        encoding="utf-8",
    )
    return rules


def test_the_jinja_docs_ingest_through_the_command_line(tmp_path: Path, db_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(JINJA, docs, ignore=shutil.ignore_patterns("*.txt"))
    rules = _jinja_rules(tmp_path, "https://jinja.palletsprojects.com/en/stable/{path_stem}/")
    out = run_ledger("ingest", str(docs), "--rules", str(rules), "--json", db=db_path)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["files"] == 7 and summary["parsed"] == 7
    unknown = summary["unknown_markup"]
    assert unknown["role:ref"] == 7 and unknown["directive:autoclass"] == 8
    listed = ledger_json("chunks", db=db_path)["chunks"]
    assert len(listed) == summary["read"] == summary["new"]
    by_path = {c["path"]: c for c in listed}
    assert by_path["extensions.rst"]["source_uri"] == (
        "https://jinja.palletsprojects.com/en/stable/extensions/"
    )
    loops = [c for c in listed if c["title"].endswith("Loop Controls")]
    assert loops and loops[0]["id"].startswith("jinja-extensions--")
    assert all(c["lines"][0] <= c["lines"][1] for c in listed)
    assert ledger_json("verify", db=db_path)["ok"] is True
    # The plain summary says it too, and a second run parses nothing.
    again = run_ledger("ingest", str(docs), "--rules", str(rules), db=db_path)
    assert again.returncode == 0 and "7 files (0 parsed)" in again.stdout
    assert "unknown markup" not in again.stdout
    (docs / "faq.rst").write_text(
        (docs / "faq.rst").read_text(encoding="utf-8") + "\nSee :ref:`x`.\n", encoding="utf-8"
    )
    third = run_ledger(
        "ingest", str(docs), "--rules", str(rules), "--source-version", "v2", db=db_path
    )
    assert third.returncode == 0, third.stderr
    # faq.rst holds `.. highlight::`, a :class: and a :func: role; and now a :ref:.
    assert (
        "; 4 unknown markup rendered as text "
        "(directive:highlight 1, role:class 1, role:func 1, role:ref 1)"
    ) in third.stdout


def test_reading_the_real_corpus_twice_gives_the_same_sections() -> None:
    source = (JINJA / "extensions.rst").read_text(encoding="utf-8")
    first = read_rst(source)
    second = read_rst(source)
    assert [(s.titles, s.slugs, s.blocks) for s in first] == [
        (s.titles, s.slugs, s.blocks) for s in second
    ]
