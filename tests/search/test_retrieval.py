"""Retrieval builds, the index's upkeep and hostile query text, end to end on each backend."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import dbtools
from tests.conftest import chunk, run_ledger, write_jsonl

AS_OF = "2026-07-21"


def corpus() -> list[dict[str, Any]]:
    ev = {"section": "evidence", "required_permission": "public-read"}
    return [
        chunk(id="pol", section="policy", dedupe_key="pol", content="House rules.",
              required_permission="public-read", priority=90),
        # The planted best match for "harbor pilot": the phrase twice in a short body.
        chunk(id="zeta-best", dedupe_key="zeta-best", content="harbor pilot, harbor pilot.", **ev),
        chunk(id="mid-second", dedupe_key="mid-second", content="a harbor pilot boards", **ev),
        chunk(id="alpha-third", dedupe_key="alpha-third",
              content="a pilot " + "of ships on long voyages " * 6 + "near a harbor", **ev),
        chunk(id="unrelated", dedupe_key="unrelated", content="Quarterly tax forms.", **ev),
        chunk(id="two", dedupe_key="two", source_version="1", content="old harbor text", **ev),
        chunk(id="two", dedupe_key="two", source_version="2", effective_from="2026-03-01",
              content="new text without the word", **ev),
    ]  # fmt: skip


@pytest.fixture
def db(new_db: Callable[[str], str], tmp_path: Path) -> str:
    url = new_db("ledger")
    run_ledger("ingest", str(write_jsonl(tmp_path / "c.jsonl", corpus())), db=url, check=True)
    run_ledger("subject", "grant", "default", "public-read", db=url, check=True)
    run_ledger("policy", "set", "--allow-trust", "approved-source", "--budget", "500", db=url,
               check=True)  # fmt: skip
    return url


def build(db: str, *args: str) -> dict[str, Any]:
    proc = run_ledger("build", "--as-of", AS_OF, *args, "--json", db=db)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def test_the_planted_best_match_ranks_first_on_every_backend(db: str) -> None:
    pack = build(db, "--query", '"harbor pilot"', "--top", "3")
    ranked = pack["retrieval"]["ranked"]
    # The same ids in the same order on SQLite and PostgreSQL (scores differ).
    assert [r["id"] for r in ranked] == [
        "zeta-best",
        "mid-second",
    ]  # "alpha-third" lacks the phrase
    assert [r["rank"] for r in ranked] == [1, 2]
    assert ranked[0]["score"] > ranked[1]["score"] > 0
    # As words: the planted best two lead on both backends; below them the
    # rankings may differ (BM25 rewards both words in a long body, cover density
    # one word in a short one).
    words = build(db, "--query", "harbor pilot", "--top", "4")["retrieval"]["ranked"]
    assert [r["id"] for r in words[:2]] == ["zeta-best", "mid-second"]
    # "two" matches only in its superseded version 1: dead text ranks nothing.
    assert [r["id"] for r in words[2:]] == ["alpha-third"]


def test_candidates_are_the_ranked_ids_and_every_other_section(db: str) -> None:
    pack = build(db, "--query", "harbor", "--top", "2")
    assert pack["retrieval"]["query"] == "harbor" and pack["retrieval"]["top"] == 2
    ids = {a["id"] for a in pack["admitted"]} | {e["id"] for e in pack["evicted"]}
    assert ids == {"pol"} | {r["id"] for r in pack["retrieval"]["ranked"]}
    assert pack["candidates"] == len(pack["admitted"]) + len(pack["evicted"])


def test_an_id_is_ranked_on_its_live_versions_text_alone(db: str) -> None:
    # Only version 1 of "two" says "old harbor"; version 2 supersedes it, so
    # "two" is not ranked for it, and the live matches of "harbor" take the slot.
    pack = build(db, "--query", "old harbor", "--top", "1")
    assert [r["id"] for r in pack["retrieval"]["ranked"]] == ["zeta-best"]
    assert "two" not in {a["id"] for a in pack["admitted"]} | {e["id"] for e in pack["evicted"]}
    # Version 2's own words rank it, and it is the id's one candidate.
    pack = build(db, "--query", "new text without", "--top", "1")
    assert [(r["id"], r["source_version"]) for r in pack["retrieval"]["ranked"]] == [("two", "2")]
    assert ("two", "2") in {(a["id"], a["source_version"]) for a in pack["admitted"]}
    assert not [e for e in pack["evicted"] if e["id"] == "two"]


def test_plain_builds_keep_their_digests_and_have_no_retrieval(db: str) -> None:
    plain = build(db)
    assert plain["retrieval"] is None
    again = build(db)
    assert again["pack_digest"] == plain["pack_digest"]
    top_all = build(db, "--query", "harbor pilot tax old new house", "--top", "20")
    assert top_all["input_digest"] != plain["input_digest"]  # the retrieval is an input


def test_rank_breaks_priority_ties_in_the_budget_gate(db: str) -> None:
    # All three cost 10 and share priority 50: only rank decides who fits in 20.
    # Without rank the id would decide (alpha-third, mid-second); rank keeps the best two.
    pack = build(db, "--query", "pilot", "--top", "3", "--budget", "30")
    admitted = [a["id"] for a in pack["admitted"] if a["section"] == "evidence"]
    assert sorted(admitted) == ["mid-second", "zeta-best"]
    assert [e["id"] for e in pack["evicted"]] == ["alpha-third"]
    rank_of = {r["id"]: r["rank"] for r in pack["retrieval"]["ranked"]}
    assert rank_of["alpha-third"] == 3


def test_a_candidates_file_is_taken_in_its_order(db: str, tmp_path: Path) -> None:
    f = tmp_path / "mine.jsonl"
    lines = ['{"id": "unrelated", "score": 0.9}', '{"id": "zeta-best"}']
    lines.append('{"id": "two", "source_version": "1"}')
    f.write_text("\n".join(lines) + "\n")
    # Budget for "pol" and two more: rank, not the id order, picks which two.
    pack = build(db, "--candidates", str(f), "--budget", "30")
    r = pack["retrieval"]
    assert (r["query"], r["top"]) == (None, None)
    assert r["ranked"] == [
        {"id": "unrelated", "source_version": None, "rank": 1, "score": 0.9},
        {"id": "zeta-best", "source_version": None, "rank": 2, "score": None},
        {"id": "two", "source_version": "1", "rank": 3, "score": None},
    ]
    # Version 1 of "two" alone (no version 2 to supersede it), last by rank.
    assert {(a["id"], a["source_version"]) for a in pack["admitted"]} == {
        ("pol", "1"), ("unrelated", "1"), ("zeta-best", "1"),
    }  # fmt: skip
    assert [(e["id"], e["reason"]) for e in pack["evicted"]] == [("two", "budget")]
    assert run_ledger("replay", str(pack["pack"]), db=db).returncode == 0


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ('{"id": "nope"}\n', "unknown chunk id 'nope'"),
        ('{"id": "zeta-best", "source_version": "9"}\n', "has no version '9'"),
        ('{"id": "zeta-best"}\n{"id": "zeta-best"}\n', "already ranked"),
        ('{"id": "zeta-best", "rank": 1}\n', "unknown ['rank']"),
        ('{"id": "zeta-best", "score": "high"}\n', "'score': must be a number"),
        ('{"id": "zeta-best", "score": ' + "9" * 400 + "}\n", "a number a float can hold"),
        ("not json\n", ":1:"),
    ],
)
def test_a_bad_candidates_file_refuses_the_build_and_records_nothing(
    db: str, tmp_path: Path, lines: str, message: str
) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(lines)
    before = dbtools.snapshot(db)
    proc = run_ledger("build", "--as-of", AS_OF, "--candidates", str(f), db=db)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ") and message in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert dbtools.snapshot(db) == before


def test_batch_lines_take_query_top_and_candidates(db: str, tmp_path: Path) -> None:
    (tmp_path / "mine.jsonl").write_text('{"id": "alpha-third"}\n')
    batch = tmp_path / "b.jsonl"
    batch.write_text(
        '{"subject": "default", "as_of": "2026-07-21", "query": "harbor pilot", "top": 1}\n'
        '{"subject": "default", "as_of": "2026-07-21", "candidates": "mine.jsonl"}\n'
        '{"subject": "default", "as_of": "2026-07-21"}\n'
    )
    run_ledger("build", "--batch", str(batch), db=db, check=True)
    shown = [json.loads(run_ledger("show", n, "--json", db=db, check=True).stdout) for n in "123"]
    assert [r["id"] for r in shown[0]["retrieval"]["ranked"]] == ["zeta-best"]
    assert [r["id"] for r in shown[1]["retrieval"]["ranked"]] == ["alpha-third"]
    assert shown[2]["retrieval"] is None


def test_verify_detects_a_changed_ranked_list(db: str) -> None:
    build(db, "--query", "harbor", "--top", "2")
    with dbtools.connect(db) as con:
        (text,) = con.execute("SELECT retrieval FROM packs WHERE pack_no = 1").fetchone()
        changed = json.loads(text)
        changed["ranked"][0]["score"] = 99.0
        dbtools.execute(con, db, "UPDATE packs SET retrieval = ? WHERE pack_no = 1",
                        (json.dumps(changed),))  # fmt: skip
    proc = run_ledger("verify", "--json", db=db)
    assert proc.returncode == 4
    assert json.loads(proc.stdout)["first_bad"]["kind"] == "pack"


def test_a_failed_ingest_leaves_no_index_rows(db: str, tmp_path: Path) -> None:
    bad = [chunk(id="zebra-1", dedupe_key="zebra-1", content="zebra crossing"), {"id": "broken"}]
    proc = run_ledger("ingest", str(write_jsonl(tmp_path / "bad.jsonl", bad)), db=db)
    assert proc.returncode == 1
    out = run_ledger("search", "zebra", "--json", db=db, check=True)
    assert json.loads(out.stdout)["results"] == []


def test_search_filters_by_validity_and_snippets_only_on_request(db: str) -> None:
    def ids(*args: str) -> list[tuple[str, str]]:
        data = json.loads(run_ledger("search", *args, "--json", db=db, check=True).stdout)
        return [(r["id"], r["source_version"]) for r in data["results"]]

    assert ("two", "1") in ids("harbor")
    # Both versions are valid on 2026-07-21 (version 1 never expires): --as-of
    # filters validity, not supersession.
    assert ("two", "1") in ids("harbor", "--as-of", AS_OF)
    assert ("two", "1") not in ids("harbor", "--as-of", "2025-12-31")
    plain = json.loads(run_ledger("search", "tax", "--json", db=db, check=True).stdout)
    assert "snippet" not in plain["results"][0]
    full = json.loads(
        run_ledger("search", "tax", "--with-content", "--json", db=db, check=True).stdout
    )
    assert full["results"][0]["snippet"] == "Quarterly tax forms."


HOSTILE = [
    'AND OR "',
    "NEAR(",
    "NEAR(harbor pilot, 2)",
    "*",
    '"',
    "-x",
    "harbor OR",
    "pilot*",
    "col:harbor ^pilot",
    "'; DROP TABLE chunk_versions; --",
    "\x01\x02\x1b[31mharbor\x7f",
    " ".join(f"word{i}" for i in range(10_000)),
    "",
    "   ",
]


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory, module_backend: str) -> Any:
    folder = tmp_path_factory.mktemp("hostile")
    url = dbtools.new_ledger(folder, module_backend)
    run_ledger("ingest", str(write_jsonl(folder / "c.jsonl", corpus())), db=url, check=True)
    run_ledger("subject", "grant", "default", "public-read", db=url, check=True)
    run_ledger("policy", "set", "--allow-trust", "approved-source", "--budget", "500", db=url,
               check=True)  # fmt: skip
    run_ledger("build", "--as-of", AS_OF, db=url, check=True)
    yield url
    dbtools.drop(url)


@pytest.mark.parametrize("command", ["search", "why", "build"])
def test_hostile_query_text_never_gives_a_traceback(hostile_db: str, command: str) -> None:
    for text in HOSTILE:  # "--": a text that starts with "-" is not an option
        args = (
            ["build", "--as-of", AS_OF, "--query", text]
            if command == "build"
            else [command, "--", text]
        )
        proc = run_ledger(*args, db=hostile_db)
        assert "Traceback" not in proc.stderr, text
        if text.strip() in ("", "*", '"'):
            assert proc.returncode == 1, text
            assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
        else:
            assert proc.returncode == 0, (text, proc.stderr)
    assert run_ledger("verify", db=hostile_db).returncode == 0


def test_undecodable_bytes_on_the_command_line(hostile_db: str) -> None:
    cmd = [sys.executable.encode(), b"-m", b"ledger_cli", b"--db", str(hostile_db).encode(),
           b"why", b"harbor \xff\xfe", b"--pack", b"1", b"--json"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout.decode("utf-8"))
    assert data["text"] == "harbor \ufffd\ufffd"
    assert data["verdict"] in ("admitted", "evicted") and data["matches"]


def test_the_python_api_gives_what_the_commands_print(hostile_db: str) -> None:
    import ledger

    def cli_json(*args: str) -> Any:
        return json.loads(run_ledger(*args, "--json", db=hostile_db, check=True).stdout)

    with ledger.open(hostile_db) as lg:
        assert lg.search("harbor pilot", limit=3).to_json() == cli_json(
            "search", "harbor pilot", "--limit", "3"
        )
        assert lg.why("harbor", pack=1).to_json() == cli_json("why", "harbor", "--pack", "1")
        pack = lg.build(AS_OF, query="harbor pilot", top=2)
    shown = cli_json("show", str(pack.number))
    assert pack.to_json() == shown
    assert [r["id"] for r in shown["retrieval"]["ranked"]] == ["zeta-best", "mid-second"]


def test_a_transcript_exchange_is_another_scope_than_a_document_pack(
    db: str, tmp_path: Path
) -> None:
    from tests.transcript.factory import ExchangeSpec, build_transcript

    data, _ = build_transcript([ExchangeSpec("plain", f"narwhal tusk {i}") for i in range(2)])
    src = tmp_path / "chat.jsonl"
    src.write_bytes(data)
    run_ledger("ingest", "--format", "transcript", str(src), db=db, check=True)
    build(db)
    a = json.loads(run_ledger("why", "narwhal tusk", "--json", db=db, check=True).stdout)
    m = a["matches"][0]
    assert (m["status"], m["reason"]) == ("not_candidate", "other_scope")
    assert m["detail"]["scope"].startswith("transcript:") and m["hint"] is None
    assert "transcript exchange" in a["sentence"]
