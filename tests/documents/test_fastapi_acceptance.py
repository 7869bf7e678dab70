"""Acceptance: the real FastAPI docs at two commits, end to end through the CLI.

`fixtures/docs/` holds `docs/en/docs` of fastapi/fastapi at cd9d093 (2025-12-10)
and 27c922c (2026-07-27) (see its SOURCES.md). One ledger per backend: snapshot A
is ingested, a pack is built, snapshot B is ingested (a snapshot: what B removed
is retracted from B's date), and packs are built after it as of a late and an
early date. The checks read the stored rows with the database driver, the
fixture files with plain Python and the token counts with tiktoken itself.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from tests import dbtools
from tests.conftest import ROOT, ledger_json, run_ledger
from tests.store.test_tokens import reference as reference  # tiktoken, fed offline

DOCS = ROOT / "fixtures" / "docs"
A, B = DOCS / "fastapi-cd9d093", DOCS / "fastapi-27c922c"
A_COMMIT, A_DATE = "cd9d093f603b81f34eb2751e9ca4522089fa9696", "2025-12-10"
B_COMMIT, B_DATE = "27c922c40337632e3a634cad4eaced5ad829c41f", "2026-07-27"
MAX_TOKENS = 800
RULES = f"""
[source]
name = "fastapi-docs"
uri = "https://github.com/fastapi/fastapi/blob/{{version}}/docs/en/docs/{{path}}"
version = "git"
effective_from = "git"
counter = "cl100k_base"
max_tokens = {MAX_TOKENS}
snapshot = true

[[rule]]
match = "reference/**"
section = "evidence"
trust = "approved-source"
required_permission = "reference-read"
priority = 40
dedupe = "content"

