"""Rule globs matched without backtracking (issue 38, items 12 and 17): the
same answers as the regular-expression reading of the glob, work linear in the
path whatever the pattern (also once a pattern's kept moves reach their
bounds), and bad classes or deep TOML refused in one line."""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.core.rules import _GlobDfa, glob_matches, glob_run, parse_rules


def reference(pattern: str) -> re.Pattern[str]:
    """The plain reading of a glob (without classes) as a regular expression."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.S)


PIECES = st.sampled_from(["a", "b", ".", "/", "*", "**", "**/", "?", "md"])
PATHS = st.lists(st.sampled_from(["a", "b", ".", "/", "md", "x"]), max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(PIECES, max_size=7).map("".join), PATHS)
def test_the_glob_means_what_its_regular_expression_means(pattern: str, path: str) -> None:
    assert glob_matches(pattern, path) == (reference(pattern).fullmatch(path) is not None)


CLASSES = st.sampled_from(["[ab]", "[!a]", "[.-/]", "[]x]"])


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES | CLASSES, max_size=7).map("".join), st.lists(PATHS, max_size=6))
def test_the_kept_moves_answer_as_the_state_sets_do(pattern: str, paths: list[str]) -> None:
    """`glob_matches` (`_GlobDfa`, its moves kept across paths) equals `glob_run`,
    also once its bounds are reached (here at 3 sets: the rest read as glob_run)."""
    kept, bounded = _GlobDfa(pattern), _GlobDfa(pattern)
    bounded.MAX_SETS = 3
    for path in paths:
        expected = glob_run(pattern, path)[0]
        assert kept.matches(path) == bounded.matches(path) == expected, path
    assert [glob_matches(pattern, p) for p in paths] == [glob_run(pattern, p)[0] for p in paths]


@pytest.mark.parametrize("stars", [1, 8])
def test_the_work_grows_linearly_in_the_path_whatever_the_stars(stars: int) -> None:
    pattern = "**/" * stars + "**" * stars + "x"  # eight ** took more than 30 s
    work = [glob_run(pattern, "a" * n)[1] for n in (63, 126, 252)]
    assert not glob_run(pattern, "a" * 63)[0]
    assert work[1] <= 2.1 * work[0] and work[2] <= 2.1 * work[1]


@pytest.mark.parametrize(
    ("glob", "message"),
    [
        ("[z-a].md", "the range z-a is empty"),
        ("[[:alpha:]]*.md", "POSIX classes such as [:alpha:] are not supported"),
        ("[abc", "unclosed ["),
    ],
)
def test_a_bad_class_is_one_line_and_no_warning(glob: str, message: str) -> None:
    rules = (
        f'[source]\nname = "kb"\nuri = "https://e.org/{{path}}"\n\n[[rule]]\nmatch = "{glob}"\n'
        'section = "evidence"\ntrust = "approved-source"\nrequired_permission = "r"\n'
        "priority = 1\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # `[[` made Python's re print a FutureWarning
        with pytest.raises(InputError, match=re.escape(message)):
            parse_rules(rules.encode(), "rules.toml")


def test_a_deeply_nested_toml_array_is_refused_in_one_line() -> None:
    text = b'[source]\nname = "kb"\nx = ' + b"[" * 100_000 + b"]" * 100_000 + b"\n"
    with pytest.raises(InputError, match="nested too deeply|not valid TOML"):
        parse_rules(text, "rules.toml")


def test_classes_match_characters_and_ranges_never_a_slash() -> None:
    assert glob_matches("[a-c]*.md", "b1.md") and not glob_matches("[!a-c]*.md", "b1.md")
    assert glob_matches("doc[0-9].txt", "doc7.txt") and not glob_matches("a[/]b", "a/b")
    assert glob_matches("[]x].md", "].md")
