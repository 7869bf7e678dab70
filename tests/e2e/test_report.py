"""`ledger report`: self-contained HTML of a pack, a diff and a chunk's history.

One ledger is built through the CLI and only read by the tests:

    entry 1  ingest the seed-001 fixture
          2  ingest html-note "v1<b>" (content `<script>document.title='pwned'</script>`,
             a source_uri holding `"><script>...`), 5 tokens, priority 100
          3  grant default the fixture's permissions
          4  policy: the fixture's trust labels, budget 170
          5  pack 1  as of 2026-07-21
          6  ingest refund-faq 2026-08, carrier-delays and html-note version
             `</script><script>document.title='sv-pwned'</script>` (content an
             `<img onerror>`), effective 2026-08-01
          7  policy: budget 200
          8  pack 2  as of 2026-09-02

The reports are parsed with the standard library's `html.parser` and every
figure is checked against `show --json`, `diff --json` and `why-evicted --json`
(the user-visible answers).

Then each report is opened in Debian's headless Chromium, started with no
network (a dead proxy, every host name unresolvable, background networking,
component updates, sync and QUIC off, a fresh profile). It is driven over the
DevTools protocol on `--remote-debugging-pipe`: commands and events are
NUL-separated JSON on file descriptors 3 and 4, so the standard library's
`os.pipe` is the whole client (no port, no HTTP upgrade, no websocket framing;
`--enable-logging=stderr` would show console errors but not every request, and
its format is not a contract). `Network.requestWillBeSent` reports every request
before the dead network fails it, so "the only request was the file itself" is
a real check; console errors, uncaught exceptions and CSP violations arrive as
events too. A negative control shows the harness does catch a blocked script,
a script error and a request leaving the file. A report must load with none of
them, its own script must run (its hash is in the policy), and the
script-bearing chunk must not (the document title stays the report's). The
same harness checks phone width, dark and print media, JS off, sorting and
filtering, and takes screenshots (`Page.captureScreenshot`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import stat
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from ledger.report.pack import PAGE_DISPLACED, page_hint
from tests.conftest import chunk, ledger_json, run_ledger, write_jsonl
from tests.dbtools import copy_ledger, new_ledger
from tests.e2e.report_browser import Chromium
from tests.seeded import seed_ledger

ROOT = Path(__file__).resolve().parents[2]
PWN = "<script>document.title='pwned'</script>"
HTML_V1 = chunk(
    id="html-note",
    source_version="v1<b>",
    source_uri="doc://evil/\"><script>document.title='uri-pwned'</script>",
    effective_from="2026-01-01",
    estimated_tokens=5,
    priority=100,
    dedupe_key="html-note",
    content=PWN,
)
HTML_V2 = chunk(
    id="html-note",
    source_version="</script><script>document.title='sv-pwned'</script>",
    source_uri="doc://evil/v2",
    effective_from="2026-08-01",
    estimated_tokens=6,
    priority=100,
    dedupe_key="html-note",
    content="<img src=x onerror=\"document.title='img-pwned'\"> & <!-- not a comment -->",
)
UPDATE = ROOT / "fixtures" / "demo-update.jsonl"
REASONS = (
    "permission_denied",
    "trust_denied",
    "not_yet_effective",
    "expired",
    "superseded",
    "duplicate",
    "budget",
)


# --------------------------------------------------------------------------
# A small DOM from the standard library's HTML parser
# --------------------------------------------------------------------------

VOID = {
    "meta",
    "link",
    "br",
    "hr",
    "img",
    "input",
    "source",
    "wbr",
    "col",
    "area",
    "base",
    "embed",
    "param",
    "track",
}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None) -> None:
        self.tag = tag
        self.attrs = attrs
        self.parent = parent
        self.children: list[Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> Any:
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def find_all(self, tag: str) -> list[Node]:
        return [n for n in self.iter() if n.tag == tag]

    def by_id(self, ident: str) -> Node:
        found = [n for n in self.iter() if n.attrs.get("id") == ident]
        assert len(found) == 1, f"{len(found)} elements with id {ident!r}"
        return found[0]


class TreeBuilder(HTMLParser):
    """Builds a `Node` tree; also records every start tag and attribute seen."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.cur = self.root
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.cur)
        self.tags.append((tag, dict(attrs)))
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.cur.children.append(Node(tag, dict(attrs), self.cur))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.cur
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"stray </{tag}>"
        self.cur = node.parent

    def handle_data(self, data: str) -> None:
        self.cur.children.append(data)


