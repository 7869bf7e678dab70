"""The rules file: strict TOML validation, glob matching, rules that match nothing."""

from __future__ import annotations

import pytest

from ledger.core.errors import InputError
from ledger.core.rules import glob_matches, parse_rules

GOOD = b"""
[source]
name = "fastapi-docs"
uri = "https://github.com/fastapi/fastapi/blob/{version}/docs/en/docs/{path}"
version = "git"
effective_from = "git"
counter = "cl100k_base"
max_tokens = 800
snapshot = true

[[rule]]
match = "security/**"
section = "evidence"
trust = "approved-source"
required_permission = "security-read"
priority = 60
required = false
dedupe = "content"

[[rule]]
match = "**"
section = "evidence"
trust = "approved-source"
required_permission = "docs-read"
priority = 50
"""


def test_the_spec_example_parses_with_its_values_and_defaults() -> None:
    rules = parse_rules(GOOD, "rules.toml")
    assert rules.source.name == "fastapi-docs"
    assert rules.source.snapshot is True and rules.source.max_tokens == 800
    first, second = rules.rules
    assert (first.required_permission, first.priority, first.dedupe) == (
        "security-read",
        60,
        "content",
    )
    # Unset keys take the documented defaults.
    assert (second.dedupe, second.required, second.skip, second.expires_on) == (
        "id",
        False,
        False,
        None,
    )
    assert rules.rule_for("security/oauth2.md") is first
    assert rules.rule_for("tutorial/cors.md") is second
    assert rules.source.render_uri("abc", "tutorial/cors.md") == (
        "https://github.com/fastapi/fastapi/blob/abc/docs/en/docs/tutorial/cors.md"
    )
    minimal = parse_rules(
        b'[source]\nname = "kb"\nuri = "file:///kb/{path}"\n[[rule]]\nmatch = "**"\n'
        b'section = "policy"\ntrust = "application-policy"\nrequired_permission = "kb-read"\n'
        b"priority = 1\n",
        "r.toml",
    )
    assert (minimal.source.version, minimal.source.effective_from) == ("content", "today")
    assert (minimal.source.counter, minimal.source.max_tokens, minimal.source.snapshot) == (
        "cl100k_base",
        800,
        False,
    )


def _replace(old: bytes, new: bytes) -> bytes:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_replace(b"version = ", b"versoin = "), "[source] has unknown key 'versoin'"),
        (_replace(b"dedupe = ", b"dedup = "), "rule[1] has unknown key 'dedup'"),
        (GOOD + b"\n[extra]\n", "has unknown key 'extra'"),
        (
            _replace(b'trust = "approved-source"', b'trust = "trusted"'),
            'rule[1] (match = "security/**").trust is unsupported',
        ),
        (_replace(b'section = "evidence"', b'section = "notes"'), ".section is unsupported"),
        (_replace(b'"security-read"', b'"Security Read"'), ".required_permission must match"),
        (_replace(b"priority = 60", b"priority = 101"), ".priority must be between 0 and 100"),
        (_replace(b"priority = 60", b"priority = 6.0"), ".priority must be an integer"),
        (_replace(b"priority = 60", b"priority = true"), ".priority must be an integer"),
        (_replace(b"required = false", b'required = "no"'), ".required must be a boolean"),
        (_replace(b'dedupe = "content"', b'dedupe = "text"'), ".dedupe is unsupported"),
        (
            _replace(b"required = false", b"required = true"),
            "required chunks cannot share a dedupe_key",
        ),
        (_replace(b'name = "fastapi-docs"', b'name = "FastAPI"'), "[source].name must match"),
        (
            _replace(b'name = "fastapi-docs"', b'name = "a-very-long-source-name-here"'),
            "[source].name must be at most 24",
        ),
        (_replace(b'uri = "https', b'uri = "github.com/x'), "[source].uri must be an absolute URI"),
        (_replace(b"{path}", b"{file}"), "unknown placeholder {file}"),
        (
            _replace(b'effective_from = "git"', b'effective_from = "2026-13-01"'),
            "[source].effective_from must use YYYY-MM-DD",
        ),
        (
            _replace(b'effective_from = "git"', b"effective_from = 2026-07-01"),
            'a quoted "YYYY-MM-DD" date',
        ),
        (
            _replace(b'counter = "cl100k_base"', b'counter = "estimated_tokens"'),
            "[source].counter is unsupported",
        ),
        (_replace(b"max_tokens = 800", b"max_tokens = 0"), "max_tokens must be between 1 and"),
        (_replace(b"snapshot = true", b"snapshot = 1"), "[source].snapshot must be a boolean"),
        (_replace(b'match = "**"', b'match = "/abs/**"'), "is relative to its PATH"),
        (_replace(b'match = "**"', b'match = "a[b"'), "unclosed ["),
        (_replace(b"priority = 50\n", b""), "is missing 'priority'"),
        (GOOD.split(b"[[rule]]")[0], "is missing 'rule'"),
        (b"[source\nname=1", "not valid TOML"),
        (b"\xff\xfe", "not valid UTF-8 at byte 0"),
        (
            b'[source]\nname = "kb"\nuri = "file:///kb/{path}"\n'
            b'[[rule]]\nmatch = "x"\nskip = true\npriority = 3\n',
            "skips its files; 'priority' would have no effect",
        ),
        (
            b'[source]\nname = "kb"\nuri = "file:///kb/{path}"\neffective_from = "2026-05-01"\n'
            b'[[rule]]\nmatch = "**"\nsection = "policy"\ntrust = "unverified"\n'
            b'required_permission = "kb"\npriority = 1\nexpires_on = "2026-05-01"\n',
            "expires_on must be later than effective_from",
        ),
    ],
)
def test_a_bad_rules_file_is_refused_naming_the_key_or_rule(data: bytes, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_rules(data, "rules.toml")
    assert message in str(exc.value)
    assert str(exc.value).startswith("rules.toml")
    assert "\n" not in str(exc.value)


def test_a_rule_that_matches_no_file_and_a_file_no_rule_matches_are_refused() -> None:
    rules = parse_rules(GOOD, "rules.toml")
    with pytest.raises(InputError, match=r'rule\[1\] \(match = "security/\*\*"\) matches no file'):
        rules.check_matches(["index.md", "tutorial/cors.md"])
    rules.check_matches(["security/a.md", "index.md"])  # both rules match something
    narrow = parse_rules(GOOD.replace(b'match = "**"', b'match = "tutorial/*.md"'), "r.toml")
    with pytest.raises(InputError, match=r"^index\.md: no rule of r\.toml matches this file"):
        narrow.check_matches(["security/a.md", "tutorial/cors.md", "index.md"])


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**", "a.md", True),
        ("**", "a/b/c.md", True),
        ("security/**", "security/a.md", True),
        ("security/**", "security/x/y.md", True),
        ("security/**", "securityx/a.md", False),
        ("security/**", "docs/security/a.md", False),
        ("*.md", "a.md", True),
        ("*.md", "a/b.md", False),
        ("**/*.md", "a.md", True),
        ("**/*.md", "a/b/c.md", True),
        ("**/*.md", "a/b/c.txt", False),
        ("tutorial/?.md", "tutorial/a.md", True),
        ("tutorial/?.md", "tutorial/ab.md", False),
        ("[ab]*.md", "b1.md", True),
        ("[!ab]*.md", "b1.md", False),
        ("a.b", "axb", False),  # a dot is a dot, not a regular-expression wildcard
        ("a+(b).md", "a+(b).md", True),
    ],
)
def test_globs(pattern: str, path: str, expected: bool) -> None:
    assert glob_matches(pattern, path) is expected
