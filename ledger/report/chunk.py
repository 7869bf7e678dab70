"""The chunk history report: every version on two time lines, every decision."""

from __future__ import annotations

from typing import Any

from ledger.core.reasons import short_detail
from ledger.report import charts
from ledger.report.page import render

# The stored metadata the version table shows (`ledger.store.versions.list_versions`).
_META = (
    "effective_from",
    "expires_on",
    "section",
    "trust",
    "required_permission",
    "estimated_tokens",
    "priority",
    "required",
    "source_uri",
)


def render_chunk(
    ref: str,
    histories: list[dict[str, Any]],
    packs: dict[int, dict[str, Any]],
    bodies: dict[str, str] | None,
    ledger_head: Any,
) -> str:
    """Pure: per chunk id its `why-evicted --json --hints none` answer and its
    versions' metadata (`ledger.store.versions.list_versions`), the packs (`packs --json`
    items by number), the bodies by record digest (None: not shown) and the
    ledger head in; HTML out."""
    meta = {v["record_digest"]: v for h in histories for v in h["versions"]}
    versions = [v for h in histories for v in h["why"]["versions"]]
    decisions = [(v, d) for v in versions for d in v["decisions"]]
    decisions.sort(key=lambda vd: (-vd[1]["pack"], vd[0]["id"], vd[0]["source_version"]))
    admitted_in = sorted({d["pack"] for _, d in decisions if d["admitted"]})
    evicted_in = sorted({d["pack"] for _, d in decisions if not d["admitted"]})
    ids = [h["id"] for h in histories]
    rows = []
    for v in versions:
        m = meta.get(v["record_digest"], {})
        rows.append(
            {
                **{k: m.get(k, "") for k in _META},
                **{k: v[k] for k in ("id", "source_version", "record_digest", "content_digest")},
                "entry": v.get("ingested_at_entry", m.get("batch", "")),
            }
        )
    decision_rows = [
        {
            **d,
            "id": v["id"],
            "source_version": v["source_version"],
            "status": "admitted" if d["admitted"] else "evicted",
            "entry": packs.get(d["pack"], {}).get("entry", ""),
            "details": short_detail(d["reason"], d["detail"]),
            "tokens": d.get("tokens", ""),
        }
        for v, d in decisions
    ]
    name = ", ".join(ids)
    n = len(versions)
    return render(
        "chunk.html",
        data={
            "kind": "chunk",
            "ref": ref,
            "ids": ids,
            "versions": versions,
            "metadata": [meta[v["record_digest"]] for v in versions if v["record_digest"] in meta],
        },
        head=ledger_head,
        name=name,
        admitted_in=admitted_in,
        evicted_in=evicted_in,
        figures=[
            ("versions", n),
            ("decisions", len(decisions)),
            ("admitted in packs", len(admitted_in)),
            ("evicted in packs", len(evicted_in)),
        ],
        valid=charts.valid_time(versions, meta),
        ledger=charts.ledger_time(versions, meta, packs, ledger_head.seq),
        versions=rows,
        unseen=[v for v in versions if not v["decisions"]],
        decisions=decision_rows,
        reasons=sorted({d["reason"] for _, d in decisions if d["reason"]}),
        first_id=ids[0],
        bodies=None
        if bodies is None
        else [dict(v, body=bodies.get(v["record_digest"], "")) for v in versions],
    )
