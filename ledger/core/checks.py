"""Context tests (`ledger check`): what a subject's pack must and must not hold.

A tests file (TOML, docs/reference/commands.md "ledger check") names cases; each
is a build's inputs (subject, as-of date, a query or a candidates file, budget)
and expectations: `admit` (each item must be admitted) and `exclude` (none may
be). An item is a chunk id, or `{text = "..."}`: a phrase that an admitted
chunk's content holds after Unicode case folding and white-space folding.

This module parses and judges; the store decides each case as `ledger build`
would (`ledger.store.check`). No I/O here: the caller reads the file.
"""

from __future__ import annotations

import datetime
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

from ledger.core.errors import EXIT_USAGE, LedgerError
from ledger.core.query import check_top, parse_query
from ledger.core.reasons import describe_hint, is_date
from ledger.core.records import RecordError, printable, refuse_controls

ADMIT = "admit"
EXCLUDE = "exclude"
BUILD = "build"  # a failure of the case's build itself (a required chunk, the budget)
DEFAULT_TOP = 20
# The keys a case may have; all but `name` may also be given under [defaults].
CASE_KEYS = (
    "name",
    "subject",
    "as_of",
    "query",
    "top",
    "candidates",
    "budget",
    "counter",
    ADMIT,
    EXCLUDE,
)


class CheckFileError(LedgerError):
    """A malformed tests file: one line naming the case and the key (exit 2)."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True, slots=True)
class Expect:
    """One expectation item: a chunk id, or a phrase (`text`)."""

    id: str | None = None
    text: str | None = None

    def to_json(self) -> str | dict[str, str]:
        return self.id if self.id is not None else {"text": str(self.text)}

    def label(self) -> str:
        return repr(self.id) if self.id is not None else f"text {self.text!r}"


@dataclass(frozen=True, slots=True)
class Case:
    """One context test: a build's inputs and what its pack must (not) admit."""

    name: str
    as_of: str
    subject: str = "default"
    query: str | None = None
    top: int | None = None
    candidates: str | None = None  # a path, relative to the tests file's folder
    budget: int | None = None
    counter: str = "estimated_tokens"
    admit: tuple[Expect, ...] = ()
    exclude: tuple[Expect, ...] = ()


@dataclass(frozen=True, slots=True)
class Admitted:
    """A chunk the case's pack admitted: its id and content (None once erased)."""

    id: str
    content: str | None


@dataclass(frozen=True, slots=True)
class Miss:
    """An expectation the pack does not meet; `found` names the admitted chunk
    an `exclude` item matched."""

    expect: str  # ADMIT or EXCLUDE
    item: Expect
    found: str | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """A miss with the `why` answer that explains it."""

    expect: str  # ADMIT, EXCLUDE, or BUILD when the build itself failed
    item: Expect | None
    status: str
    reason: str | None
    detail: Mapping[str, Any] | None
    hint: Mapping[str, Any] | None
    sentence: str

    def to_json(self) -> dict[str, Any]:
        return {
            "expect": self.expect,
            "item": None if self.item is None else self.item.to_json(),
            "status": self.status,
            "reason": self.reason,
            "detail": None if self.detail is None else dict(self.detail),
            "hint": None if self.hint is None else dict(self.hint),
            "sentence": self.sentence,
        }


@dataclass(frozen=True, slots=True)
class CaseResult:
    name: str
    pack_digest: str | None  # None when the build failed
    failures: tuple[Failure, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "pack_digest": self.pack_digest,
            "failures": [f.to_json() for f in self.failures],
        }


# --------------------------------------------------------------------------
# Parsing.
# --------------------------------------------------------------------------

# The build's checks of a key's value whose rules live outside the core (the
# caller's `ledger.store.inputs.INPUT_RULES`: subject, budget, counter). Each
# raises a LedgerError; the core's own rules (as_of, query, top) always apply.
Rules = Mapping[str, Callable[[Any], object]]


