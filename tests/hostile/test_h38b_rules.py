"""The rules file has a bounded cost (issue 38, items 12 and 17): tomllib's work
and memory grow with the square of a dotted key's parts (`x.x.x...`: 100,000
parts in a 200 KB file exhausted memory), so a deep key is refused in one line
before parsing; dots inside strings and comments are not keys. And a glob's
work grows no more than linearly when its pattern doubles."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.errors import InputError
from ledger.core.rules import glob_run, parse_rules

SOURCE = '[source]\nname = "kb"\nuri = "https://example.org/{path}"\n'
RULE = (
    '\n[[rule]]\nmatch = "**"\nsection = "evidence"\nrequired_permission = "kb-read"\n'
    'trust = "approved-source"\npriority = 50\n'
)


@pytest.mark.parametrize(
    "deep",
    [
        "x." * 5000 + "y = 1\n",  # a dotted key
        "[" + "a." * 5000 + "b]\n",  # a table header
        "[[" + "a . " * 5000 + "b]]\n",  # an array-of-tables header, spaced
        "\n".join(f"k{i}.a.b = 1" for i in range(3000)) + "\n",  # many shallow ones
    ],
)
def test_a_deeply_dotted_key_is_refused_in_one_line(deep: str) -> None:
    text = SOURCE + RULE + deep
    with pytest.raises(InputError) as err:
        parse_rules(text.encode(), "rules.toml")
    message = str(err.value)
    assert message.startswith("rules.toml: line ") and "nested too deeply" in message
    assert "\n" not in message


def test_dots_in_strings_and_comments_are_not_keys() -> None:
    dots = "." * 200
    text = (
        SOURCE.replace("{path}", "a" + ".b" * 100 + "/{path}")
        + f"# {dots}\n"
        + f"version = 'v{dots[:70]}'\n"
        + RULE.replace('match = "**"', f'match = "**/{"x." * 60}md"  # {dots}')
    )
    rules = parse_rules(text.encode(), "rules.toml")
    assert rules.source.version == "v" + dots[:70]
    assert rules.rules[0].match == "**/" + "x." * 60 + "md"


PARTS = st.lists(st.sampled_from(["a", "*", "**", "**/", "?", "[ab]", "/"]), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(PARTS, st.text(alphabet="ab/", max_size=40))
def test_the_work_grows_linearly_when_the_pattern_doubles(parts: list[str], path: str) -> None:
    pattern = "".join(parts)
    one = glob_run(pattern, path)[1]
    two = glob_run(pattern * 2, path)[1]
    four = glob_run(pattern * 4, path)[1]
    assert two <= 2 * one + 2 * len(pattern) * (len(path) + 1)
    assert four <= 2 * two + 4 * len(pattern) * (len(path) + 1)
