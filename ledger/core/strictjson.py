"""Strict JSON parsing for everything that reads JSON. Pure: no I/O.

`json.loads` accepts things a ledger must not: duplicate object keys (the last one
silently wins), `NaN` and `Infinity`, lone surrogates, a byte-order mark, numbers
too large to convert, and nesting deep enough to exhaust the C stack. `loads_strict`
refuses all of them with one line that says what and where.

Speed matters (ingest of 100,000 records): the duplicate-key check is one `dict`
length comparison per object, the depth precheck runs only when the text holds more
than `MAX_DEPTH` brackets and then works on whole byte strings in C, and the
surrogate walk runs only when the text holds a surrogate escape.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from itertools import accumulate
from typing import Any

from ledger.core.errors import InputError

MAX_DEPTH = 512
_BOM = b"\xef\xbb\xbf"
# Surrogate escapes (\ud800-\udfff); a match only means "walk the result".
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# Bytes that are neither brackets nor quotes, deleted before the depth computation.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
# Openers count +1, closers -1 (as signed bytes).
_DEPTH_STEP = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")


class StrictJSONError(InputError):
    """JSON text that the ledger refuses; the message is one line.

    `line` and `column` (1-based) are set when the position is known.
    """

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line = line
        self.column = column


def position(text: str | bytes, offset: int) -> tuple[int, int]:
    """The 1-based (line, column) of `offset` in `text` (characters, or bytes for bytes).

    >>> position("ab\\ncd", 4)
    (2, 2)
    """
    newline: Any = b"\n" if isinstance(text, bytes) else "\n"
    line = text.count(newline, 0, offset) + 1
    column = offset - (text.rfind(newline, 0, offset) + 1) + 1
    return line, column


def describe_position(text: str | bytes, offset: int) -> str:
    """`line L, column C` for messages."""
    line, column = position(text, offset)
    return f"line {line}, column {column}"


def _fail(
    message: str, source: str | None, line: int | None = None, column: int | None = None
) -> StrictJSONError:
    prefix = f"{source}: " if source else ""
    return StrictJSONError(prefix + message, line=line, column=column)


def _fail_at(data: str | bytes, offset: int, source: str | None, message: str) -> StrictJSONError:
    """`_fail` at the line and column of `offset` in `data` (`message` may say
    `{line}` and `{column}`)."""
    line, column = position(data, offset)
    return _fail(message.format(line=line, column=column), source, line, column)


class DuplicateKeyError(StrictJSONError):
    """An object that repeats a key; `value` is the key."""

    def __init__(self, key: str):
        super().__init__(f"duplicate JSON key: {key!r}")
        self.value = key


class NonFiniteError(StrictJSONError):
    """`NaN`, `Infinity` or a number that overflows to it; `value` is its text."""

    def __init__(self, text: str):
        super().__init__(f"non-finite JSON number: {text}")
        self.value = text


def _object_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return result


def _parse_constant(name: str) -> Any:
    raise NonFiniteError(name)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        # 1e999 overflows to infinity: just as non-finite as `Infinity`.
        raise NonFiniteError(text)
    return value


# The strict decoder: duplicate keys and non-finite numbers raise the errors above.
# Every strict parse of the ledger (records, sidecars, exports) goes through it.
DECODER = json.JSONDecoder(
    object_pairs_hook=_object_hook,
    parse_constant=_parse_constant,
    parse_float=_parse_float,
)


def max_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON `data`, strings ignored.

    Works on whole byte strings (C speed), never recursively. On invalid JSON the
    result may be wrong, but the parse that follows reports the syntax error.
    """
    if b'\\"' in data:
        # Drop escaped backslashes, then escaped quotes: every quote left delimits
        # a string. (Without any backslash-quote, every quote already does.)
        if b"\\\\" in data:
            data = data.replace(b"\\\\", b"")
        data = data.replace(b'\\"', b"")
    # Keep quotes and brackets only. A run of adjacent quotes has no bracket
    # between its members, so dropping pairs keeps every bracket's parity (inside or
    # outside a string); one pass leaves at most one quote per run, and strings
    # without brackets vanish. Then the even pieces of a split on quotes are the
    # brackets outside strings.
    skeleton = data.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    outside = b"".join(skeleton.split(b'"')[::2]) if b'"' in skeleton else skeleton
    steps = outside.translate(_DEPTH_STEP)
    if not steps:
        return 0
    return max(accumulate(array("b", steps)))