class Report:
    """A parsed report: its tree, tables, figures and JSON data."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.raw = path.read_text(encoding="utf-8")
        builder = TreeBuilder()
        builder.feed(self.raw)
        builder.close()
        self.doc = builder.root
        self.tags = builder.tags
        self.data = json.loads(self.doc.by_id("report-data").text())

    @property
    def title(self) -> str:
        return self.doc.find_all("title")[0].text()

    def table(self, ident: str) -> list[dict[str, str]]:
        """The rows of a table (of all its <tbody> blocks), keyed by each heading's
        data-key, cell text stripped."""
        table = self.doc.by_id(ident)
        keys = [th.attrs["data-key"] for th in table.find_all("thead")[0].find_all("th")]
        rows = []
        for tr in (tr for body in table.find_all("tbody") for tr in body.find_all("tr")):
            cells = [td.text().strip() for td in tr.find_all("td")]
            assert len(cells) == len(keys), cells
            rows.append(dict(zip(keys, cells, strict=True)))
        return rows

    def figures(self) -> dict[str, str]:
        fig = [n for n in self.doc.find_all("dl") if "figures" in (n.attrs.get("class") or "")][0]
        return {d.find_all("dt")[0].text(): d.find_all("dd")[0].text() for d in fig.find_all("div")}

    def facts(self) -> dict[str, str]:
        out = {}
        for dl in self.doc.find_all("dl"):
            if "facts" not in (dl.attrs.get("class") or ""):
                continue
            dts, dds = dl.find_all("dt"), dl.find_all("dd")
            out.update({dt.text(): dd.text() for dt, dd in zip(dts, dds, strict=True)})
        return out

    def visible_text(self) -> str:
        """Text outside <script>, <style> and <title>."""
        parts: list[str] = []

        def walk(n: Node) -> None:
            if n.tag in ("script", "style", "title"):
                return
            for c in n.children:
                parts.append(c) if isinstance(c, str) else walk(c)

        walk(self.doc)
        return "".join(parts)


# --------------------------------------------------------------------------
# The ledger and its reports
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    db = new_ledger(folder)

    def ok(*args: str) -> None:
        run_ledger(*args, db=db, check=True)

    html1 = write_jsonl(folder / "html1.jsonl", [HTML_V1])
    # 1 ingest, 2 ingest html1, 3 grant, 4 policy, 5 pack 1 (as of 2026-07-21)
    seed_ledger(db, also_ingest=[[str(html1)]])
    update = [json.loads(line) for line in UPDATE.read_text(encoding="utf-8").splitlines()] + [
        HTML_V2
    ]
    ok("ingest", str(write_jsonl(folder / "update.jsonl", update)))  # 6
    ok("policy", "set", "--budget", "200")  # 7
    ok("build", "--as-of", "2026-09-02")  # 8: pack 2
    assert run_ledger("head", db=db, check=True).stdout.startswith("8:")
    return db


def report(db: Path, out: Path, *args: str) -> Report:
    proc = run_ledger("report", *args, "-o", str(out), db=db)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.strip() == f"wrote {out.resolve()}"
    return Report(out)


@pytest.fixture(scope="module")
def reports(history: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Report]:
    out = tmp_path_factory.mktemp("reports")
    return {
        "pack1": report(history, out / "pack1.html", "1", "--with-content"),
        "pack2": report(history, out / "pack2.html", "2"),
        "diff": report(history, out / "diff.html", "--diff", "1", "2"),
        "chunk": report(history, out / "chunk.html", "--chunk", "html-note", "--with-content"),
        "faq": report(history, out / "faq.html", "--chunk", "refund-faq"),
    }


# --------------------------------------------------------------------------
# Pack
# --------------------------------------------------------------------------


@pytest.mark.parametrize("pack", [1, 2])
def test_pack_report_figures_match_show(
    history: Path, reports: dict[str, Report], pack: int
) -> None:
    rep = reports[f"pack{pack}"]
    show = ledger_json("show", str(pack), db=history)
    figures = rep.figures()
    assert (int(figures["budget"]), int(figures["used"]), int(figures["remaining"])) == (
        show["budget"],
        show["used"],
        show["remaining"],
    )
    assert int(figures["admitted"]) == len(show["admitted"])
    assert int(figures["evicted"]) == len(show["evicted"])
    assert {
        k: rep.data[k] for k in ("pack", "entry", "pack_digest", "input_digest", "budget", "used")
    } == {k: show[k] for k in ("pack", "entry", "pack_digest", "input_digest", "budget", "used")}
    facts = rep.facts()
    assert facts["pack digest"] == show["pack_digest"]
    assert facts["input digest"] == show["input_digest"]
    assert facts["ledger entry"] == str(show["entry"])
    # The admitted table is the output order, with full digests.
    admitted = rep.table("admitted-table")
    assert [
        (r["id"], r["version"], int(r["tokens"]), r["record"], r["content"]) for r in admitted
    ] == [
        (a["id"], a["source_version"], a["tokens"], a["record_digest"], a["content_digest"])
        for a in show["admitted"]
    ]
    # The section split adds up to what was used.
    sections = {r["section"]: int(r["tokens"]) for r in rep.table("sections")}
    assert sections.pop("remaining") == show["remaining"]
    assert sum(sections.values()) == show["used"]


@pytest.mark.parametrize("pack", [1, 2])
def test_every_candidate_row_with_status_and_reason(
    history: Path, reports: dict[str, Report], pack: int
) -> None:
    rep = reports[f"pack{pack}"]
    show = ledger_json("show", str(pack), db=history)
    rows = rep.table("candidate-table")
    got = [(r["status"], r["reason"], r["id"], r["version"], int(r["tokens"])) for r in rows]
    want = [("admitted", "", a["id"], a["source_version"], a["tokens"]) for a in show["admitted"]]
    want += [
        ("evicted", e["reason"], e["id"], e["source_version"], e["tokens"]) for e in show["evicted"]
    ]
    assert got == want
    assert [int(r["n"]) for r in rows] == list(range(1, len(want) + 1))
    for r, e in zip(rows[len(show["admitted"]) :], show["evicted"], strict=True):
        assert r["record"] == e["record_digest"][:16]
    # Evictions by reason: counts and tokens, in gate order.
    counts: dict[str, list[int]] = {}
    for e in show["evicted"]:
        counts.setdefault(e["reason"], [0, 0])
        counts[e["reason"]][0] += 1
        counts[e["reason"]][1] += e["tokens"]
    table = rep.table("reasons")
    assert [r["reason"] for r in table] == [r for r in REASONS if r in counts]
    assert {r["reason"]: [int(r["count"]), int(r["tokens"])] for r in table} == counts
    assert rep.data["evictions_by_reason"] == {k: v[0] for k, v in counts.items()}


def test_pack_two_shows_every_gate_it_used(reports: dict[str, Report]) -> None:
    """Pack 2 by hand: html-note's new version supersedes "v1<b>"; budget 200 -
    required 80 - html-note 6 - future 46 - current-refund-policy 48 = 20 left,
    so carrier-delays (22), refund-faq 2026-08 (36) and shipping-note (24) are out."""
    rows = {(r["id"], r["version"]): r for r in reports["pack2"].table("candidate-table")}
    assert rows[("html-note", "v1<b>")]["reason"] == "superseded"
    assert rows[("html-note", HTML_V2["source_version"])]["status"] == "admitted"
    for cid, version, needed in (
        ("carrier-delays", "2026-08-15", 22),
        ("refund-faq", "2026-08", 36),
        ("shipping-note", "2026-06", 24),
    ):
        assert rows[(cid, version)]["reason"] == "budget"
        assert rows[(cid, version)]["details"] == f"needed {needed}, remaining 20"


def test_hints_match_why_evicted(history: Path, reports: dict[str, Report]) -> None:
    """Every eviction of a small pack gets the hint `why-evicted --pack N` computes."""
    for pack in (1, 2):
        rep = reports[f"pack{pack}"]
        show = ledger_json("show", str(pack), db=history)
        hints = rep.data["hints"]
        assert (hints["evictions"], hints["computed"], hints["stopped"]) == (
            len(show["evicted"]),
        ) * 2 + (None,)
        for e in show["evicted"]:
            why = ledger_json("why-evicted", e["record_digest"], "--pack", str(pack), db=history)
            assert hints["by_record_digest"][e["record_digest"]] == page_hint(
                why["versions"][0]["decisions"][0]["would_admit"]
            )
        rows = [r for r in rep.table("candidate-table") if r["status"] == "evicted"]
        assert all(r["hint"] and r["hint"] != "not computed" for r in rows)
        assert f"Computed for all {len(show['evicted'])} evictions" in rep.visible_text()
    shipping = next(
        r for r in reports["pack1"].table("candidate-table") if r["id"] == "shipping-note"
    )
    # 167 used of 170: shipping-note needs 24, 3 remain, so 21 more.
    assert shipping["hint"].startswith("raise the budget by 21 to 191")


def test_a_retrieval_pack_report_shows_the_query_k_ranks_scores_and_titles(
    history: Path, tmp_path: Path
) -> None:
    db = copy_ledger(history, tmp_path / "copy.db")
    built = ledger_json("build", "--as-of", "2026-09-02", "--query", "refund", "--top", "3", db=db)
    show = ledger_json("show", str(built["pack"]), db=db)
    rep = report(db, tmp_path / "retrieval.html", str(built["pack"]))
    lede = rep.visible_text()
    assert "Evidence retrieved by the query \u201crefund\u201d, top 3." in lede
    ranked = rep.table("ranked-table")
    assert [(r["rank"], r["id"], r["version"]) for r in ranked] == [
        (str(r["rank"]), r["id"], r["source_version"]) for r in show["retrieval"]["ranked"]
    ]
    assert ranked and all(float(r["score"]) > 0 for r in ranked)
    fate = {(a["id"], a["source_version"]): "admitted" for a in show["admitted"]}
    fate.update({(e["id"], e["source_version"]): "evicted" for e in show["evicted"]})
    assert [r["status"] for r in ranked] == [fate[(r["id"], r["version"])] for r in ranked]
    assert rep.data["retrieval"] == {"query": "refund", "candidates_digest": None, "top": 3}
    plain = report(history, tmp_path / "plain.html", "1")
    assert plain.data["retrieval"] is None and "ranked-table" not in plain.raw


def test_page_data_keeps_the_first_displaced_chunks_and_counts_the_rest() -> None:
    refs = [{"id": f"c{i}", "source_version": "1"} for i in range(PAGE_DISPLACED + 7)]
    grant = {"kind": "grant", "permission": "p"}
    budget = {"kind": "budget", "budget": 90, "extra": 40, "displaced_by": refs}
    hint = {"target": {"id": "t"}, "steps": [grant, budget], "admits": True}
    kept = page_hint(hint)
    assert kept["steps"] == [
        grant,
        {**budget, "displaced_by": refs[:PAGE_DISPLACED], "displaced_more": 7},
    ]
    assert kept["target"] == hint["target"] and kept["admits"]
    assert budget["displaced_by"] == refs  # the hint itself is left whole
    short = {**hint, "steps": [{**budget, "displaced_by": refs[:PAGE_DISPLACED]}]}
    assert page_hint(short) == short


def test_hint_count_limit_is_said_on_the_page(history: Path, tmp_path: Path) -> None:
    rep = report(history, tmp_path / "p.html", "2", "--max-hints", "2")
    rows = [r for r in rep.table("candidate-table") if r["status"] == "evicted"]
    assert len(rows) > 2
    assert all(r["hint"] != "not computed" for r in rows[:2])
    assert all(r["hint"] == "not computed" for r in rows[2:])
    assert rep.data["hints"]["computed"] == 2
    text = " ".join(rep.visible_text().split())
    assert (
        f"Computed for 2 of the first 2 of {len(rows)} evictions in table order (by id, then "
        "version); "
        "the limit is 2 hints per report. For any other, run ledger why-evicted ID --pack 2."
    ) in text
    off = report(history, tmp_path / "off.html", "2", "--max-hints", "0")
    assert all(
        r["hint"] == "not computed"
        for r in off.table("candidate-table")
        if r["status"] == "evicted"
    )
    assert "Hints were not computed (a limit of 0 hints)" in " ".join(off.visible_text().split())


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger of 1,501 candidates: c0000..c1499 (priority 50, 10 tokens each) and
    a-last (priority 0), budget 100: c0000..c0009 admitted, the rest out on budget."""
    folder = tmp_path_factory.mktemp("big")
    db = new_ledger(folder)
    recs = [
        chunk(
            id=f"c{i:04d}",
            dedupe_key=f"c{i:04d}",
            estimated_tokens=10,
            priority=50,
            content=f"n {i}",
        )
        for i in range(1500)
    ]
    recs.append(
        chunk(id="a-last", dedupe_key="a-last", estimated_tokens=10, priority=0, content="last")
    )
    run_ledger("ingest", str(write_jsonl(folder / "many.jsonl", recs)), db=db, check=True)
    run_ledger("subject", "grant", "default", "public-read", db=db, check=True)
    run_ledger(
        "policy", "set", "--allow-trust", "approved-source", "--budget", "100", db=db, check=True
    )
    run_ledger("build", "--as-of", "2026-07-21", db=db, check=True)
    return db


