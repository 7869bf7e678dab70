"""The rules file of `ledger ingest PATH... --rules RULES.toml`. Pure: bytes in, values out.

The rules file is the *controlled* part of a document ingest: every chunk's
section, trust, permission, priority, required flag and dedupe policy come from
it (first matching rule wins, by glob on the path relative to its PATH), never
from a document's text. It is validated strictly before any document is read:
an unknown key, a value that breaks the chunk-record rules, or (once the file
list is known, still before reading) a rule that matches no file is refused,
naming the key or rule:

    rules.toml: rule[2].trust is unsupported: 'trusted'
    rules.toml: [source] has unknown key 'versoin'; known keys: counter, ...
    rules.toml: rule[1] (match = "security/**") matches no file

Defaults where the file is silent (written down in docs/guides/docs-folder.md): `version =
"content"`, `effective_from = "today"`, `counter = "cl100k_base"`, `max_tokens =
800`, `snapshot = false`; per rule `required = false`, `dedupe = "id"`, `skip =
false`, `expires_on` unset.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ledger.core.errors import InputError
from ledger.core.reasons import SECTIONS
from ledger.core.records import (
    MAX_PRIORITY,
    MAX_SOURCE_VERSION,
    MAX_TOKENS,
    MAX_URI,
    TRUST_LABELS,
    URI_RE,
    RecordError,
    identifier,
    integer,
    iso_date,
    refuse_controls,
)

SOURCE_KEYS = (
    "counter",
    "effective_from",
    "max_file_bytes",
    "max_tokens",
    "name",
    "snapshot",
    "uri",
    "version",
)
RULE_KEYS = (
    "dedupe",
    "expires_on",
    "match",
    "priority",
    "required",
    "required_permission",
    "section",
    "skip",
    "trust",
)
TOP_KEYS = ("rule", "source")
# Counters that count text (ledger.tokens); `estimated_tokens` has nothing to count.
TEXT_COUNTERS = ("cl100k_base", "o200k_base", "utf8-bytes")
DEDUPE_POLICIES = ("content", "id")
# A source name leaves room in the 64-character id for the path and heading slugs.
MAX_SOURCE_NAME = 24
DEFAULT_MAX_TOKENS = 800
# A document file is read whole: the largest one a run reads, and the ceiling of
# what `max_file_bytes` may allow.
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_FILE_BYTES = 1024 * 1024 * 1024
# URI template placeholders: the run's version, the file's path (relative to its PATH)
# and that path without its extension (`cli.md` -> `cli`, for a published page's URL).
_PLACEHOLDER_RE = re.compile(r"\{([^{}]*)\}")
_PLACEHOLDERS = frozenset({"version", "path", "path_stem"})


@dataclass(frozen=True, slots=True)
class Source:
    """The `[source]` table: what every chunk of the run shares."""

    name: str
    uri: str
    version: str  # "git", "content" or a literal source_version
    effective_from: str  # "git", "today" or a literal YYYY-MM-DD
    counter: str
    max_tokens: int
    snapshot: bool
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES

    def render_uri(self, version: str, path: str) -> str:
        """The chunk's `source_uri`: the template with `{version}`, `{path}` and
        `{path_stem}` (the path without its last extension) filled in, in one pass,
        so a value that holds a placeholder's spelling is not filled again."""
        values = {"version": version, "path": path, "path_stem": path_stem(path)}
        return _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), self.uri)


def path_stem(path: str) -> str:
    """`guide/cli.md` -> `guide/cli`; a name without an extension (or a dot file) as is."""
    folder, _, name = path.rpartition("/")
    stem, dot, _ext = name.rpartition(".")
    if not dot or not stem:
        stem = name
    return f"{folder}/{stem}" if folder else stem