def _check_strings(value: Any) -> None:
    """Refuse lone surrogates in any string or key (json decodes `\\ud800` to one)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            strings: Any = (item,)
        elif isinstance(item, dict):
            strings = item.keys()
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
            continue
        else:
            continue
        for text in strings:
            if not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError as exc:
                    code = ord(text[exc.start])
                    # Not the string itself: it may be a chunk body, which
                    # messages never show.
                    raise StrictJSONError(
                        f"lone surrogate \\u{code:04x} at character {exc.start + 1} "
                        f"of a JSON string of {len(text)} characters"
                    ) from None


def loads_strict(data: bytes | str, *, source: str | None = None) -> Any:
    """Parse JSON text strictly; raise `StrictJSONError` (one line) on anything doubtful.

    `source` (a file name) prefixes the messages. Floats are returned as `float`;
    validators refuse them where an integer belongs.

    >>> loads_strict(b'{"a": [1, 2.5, null]}')
    {'a': [1, 2.5, None]}
    >>> loads_strict('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    ledger.core.strictjson.StrictJSONError: duplicate JSON key: 'a'
    """
    raw, text = _bytes_and_text(data, source)
    if not text or text.isspace():
        raise _fail("empty JSON text", source)
    # Nesting cannot be deeper than the number of bytes or of openers: the common,
    # cheap cases.
    if (
        len(raw) > MAX_DEPTH
        and raw.count(b"[") + raw.count(b"{") > MAX_DEPTH
        and max_depth(raw) > MAX_DEPTH
    ):
        raise _fail(f"JSON nesting deeper than {MAX_DEPTH} levels", source)
    value = _parse(text, source)
    if b"\\u" in raw and _SURROGATE_ESCAPE.search(raw):
        try:
            _check_strings(value)
        except StrictJSONError as exc:
            if source:
                raise _fail(str(exc), source) from None
            raise
    return value


def _bytes_and_text(data: bytes | str, source: str | None) -> tuple[bytes, str]:
    """`data` as UTF-8 bytes and as text; refused: a byte-order mark, a lone
    surrogate (text), invalid UTF-8 (bytes), anything else than bytes or text."""
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            raise _fail("UTF-8 byte-order mark is not allowed", source, 1, 1)
        try:
            return data.encode("utf-8"), data
        except UnicodeEncodeError as exc:
            message = "lone surrogate in JSON text at line {line}, column {column}"
            raise _fail_at(data, exc.start, source, message) from None
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"loads_strict needs bytes or str, not {type(data).__name__}")
    raw = bytes(data)
    if raw.startswith(_BOM):
        raise _fail("UTF-8 byte-order mark is not allowed", source, 1, 1)
    try:
        return raw, raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"invalid UTF-8 at byte {exc.start} (line {{line}}, column {{column}})"
        raise _fail_at(raw, exc.start, source, message) from None


def _parse(text: str, source: str | None) -> Any:
    """The value of JSON `text` by the strict decoder; its refusals as one line."""
    try:
        return DECODER.decode(text)
    except StrictJSONError as exc:
        if source:
            raise _fail(str(exc), source) from None
        raise
    except json.JSONDecodeError as exc:
        raise _fail(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            source,
            exc.lineno,
            exc.colno,
        ) from None
    except ValueError as exc:
        # int() refuses more than 4300 digits (CVE-2020-10735 limit).
        if "digits" in str(exc):
            raise _fail("JSON integer has more than 4300 digits", source) from None
        raise
    except RecursionError:
        # Only reachable when the caller's own stack is already deep.
        raise _fail("JSON nesting too deep for this stack", source) from None


def loads_object(
    raw: bytes, where: str, shape: str, allowed: frozenset[str], required: frozenset[str]
) -> dict[str, Any]:
    """One line of a JSON Lines input as an object with only `allowed` keys and all
    `required` ones, else an `InputError` `where: ...`; `shape` says what is expected
    ("an object with subject and as_of")."""
    try:
        obj = loads_strict(raw)
    except StrictJSONError as exc:
        raise InputError(f"{where}: {exc}") from None
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected {shape}")
    extra = set(obj) - allowed
    missing = required - set(obj)
    if extra or missing:
        raise InputError(
            f"{where}: invalid fields: missing {sorted(missing)}, unknown {sorted(extra)}"
        )
    return obj