def test_hint_time_limit_bounds_a_big_pack(big: Path, tmp_path: Path) -> None:
    """With --hint-seconds 0.5 the report stays fast whatever the pack: hints are
    computed in table order until the limit, and the page says how many were
    computed and why it stopped. (The interruption itself is tested below; its speed
    is the bench's report rows, not a timed test.)"""
    db = big
    rep = report(db, tmp_path / "big.html", "1", "--hint-seconds", "0.5")
    hints = rep.data["hints"]
    assert hints["asked"] == 200 and 1 <= hints["computed"] <= 200, hints
    rows = rep.table("candidate-table")
    assert len(rows) == 1501
    evicted = [r for r in rows if r["status"] == "evicted"]
    # a-last (priority 0) waits behind 1,500 chunks of priority 50 with room for 10:
    # its budget hint is computed by simulating the budget gate, not by 1,490 re-runs.
    assert evicted[0]["id"] == "a-last" and evicted[0]["hint"].startswith("raise the budget by ")
    # 100 - 10 admitted x 10 tokens = 0 remaining: c0010 needs 10 more.
    assert (evicted[1]["id"], evicted[1]["reason"]) == ("c0010", "budget")
    assert evicted[1]["hint"].startswith("raise the budget by 10 to 110")
    text = " ".join(rep.visible_text().split())
    if hints["stopped"] == "time":
        assert "the time limit of 0.5 s was reached" in text
        assert evicted[-1]["hint"] == "not computed"
    else:
        assert hints["computed"] == 200


