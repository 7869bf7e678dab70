"""The geometry of the reports' SVG charts: numbers and plain-text labels only.

The markup is the templates' (`templates/charts.html`, the `bar` macro), so
every label and hover title is escaped there; this module only decides where
things go.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

WIDTH = 1000  # every chart's viewBox is 1000 units wide and scales to the page
GUTTER = 190  # the left part of a time line chart holds the version labels
ROW = 26  # one version per row


@dataclass(frozen=True, slots=True)
class Segment:
    x: float
    width: float
    cls: str
    title: str


@dataclass(frozen=True, slots=True)
class Bar:
    """One horizontal bar of `total` units split into segments."""

    label: str
    height: int
    segments: list[Segment]


def stacked_bar(
    parts: Sequence[tuple[float, str, str]], total: float, label: str, height: int = 26
) -> Bar:
    """A bar of `total` units split into (units, css class, hover title); empty
    parts are left out."""
    scale = WIDTH / total if total > 0 else 0
    x = 0.0
    segments = []
    for units, cls, title in parts:
        w = units * scale
        if w <= 0:
            continue
        segments.append(Segment(x, w, cls, title))
        x += w
    return Bar(label, height, segments)


@dataclass(frozen=True, slots=True)
class Mark:
    """A pack's decision on a version: a filled (admitted) or open (evicted) dot."""

    cx: float
    cy: float
    cls: str
    title: str


@dataclass(slots=True)
class Lane:
    """One version's row of a time line."""

    y: int
    label: str
    title: str
    span: Segment | None = None  # valid time: from effective_from to expires_on
    ingest: Mark | None = None  # ledger time: the entry that ingested it
    line_to: float | None = None  # ledger time: from the ingest to its last decision
    marks: list[Mark] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TimeLine:
    caption: str
    label: str
    height: int
    ticks: list[tuple[float, str]]
    lanes: list[Lane]
    label_x: int = GUTTER - 8  # the version labels end here


def _short(text: str, n: int = 26) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _ordinal(day: str) -> int:
    return date.fromisoformat(day).toordinal()


def _lanes(versions: list[dict[str, Any]]) -> list[Lane]:
    """A lane per version, labelled by its version (and id, when there are several)."""
    several = len({v["id"] for v in versions}) > 1
    lanes = []
    for i, v in enumerate(versions):
        full = f"{v['id']} @ {v['source_version']}"
        lanes.append(Lane(24 + i * ROW, _short(full if several else v["source_version"]), full))
    return lanes


def _mark(x: float, lane: Lane, d: dict[str, Any], v: dict[str, Any]) -> Mark:
    what = "admitted" if d["admitted"] else f"evicted ({d['reason']})"
    title = f"pack {d['pack']}, as of {d['as_of']}, {d['subject']}: {v['source_version']} {what}"
    return Mark(x, lane.y + 10, "admit" if d["admitted"] else "evict", title)


def _axis(lo: float, hi: float) -> Callable[[float], float]:
    width = WIDTH - GUTTER - 40
    return lambda t: GUTTER + (t - lo) / (hi - lo) * width


def valid_time(versions: list[dict[str, Any]], meta: dict[str, dict[str, Any]]) -> TimeLine | None:
    """Each version from its effective_from to its expires_on (open-ended: to the
    right edge), with a mark at each pack's as-of date; None without any date."""
    days = []
    for v in versions:
        m = meta.get(v["record_digest"], {})
        days += [m.get("effective_from"), m.get("expires_on")]
        days += [d["as_of"] for d in v["decisions"]]
    ords = [_ordinal(d) for d in days if d]
    if not ords:
        return None
    lo, hi = min(ords), max(ords)
    span = max(hi - lo, 30)
    lo -= span // 20 + 1
    hi += span // 10 + 1
    x = _axis(lo, hi)
    ticks = []
    for k in range(6):
        t = lo + (hi - lo) * k / 5
        ticks.append((x(t), date.fromordinal(int(t)).isoformat()))
    lanes = _lanes(versions)
    for lane, v in zip(lanes, versions, strict=True):
        m = meta.get(v["record_digest"], {})
        start = m.get("effective_from")
        if start:
            end = m.get("expires_on")
            x0 = x(_ordinal(start))
            x1 = x(_ordinal(end)) if end else x(hi)
            title = f"{v['source_version']}: valid from {start}" + (
                f" until {end} (exclusive)" if end else ", open-ended"
            )
            lane.span = Segment(x0, max(x1 - x0, 1), "valid" if end else "open", title)
        lane.marks = [_mark(x(_ordinal(d["as_of"])), lane, d, v) for d in v["decisions"]]
    return TimeLine(
        "Valid time (dates)",
        "Valid time of each version, and the packs that considered it",
        24 + ROW * len(versions) + 6,
        ticks,
        lanes,
    )


def ledger_time(
    versions: list[dict[str, Any]],
    meta: dict[str, dict[str, Any]],
    packs: dict[int, dict[str, Any]],
    head_seq: int,
) -> TimeLine | None:
    """Each version at the entry that ingested it, a mark at the entry of each pack
    that decided on it; None for an empty ledger."""
    if head_seq < 1:
        return None
    x = _axis(0.5, head_seq + 0.5)
    step = max(1, round(head_seq / 8))
    ticks = [(x(t), f"entry {t}") for t in sorted(set(range(1, head_seq + 1, step)) | {head_seq})]
    lanes = _lanes(versions)
    for lane, v in zip(lanes, versions, strict=True):
        seq = v.get("ingested_at_entry") or meta.get(v["record_digest"], {}).get("batch")
        if seq:
            title = f"{v['source_version']}: ingested at entry {seq}"
            lane.ingest = Mark(x(seq), lane.y + 10, "ingest", title)
            last = max([packs.get(d["pack"], {}).get("entry", seq) for d in v["decisions"]] + [seq])
            lane.line_to = x(last)
        for d in v["decisions"]:
            entry = packs.get(d["pack"], {}).get("entry")
            if entry:
                lane.marks.append(_mark(x(entry), lane, d, v))
    return TimeLine(
        "Ledger time (entries)",
        "Ledger time: the entry that ingested each version and the packs that decided on it",
        24 + ROW * len(versions) + 6,
        ticks,
        lanes,
    )