[[rule]]
match = "**"
section = "evidence"
trust = "approved-source"
required_permission = "docs-read"
priority = 50
dedupe = "content"
"""


def md_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def text_lines(data: bytes) -> list[str]:
    text = data.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    return text.split("\n")


def front_matter(lines: list[str]) -> int:
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                return i + 1
    return 0


@pytest.fixture(scope="module")
def history(module_backend: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("fastapi")
    db = dbtools.new_ledger(tmp, module_backend)
    rules = tmp / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    out: dict[str, Any] = {"db": db, "rules": str(rules)}
    out["a"] = ledger_json(
        "ingest",
        str(A),
        "--rules",
        str(rules),
        "--source-version",
        A_COMMIT,
        "--effective-from",
        A_DATE,
        db=db,
    )
    # Locations are those of the newest snapshot: keep A's rows as A left them.
    out["a_rows"] = rows(db, "batch_seq = ?", (out["a"]["batch"],))
    run_ledger("subject", "grant", "default", "docs-read", "reference-read", db=db, check=True)
    run_ledger(
        "policy",
        "set",
        "--allow-trust",
        "approved-source",
        "--budget",
        "10000000",
        db=db,
        check=True,
    )
    out["pack_before"] = ledger_json("build", "--as-of", "2026-01-15", db=db)
    out["b"] = ledger_json(
        "ingest",
        str(B),
        "--rules",
        str(rules),
        "--source-version",
        B_COMMIT,
        "--effective-from",
        B_DATE,
        db=db,
    )
    out["pack_after"] = ledger_json("build", "--as-of", "2026-08-01", db=db)
    out["pack_early"] = ledger_json("build", "--as-of", "2026-01-15", db=db)
    yield out
    dbtools.drop(db)


def rows(db: str, where: str = "1 = 1", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    cols = (
        "vid",
        "chunk_id",
        "source_version",
        "content",
        "title",
        "path",
        "loc_kind",
        "loc_first",
        "loc_last",
        "estimated_tokens",
        "record_digest",
        "batch_seq",
        "source_uri",
        "effective_from",
    )
    got = dbtools.query(
        db, f"SELECT {', '.join(cols)} FROM chunk_versions WHERE {where} ORDER BY vid", params
    )
    return [dict(zip(cols, r, strict=True)) for r in got]


def current_ids(db: str) -> dict[str, list[str]]:
    """path -> the ids it holds after the newest snapshot (the incremental state)."""
    return {
        path: json.loads(ids)
        for path, ids in dbtools.query(
            db, "SELECT path, chunk_ids FROM document_files WHERE source = ?", ("fastapi-docs",)
        )
    }


def check_snapshot(files: dict[str, bytes], versions: list[dict[str, Any]]) -> None:
    """Lines point at the text; every non-blank line outside front matter is covered;
    nothing over max_tokens unless it is one fenced block."""
    by_path: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for v in versions:
        by_path[v["path"]].append(v)
    assert set(by_path) == set(files)
    for path, data in files.items():
        lines = text_lines(data)
        skip = front_matter(lines)
        covered: set[int] = set()
        for v in by_path[path]:
            assert v["loc_kind"] == "lines"
            first, last = v["loc_first"], v["loc_last"]
            span = "\n".join(lines[first - 1 : last]).rstrip()
            assert v["content"] == span, (path, first, last)
            assert first > skip
            if v["estimated_tokens"] > MAX_TOKENS:
                body = v["content"].split("\n")
                assert body[0].startswith("```") and body[-1].strip().startswith("```"), (
                    path,
                    first,
                )
                assert sum(line.startswith("```") for line in body) == 2, (path, first)
            covered.update(range(first, last + 1))
        missing = [
            i for i, line in enumerate(lines, 1) if i > skip and line.strip() and i not in covered
        ]
        assert missing == [], (path, missing[:5])


def test_first_snapshot_every_chunk_points_at_its_lines_and_covers_the_files(
    history: dict[str, Any],
) -> None:
    a = history["a"]
    files = md_files(A)
    assert a["files"] == len(files) == 145
    assert a["new"] == a["read"] and a["unchanged"] == 0 and a["retracted"] == 0
    stored = history["a_rows"]
    assert len(stored) == a["new"]
    check_snapshot(files, stored)
    assert all(
        len(v["chunk_id"]) <= 64 and v["chunk_id"].startswith("fastapi-docs-") for v in stored
    )
    assert {v["source_version"] for v in stored} == {A_COMMIT}
    cors = [v for v in stored if v["path"] == "tutorial/cors.md"]
    assert "CORS (Cross-Origin Resource Sharing) > Use CORSMiddleware" in [v["title"] for v in cors]
    assert cors[0]["source_uri"] == (
        f"https://github.com/fastapi/fastapi/blob/{A_COMMIT}/docs/en/docs/tutorial/cors.md"
    )


def test_token_counts_equal_tiktoken(
    history: dict[str, Any],
    reference: dict[str, tiktoken.Encoding],  # noqa: F811 - the imported fixture
) -> None:
    enc = reference["cl100k_base"]
    stored = rows(history["db"])
    assert len(stored) > 2000
    for v in stored:
        assert v["estimated_tokens"] == len(enc.encode(v["content"], disallowed_special=())), v[
            "chunk_id"
        ]


def test_second_snapshot_keeps_unchanged_sections_and_moves_their_lines(
    history: dict[str, Any],
) -> None:
    db, b = history["db"], history["b"]
    files_a, files_b = md_files(A), md_files(B)
    assert b["files"] == len(files_b) == 154
    assert b["parsed"] == 154 - 23  # the byte-identical files are hashed, not parsed
    assert b["new"] > 0 and b["unchanged"] > 0 and b["read"] == b["new"] + b["unchanged"]
    every = rows(db)
    newest = {v["chunk_id"]: v for v in every}  # by vid: the newest version of each id wins
    held = current_ids(db)
    assert set(held) == set(files_b)
    # The location of every id B holds points at its text in B's files.
    check_snapshot(files_b, [newest[i] for ids in held.values() for i in ids])
    # Byte-identical files: every chunk keeps its id, its only version and its digest.
    first = {v["chunk_id"]: v for v in history["a_rows"]}
    same = [p for p in files_a if files_b.get(p) == files_a[p]]
    assert len(same) == 23
    versions_of = defaultdict(list)
    for v in every:
        versions_of[v["chunk_id"]].append(v)
    for path in same:
        ids = [i for i, v in first.items() if v["path"] == path]
        assert ids and sorted(ids) == sorted(held[path])
        for i in ids:
            assert [v["record_digest"] for v in versions_of[i]] == [first[i]["record_digest"]]
    # A changed section is a new version of the same id, stamped with B's commit and date.
    changed = [i for i, vs in versions_of.items() if len(vs) == 2]
    assert changed
    for i in changed:
        old, new = versions_of[i]
        assert old["content"] != new["content"]
        assert (new["source_version"], new["effective_from"]) == (B_COMMIT, B_DATE)


def _orjson(db: str) -> dict[str, Any]:
    (v,) = [
        v
        for v in rows(db, "path = ?", ("advanced/custom-response.md",))
        if v["title"].endswith("> Use ORJSONResponse")
    ]
    return v


def test_removed_sections_are_retracted_from_the_second_snapshots_date(
    history: dict[str, Any],
) -> None:
    db, b = history["db"], history["b"]
    held = {i for ids in current_ids(db).values() for i in ids}
    stored_ids = {v["chunk_id"] for v in rows(db)}
    removed = stored_ids - held
    assert b["retracted"] == len(removed) > 0
    retracted = dbtools.query(db, "SELECT entry_seq, chunk_id, from_date FROM retractions")
    assert {r[1] for r in retracted} == removed
    assert {(r[0], r[2]) for r in retracted} == {(b["batch"] + 1, B_DATE)}
    orjson = _orjson(db)
    assert orjson["chunk_id"] in removed  # upstream dropped the "Use ORJSONResponse" advice

    def decision(pack: dict[str, Any]) -> tuple[str, Any]:
        for item in pack["admitted"]:
            if item["id"] == orjson["chunk_id"]:
                return "admitted", item
        (item,) = [e for e in pack["evicted"] if e["id"] == orjson["chunk_id"]]
        return item["reason"], item

    reason, item = decision(history["pack_after"])
    assert reason == "retracted"
    assert item["detail"] == {"from": B_DATE, "entry": b["batch"] + 1}
    assert (item["title"], item["path"]) == (orjson["title"], "advanced/custom-response.md")
    assert item["lines"] == [orjson["loc_first"], orjson["loc_last"]]
    every_after = {e["id"]: e["reason"] for e in history["pack_after"]["evicted"]}
    assert all(every_after.get(i) == "retracted" for i in removed)
    # Built as of an earlier date, or before the retraction, it is still a candidate.
    assert decision(history["pack_early"])[0] == "admitted"
    assert decision(history["pack_before"])[0] == "admitted"


def test_why_evicted_diff_replay_and_verify_tell_the_retraction(history: dict[str, Any]) -> None:
    db = history["db"]
    orjson = _orjson(db)
    after, before = history["pack_after"]["pack"], history["pack_before"]["pack"]
    why = ledger_json("why-evicted", orjson["chunk_id"], "--pack", str(after), db=db)
    (d,) = why["versions"][0]["decisions"]
    assert d["reason"] == "retracted" and d["retraction"]["reason"].startswith(
        "absent from snapshot 27c922c"
    )
    plain = run_ledger(
        "why-evicted", orjson["chunk_id"], "--pack", str(after), db=db, check=True
    ).stdout
    assert f"retracted it from {B_DATE}" in plain and "absent from snapshot" in plain
    diff = ledger_json("diff", str(before), str(after), db=db)
    (change,) = [c for c in diff["changes"] if c["id"] == orjson["chunk_id"]]
    assert change["cause"] == "retracted"
    assert change["to"]["reason"] == "retracted"
    for pack in (before, after, history["pack_early"]["pack"]):
        assert run_ledger("replay", str(pack), db=db).returncode == 0
    verified = ledger_json("verify", db=db)
    assert verified["ok"] is True and verified["first_bad"] is None


def test_an_unchanged_second_run_parses_nothing_and_records_no_entry(
    history: dict[str, Any],
) -> None:
    db = history["db"]
    head = run_ledger("head", db=db, check=True).stdout
    again = ledger_json(
        "ingest",
        str(B),
        "--rules",
        history["rules"],
        "--source-version",
        B_COMMIT,
        "--effective-from",
        B_DATE,
        db=db,
    )
    assert again == {
        "batch": None,
        "read": history["b"]["read"],
        "new": 0,
        "unchanged": history["b"]["read"],
        "files": 154,
        "retracted": 0,
        "parsed": 0,
    }
    assert run_ledger("head", db=db, check=True).stdout == head