def test_hint_time_limit_is_read_between_hints(history: Path, tmp_path: Path) -> None:
    """The time limit is a clock read between hints (no signal, no thread): the
    first hint is always computed, and a limit spent by it stops the rest. With
    no time limit, the count alone bounds the work."""
    rep = report(history, tmp_path / "t.html", "2", "--hint-seconds", "0.000001")
    hints = rep.data["hints"]
    assert (hints["asked"], hints["computed"], hints["stopped"]) == (9, 1, "time"), hints
    evicted = [r for r in rep.table("candidate-table") if r["status"] == "evicted"]
    assert evicted[0]["hint"] != "not computed"
    assert [r["hint"] for r in evicted[1:]] == ["not computed"] * 8
    text = " ".join(rep.visible_text().split())
    assert (
        "Computed for 1 of the first 1 of 9 evictions in table order (by id, then version); "
        "the time limit of 1e-06 s was reached. For any other, run ledger why-evicted ID --pack 2."
    ) in text
    counted = report(history, tmp_path / "c.html", "2", "--max-hints", "3", "--hint-seconds", "0")
    hints = counted.data["hints"]
    assert (hints["computed"], hints["seconds"], hints["stopped"]) == (3, None, "count"), hints


def test_report_code_uses_no_signal_thread_or_sql() -> None:
    """The report package renders; the hint bound is plain counting and a clock
    read; its data comes through the store's queries (`ledger.store.report_data`)."""
    import ast

    def imports(path: Path) -> set[str]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        return {name.split(".")[0] for name in names}

    files = sorted((ROOT / "ledger" / "report").rglob("*.py"))
    assert len(files) >= 4
    for path in files:
        assert not imports(path) & {"signal", "threading", "sqlalchemy", "sqlite3", "psycopg"}, path
    data = imports(ROOT / "ledger" / "store" / "report_data.py")
    assert "time" in data and not data & {"signal", "threading"}


# --------------------------------------------------------------------------
# Diff
# --------------------------------------------------------------------------


def test_diff_report_matches_diff_json(history: Path, reports: dict[str, Report]) -> None:
    rep = reports["diff"]
    diff = ledger_json("diff", "1", "2", db=history)
    rows = rep.table("change-table")
    assert [
        (
            r["id"],
            r["from_status"],
            r["from_version"] or None,
            r["from_reason"] or None,
            r["to_status"],
            r["to_version"] or None,
            r["to_reason"] or None,
            r["cause"],
        )
        for r in rows
    ] == [
        (
            c["id"],
            c["from"]["status"],
            c["from"]["source_version"],
            c["from"]["reason"],
            c["to"]["status"],
            c["to"]["source_version"],
            c["to"]["reason"],
            c["cause"],
        )
        for c in diff["changes"]
    ]
    assert rep.data["changes"] == diff["changes"]
    packs = {int(r["pack"]): r for r in rep.table("packs")}
    for side, n in (("from", 1), ("to", 2)):
        assert int(packs[n]["used"]) == diff["used"][side]
        show = ledger_json("show", str(n), db=history)
        assert int(packs[n]["budget"]) == show["budget"]
        assert packs[n]["digest"] == show["pack_digest"]
    kinds = {r["kind"]: int(r["count"]) for r in rep.table("kind-counts")}
    assert sum(kinds.values()) == len(diff["changes"])
    causes = {r["cause"]: int(r["count"]) for r in rep.table("cause-counts")}
    assert causes == {
        c: sum(1 for x in diff["changes"] if x["cause"] == c)
        for c in {x["cause"] for x in diff["changes"]}
    }
    # By hand: html-note kept its place with a new version; future-refund-policy
    # entered on its date; refund-faq left (its new version lost on budget).
    by_id = {r["id"]: r for r in rows}
    assert by_id["html-note"]["change"] == "changed version"
    assert by_id["future-refund-policy"]["change"] == "entered"
    assert by_id["refund-faq"]["change"] == "left"
    assert by_id["carrier-delays"]["change"] == "new candidate, not admitted"


