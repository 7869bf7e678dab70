"""The pack report: budget, admitted chunks, evictions, every candidate, digests."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ledger.core.reasons import BUDGET, REASONS, SECTIONS, describe_hint, short_detail
from ledger.core.transcript import counted_by
from ledger.report.charts import stacked_bar
from ledger.report.page import render

_META = ("priority", "source_uri")  # what the admitted table adds to `show --json`


def _kind(section: str) -> str:
    return f"k-{section}" if section in SECTIONS else "k-other"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _in_order(names: set[str], order: tuple[str, ...]) -> list[str]:
    """`names` in the order given, then any others sorted."""
    return [n for n in order if n in names] + sorted(names - set(order))


# A budget step's displaced chunks the page's data keeps: the table shows five;
# a hint can displace thousands (`why-evicted` lists them all).
PAGE_DISPLACED = 20


def page_hint(hint: dict[str, Any]) -> dict[str, Any]:
    """A hint as the page's data holds it: a budget step keeps its first
    `PAGE_DISPLACED` displaced chunks, and `displaced_more` counts the rest."""
    steps = []
    for step in hint["steps"]:
        displaced = step.get("displaced_by") if step["kind"] == BUDGET else None
        if displaced is not None and len(displaced) > PAGE_DISPLACED:
            step = {
                **step,
                "displaced_by": displaced[:PAGE_DISPLACED],
                "displaced_more": len(displaced) - PAGE_DISPLACED,
            }
        steps.append(step)
    return {**hint, "steps": steps}


def retrieval_rows(data: dict[str, Any]) -> dict[str, Any] | None:
    """A retrieval build's record as the page shows it: what asked (the query, or
    the candidates file's digest), K, and per ranked chunk its rank, score, title
    and what the pack did with it. None for a plain build."""
    record = data.get("retrieval")
    if record is None:
        return None
    fate: dict[tuple[str, str], tuple[str, str, str | None]] = {}
    for a in data["admitted"]:
        fate[(a["id"], a["source_version"])] = ("admitted", "", a.get("title"))
    for e in data["evicted"]:
        fate[(e["id"], e["source_version"])] = ("evicted", e["reason"], e.get("title"))
    rows = []
    for r in record["ranked"]:
        status, reason, title = fate.get((r["id"], r["source_version"]), ("", "", None))
        score = "" if r.get("score") is None else f"{r['score']:.4g}"
        rows.append(dict(r, score=score, status=status, reason=reason, title=title or ""))
    return {
        "query": record["query"],
        "candidates_digest": record.get("candidates_digest"),
        "top": record["top"],
        "rows": rows,
    }


def render_pack(
    data: dict[str, Any],
    meta: dict[str, dict[str, Any]],
    hints: dict[str, dict[str, Any]],
    hint_note: dict[str, Any],
    bodies: dict[str, str] | None,
    ledger_head: Any,
) -> str:
    """Pure: `show --json` data, per-digest metadata (section, priority, required,
    source_uri), hints by record digest and what was done (`compute_hints`), the
    bodies (None: not shown) and the ledger head in; HTML out."""
    admitted, evicted = data["admitted"], data["evicted"]
    budget, used = data["budget"], data["used"]
    # The page's context, filled in as its parts are worked out.
    page: dict[str, Any] = {"pack": data, "head": ledger_head, "note": hint_note}
    unit = data["unit"]  # bytes in a transcript pack
    page["counted_by"] = counted_by(data["scope"], data["counter"])

    by_section: Counter[str] = Counter()
    count_section: Counter[str] = Counter()
    for a in admitted:
        by_section[a["section"]] += a["tokens"]
        count_section[a["section"]] += 1
    sections = _in_order(set(by_section), SECTIONS)
    free = max(budget - used, 0)
    scale = max(budget, used, 1)
    rest = (free, "k-free", f"remaining: {free} {unit}")
    page["section_bar"] = stacked_bar(
        [
            (by_section[s], _kind(s), f"{s}: {by_section[s]} {unit}, {count_section[s]} chunks")
            for s in sections
        ]
        + [rest],
        scale,
        f"Budget {budget} {unit} by section",
    )
    page["legend"] = [(_kind(s), f"{s} {by_section[s]}") for s in sections]
    page["legend"].append(("k-free", f"remaining {free}"))
    page["chunk_bar"] = stacked_bar(
        [
            (
                a["tokens"],
                _kind(a["section"]),
                f"{a['id']} @ {a['source_version']}: {a['tokens']} {unit} ({a['section']})",
            )
            for a in admitted
        ]
        + [rest],
        scale,
        f"Budget {budget} {unit} by admitted chunk",
    )
    page["section_rows"] = [
        (s, count_section[s], by_section[s], _pct(by_section[s], budget), False) for s in sections
    ]
    page["section_rows"].append(("remaining", "", free, _pct(free, budget), True))

    counts = Counter(e["reason"] for e in evicted)
    tokens_by_reason: Counter[str] = Counter()
    for e in evicted:
        tokens_by_reason[e["reason"]] += e["tokens"]
    most = max(counts.values(), default=1)
    page["reason_rows"] = [
        {
            "reason": r,
            "count": counts[r],
            "tokens": tokens_by_reason[r],
            "width": 200 * counts[r] / most,
        }
        for r in _in_order(set(counts), REASONS)
    ]
    page["reasons"] = [r for r in REASONS if r in counts]  # the filter's choices

    page["admitted"] = [
        dict(a, n=i, **{k: meta.get(a["record_digest"], {}).get(k, "") for k in _META})
        for i, a in enumerate(admitted, 1)
    ]
    candidates = page["candidates"] = []
    for i, a in enumerate(admitted, 1):
        m = meta.get(a["record_digest"], {})
        candidates.append(
            dict(
                a,
                n=i,
                status="admitted",
                reason="",
                priority=m.get("priority", ""),
                details=f"output position {i}",
                hint=None,
            )
        )
    for i, e in enumerate(evicted, len(admitted) + 1):
        m = meta.get(e["record_digest"], {})
        hint = hints.get(e["record_digest"])
        candidates.append(
            dict(
                e,
                n=i,
                status="evicted",
                section=m.get("section", ""),
                priority=m.get("priority", ""),
                details=short_detail(e["reason"], e["detail"]),
                hint=None if hint is None else describe_hint(hint),
            )
        )
    page["retrieval"] = retrieval_rows(data)
    page["bodies"] = None
    if bodies is not None:
        page["bodies"] = [dict(a, body=bodies.get(a["record_digest"], "")) for a in admitted]

    policy = data.get("policy") or {}
    page["facts"] = [
        ("pack", data["pack"], False),
        ("ledger entry", data["entry"], False),
        ("ledger mark", f"{data['ledger_mark']} (the last entry the build could see)", False),
        ("pack digest", data["pack_digest"], True),
        ("input digest", data["input_digest"], True),
        ("as of", data["as_of"], False),
        ("subject", data["subject"], False),
        ("grants", ", ".join(data.get("grants") or []) or "none", False),
        ("allowed trust", ", ".join(policy.get("allowed_trust") or []) or "none", False),
        ("policy budget", policy.get("budget"), False),
        ("budget", budget, False),
        ("counter", data["counter"], False),
        ("selector", data["selector_version"], False),
    ]
    if "scope" in data:
        page["facts"].append(("scope", data["scope"], False))

    page["data"] = {
        "kind": "pack",
        **{k: data[k] for k in ("pack", "entry", "ledger_mark", "pack_digest", "input_digest")},
        **{k: data[k] for k in ("as_of", "subject", "budget", "used", "remaining")},
        "candidates": len(admitted) + len(evicted),
        "evictions_by_reason": dict(sorted(counts.items())),
        "admitted": [
            {k: a[k] for k in ("id", "source_version", "section", "tokens")} for a in admitted
        ],
        "hints": {
            **hint_note,
            "by_record_digest": {digest: page_hint(h) for digest, h in hints.items()},
        },
        "with_content": bodies is not None,
        "retrieval": None
        if page["retrieval"] is None
        else {k: page["retrieval"][k] for k in ("query", "candidates_digest", "top")},
    }
    return render("pack.html", **page)
