"""The one table every benchmark prints: ours, baseline, ratio, target."""

from __future__ import annotations

from typing import Any


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"
    if unit in ("B", "MB", "packs/s", "chunks/s", "decisions/s"):
        return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"
    return f"{value:g} {unit}"


def print_table(rows: list[dict[str, Any]]) -> None:
    header = ("benchmark", "ours", "baseline", "ratio", "target", "ok", "peak", "note")
    body = []
    for r in rows:
        ratio = None
        if r.get("baseline") and r.get("ours"):
            # A ratio is always "how many times the baseline's cost": for rates, inverted.
            rate = str(r.get("unit", "")).endswith("/s")
            ratio = r["baseline"] / r["ours"] if rate else r["ours"] / r["baseline"]
        peak = r.get("peak_mb")
        body.append(
            (
                r["bench"],
                fmt(r.get("ours"), r["unit"]),
                fmt(r.get("baseline"), r["unit"]),
                f"{ratio:.2f}" if ratio is not None else "-",
                r.get("target", ""),
                "yes" if r.get("ok") else "NO",
                f"{peak:,.0f} MB" if peak else "-",
                r.get("note", ""),
            )
        )
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for b in body:
        print("  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)))


def run_main(doc: str | None, rows: Any) -> None:
    """The command line of a bench module: `[--quick]`, then print its rows' table."""
    import argparse

    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    print_table(rows(parser.parse_args().quick))
