"""Canonical JSON (RFC 8785) and SHA-256 digests. Pure: no I/O.

The values the ledger hashes hold only strings, integers, booleans, null, lists
and objects, never floats, so RFC 8785 reduces to: object members sorted by their
keys' UTF-16 code units, no insignificant white space, UTF-8 output, and the
ECMAScript string escapes (which `json.dumps(ensure_ascii=False)` produces for the
control characters; lone surrogates are refused before anything is hashed).
Integers are kept within the IEEE-754 safe range, as RFC 8785 requires.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from types import MappingProxyType
from typing import Any

MAX_SAFE_INT = 2**53 - 1
# `json.dumps(ensure_ascii=False)`'s string escapes, called directly (in C):
# RFC 8785's for a string.
encode_string = encode_basestring


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(encode_string(value))
    elif isinstance(value, int):
        if not -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
            raise ValueError(f"integer {value} is outside the RFC 8785 safe range")
        out.append(str(value))
    elif isinstance(value, (dict, Mapping)):  # read-only mappings (eviction details) too
        out.append("{")
        first = True
        keys = list(value)
        for key in keys:  # before sorting: the sort key needs strings
            if not isinstance(key, str):
                raise TypeError(f"object key {key!r} is not a string")
        # ASCII keys (all the ledger's own): code-point order is UTF-16 order.
        keys.sort(key=None if "".join(keys).isascii() else _utf16_key)
        for key in keys:
            if not first:
                out.append(",")
            first = False
            out.append(encode_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"cannot canonicalize {type(value).__name__} (floats are not hashed)")


def canonical_json(value: Any) -> str:
    """Return the RFC 8785 canonical JSON text of `value`.

    >>> canonical_json({"b": 1, "a": [True, None, "é"]})
    '{"a":[true,null,"é"],"b":1}'
    """
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def canonical_bytes(value: Any) -> bytes:
    """The UTF-8 bytes of `canonical_json(value)`."""
    return canonical_json(value).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of `data`."""
    return hashlib.sha256(data).hexdigest()


def digest_value(value: Any) -> str:
    """SHA-256 of a value's canonical JSON: the record, input and pack digests."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def content_digest(content: str) -> str:
    """SHA-256 of the content's UTF-8 bytes, exactly as stored."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def digest_trusted(value: Any) -> str:
    """`digest_value` for large values that the ledger builds itself.

    Only for values whose object keys are ASCII and which hold no floats (pack
    manifests, decision lists): for those, `json.dumps` with sorted keys is
    byte-identical to RFC 8785 and runs in C. A test checks the equality.
    """
    return hashlib.sha256(trusted_json(value).encode("utf-8")).hexdigest()


def trusted_json(value: Any) -> str:
    """The canonical JSON text of a value as `digest_trusted` takes them (in C)."""
    if _C_TRUSTED is None:  # a Python without json's C accelerator
        return _TRUSTED.encode(value)
    # `_TRUSTED.encode` without its per-call set-up (a new C encoder each time),
    # which costs more than encoding a small object (a pack's eviction details).
    return "".join(_C_TRUSTED(value, 0))


def plain_strings(values: Sequence[Any]) -> bool:
    """Whether every value is a string of ASCII letters and digits only (record
    digests), which JSON writes as it is between quotes; checked in C, with no
    call per value."""
    try:
        text = "".join(values)
    except TypeError:  # not all strings
        return False
    return text.isascii() and text.encode("ascii").isalnum()


def strings_json(values: list[Any]) -> str:
    """`trusted_json(values)` of a list of strings (a pack's sorted candidate
    digests), joined directly when they are `plain_strings`: the same text."""
    if plain_strings(values):
        return '["' + '","'.join(values) + '"]'
    return trusted_json(values)


def _mapping(value: Any) -> Any:
    # Read-only mappings (the selector's eviction details) serialize as objects.
    # Checked by exact type first: a pack digest meets one per distinct detail,
    # and the abstract-class check costs more than the copy.
    if type(value) is MappingProxyType or isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"cannot canonicalize {type(value).__name__}")


# One encoder, built once: `json.dumps` with options builds a new one per call.
_TRUSTED = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_mapping
)


# `_TRUSTED`'s C encoder, made once; no check for cycles: the values are trees.
_C_TRUSTED = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, _mapping, encode_basestring, None, ":", ",", True, False, True)
)


def with_set(out: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """`out` plus each optional member that is set: a JSON shape whose optional
    keys are absent, never null, when the value is None."""
    out.update({key: value for key, value in optional.items() if value is not None})
    return out