def test_diff_report_of_identical_packs(history: Path, tmp_path: Path) -> None:
    rep = report(history, tmp_path / "same.html", "--diff", "2", "2")
    assert rep.data["changes"] == []
    assert "No differences" in rep.visible_text()


# --------------------------------------------------------------------------
# Chunk history
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name,cid", [("chunk", "html-note"), ("faq", "refund-faq")])
def test_chunk_report_matches_why_evicted(
    history: Path, reports: dict[str, Report], name: str, cid: str
) -> None:
    rep = reports[name]
    why = ledger_json("why-evicted", cid, "--hints", "none", db=history)
    chunks = {
        (c["id"], c["source_version"]): c
        for c in ledger_json("chunks", "--id", cid, db=history)["chunks"]
    }
    versions = rep.table("version-table")
    assert [
        (r["id"], r["version"], r["record"], r["content"], int(r["entry"])) for r in versions
    ] == [
        (
            v["id"],
            v["source_version"],
            v["record_digest"],
            v["content_digest"],
            v["ingested_at_entry"],
        )
        for v in why["versions"]
    ]
    for r in versions:
        c = chunks[(r["id"], r["version"])]
        assert (r["from"], r["until"], r["source"]) == (
            c["effective_from"],
            c["expires_on"] or "open",
            c["source_uri"],
        )
    packs = {p["pack"]: p for p in ledger_json("packs", db=history)["packs"]}
    want = sorted(
        (
            (
                d["pack"],
                v["source_version"],
                "admitted" if d["admitted"] else "evicted",
                d["reason"] or "",
                d["as_of"],
                packs[d["pack"]]["entry"],
            )
            for v in why["versions"]
            for d in v["decisions"]
        ),
        key=lambda t: (-t[0], t[1]),
    )
    got = [
        (int(r["pack"]), r["version"], r["status"], r["reason"], r["as_of"], int(r["entry"]))
        for r in rep.table("decision-table")
    ]
    assert got == want
    assert rep.data["versions"] == why["versions"]
    # The time lines: one mark per decision in each chart, one ingest mark per version.
    figures = [f for f in rep.doc.find_all("figure")]
    marks = [len([c for c in f.find_all("circle")]) for f in figures]
    assert marks == [len(want), len(want)]
    assert len([r for r in figures[1].find_all("rect") if r.attrs.get("class") == "ingest"]) == len(
        versions
    )


def test_chunk_report_by_digest_prefix(history: Path, tmp_path: Path) -> None:
    """A REF naming one version reports the whole chunk; the default file name
    carries the REF."""
    why = ledger_json("why-evicted", "refund-faq", "--hints", "none", db=history)
    prefix = why["versions"][1]["record_digest"][:10]
    proc = run_ledger("report", "--chunk", prefix, db=history, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / f"chunk-{prefix}.html"
    assert proc.stderr.strip() == f"wrote {path}"
    assert len(Report(path).table("version-table")) == 2


# --------------------------------------------------------------------------
# Escaping, the policy, the files
# --------------------------------------------------------------------------

ALLOWED_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "header",
    "main",
    "footer",
    "nav",
    "section",
    "article",
    "figure",
    "figcaption",
    "h1",
    "h2",
    "h3",
    "p",
    "a",
    "b",
    "code",
    "pre",
    "span",
    "div",
    "dl",
    "dt",
    "dd",
    "ul",
    "li",
    "table",
    "caption",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "label",
    "input",
    "select",
    "option",
    "svg",
    "rect",
    "circle",
    "line",
    "text",
    "script",
}


@pytest.mark.parametrize("name", ["pack1", "pack2", "diff", "chunk", "faq"])
def test_everything_shown_is_escaped(reports: dict[str, Report], name: str) -> None:
    rep = reports[name]
    # Only our own elements: no <b> from "v1<b>", no <script>/<img> from a chunk.
    assert {t for t, _ in rep.tags} <= ALLOWED_TAGS
    scripts = [attrs for t, attrs in rep.tags if t == "script"]
    assert scripts == [{}, {"type": "application/json", "id": "report-data"}]
    assert not [
        t for t, _ in rep.tags if t in ("img", "iframe", "object", "embed", "link", "base", "form")
    ]
    for tag, attrs in rep.tags:
        for key, value in attrs.items():
            assert not key.startswith("on"), (tag, key)
            if key in ("href", "src", "action", "xlink:href"):
                assert value and value.startswith("#"), (tag, key, value)
    bolds = [n.text() for n in rep.doc.find_all("b")]
    assert all("<" not in b and "pwned" not in b for b in bolds)
    # The JSON copy holds no raw <, > or & (so no </script> or <!--), yet decodes exactly.
    island = rep.doc.by_id("report-data").text()
    assert not set("<>&") & set(island)
    assert "\\u003c" in island or name in ("faq",)


