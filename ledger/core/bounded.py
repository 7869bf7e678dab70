"""A command's JSON made to fit a model's context (the MCP tools' replies).

Pure: a JSON value in, a smaller JSON value out. Two cuts, in this order
(docs/guides/mcp.md, "Replies fit a model's context"):

1. Every list inside an item of the reply's own lists (a match's hint steps, a
   step's `displaced_by`, a pack's retrieval ranking ...) keeps its first
   `LIST_ITEMS` and says how many it left out beside it: `"displaced_by": [...10],
   "displaced_by_omitted": 140`.
2. While the whole reply, as the JSON text a client reads, is over `max_chars`, the longest of
   the reply's own lists (`matches`, `evicted`, `changes` ...) loses its last
   item; the reply then says what was left out: `"truncated": {"max_chars":
   16000, "omitted": {"evicted": 3012}}`.

Order is kept: what is kept is always a list's first items, so the best matches,
the first steps and the highest-ranked chunks stay.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["LIST_ITEMS", "MAX_CHARS", "bound", "size_of"]

LIST_ITEMS = 10  # items kept of a list inside an item
MAX_CHARS = 16_000  # a reply's size, as compact JSON, unless the client asks for more


def size_of(value: Any) -> int:
    """The characters of `value` as the JSON text an MCP client reads (two-space
    indent, characters unescaped: what the SDK sends)."""
    return len(json.dumps(value, ensure_ascii=False, indent=2))


def bound(reply: Mapping[str, Any], max_chars: int = MAX_CHARS) -> dict[str, Any]:
    """`reply` cut as the module says; `max_chars` 0 keeps every top-level item
    (the lists inside items are still cut)."""
    out = {key: _cut_top(value) for key, value in reply.items()}
    if max_chars and size_of(out) > max_chars:
        out = _fit(out, max_chars)
    return out


def _cut_top(value: Any) -> Any:
    """A reply's own value: a list keeps every item (each one cut), anything
    else is cut as an item is."""
    if isinstance(value, list):
        return [_cut_item(item) for item in value]
    return _cut_item(value)


def _cut_item(item: Any) -> Any:
    """One item of a top-level list: its lists, at any depth, cut."""
    if isinstance(item, list):
        return [_cut_item(x) for x in item[:LIST_ITEMS]]
    if not isinstance(item, Mapping):
        return item
    out: dict[str, Any] = {}
    for key, value in item.items():
        if isinstance(value, list) and len(value) > LIST_ITEMS:
            out[key] = [_cut_item(x) for x in value[:LIST_ITEMS]]
            out[f"{key}_omitted"] = len(value) - LIST_ITEMS
        else:
            out[key] = _cut_item(value)
    return out


def _nested_size(item: Any) -> int:
    text = json.dumps(item, ensure_ascii=False, indent=2)
    return len(text) + 4 * (text.count("\n") + 1) + 2


def _fit(reply: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """Drop the last items of the reply's longest top-level lists until it fits."""
    lists = {key: value for key, value in reply.items() if isinstance(value, list) and value}
    kept = {key: len(value) for key, value in lists.items()}
    # Each item's share of the size: its JSON, indented one level deeper, and a
    # comma and newline (an estimate: the loop below checks the whole).
    sizes = {key: [_nested_size(item) for item in value] for key, value in lists.items()}
    marker = {"max_chars": max_chars, "omitted": {key: 0 for key in lists}}
    total = size_of({**reply, "truncated": marker}) + len(lists) * 8  # room for the counts
    share = {key: sum(sizes[key]) for key in lists}  # what each list's kept items take
    while total > max_chars and any(kept.values()):
        key = max(share, key=lambda k: (share[k], k))  # the longest list gives first
        kept[key] -= 1
        share[key] -= sizes[key][kept[key]]
        total -= sizes[key][kept[key]]
    while True:
        out = dict(reply)
        for key, n in kept.items():
            out[key] = lists[key][:n]
        omitted = {key: len(lists[key]) - n for key, n in kept.items() if n < len(lists[key])}
        out["truncated"] = {"max_chars": max_chars, "omitted": omitted}
        if size_of(out) <= max_chars or not any(kept.values()):
            return out
        key = max(kept, key=lambda k: (kept[k], k))  # the estimate was short: one more
        kept[key] -= 1
