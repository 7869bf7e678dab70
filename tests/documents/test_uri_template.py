"""The rules' `uri` template: `{version}`, `{path}` and `{path_stem}`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.core.rules import parse_rules, path_stem

RULES = """
[source]
name = "kb"
uri = "{uri}"

[[rule]]
match = "**"
section = "evidence"
trust = "approved-source"
required_permission = "docs-read"
priority = 50
"""


def rules_with(uri: str):  # type: ignore[no-untyped-def]
    return parse_rules(RULES.replace("{uri}", uri).encode("utf-8"), "rules.toml")


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("cli.md", "https://example.org/docs/cli/"),
        ("guide/install.rst", "https://example.org/docs/guide/install/"),
        ("archive.tar.gz", "https://example.org/docs/archive.tar/"),
        ("notes/README", "https://example.org/docs/notes/README/"),
        ("v1.2/intro.html", "https://example.org/docs/v1.2/intro/"),
        (".hidden.md", "https://example.org/docs/.hidden/"),
    ],
)
def test_path_stem_links_the_published_page(path: str, uri: str) -> None:
    rules = rules_with("https://example.org/docs/{path_stem}/")
    assert rules.source.render_uri("v9", path) == uri


def test_all_three_placeholders_fill_in_one_pass() -> None:
    rules = rules_with("https://example.org/{version}/{path_stem}.html?src={path}")
    assert rules.source.render_uri("2.1", "a/b.md") == (
        "https://example.org/2.1/a/b.html?src=a/b.md"
    )
    # A value that spells a placeholder is not filled again.
    assert rules.source.render_uri("{path}", "{version}.md") == (
        "https://example.org/{path}/{version}.html?src={version}.md"
    )


def test_an_unknown_placeholder_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"unknown placeholder \{stem\}; use \{version\}, "):
        rules_with("https://example.org/{stem}/")


@given(st.lists(st.text("ab.-_", min_size=1, max_size=6), min_size=1, max_size=4))
def test_path_stem_drops_only_the_last_extension_of_the_last_part(parts: list[str]) -> None:
    path = "/".join(parts)
    stem = path_stem(path)
    folder, _, name = path.rpartition("/")
    assert stem.startswith(folder)
    assert path.startswith(stem)
    rest = path[len(stem) :]
    # What is dropped is empty or one `.ext` without another dot or slash.
    assert rest == "" or (rest.startswith(".") and "." not in rest[1:] and "/" not in rest)
    # A name that is only an extension (`.md`) keeps it, as a file name must stay.
    assert stem.rpartition("/")[2] != ""