@dataclass(frozen=True, slots=True)
class Rule:
    """One `[[rule]]`: a glob and the controlled metadata of the files it matches."""

    index: int  # 1-based, as the user counts them in the file
    match: str
    skip: bool
    section: str
    trust: str
    required_permission: str
    priority: int
    required: bool
    dedupe: str
    expires_on: str | None

    @property
    def label(self) -> str:
        """How a message names the rule: `rule[2] (match = "security/**")`."""
        return f'rule[{self.index}] (match = "{self.match}")'

    def metadata_digest(self) -> str:
        """A digest of what the rule gives a chunk, for the incremental path's cache key."""
        text = "\x1f".join(
            str(v)
            for v in (
                self.section,
                self.trust,
                self.required_permission,
                self.priority,
                self.required,
                self.dedupe,
                self.expires_on,
            )
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Rules:
    """A validated rules file: its `[[rule]]` tables in order, its `[source]`, the
    name it was read from and the SHA-256 of its bytes."""

    rules: tuple[Rule, ...]
    source: Source
    where: str
    digest: str

    def rule_for(self, relpath: str) -> Rule | None:
        """The first rule whose glob matches `relpath` (POSIX separators), or None."""
        for rule in self.rules:
            if glob_matches(rule.match, relpath):
                return rule
        return None

    def check_matches(self, relpaths: Iterable[str]) -> dict[str, Rule]:
        """Each file's rule (`rule_for`); refuse a rule that matches no file, and
        a file that no rule matches.

        Called with the file list of the run, before any file is read. A rule that
        is shadowed (every file it matches is taken by an earlier rule) still
        counts as matching: shadowing is how a catch-all `**` works.
        """
        paths = list(relpaths)
        for rule in self.rules:
            if not any(glob_matches(rule.match, p) for p in paths):
                raise InputError(
                    f"{self.where}: {rule.label} matches no file; fix its glob or remove the rule"
                )
        found: dict[str, Rule] = {}
        for p in paths:
            first = self.rule_for(p)
            if first is None:
                raise InputError(
                    f"{p}: no rule of {self.where} matches this file; add a rule "
                    '(or a catch-all `match = "**"`, or one with `skip = true`)'
                )
            found[p] = first
        return found


def _unknown(table: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise InputError(f"{where} has unknown key {unknown[0]!r}; known keys: {', '.join(known)}")


def _missing(table: Mapping[str, Any], needed: tuple[str, ...], where: str) -> None:
    missing = [k for k in needed if k not in table]
    if missing:
        raise InputError(f"{where} is missing {missing[0]!r}; it needs {', '.join(needed)}")


def _boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(f"{where} must be a boolean (true or false), not {value!r}")
    return value


def _field(where: str, check: Any, *args: Any) -> Any:
    """Run a chunk-record rule from `ledger.core.records`, prefixing its message with `where`."""
    try:
        return check(*args)
    except RecordError as exc:
        raise InputError(f"{where} {exc.rule}") from None


def _parse_source(table: Any, where: str) -> Source:
    if not isinstance(table, dict):
        raise InputError(f"{where}: [source] must be a table")
    at = f"{where}: [source]"
    _unknown(table, SOURCE_KEYS, at)
    _missing(table, ("name", "uri"), at)
    name = _field(f"{at}.name", identifier, table["name"], "name")
    if len(name) > MAX_SOURCE_NAME:
        raise InputError(
            f"{at}.name must be at most {MAX_SOURCE_NAME} characters "
            "(it starts every chunk id, which holds at most 64)"
        )
    uri = table["uri"]
    if not isinstance(uri, str) or not uri.strip():
        raise InputError(f"{at}.uri must be a non-blank string")
    uri = _field(f"{at}.uri", refuse_controls, uri.strip(), "uri")  # printed in every output
    for placeholder in _PLACEHOLDER_RE.findall(uri):
        if placeholder not in _PLACEHOLDERS:
            raise InputError(
                f"{at}.uri has unknown placeholder {{{placeholder}}}; use {{version}}, "
                "{path} and {path_stem}"
            )
    sample = (
        uri.replace("{version}", "v" * MAX_SOURCE_VERSION)
        .replace("{path_stem}", "p")
        .replace("{path}", "p")
    )
    if URI_RE.fullmatch(sample) is None:
        raise InputError(f"{at}.uri must be an absolute URI template (scheme://...), not {uri!r}")
    if len(sample) > MAX_URI:
        raise InputError(f"{at}.uri is too long: a chunk's source_uri holds at most {MAX_URI}")
    version = table.get("version", "content")
    if not isinstance(version, str) or not version.strip():
        raise InputError(f'{at}.version must be "git", "content" or a non-blank literal')
    version = version.strip()
    if len(version) > MAX_SOURCE_VERSION:
        raise InputError(f"{at}.version exceeds {MAX_SOURCE_VERSION} characters")
    _field(f"{at}.version", refuse_controls, version, "version")
    effective = table.get("effective_from", "today")
    if effective not in ("git", "today"):
        if not isinstance(effective, str):
            # TOML has a date type: `effective_from = 2026-07-01` without quotes.
            raise InputError(
                f'{at}.effective_from must be "git", "today" or a quoted "YYYY-MM-DD" date'
            )
        effective = _field(f"{at}.effective_from", iso_date, effective, "effective_from")
    counter = table.get("counter", "cl100k_base")
    if counter not in TEXT_COUNTERS:
        raise InputError(
            f"{at}.counter is unsupported: {counter!r}; use one of {', '.join(TEXT_COUNTERS)}"
        )
    max_tokens = _field(
        f"{at}.max_tokens",
        integer,
        table.get("max_tokens", DEFAULT_MAX_TOKENS),
        "max_tokens",
        1,
        MAX_TOKENS,
    )
    snapshot = _boolean(table.get("snapshot", False), f"{at}.snapshot")
    max_file_bytes = _field(
        f"{at}.max_file_bytes",
        integer,
        table.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES),
        "max_file_bytes",
        1,
        MAX_FILE_BYTES,
    )
    return Source(name, uri, version, effective, counter, max_tokens, snapshot, max_file_bytes)


def _parse_rule(table: Any, index: int, where: str) -> Rule:
    at = f"{where}: rule[{index}]"
    if not isinstance(table, dict):
        raise InputError(f"{at} must be a table ([[rule]])")
    _unknown(table, RULE_KEYS, at)
    _missing(table, ("match",), at)
    match = table["match"]
    if not isinstance(match, str) or not match.strip():
        raise InputError(f"{at}.match must be a non-blank glob")
    match = _field(f"{at}.match", refuse_controls, match.strip(), "match")  # named in messages
    if match.startswith("/") or "\\" in match:
        raise InputError(f"{at}.match is relative to its PATH with / separators, not {match!r}")
    try:
        compile_glob(match)  # a malformed [class] is refused here, not at the first file
    except InputError as exc:
        raise InputError(f"{at}.match: {exc}") from None
    at = f'{where}: rule[{index}] (match = "{match}")'
    skip = _boolean(table.get("skip", False), f"{at}.skip")
    if skip:
        extra = sorted(set(table) - {"match", "skip"})
        if extra:
            raise InputError(f"{at} skips its files; {extra[0]!r} would have no effect: remove it")
        return Rule(index, match, True, "", "", "", 0, False, "id", None)
    _missing(table, ("section", "trust", "required_permission", "priority"), at)
    section = table["section"]
    if section not in SECTIONS:
        raise InputError(
            f"{at}.section is unsupported: {section!r}; use one of {', '.join(SECTIONS)}"
        )
    trust = table["trust"]
    if trust not in TRUST_LABELS:
        raise InputError(
            f"{at}.trust is unsupported: {trust!r}; use one of {', '.join(TRUST_LABELS)}"
        )
    permission = _field(
        f"{at}.required_permission", identifier, table["required_permission"], "required_permission"
    )
    priority = _field(f"{at}.priority", integer, table["priority"], "priority", 0, MAX_PRIORITY)
    required = _boolean(table.get("required", False), f"{at}.required")
    dedupe = table.get("dedupe", "id")
    if dedupe not in DEDUPE_POLICIES:
        raise InputError(f'{at}.dedupe is unsupported: {dedupe!r}; use "content" or "id"')
    if required and dedupe == "content":
        # A dedupe group of two or more ids may not hold a required chunk
        # (docs/reference/records.md).
        raise InputError(
            f"{at}: required chunks cannot share a dedupe_key; "
            'use dedupe = "id" with required = true'
        )
    expires = table.get("expires_on")
    if expires is not None:
        if not isinstance(expires, str):
            raise InputError(f'{at}.expires_on must be a quoted "YYYY-MM-DD" date')
        expires = _field(f"{at}.expires_on", iso_date, expires, "expires_on")
    return Rule(
        index, match, False, section, trust, permission, priority, required, dedupe, expires
    )


# tomllib's work and memory grow with the square of a dotted key's parts (`x.x.x...`:
# 100,000 parts exhaust memory), and each part costs a table: a rules file's keys
# have at most two parts, so more than these, outside strings and comments, are refused.
_MAX_KEY_DOTS = 64  # on one line
_MAX_FILE_DOTS = 4096  # in the whole file


def _check_key_dots(text: str, where: str) -> None:
    """Refuse a dotted key deeper than `_MAX_KEY_DOTS`, or more dots than
    `_MAX_FILE_DOTS`, outside strings and comments: one pass over the text."""
    i, n, line, on_line, total = 0, len(text), 1, 0, 0
    while i < n:
        c = text[i]
        if c == "\n":
            line, on_line = line + 1, 0
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c in "\"'":
            end = _string_end(text, i)
            lines = text.count("\n", i, end)  # a multi-line string
            line, on_line = line + lines, on_line if lines == 0 else 0
            i = end
            continue
        elif c == ".":
            on_line, total = on_line + 1, total + 1
            if on_line > _MAX_KEY_DOTS or total > _MAX_FILE_DOTS:
                raise InputError(
                    f"{where}: line {line}: keys nested too deeply (more than "
                    f"{_MAX_KEY_DOTS} dotted parts on a line, or {_MAX_FILE_DOTS} in the file); "
                    "a rules file's keys have at most two parts"
                )
        i += 1


def _string_end(text: str, i: int) -> int:
    """Where the TOML string opening at `i` ends (after its closing quote; at a
    newline for an unclosed one-line string, which tomllib then refuses)."""
    q = text[i]
    close = q * 3 if text.startswith(q * 3, i) else q
    j, n = i + len(close), len(text)
    while j < n:
        if q == '"' and text[j] == "\\":
            j += 2
        elif text.startswith(close, j):
            return j + len(close)
        elif text[j] == "\n" and len(close) == 1:
            return j
        else:
            j += 1
    return n


def parse_rules(data: bytes, where: str) -> Rules:
    """Validate a rules file's bytes; `where` names it in messages (its path).

    Raises `InputError` naming the key or rule. A literal `effective_from` later
    than a rule's `expires_on` is refused here too, as the chunk record would be.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not valid UTF-8 at byte {exc.start}") from None
    _check_key_dots(text, where)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not valid TOML ({exc})") from None
    except RecursionError:  # tomllib parses nested arrays by recursion
        raise InputError(f"{where}: not valid TOML (arrays or tables nested too deeply)") from None
    _unknown(doc, TOP_KEYS, f"{where}:")
    _missing(doc, TOP_KEYS, f"{where}:")
    source = _parse_source(doc["source"], where)
    raw_rules = doc["rule"]
    if not isinstance(raw_rules, list) or not raw_rules:
        raise InputError(f"{where}: needs at least one [[rule]]")
    rules = tuple(_parse_rule(t, i, where) for i, t in enumerate(raw_rules, start=1))
    for rule in rules:
        if (
            rule.expires_on is not None
            and source.effective_from not in ("git", "today")
            and rule.expires_on <= source.effective_from
        ):
            raise InputError(f"{where}: {rule.label}.expires_on must be later than effective_from")
    return Rules(rules, source, where, hashlib.sha256(data).hexdigest())


# A glob is matched by walking its parts over the path once, keeping the set of
# parts reached (an NFA run, no backtracking): time at most (parts x 2) per
# character of the path, whatever the pattern (eight `**` cost what one does).
_LIT, _ONE, _CLASS, _STAR, _ANY, _SEGMENTS = "lit", "one", "class", "star", "any", "segments"


@dataclass(frozen=True, slots=True)
class _Part:
    """One part of a glob: a literal character, `?`, a `[class]`, `*` (within a
    segment), `**` (anything) or `**/` (any number of whole segments)."""

    kind: str
    char: str = ""
    ranges: tuple[tuple[str, str], ...] = ()
    negate: bool = False

    def takes(self, c: str) -> bool:
        """Whether this part consumes `c` and moves on (the repeating parts aside)."""
        if self.kind == _LIT:
            return c == self.char
        if self.kind == _ONE:
            return c != "/"
        if self.kind == _CLASS:
            inside = any(lo <= c <= hi for lo, hi in self.ranges)
            return c != "/" and inside != self.negate
        return False


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> tuple[_Part, ...]:
    """A glob's parts; InputError names a malformed `[class]`."""
    parts: list[_Part] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            parts.append(_Part(_SEGMENTS))
            i += 3
        elif pattern.startswith("**", i):
            parts.append(_Part(_ANY))
            i += 2
        elif pattern[i] == "*":
            parts.append(_Part(_STAR))
            i += 1
        elif pattern[i] == "?":
            parts.append(_Part(_ONE))
            i += 1
        elif pattern[i] == "[":
            part, i = _class_at(pattern, i)
            parts.append(part)
        else:
            parts.append(_Part(_LIT, pattern[i]))
            i += 1
    return tuple(parts)


def _class_at(pattern: str, i: int) -> tuple[_Part, int]:
    """The `[...]` class starting at `i`, and where the pattern goes on."""
    j = i + 1
    negate = pattern[j : j + 1] == "!"
    j += negate
    end = pattern.find("]", j + 1 if pattern[j : j + 1] == "]" else j)
    if end < 0:
        raise InputError(f"glob {pattern!r} has an unclosed [")
    body = pattern[j:end]
    if "[:" in body or "[=" in body or "[." in body:
        raise InputError(
            f"glob {pattern!r}: POSIX classes such as [:alpha:] are not supported; "
            "list the characters, e.g. [a-zA-Z]"
        )
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            lo, hi = body[k], body[k + 2]
            if lo > hi:
                raise InputError(f"glob {pattern!r}: the range {lo}-{hi} is empty; write {hi}-{lo}")
            ranges.append((lo, hi))
            k += 3
        else:
            ranges.append((body[k], body[k]))
            k += 1
    return _Part(_CLASS, ranges=tuple(ranges), negate=negate), end + 1


def _closure(parts: tuple[_Part, ...], states: set[tuple[int, bool]]) -> set[tuple[int, bool]]:
    """`states` and every state reached from them without a character: a
    repeating part (`*`, `**`, `**/`) may match nothing, from a segment's start."""
    out = set(states)
    todo = list(states)
    while todo:
        at, mid = todo.pop()
        if not mid and at < len(parts) and parts[at].kind in (_STAR, _ANY, _SEGMENTS):
            nxt = (at + 1, False)
            if nxt not in out:
                out.add(nxt)
                todo.append(nxt)
    return out


def _step(parts: tuple[_Part, ...], states: set[tuple[int, bool]], c: str) -> set[tuple[int, bool]]:
    """The states after reading `c`: (part index, inside a `**/` segment)."""
    nxt: set[tuple[int, bool]] = set()
    for at, mid in states:
        if at == len(parts):
            continue
        part = parts[at]
        if part.kind == _SEGMENTS:  # `[^/]*/`, any number of times
            nxt.add((at, c != "/"))
        elif mid:
            continue
        elif part.kind == _ANY or (part.kind == _STAR and c != "/"):
            nxt.add((at, False))
        elif part.takes(c):
            nxt.add((at + 1, False))
    return _closure(parts, nxt)


def glob_run(pattern: str, relpath: str) -> tuple[bool, int]:
    """Whether `relpath` matches, and the states visited (what the work is:
    at most twice the parts per character)."""
    parts = compile_glob(pattern)
    states = _closure(parts, {(0, False)})
    work = len(states)
    for c in relpath:
        states = _step(parts, states, c)
        work += len(states)
        if not states:
            return False, work
    return (len(parts), False) in states, work


class _GlobDfa:
    """`glob_run`'s state sets, each numbered the first time it is met, with its
    move on each character kept: a path then costs one dict look-up per
    character (the bench row "ingest --rules: 10,000 files unchanged" matches
    every rule against every path). At most MAX_SETS sets and MAX_MOVES moves
    are kept (a rules file's globs meet a few dozen sets); past them the rest
    of a path is read as `glob_run` reads it, so the work stays linear in the
    path and the memory bounded whatever the pattern."""

    MAX_SETS = 256
    MAX_MOVES = 4096

    def __init__(self, pattern: str) -> None:
        self.parts = compile_glob(pattern)
        self.sets: list[frozenset[tuple[int, bool]]] = []
        self.ids: dict[frozenset[tuple[int, bool]], int] = {}
        self.moves: list[dict[str, int]] = []
        self.accepts_all: list[bool] = []  # a final `**` reached: every rest matches
        self.kept = 0
        self.dead = self._number(frozenset())
        self.start = self._number(frozenset(_closure(self.parts, {(0, False)})))

    def _number(self, states: frozenset[tuple[int, bool]]) -> int:
        if states not in self.ids:
            self.ids[states] = len(self.sets)
            self.sets.append(states)
            self.moves.append({})
            last = len(self.parts) - 1
            self.accepts_all.append(
                last >= 0 and self.parts[last].kind == _ANY and (last, False) in states
            )
        return self.ids[states]

    def matches(self, relpath: str) -> bool:
        at = self.start
        for i, c in enumerate(relpath):
            if self.accepts_all[at]:
                return True
            nxt = self.moves[at].get(c)
            if nxt is None:
                states = _step(self.parts, set(self.sets[at]), c)
                if len(self.sets) >= self.MAX_SETS or self.kept >= self.MAX_MOVES:
                    return _matches_from(self.parts, states, relpath[i + 1 :])
                nxt = self.moves[at][c] = self._number(frozenset(states))
                self.kept += 1
            if nxt == self.dead:
                return False
            at = nxt
        return (len(self.parts), False) in self.sets[at]


def _matches_from(parts: tuple[_Part, ...], states: set[tuple[int, bool]], rest: str) -> bool:
    """Whether reading `rest` from `states` ends on the whole pattern (`glob_run`'s loop)."""
    for c in rest:
        if not states:
            return False
        states = _step(parts, states, c)
    return (len(parts), False) in states


@lru_cache(maxsize=64)
def _glob_dfa(pattern: str) -> _GlobDfa:
    return _GlobDfa(pattern)


def glob_matches(pattern: str, relpath: str) -> bool:
    """Whether `relpath` (POSIX separators, relative to its PATH) matches the glob:
    `**/` any number of whole segments, `**` anything, `*` and `?` within one
    segment, `[...]` a class of characters (`!` negates; never `/`).

    >>> glob_matches("security/**", "security/oauth2/scopes.md")
    True
    >>> glob_matches("*.md", "tutorial/cors.md")
    False
    >>> glob_matches("**/*.md", "index.md")
    True
    """
    return _glob_dfa(pattern).matches(relpath)  # glob_run's answer, held equal by a test
