"""Whole numbers given as text (PACK numbers, entry numbers, sizes, budgets): one parser.

Python's own tests are too lenient for arguments: `str.isdigit()` is true for
`²`, and `int()` takes `١٧٠`, ` 1`, `+1` and `1_000`. Here a number is ASCII
digits only, with a leading `-` where a caller allows one, and nothing else:
no space, sign, underscore or other script. Pure: no I/O.

    >>> ascii_int("170"), ascii_int("²"), ascii_int("1 "), ascii_int("-3", signed=True)
    (170, None, None, -3)
"""

from __future__ import annotations

import re

_UNSIGNED = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"-?[0-9]+")

# The largest value each backend's INTEGER column holds (SQLite: 64 bits;
# PostgreSQL's INTEGER: 32). A larger number names no row, instead of
# overflowing the driver.
BACKEND_MAX = {"sqlite": 2**63 - 1, "postgresql": 2**31 - 1}
# Stands for every number longer than int() converts (its 4,300-digit limit):
# far beyond every backend's range, and every range a caller checks.
BEYOND = 10**100
_MAX_DIGITS = 4000


def ascii_int(text: str, *, signed: bool = False) -> int | None:
    """The value of `text` when it is ASCII digits only (`-` first when `signed`),
    else None. A number of more than 4,000 digits is returned as `BEYOND` (or
    `-BEYOND`): callers compare it with a range, and int() would refuse it."""
    if (_SIGNED if signed else _UNSIGNED).fullmatch(text) is None:
        return None
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    value = BEYOND if len(digits.lstrip("0")) > _MAX_DIGITS else int(digits)
    return -value if negative else value


def backend_max(dialect: str) -> int:
    """The largest id a column of this backend holds (the smaller one if unknown)."""
    return BACKEND_MAX.get(dialect, BACKEND_MAX["postgresql"])
