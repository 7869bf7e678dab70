"""Benchmark `ledger report` on a 10,000-candidate pack.

- Writing the report in-process (`ledger.report.pack_report`), without hints and
  with the default hint limits (200 hints, 3 s); baseline: what `show --json`
  does for the same pack (`ledger.store.packs.pack_json` and `json.dumps`).
- The file's size: target under 5 MB.
- The browser's load time: headless Chromium with no network, driven over the
  DevTools pipe (`tests/e2e/report_browser.py`): from navigation start to the
  second animation frame after the load event (parse, style, layout and first
  paint done; the load event alone can come before layout), median of 3 loads,
  each in a fresh tab; the Navigation Timing `loadEventEnd` is in the note.
  Baseline: a blank HTML file in the same browser. Target under 2 s.
- The same for a diff of two such packs (as of dates 6 months apart, budgets
  differ).

    .venv/bin/python bench/bench_report.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # for tests.e2e.report_browser
from gen import setup_ledger  # noqa: E402

AS_OF = "2026-06-15"
LATER = "2026-12-15"


def _time(fn: Any, repeat: int) -> tuple[float, Any]:
    samples, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        samples.append(time.perf_counter() - t0)
    return min(samples), out


def _load_times(paths: list[Path], runs: int = 3) -> dict[Path, tuple[float, float]]:
    """Median (shown, loadEventEnd) in seconds of each file, in one browser, a fresh
    tab each time."""
    from tests.e2e.report_browser import Chromium

    got: dict[Path, list[tuple[float, float]]] = {p: [] for p in paths}
    with Chromium() as browser:
        for _ in range(runs):
            for p in paths:
                page = browser.new_page(1280, 900)
                try:
                    load = page.load(p, settle=0)
                    shown = page.shown_at() / 1000
                    if load.errors or load.requests != [load.url]:
                        raise RuntimeError(
                            f"{p.name}: errors {load.errors}, requests {load.requests}"
                        )
                    got[p].append((shown, page.timing()["loadEventEnd"] / 1000))
                finally:
                    page.close()
    return {
        p: (statistics.median(s for s, _ in v), statistics.median(e for _, e in v))
        for p, v in got.items()
    }


def bench_report(n: int, tmp: Path, quick: bool) -> list[dict[str, Any]]:
    from ledger.report import diff_report, pack_report
    from ledger.store.build import build_pack
    from ledger.store.engine import make_engine, read_transaction
    from ledger.store.packs import pack_json

    url = f"sqlite:///{tmp / 'report.db'}"
    budget = n * 20
    setup_ledger(url, tmp / "chunks.jsonl", n, budget)
    engine = make_engine(url)
    a = build_pack(engine, AS_OF, budget=budget)
    b = build_pack(engine, LATER, budget=budget * 3 // 4)
    repeat = 1 if quick else 3
    with read_transaction(engine) as conn:
        base, _ = _time(lambda: json.dumps(pack_json(conn, a), sort_keys=True, indent=2), repeat)
        bare, html = _time(lambda: pack_report(conn, a, max_hints=0), repeat)
        t0 = time.perf_counter()
        hinted = pack_report(conn, a)
        with_hints = time.perf_counter() - t0
        diff_time, diff_html = _time(lambda: diff_report(conn, a, b), repeat)
        show = pack_json(conn, a)
    engine.dispose()
    note = json.loads(hinted.split('id="report-data">', 1)[1].split("</script>", 1)[0])["hints"]
    files = {
        "pack": tmp / "pack.html",
        "hinted": tmp / "pack-hints.html",
        "diff": tmp / "diff.html",
        "blank": tmp / "blank.html",
    }
    files["pack"].write_text(html, encoding="utf-8")
    files["hinted"].write_text(hinted, encoding="utf-8")
    files["diff"].write_text(diff_html, encoding="utf-8")
    files["blank"].write_text("<!doctype html><title>blank</title><p>blank</p>", encoding="utf-8")
    loads = _load_times(list(files.values()), runs=1 if quick else 3)
    size = files["hinted"].stat().st_size / 1e6
    diff_size = files["diff"].stat().st_size / 1e6
    candidates = len(show["admitted"]) + len(show["evicted"])
    changes = diff_html.count("</tr>")
    label = f"{candidates:,} candidates"
    return [
        {
            "bench": f"report {label}: write, no hints",
            "ours": bare,
            "baseline": base,
            "unit": "s",
            "target": "ratio <= 5",
            "ok": bare / base <= 5,
            "note": "baseline: show --json of the same pack",
        },
        {
            "bench": f"report {label}: write, default hints",
            "ours": with_hints,
            "baseline": base,
            "unit": "s",
            "target": "<= 5 s",
            "ok": with_hints <= 5,
            "note": f"{note['computed']} of {note['asked']} hints "
            f"in {note['elapsed']} s (limit {note['seconds']} s)",
        },
        {
            "bench": f"report {label}: file size",
            "ours": size,
            "baseline": None,
            "unit": "MB",
            "target": "< 5 MB",
            "ok": size < 5,
            "note": f"{len(show['evicted']):,} evictions, {len(show['admitted'])} admitted",
        },
        {
            "bench": f"report {label}: browser load",
            "ours": loads[files["hinted"]][0],
            "baseline": loads[files["blank"]][0],
            "unit": "s",
            "target": "< 2 s",
            "ok": loads[files["hinted"]][0] < 2,
            "note": "Chromium, laid out and painted; "
            f"loadEventEnd {loads[files['hinted']][1]:.2f} s",
        },
        {
            "bench": f"diff report 2 x {label}: write",
            "ours": diff_time,
            "baseline": None,
            "unit": "s",
            "target": "reported",
            "ok": True,
            "note": f"{diff_size:.1f} MB, about {changes:,} table rows",
        },
        {
            "bench": f"diff report 2 x {label}: browser load",
            "ours": loads[files["diff"]][0],
            "baseline": loads[files["blank"]][0],
            "unit": "s",
            "target": "< 2 s",
            "ok": loads[files["diff"]][0] < 2,
            "note": f"Chromium, laid out and painted; loadEventEnd {loads[files['diff']][1]:.2f} s",
        },
    ]


def rows(quick: bool) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as d:
        return bench_report(10_000, Path(d), quick)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    from table import print_table

    print_table(rows(args.quick))


if __name__ == "__main__":
    main()