def parse_tests(data: bytes, where: str, rules: Rules | None = None) -> list[Case]:
    """The cases of a tests file's bytes (`where` names it in messages)."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CheckFileError(f"{where}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise CheckFileError(f"{where}: not valid TOML ({exc})") from None
    return cases_of(doc, where, rules)


def cases_of(
    doc: Mapping[str, Any], where: str = "tests", rules: Rules | None = None
) -> list[Case]:
    """The cases of a parsed tests document `{"defaults": {...}, "case": [...]}`.

    Every value is checked as a build would check it (`rules`: see `Rules`),
    `[defaults]` on their own, so a file a build would refuse is refused here,
    before any case runs."""
    rules = rules or {}
    unknown = sorted(set(doc) - {"defaults", "case"})
    if unknown:
        raise CheckFileError(f"{where}: unknown table {unknown[0]!r} (use [defaults] and [[case]])")
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, Mapping):
        raise CheckFileError(f"{where}: [defaults] must be a table")
    if "name" in defaults:
        raise CheckFileError(f"{where}: [defaults] key 'name': each case names itself")
    label = f"{where}: [defaults]"
    _check_keys(defaults, label)
    defaults = {key: _value(key, value, label, rules) for key, value in defaults.items()}
    raw = doc.get("case", [])
    if not isinstance(raw, list) or not raw:
        raise CheckFileError(f"{where}: no [[case]] tables: a tests file needs at least one case")
    cases: list[Case] = []
    seen: set[str] = set()
    for index, table in enumerate(raw, 1):
        label = f"{where}: case {index}"
        if not isinstance(table, Mapping):
            raise CheckFileError(f"{label}: must be a table")
        case = _case(defaults, table, label, rules)
        if case.name in seen:
            raise CheckFileError(f"{label} key 'name': {case.name!r} is used by an earlier case")
        seen.add(case.name)
        cases.append(case)
    return cases


def _check_keys(table: Mapping[str, Any], label: str) -> None:
    for key in table:
        if key not in CASE_KEYS:
            raise CheckFileError(f"{label}: unknown key {key!r} (keys: {', '.join(CASE_KEYS)})")


def _name(table: Mapping[str, Any], label: str) -> str:
    """A case's name: one line of plain text, printed as `PASS name` and written
    into JUnit XML, so no control, line-separator or invisible format character."""
    name = table.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CheckFileError(f"{label} key 'name': every case needs a name (a non-blank string)")
    try:
        refuse_controls(name, "name")
    except RecordError as exc:
        raise CheckFileError(
            f"{label} ({name!r}) key 'name': {exc.rule}; a case name is one line of plain text"
        ) from None
    return name.strip()


def _case(defaults: Mapping[str, Any], table: Mapping[str, Any], label: str, rules: Rules) -> Case:
    _check_keys(table, label)
    name = _name(table, label)
    label = f"{label} ({name!r})"
    own = {key: _value(key, value, label, rules) for key, value in table.items() if key != "name"}
    merged = {**defaults, **own}
    query = merged.get("query")
    candidates = merged.get("candidates")
    if query is not None and candidates is not None:
        raise CheckFileError(
            f"{label} key 'candidates': give a query or a candidates file, not both"
        )
    top = merged.get("top")
    if query is None and "top" in table:
        raise CheckFileError(f"{label} key 'top': only a query case (a retrieval build) has a top")
    if query is None:
        top = None  # a [defaults] top applies to the query cases only
    elif top is None:
        top = DEFAULT_TOP
    as_of = merged.get("as_of")
    if as_of is None:
        raise CheckFileError(
            f"{label} key 'as_of': missing; give the YYYY-MM-DD day (here or in [defaults])"
        )
    admit = merged.get(ADMIT, ())
    exclude = merged.get(EXCLUDE, ())
    if not admit and not exclude:
        raise CheckFileError(
            f"{label} key 'admit': a case expects something (admit or exclude, not both empty)"
        )
    return Case(
        name=name,
        as_of=as_of,
        subject=merged.get("subject") or "default",
        query=query,
        top=top,
        candidates=candidates,
        budget=merged.get("budget"),
        counter=merged.get("counter") or "estimated_tokens",
        admit=admit,
        exclude=exclude,
    )


def _value(key: str, value: Any, label: str, rules: Rules) -> Any:
    """One key's value as a case holds it, checked as a build would check it."""
    if key in (ADMIT, EXCLUDE):
        return _items(key, value, label)
    if key == "as_of":
        return _date(value, label)
    if key in ("top", "budget"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise CheckFileError(f"{label} key {key!r}: {value!r} must be a whole number")
    elif not isinstance(value, str) or not value.strip():
        raise CheckFileError(f"{label} key {key!r}: must be a non-blank string")
    core: Rules = {"top": check_top, "query": parse_query}
    rule = core.get(key) or rules.get(key)
    if rule is not None:
        try:
            rule(value)
        except LedgerError as exc:
            # "budget: must be between ..." reads "key 'budget': must be between ..."
            message = str(exc).removeprefix(f"{key}: ")
            raise CheckFileError(f"{label} key {key!r}: {message}") from None
    return value


def _date(value: Any, label: str) -> str:
    """`as_of`: a quoted `YYYY-MM-DD` string, or a TOML local date (`2026-09-02`
    unquoted) taken as that day. A date with a time is refused: a build's as_of
    is a day."""
    if isinstance(value, datetime.datetime):
        raise CheckFileError(
            f"{label} key 'as_of': {value.isoformat()} is a date and time; give the day "
            f"alone ({value.date().isoformat()})"
        )
    if isinstance(value, datetime.date):
        return value.isoformat()
    if not is_date(value):
        shown = value.isoformat() if isinstance(value, datetime.time) else repr(value)
        raise CheckFileError(
            f"{label} key 'as_of': {shown} must be a real YYYY-MM-DD date "
            '(as_of = 2026-09-02, or "2026-09-02")'
        )
    return str(value)


def _items(key: str, value: Any, label: str) -> tuple[Expect, ...]:
    if not isinstance(value, list):
        raise CheckFileError(
            f"{label} key {key!r}: must be a list of ids and {{text = ...}} tables"
        )
    items = []
    for n, item in enumerate(value, 1):
        if isinstance(item, str) and item.strip():
            items.append(Expect(id=item.strip()))
        elif (
            isinstance(item, Mapping)
            and set(item) == {"text"}
            and isinstance(item["text"], str)
            and fold(item["text"])
        ):
            items.append(Expect(text=item["text"]))
        else:
            raise CheckFileError(
                f"{label} key {key!r} item {n}: {item!r} is neither a chunk id nor "
                '{text = "a phrase"}'
            )
    return tuple(items)


# --------------------------------------------------------------------------
# Judging.
# --------------------------------------------------------------------------


def fold(text: str) -> str:
    """Unicode case folding and white-space folding: the form phrases match in."""
    return " ".join(text.casefold().split())


def holds(item: Expect, admitted: Admitted) -> bool:
    """Whether an admitted chunk meets an expectation item."""
    if item.id is not None:
        return admitted.id == item.id
    return admitted.content is not None and holds_phrase(admitted.content, str(item.text))


def holds_phrase(content: str, phrase: str) -> bool:
    """Whether `content` holds `phrase`, both folded (`fold`), as whole words: a
    phrase that starts (ends) with a letter or digit does not match inside a
    word, so "rent refund" is not in "current refund", nor "x" in "box".

    >>> holds_phrase("The Refund   Window", "refund window")
    True
    >>> holds_phrase("current refund", "rent refund")
    False
    """
    text, wanted = fold(content), fold(phrase)
    start = text.find(wanted) if wanted else -1
    while start != -1:
        end = start + len(wanted)
        apart_before = start == 0 or not (_in_word(text[start - 1]) and _in_word(wanted[0]))
        apart_after = end == len(text) or not (_in_word(text[end]) and _in_word(wanted[-1]))
        if apart_before and apart_after:
            return True
        start = text.find(wanted, start + 1)
    return False


def _in_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def misses(case: Case, admitted: Sequence[Admitted]) -> list[Miss]:
    """The case's expectations its pack does not meet, admit items first."""
    out = [Miss(ADMIT, item) for item in case.admit if not any(holds(item, a) for a in admitted)]
    for item in case.exclude:
        found = next((a.id for a in admitted if holds(item, a)), None)
        if found is not None:
            out.append(Miss(EXCLUDE, item, found))
    return out


# --------------------------------------------------------------------------
# Output.
# --------------------------------------------------------------------------


def case_lines(case: Mapping[str, Any]) -> list[str]:
    """A case of `CheckResult.to_json()`: `PASS name`, or `FAIL name: ...` and
    one line per failed expectation with its why answer and hint."""
    if case["passed"]:
        return [f"PASS {_shown(case['name'])}"]
    failures = case["failures"]
    n = len(failures)
    lines = [f"FAIL {_shown(case['name'])}: {n} expectation{'s' if n != 1 else ''} not met"]
    for f in failures:
        hint = _hint_words(f["hint"])
        if hint and describe_hint(f["hint"]) in f["sentence"]:
            hint = ""  # the why sentence says it already
        # A sentence quotes stored titles and versions: escaped, so that one an
        # older database holds with a control character cannot break the line.
        lines.append(f"  {_what(f)}: {_shown(f['sentence'] + hint)}")
    return lines


def _shown(text: str) -> str:
    """Text on one line of the output: each control, separator or invisible
    format character (`printable`) and each character XML forbids as its escape."""
    return xml_text(printable(text))


def _what(failure: Mapping[str, Any]) -> str:
    item = failure["item"]
    if item is None:
        return str(failure["expect"])
    label = repr(item) if isinstance(item, str) else f"text {item['text']!r}"
    return f"{failure['expect']} {label}"


def _hint_words(hint: Mapping[str, Any] | None) -> str:
    if not hint or not hint.get("steps"):
        return ""
    return f" Hint: {describe_hint(hint)}."


def summary_line(passed: int, failed: int) -> str:
    """The last line of the output."""
    return f"{passed} passed, {failed} failed"


# What XML 1.0 does not allow in a document (its `Char` production): C0 controls
# but tab, line feed and carriage return; lone surrogates; U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` with each character XML 1.0 forbids written as its escape
    (`\\x01`), so that any text makes a well-formed document."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def junit_xml(cases: Sequence[Mapping[str, Any]], suite: str = "ledger check") -> bytes:
    """JUnit XML: one `testcase` per case; a failure's message is its first why
    sentence, its text every failure line. Any text is written well-formed
    (`xml_text`)."""
    failed = sum(1 for c in cases if not c["passed"])
    counts = {
        "name": xml_text(suite),
        "tests": str(len(cases)),
        "failures": str(failed),
        "errors": "0",
    }
    root = ElementTree.Element("testsuites", counts)
    node = ElementTree.SubElement(root, "testsuite", counts)
    for c in cases:
        case = ElementTree.SubElement(
            node, "testcase", classname="ledger.check", name=xml_text(c["name"])
        )
        if not c["passed"]:
            first = c["failures"][0]
            failure = ElementTree.SubElement(
                case,
                "failure",
                message=xml_text(first["sentence"]),
                type=xml_text(f"{first['expect']}:{first['status']}"),
            )
            failure.text = xml_text("\n".join(case_lines(c)[1:]))
    ElementTree.indent(root)
    text: bytes = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
    return text + b"\n"


__all__ = [
    "ADMIT",
    "BUILD",
    "CASE_KEYS",
    "EXCLUDE",
    "Admitted",
    "Case",
    "CaseResult",
    "CheckFileError",
    "Expect",
    "Failure",
    "Miss",
    "case_lines",
    "cases_of",
    "fold",
    "holds",
    "junit_xml",
    "misses",
    "parse_tests",
    "summary_line",
    "xml_text",
]
