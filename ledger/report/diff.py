"""The diff report: what entered, left or changed between two packs, and why."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ledger.report.charts import stacked_bar
from ledger.report.page import render

CHANGE_KINDS = (
    "entered",
    "left",
    "changed version",
    "changed reason",
    "new candidate, not admitted",
    "no longer a candidate",
)


def change_kind(change: dict[str, Any]) -> str:
    """What happened to a chunk id between the two packs, in one phrase."""
    a, b = change["from"], change["to"]
    if b["status"] == "admitted" and a["status"] != "admitted":
        return "entered"
    if a["status"] == "admitted" and b["status"] != "admitted":
        return "left"
    if a["status"] == "absent":
        return "new candidate, not admitted"
    if b["status"] == "absent":
        return "no longer a candidate"
    if a["source_version"] != b["source_version"]:
        return "changed version"
    return "changed reason"


def render_diff(
    result: dict[str, Any], pa: dict[str, Any], pb: dict[str, Any], ledger_head: Any
) -> str:
    """Pure: `diff --json` data and the two packs' headers (pack, entry,
    ledger_mark, digests, as_of, subject, budget, used) in; HTML out."""
    changes = [dict(c, kind=change_kind(c)) for c in result["changes"]]
    kinds = Counter(c["kind"] for c in changes)
    causes = Counter(c["cause"] for c in changes)
    # Both bars on one scale, so their lengths compare.
    scale = max(pa["budget"], pb["budget"], pa["used"], pb["used"], 1)
    bars = []
    for p in (pa, pb):
        free = max(p["budget"] - p["used"], 0)
        parts = [
            (p["used"], "k-used", f"pack {p['pack']}: used {p['used']}"),
            (free, "k-free", f"pack {p['pack']}: remaining {free}"),
        ]
        label = f"Pack {p['pack']}: {p['used']} of {p['budget']} {p['unit']} used"
        bars.append(stacked_bar(parts, scale, label))
    return render(
        "diff.html",
        data={"kind": "diff", **result, "packs": {"from": pa, "to": pb}},
        head=ledger_head,
        pa=pa,
        pb=pb,
        bars=bars,
        changes=changes,
        kinds=[(k, kinds[k]) for k in CHANGE_KINDS if kinds[k]],
        causes=sorted(causes.items()),
    )