def test_html_in_chunks_is_shown_as_text(reports: dict[str, Report]) -> None:
    pack1, chunk_rep, diff = reports["pack1"], reports["chunk"], reports["diff"]
    bodies = [n.text() for n in pack1.doc.find_all("pre")]
    assert PWN in bodies
    assert {v["source_version"] for v in chunk_rep.data["versions"]} == {
        "v1<b>",
        HTML_V2["source_version"],
    }
    assert sorted(n.text() for n in chunk_rep.doc.find_all("pre")) == sorted(
        [PWN, HTML_V2["content"]]
    )
    assert HTML_V1["source_uri"] in [r["source"] for r in pack1.table("admitted-table")]
    assert "v1<b>" in [r["from_version"] for r in diff.table("change-table")]
    for rep in (pack1, chunk_rep, diff):
        assert "<b>v1" not in rep.raw and "v1<b>" not in rep.raw
        assert rep.raw.count("<script") == 2


def _csp(rep: Report) -> str:
    metas = [
        a
        for t, a in rep.tags
        if t == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy"
    ]
    assert len(metas) == 1
    return metas[0]["content"] or ""


def _sha(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


@pytest.mark.parametrize("name", ["pack1", "diff", "chunk"])
def test_strict_content_security_policy(reports: dict[str, Report], name: str) -> None:
    rep = reports[name]
    policy = dict(d.strip().split(" ", 1) for d in _csp(rep).split(";") if d.strip())
    assert policy["default-src"] == "'none'"
    assert policy["img-src"] == "data:"
    assert policy["base-uri"] == "'none'" and policy["form-action"] == "'none'"
    style = rep.doc.find_all("style")
    script = [s for s in rep.doc.find_all("script") if "type" not in s.attrs]
    assert len(style) == 1 and len(script) == 1
    assert policy["style-src"] == _sha(style[0].text())
    assert policy["script-src"] == _sha(script[0].text())
    # The policy comes before anything it governs.
    order = [
        t for t, a in rep.tags if t in ("style", "script") or (t == "meta" and a.get("http-equiv"))
    ]
    assert order[0] == "meta"
    assert not [
        1 for _, a in rep.tags if "style" in a
    ]  # no style attributes: the hash allows only <style>


def test_default_file_names_permissions_and_atomic_replace(history: Path, tmp_path: Path) -> None:
    for args, name in (
        (["1"], "pack-1.html"),
        (["--diff", "1", "2"], "diff-1-2.html"),
        (["--chunk", "refund-faq"], "chunk-refund-faq.html"),
    ):
        proc = run_ledger("report", *args, db=history, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert (proc.stdout, proc.stderr) == ("", f"wrote {tmp_path / name}\n")
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
    # A pack digest prefix names the pack; -o replaces a world-readable file with an owner-only one.
    target = tmp_path / "out.html"
    target.write_text("old", encoding="utf-8")
    os.chmod(target, 0o644)
    digest = ledger_json("show", "2", db=history)["pack_digest"]
    proc = run_ledger("report", digest[:10], "-o", str(target), db=history)
    assert proc.returncode == 0, proc.stderr
    assert Report(target).data["pack"] == 2
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["pack-1.html", "diff-1-2.html", "chunk-refund-faq.html", "out.html"]
    )


@pytest.mark.parametrize(
    "args,code,words",
    [
        ([], 2, "give exactly one of PACK, --diff A B or --chunk REF"),
        (["1", "--chunk", "refund-faq"], 2, "give exactly one of"),
        (["--diff", "1", "2", "--with-content"], 2, "--with-content applies to"),
        (["--diff", "1"], 2, "requires 2 arguments"),
        (["9"], 3, "no pack 9"),
        (["--diff", "1", "9"], 3, "no pack 9"),
        (["--chunk", "no-such-chunk"], 3, "no chunk id or digest"),
        (["1", "--max-hints", "-1"], 2, "--max-hints"),
    ],
)
def test_usage_and_not_found(
    history: Path, tmp_path: Path, args: list[str], code: int, words: str
) -> None:
    proc = run_ledger("report", *args, db=history, cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    assert words in proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_help_names_the_default_files() -> None:
    text = " ".join(run_ledger("report", "--help", check=True).stdout.split())
    for words in (
        "pack-N.html",
        "diff-A-B.html",
        "chunk-REF.html",
        "owner-only (0600)",
        "--with-content",
        "--max-hints",
        "--hint-seconds",
    ):
        assert words in text


def test_library_on_both_backends(db_url: str, tmp_path: Path) -> None:
    """The collecting functions on SQLite and PostgreSQL give the same figures."""
    from ledger.api.ingest import ingest_files as ingest
    from ledger.report import chunk_report, diff_report, pack_report
    from ledger.store.access import change_grants, set_policy
    from ledger.store.build import build_pack
    from ledger.store.engine import make_engine, read_transaction
    from ledger.store.packs import pack_json

    engine = make_engine(db_url)
    try:
        ingest(engine, [str(ROOT / "fixtures" / "support-chunks.json")])
        ingest(engine, [str(write_jsonl(tmp_path / "h.jsonl", [HTML_V1]))])
        change_grants(
            engine, "default", ["policy-read", "state-read", "user-input", "public-read"], "grant"
        )
        set_policy(
            engine, ["application-policy", "confirmed-state", "approved-source", "user-input"], 170
        )
        build_pack(engine, "2026-07-21")
        build_pack(engine, "2026-09-15", budget=200)
        with read_transaction(engine) as conn:
            show = pack_json(conn, 2)
            for name, text in (
                ("p", pack_report(conn, 2, with_content=True)),
                ("d", diff_report(conn, 1, 2)),
                ("c", chunk_report(conn, "html-note", with_content=True)[0]),
            ):
                (tmp_path / f"{name}.html").write_text(text, encoding="utf-8")
    finally:
        engine.dispose()
    pack = Report(tmp_path / "p.html")
    assert (pack.data["used"], pack.data["budget"], pack.data["pack_digest"]) == (
        show["used"],
        show["budget"],
        show["pack_digest"],
    )
    assert len(pack.table("candidate-table")) == len(show["admitted"]) + len(show["evicted"])
    assert PWN in [n.text() for n in pack.doc.find_all("pre")]
    assert Report(tmp_path / "d.html").data["to"] == 2
    assert Report(tmp_path / "c.html").data["ids"] == ["html-note"]


# --------------------------------------------------------------------------
# In a real browser, with no network
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Chromium:  # type: ignore[misc]
    with Chromium() as b:
        yield b


def _clean(load: Any) -> None:
    assert load.errors == [], load.errors
    assert load.requests == [load.url], load.requests


@pytest.mark.parametrize("name", ["pack1", "pack2", "diff", "chunk"])
def test_browser_loads_offline_without_errors_and_no_chunk_script_runs(
    browser: Chromium, reports: dict[str, Report], tmp_path: Path, name: str
) -> None:
    rep = reports[name]
    page = browser.new_page(1200, 900)
    try:
        load = page.load(rep.path)
        _clean(load)
        # The chunk's <script>, the <img onerror> and the HTML in versions and URIs did not run.
        assert page.evaluate("document.title") == rep.title
        assert "pwned" not in rep.title
        assert page.evaluate("document.scripts.length") == 2
        assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
        # Our script did run (its hash is in the policy) and showed the filters.
        assert page.evaluate("document.documentElement.getAttribute('data-js')") == "on"
        assert page.evaluate(
            "[...document.querySelectorAll('.filters')]"
            ".every(f => getComputedStyle(f).display === 'flex')"
        )
        assert (
            page.evaluate("JSON.parse(document.getElementById('report-data').textContent).kind")
            == rep.data["kind"]
        )
        if name == "pack1":
            assert PWN in page.evaluate(
                "[...document.querySelectorAll('pre')].map(p => p.textContent)"
            )
        png = page.screenshot(tmp_path / f"{name}.png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    finally:
        page.close()


def test_browser_sorts_and_filters(
    browser: Chromium, reports: dict[str, Report], history: Path
) -> None:
    show = ledger_json("show", "2", db=history)
    page = browser.new_page()
    try:
        _clean(page.load(reports["pack2"].path))
        visible = (
            "[...document.querySelectorAll('#candidate-table tbody tr')].filter(r => !r.hidden)"
        )
        n_budget = sum(1 for e in show["evicted"] if e["reason"] == "budget")
        digest = next(
            e["record_digest"][:12] for e in show["evicted"] if e["source_version"] == "v1<b>"
        )
        page.evaluate(
            "(() =>"
            " { const s = document.querySelector('select[data-col=reason]'); s.value = 'budget';"
            " s.dispatchEvent(new Event('change', {bubbles: true})); })()"
        )
        assert page.evaluate(f"{visible}.length") == n_budget
        assert page.evaluate("document.querySelector('.filters .count').textContent") == (
            f"{n_budget} of {len(show['admitted']) + len(show['evicted'])} rows shown"
        )
        page.evaluate(
            "(() => { const s = document.querySelector('select[data-col=reason]'); s.value = '';"
            " s.dispatchEvent(new Event('change', {bubbles: true}));"
            f" const q = document.querySelector('.filters input'); q.value = '{digest.upper()}';"
            " q.dispatchEvent(new Event('input', {bubbles: true})); })()"
        )
        # Text search is case-insensitive, over the whole row (here a record-digest prefix).
        assert page.evaluate(
            f"{visible}.map(r => r.cells[3].textContent + '@' + r.cells[4].textContent)"
        ) == ["html-note@v1<b>"]
        page.evaluate(
            "document.querySelector('.filters input').value = '';"
            "document.querySelector('.filters input').dispatchEvent(new "
            "Event('input', {bubbles: true}))"
        )
        click = "document.querySelector('#candidate-table th[data-key=tokens]').click()"
        tokens = (
            "[...document.querySelectorAll('#candidate-table tbody tr')]"
            ".map(r => +r.cells[6].textContent)"
        )
        page.evaluate(click)
        ascending = page.evaluate(tokens)
        assert ascending == sorted(ascending) and len(ascending) == len(show["admitted"]) + len(
            show["evicted"]
        )
        page.evaluate(click)
        assert page.evaluate(tokens) == sorted(ascending, reverse=True)
        assert (
            page.evaluate(
                "document.querySelector('#candidate-table th[data-key=tokens]')"
                ".getAttribute('aria-sort')"
            )
            == "descending"
        )
    finally:
        page.close()


def test_browser_readable_without_javascript(browser: Chromium, reports: dict[str, Report]) -> None:
    rep = reports["pack2"]
    page = browser.new_page(javascript=False)
    try:
        _clean(page.load(rep.path))
        assert page.evaluate("document.documentElement.getAttribute('data-js')") is None
        rows = "[...document.querySelectorAll('#candidate-table tbody tr')]"
        assert page.evaluate(f"{rows}.filter(r => r.offsetParent !== null).length") == len(
            rep.table("candidate-table")
        )
        assert (
            page.evaluate("getComputedStyle(document.querySelector('.filters')).display") == "none"
        )
    finally:
        page.close()


def _luminance(rgb: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", rgb)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_browser_phone_dark_and_print(browser: Chromium, reports: dict[str, Report]) -> None:
    path = reports["pack2"].path
    phone = browser.new_page(390, 800, dark=True)
    try:
        _clean(phone.load(path))
        # Nothing wider than the phone but the tables, which scroll inside their frame.
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        assert (
            phone.evaluate(
                "(() => { const w = document.querySelector('#candidate-table').parentElement;"
                " return w.scrollWidth > w.clientWidth && getComputedStyle(w).overflowX; })()"
            )
            == "auto"
        )
        assert _luminance(phone.evaluate("getComputedStyle(document.body).backgroundColor")) < 0.2
        assert _luminance(phone.evaluate("getComputedStyle(document.body).color")) > 0.7
    finally:
        phone.close()
    light = browser.new_page(1200, 900)
    try:
        _clean(light.load(path))
        assert _luminance(light.evaluate("getComputedStyle(document.body).backgroundColor")) > 0.9
    finally:
        light.close()
    printed = browser.new_page(1200, 900, dark=True, print_media=True)
    try:
        _clean(printed.load(path))
        assert _luminance(printed.evaluate("getComputedStyle(document.body).backgroundColor")) > 0.9
        assert (
            printed.evaluate("getComputedStyle(document.querySelector('.filters')).display")
            == "none"
        )
        assert (
            printed.evaluate(
                "getComputedStyle(document.querySelector('.table-wrap.tall') ||"
                " document.querySelector('.table-wrap')).overflowX"
            )
            == "visible"
        )
        pdf = printed.call("Page.printToPDF", {})["data"]
        assert base64.b64decode(pdf)[:5] == b"%PDF-"
    finally:
        printed.close()


@pytest.mark.parametrize("name", ["pack1", "diff", "chunk"])
def test_browser_phone_width(browser: Chromium, reports: dict[str, Report], name: str) -> None:
    """At 360 px nothing but a table's own frame is wider than the screen."""
    page = browser.new_page(360, 740)
    try:
        _clean(page.load(reports[name].path))
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        assert page.evaluate(
            "[...document.querySelectorAll('.table-wrap')].every(w =>"
            " getComputedStyle(w).overflowX === 'auto' && w.getBoundingClientRect().right <= 360)"
        )
    finally:
        page.close()


def test_browser_checks_can_fail(browser: Chromium, tmp_path: Path) -> None:
    """Negative controls: the harness does see a CSP violation, a script error
    and a request leaving the file, so the clean results above mean something."""
    blocked = tmp_path / "blocked.html"
    blocked.write_text(
        '<!doctype html><meta http-equiv="Content-Security-Policy" content="default-src \'none\'">'
        "<title>t</title><script>document.title='ran'</script><p>x</p>",
        encoding="utf-8",
    )
    page = browser.new_page()
    try:
        load = page.load(blocked)
        assert any("Content Security Policy" in e for e in load.errors), load.errors
        assert page.evaluate("document.title") == "t"
    finally:
        page.close()
    leaky = tmp_path / "leaky.html"
    leaky.write_text(
        '<!doctype html><title>t</title><img src="http://example.com/x.png">'
        "<script>undefinedFunction()</script>",
        encoding="utf-8",
    )
    page = browser.new_page()
    try:
        load = page.load(leaky)
        assert "http://example.com/x.png" in load.requests
        assert any("undefinedFunction" in e for e in load.errors), load.errors
    finally:
        page.close()


def test_browser_big_table_in_blocks(browser: Chromium, big: Path, tmp_path: Path) -> None:
    """1,501 rows: the table keeps its markup but is laid out in blocks of 100
    rows (a CSS grid per row, `content-visibility: auto` per block); the heading
    lines up with the cells, and sorting and filtering work across the blocks."""
    rep = report(big, tmp_path / "big.html", "1", "--max-hints", "0")
    table = rep.doc.by_id("candidate-table")
    bodies = table.find_all("tbody")
    assert [len(b.find_all("tr")) for b in bodies] == [100] * 15 + [1]
    assert "blocks" in (table.attrs.get("class") or "")
    page = browser.new_page(1280, 900)
    try:
        _clean(page.load(rep.path))
        q = "document.querySelector"
        assert page.evaluate(
            f"getComputedStyle({q}('#candidate-table tbody')).contentVisibility"
        ) == ("auto")
        assert (
            page.evaluate(f"getComputedStyle({q}('#candidate-table tbody tr')).display") == "grid"
        )
        # Blocks off screen are not laid out: bring the table into view, wait two frames.
        page.evaluate(f"{q}('#candidate-table').scrollIntoView()")
        page.shown_at()
        for col in (1, 6, 9):
            assert (
                page.evaluate(
                    f"Math.abs({q}('#candidate-table thead th:nth-child({col + 1})')"
                    ".getBoundingClientRect().left - "
                    f"{q}('#candidate-table tbody tr').cells[{col}].getBoundingClientRect().left)"
                )
                < 1
            )
        page.evaluate(f"{q}('#candidate-table th[data-key=id]').click()")
        page.evaluate(f"{q}('#candidate-table th[data-key=id]').click()")
        ids = page.evaluate(
            "[...document.querySelectorAll('#candidate-table tbody tr')]"
            ".map(r => r.cells[3].textContent)"
        )
        assert ids == sorted(ids, reverse=True) and len(ids) == 1501 and ids[-1] == "a-last"
        assert page.evaluate(
            "[...document.querySelectorAll('#candidate-table tbody')].map(b => b.rows.length)"
        ) == [100] * 15 + [1]
        page.evaluate(
            f"(() => {{ const s = {q}('select[data-col=status]'); s.value = 'admitted';"
            " s.dispatchEvent(new Event('change', {bubbles: true})); })()"
        )
        shown = page.evaluate(
            "[...document.querySelectorAll('#candidate-table tbody tr')].filter(r => !r.hidden)"
            ".map(r => r.cells[3].textContent)"
        )
        assert shown == [f"c{i:04d}" for i in range(9, -1, -1)]
    finally:
        page.close()
    phone = browser.new_page(390, 800)
    try:
        _clean(phone.load(rep.path))
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        phone.close()
