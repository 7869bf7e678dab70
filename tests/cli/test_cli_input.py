"""Issue 14, class "input that is accepted but should not be": every pattern that
validates input matches the whole text (`fullmatch`; a structural test greps the
library for `re.match` against a `$`-anchored pattern), control characters are
refused in every metadata text field of a chunk, and the 16 Mi-character cap
applies to the text as stored.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.clitools import one_line, run, sqlite_url, state
from tests.conftest import ROOT, chunk, write_jsonl

# The ledger's content cap: 16 Mi characters (docs/reference/records.md).
CONTENT_CAP = 16 * 1024 * 1024


@pytest.mark.parametrize(
    "args",
    [
        ("subject", "grant", "bob", "legal-read\n"),
        ("subject", "grant", "bob\n", "legal-read"),
        ("subject", "revoke", "default", "public-read\n"),
        ("subject", "show", "default\n"),
        ("build", "--as-of", "2026-07-21", "--subject", "default\n"),
    ],
    ids=["permission", "subject", "revoke", "show", "build-subject"],
)
def test_a_trailing_newline_is_not_a_distinct_name(
    seeded_file: Path, args: tuple[str, ...]
) -> None:
    """`grant bob $'legal-read\\n'` stored a permission that displays like `legal-read`."""
    before = state(sqlite_url(seeded_file))
    line = one_line(run(*args, db=seeded_file), 1)
    assert "\n" not in line
    assert state(sqlite_url(seeded_file)) == before


def test_no_pattern_validates_input_with_match_and_dollar() -> None:
    """Structural: `re.match`/`.match(` against a `$`-anchored pattern lets a final
    newline through (`$` matches before it). Every validating pattern is used
    with `fullmatch` instead, and no compiled pattern ends in a bare `$`."""
    offenders = []
    for path in sorted((ROOT / "ledger").rglob("*.py")) + sorted((ROOT / "cli").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for n, line in enumerate(text.splitlines(), start=1):
            if re.search(r"""re\.compile\(r?["']\^[^"']*\$["']""", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
            if re.search(r"""re\.match\(r?["'][^"']*\$""", line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == [], "\n".join(offenders)


CONTROL = ["\x1b[31m", "\n## policy\n", "\r", "\t", "\x07", "\x7f", "\x85", "\u2028", "\x00"]


@pytest.mark.parametrize("char", CONTROL, ids=[repr(c) for c in CONTROL])
@pytest.mark.parametrize("field", ["source_version", "source_uri"])
def test_control_characters_in_metadata_are_refused(
    seeded_file: Path, tmp_path: Path, field: str, char: str
) -> None:
    """`source_version` took ESC and newlines: raw escapes on a terminal, and an
    injected `## policy` heading in `export --format markdown`."""
    value = {"source_version": f"v1{char}x", "source_uri": f"doc://a{char}b"}[field]
    path = write_jsonl(tmp_path / "bad.jsonl", [chunk(id="ctl-note", **{field: value})])
    before = state(sqlite_url(seeded_file))
    line = one_line(run("ingest", str(path), db=seeded_file), 1)
    # (A white-space character in a URI was already refused as not an absolute URI.)
    assert field in line, line
    assert any(w in line for w in ("control character", "NUL character", "absolute URI")), line
    assert "\x1b" not in line
    assert state(sqlite_url(seeded_file)) == before


def test_content_may_hold_control_characters(seeded_file: Path, tmp_path: Path) -> None:
    """Bodies are text as given (tabs, newlines, even ESC): only metadata is refused."""
    body = "Line one\n\tindented\x1b[0m\r\nend"
    path = write_jsonl(tmp_path / "ok.jsonl", [chunk(id="ctl-body", content=body)])
    result = run("ingest", str(path), "--json", db=seeded_file)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["new"] == 1


def test_content_cap_applies_to_the_stored_text(seeded_file: Path, tmp_path: Path) -> None:
    """`'x' + 5,000,000 spaces` was stored: the cap was checked on the stripped text."""
    path = write_jsonl(
        tmp_path / "wide.jsonl", [chunk(id="wide-note", content="x" + " " * CONTENT_CAP)]
    )
    before = state(sqlite_url(seeded_file))
    line = one_line(run("ingest", str(path), db=seeded_file), 1)
    assert "content" in line and str(CONTENT_CAP) in line.replace(",", ""), line
    assert state(sqlite_url(seeded_file)) == before


def test_content_at_the_cap_is_stored(seeded_file: Path, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "full.jsonl", [chunk(id="full-note", content="y" * (CONTENT_CAP - 1) + " ")]
    )
    result = run("ingest", str(path), "--json", db=seeded_file)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["new"] == 1


def test_stored_control_characters_are_escaped_when_rendered(seeded_file: Path) -> None:
    """Refused at ingest, and escaped anyway where a changed or older database
    still holds them: no raw ESC on a terminal, no injected Markdown heading."""
    from tests.clitools import sqlite_exec

    sqlite_exec(
        seeded_file,
        "UPDATE chunk_versions SET source_version = ? WHERE chunk_id = 'refund-faq'",
        ("v\x1b[31m\n## policy\ninjected",),
    )
    markdown = run("export", "1", "--format", "markdown", db=seeded_file)
    assert markdown.returncode == 0, markdown.stderr
    headings = [line for line in markdown.stdout.splitlines() if line.startswith("## ")]
    assert len(headings) == len(set(headings)), headings
    assert "\x1b" not in markdown.stdout and "injected" in markdown.stdout
    for args in (("chunks",), ("show", "1"), ("why-evicted", "refund-faq")):
        result = run(*args, db=seeded_file)
        assert result.returncode == 0, (args, result.stderr)
        assert "\x1b" not in result.stdout, args
