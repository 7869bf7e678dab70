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

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

from ledger.core.errors import EXIT_USAGE, LedgerError
from ledger.core.reasons import describe_hint, is_date

ADMIT = "admit"
EXCLUDE = "exclude"
BUILD = "build"  # a failure of the case's build itself (a required chunk, the budget)
DEFAULT_TOP = 20
MAX_TOP = 10_000
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


def parse_tests(data: bytes, where: str) -> list[Case]:
    """The cases of a tests file's bytes (`where` names it in messages)."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CheckFileError(f"{where}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise CheckFileError(f"{where}: not valid TOML ({exc})") from None
    return cases_of(doc, where)


def cases_of(doc: Mapping[str, Any], where: str = "tests") -> list[Case]:
    """The cases of a parsed tests document `{"defaults": {...}, "case": [...]}`."""
    unknown = sorted(set(doc) - {"defaults", "case"})
    if unknown:
        raise CheckFileError(f"{where}: unknown table {unknown[0]!r} (use [defaults] and [[case]])")
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, Mapping):
        raise CheckFileError(f"{where}: [defaults] must be a table")
    if "name" in defaults:
        raise CheckFileError(f"{where}: [defaults] key 'name': each case names itself")
    _check_keys(defaults, f"{where}: [defaults]")
    raw = doc.get("case", [])
    if not isinstance(raw, list) or not raw:
        raise CheckFileError(f"{where}: no [[case]] tables: a tests file needs at least one case")
    cases: list[Case] = []
    seen: set[str] = set()
    for index, table in enumerate(raw, 1):
        label = f"{where}: case {index}"
        if not isinstance(table, Mapping):
            raise CheckFileError(f"{label}: must be a table")
        case = _case(dict(defaults), table, label)
        if case.name in seen:
            raise CheckFileError(f"{label} key 'name': {case.name!r} is used by an earlier case")
        seen.add(case.name)
        cases.append(case)
    return cases


def _check_keys(table: Mapping[str, Any], label: str) -> None:
    for key in table:
        if key not in CASE_KEYS:
            raise CheckFileError(f"{label}: unknown key {key!r} (keys: {', '.join(CASE_KEYS)})")


def _case(defaults: dict[str, Any], table: Mapping[str, Any], label: str) -> Case:
    _check_keys(table, label)
    name = table.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CheckFileError(f"{label} key 'name': every case needs a name (a non-blank string)")
    label = f"{label} ({name!r})"
    merged = {**defaults, **table}
    query = _text(merged, "query", label)
    candidates = _text(merged, "candidates", label)
    if query is not None and candidates is not None:
        raise CheckFileError(
            f"{label} key 'candidates': give a query or a candidates file, not both"
        )
    top = merged.get("top")
    if top is not None and query is None:
        if "top" in table:
            raise CheckFileError(
                f"{label} key 'top': only a query case (a retrieval build) has a top"
            )
        top = None  # a [defaults] top applies to the query cases only
    if query is not None:
        top = _integer(merged, "top", label, 1, MAX_TOP, DEFAULT_TOP)
    as_of = merged.get("as_of")
    if not isinstance(as_of, str) or not is_date(as_of):
        raise CheckFileError(
            f"{label} key 'as_of': {as_of!r} must be a YYYY-MM-DD date (a quoted string)"
        )
    admit = _items(merged, ADMIT, label)
    exclude = _items(merged, EXCLUDE, label)
    if not admit and not exclude:
        raise CheckFileError(
            f"{label} key 'admit': a case expects something (admit or exclude, not both empty)"
        )
    budget = merged.get("budget")
    if budget is not None:
        budget = _integer(merged, "budget", label, 0, 2**53 - 1, 0)
    return Case(
        name=name.strip(),
        as_of=as_of,
        subject=_text(merged, "subject", label) or "default",
        query=query,
        top=top,
        candidates=candidates,
        budget=budget,
        counter=_text(merged, "counter", label) or "estimated_tokens",
        admit=admit,
        exclude=exclude,
    )


def _text(table: Mapping[str, Any], key: str, label: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise CheckFileError(f"{label} key {key!r}: must be a non-blank string")
    return value


def _integer(
    table: Mapping[str, Any], key: str, label: str, low: int, high: int, default: int
) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise CheckFileError(f"{label} key {key!r}: {value!r} must be a whole number {low}..{high}")
    return int(value)


def _items(table: Mapping[str, Any], key: str, label: str) -> tuple[Expect, ...]:
    value = table.get(key, [])
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
    return admitted.content is not None and fold(str(item.text)) in fold(admitted.content)


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
        return [f"PASS {case['name']}"]
    failures = case["failures"]
    n = len(failures)
    lines = [f"FAIL {case['name']}: {n} expectation{'s' if n != 1 else ''} not met"]
    for f in failures:
        hint = _hint_words(f["hint"])
        if hint and describe_hint(f["hint"]) in f["sentence"]:
            hint = ""  # the why sentence says it already
        lines.append(f"  {_what(f)}: {f['sentence']}{hint}")
    return lines


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


def junit_xml(cases: Sequence[Mapping[str, Any]], suite: str = "ledger check") -> bytes:
    """JUnit XML: one `testcase` per case; a failure's message is its first why
    sentence, its text every failure line."""
    failed = sum(1 for c in cases if not c["passed"])
    counts = {"name": suite, "tests": str(len(cases)), "failures": str(failed), "errors": "0"}
    root = ElementTree.Element("testsuites", counts)
    node = ElementTree.SubElement(root, "testsuite", counts)
    for c in cases:
        case = ElementTree.SubElement(node, "testcase", classname="ledger.check", name=c["name"])
        if not c["passed"]:
            first = c["failures"][0]
            failure = ElementTree.SubElement(
                case,
                "failure",
                message=first["sentence"],
                type=f"{first['expect']}:{first['status']}",
            )
            failure.text = "\n".join(case_lines(c)[1:])
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
]
