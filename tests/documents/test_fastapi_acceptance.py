"""Acceptance: real FastAPI docs, an older and a newer version, end to end through the CLI.

`fixtures/docs/fastapi-a/` and `fastapi-b/` hold real Markdown files of
`docs/en/docs` of fastapi/fastapi (MIT), each copied from the public repository
at a recorded commit (fixtures/docs/SOURCES.md): A the older version of each
file, B the newer one, and one file (`advanced/sub-applications-proxy.md`) that
upstream later removed, so it is only in A. One ledger per backend: A is
ingested, a pack is built, B is ingested as a snapshot (what B no longer holds is
retracted from B's date), and packs are built after it as of a late and an early
date. The checks read the stored rows with the database driver, the fixture
files with plain Python and the token counts with tiktoken itself.
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
A, B = DOCS / "fastapi-a", DOCS / "fastapi-b"
RULES = DOCS / "fastapi-rules.toml"
# The snapshots' labels: per-file commits differ (SOURCES.md), so the run names
# its versions and its valid-time dates itself, as `--source-version` and
# `--effective-from` allow.
A_VERSION, A_DATE = "fastapi-a", "2024-01-15"
B_VERSION, B_DATE = "fastapi-b", "2025-09-01"
MAX_TOKENS = 100  # the rules file's; small enough that sections split and one fence exceeds it
# What B no longer has, read off the files by hand: a renamed heading, a dropped
# section and a whole page that upstream removed.
REMOVED_TITLES = {
    "Static Files > Install aiofiles",
    "Testing Events: startup - shutdown",
    "Sub Applications - Behind a Proxy, Mounts",
    "Sub Applications - Behind a Proxy, Mounts > Proxy",
    "Sub Applications - Behind a Proxy, Mounts > Mounting a FastAPI application",
    "Sub Applications - Behind a Proxy, Mounts > Mounting a FastAPI application"
    " > Top-level application",
    "Sub Applications - Behind a Proxy, Mounts > Mounting a FastAPI application > Sub-application",
    "Sub Applications - Behind a Proxy, Mounts > Mounting a FastAPI application"
    " > Mount the sub-application",
    "Sub Applications - Behind a Proxy, Mounts > Check the automatic API docs",
}
WATCHED = ("tutorial/static-files.md", "Static Files > Install aiofiles")


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


def ingest(db: str, folder: Path, version: str, date: str) -> dict[str, Any]:
    return dict(
        ledger_json(
            "ingest",
            str(folder),
            "--rules",
            str(RULES),
            "--source-version",
            version,
            "--effective-from",
            date,
            db=db,
        )
    )


@pytest.fixture(scope="module")
def history(module_backend: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("fastapi")
    db = dbtools.new_ledger(tmp, module_backend)
    out: dict[str, Any] = {"db": db}
    out["a"] = ingest(db, A, A_VERSION, A_DATE)
    # Locations are those of the newest snapshot: keep A's rows as A left them.
    out["a_rows"] = rows(db, "batch_seq = ?", (out["a"]["batch"],))
    run_ledger("subject", "grant", "default", "docs-read", "advanced-read", db=db, check=True)
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
    out["pack_before"] = ledger_json("build", "--as-of", "2024-06-01", db=db)
    out["b"] = ingest(db, B, B_VERSION, B_DATE)
    out["pack_after"] = ledger_json("build", "--as-of", "2025-10-01", db=db)
    out["pack_early"] = ledger_json("build", "--as-of", "2024-06-01", db=db)
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


def check_snapshot(files: dict[str, bytes], versions: list[dict[str, Any]]) -> int:
    """Lines point at the text; every non-blank line outside front matter is covered;
    nothing over max_tokens unless it is one fenced block. Returns how many chunks
    are such an overlong fenced block."""
    by_path: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for v in versions:
        by_path[v["path"]].append(v)
    assert set(by_path) == set(files)
    fenced = 0
    for path, data in files.items():
        lines = text_lines(data)
        skip = front_matter(lines)
        covered: set[int] = set()
        pieces: dict[int, list[str]] = defaultdict(list)
        for v in by_path[path]:
            assert v["loc_kind"] == "lines"
            first, last = v["loc_first"], v["loc_last"]
            span = "\n".join(lines[first - 1 : last]).rstrip()
            if v["content"] != span:
                # One line over the limit on its own is cut at white space: a piece
                # of the one line it names.
                assert first == last and v["content"] in lines[first - 1], (path, first)
                pieces[first].append(v["content"])
            assert first > skip
            if v["estimated_tokens"] > MAX_TOKENS:
                body = v["content"].split("\n")
                assert body[0].startswith("```") and body[-1].strip().startswith("```"), (
                    path,
                    first,
                )
                assert sum(line.startswith("```") for line in body) == 2, (path, first)
                fenced += 1
            covered.update(range(first, last + 1))
        missing = [
            i for i, line in enumerate(lines, 1) if i > skip and line.strip() and i not in covered
        ]
        assert missing == [], (path, missing[:5])
        # The pieces of a cut line hold all of it, in order, and nothing else.
        for number, parts in pieces.items():
            line = lines[number - 1]
            parts.sort(key=line.index)
            assert "".join("".join(parts).split()) == "".join(line.split()), (path, number)
    return fenced


def test_first_snapshot_every_chunk_points_at_its_lines_and_covers_the_files(
    history: dict[str, Any],
) -> None:
    a = history["a"]
    files = md_files(A)
    assert a["files"] == len(files) == 11
    assert a["new"] == a["read"] and a["unchanged"] == 0 and a["retracted"]["ids"] == []
    stored = history["a_rows"]
    assert len(stored) == a["new"] > len(files)
    # The console block of tutorial/index.md is over the limit and stays whole.
    assert check_snapshot(files, stored) == 1
    assert all(
        len(v["chunk_id"]) <= 64 and v["chunk_id"].startswith("fastapi-docs-") for v in stored
    )
    assert {v["source_version"] for v in stored} == {A_VERSION}
    cors = [v for v in stored if v["path"] == "tutorial/cors.md"]
    assert "CORS (Cross-Origin Resource Sharing) > Use CORSMiddleware" in [v["title"] for v in cors]
    assert cors[0]["source_uri"] == (
        f"fixture://fastapi-docs/{A_VERSION}/docs/en/docs/tutorial/cors.md"
    )
    # A section longer than the limit is split at paragraph boundaries: one title, several chunks.
    per_title = defaultdict(int)
    for v in cors:
        per_title[v["title"]] += 1
    assert per_title["CORS (Cross-Origin Resource Sharing) > Use CORSMiddleware"] > 1


def test_token_counts_equal_tiktoken(
    history: dict[str, Any],
    reference: dict[str, tiktoken.Encoding],  # noqa: F811 - the imported fixture
) -> None:
    enc = reference["cl100k_base"]
    stored = rows(history["db"])
    assert len(stored) == history["a"]["new"] + history["b"]["new"]
    for v in stored:
        assert v["estimated_tokens"] == len(enc.encode(v["content"], disallowed_special=())), v[
            "chunk_id"
        ]


def test_second_snapshot_keeps_unchanged_sections_and_moves_their_lines(
    history: dict[str, Any],
) -> None:
    db, b = history["db"], history["b"]
    files_a, files_b = md_files(A), md_files(B)
    assert b["files"] == len(files_b) == 10
    # Every file of B differs from its version in A, so every one is parsed again.
    assert set(files_b) < set(files_a) and all(files_a[p] != files_b[p] for p in files_b)
    assert b["parsed"] == 10
    assert b["new"] > 0 and b["unchanged"] > 0 and b["read"] == b["new"] + b["unchanged"]
    every = rows(db)
    newest = {v["chunk_id"]: v for v in every}  # by vid: the newest version of each id wins
    held = current_ids(db)
    assert set(held) == set(files_b)
    # The location of every id B holds points at its text in B's files.
    assert check_snapshot(files_b, [newest[i] for ids in held.values() for i in ids]) == 1
    first = {v["chunk_id"]: v for v in history["a_rows"]}
    versions_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for v in every:
        versions_of[v["chunk_id"]].append(v)
    in_both = [i for ids in held.values() for i in ids if i in first]
    kept = [i for i in in_both if len(versions_of[i]) == 1]
    changed = [i for i in in_both if len(versions_of[i]) == 2]
    assert len(kept) == b["unchanged"] and kept and changed
    assert len(kept) + len(changed) == len(in_both)
    # An unchanged section keeps its id, its only version and its digest, with
    # the same text in both files; its lines are where B has it.
    for i in kept:
        (v,) = versions_of[i]
        assert v["record_digest"] == first[i]["record_digest"]
        assert v["source_version"] == A_VERSION
    cors_a = {v["title"]: v for v in history["a_rows"] if v["path"] == "tutorial/cors.md"}
    origin = cors_a["CORS (Cross-Origin Resource Sharing) > Origin"]
    assert origin["chunk_id"] in kept  # the "Origin" section reads the same in both versions
    # A changed section is a new version of the same id, stamped with B's version and date.
    for i in changed:
        old, new = versions_of[i]
        assert old["content"] != new["content"] and old["title"] == first[i]["title"]
        assert (new["source_version"], new["effective_from"]) == (B_VERSION, B_DATE)
    # The newer files add anchors to headings ({ #use-staticfiles }): the ids stay.
    static_b = [newest[i] for i in held["tutorial/static-files.md"]]
    assert "Static Files > Use StaticFiles" in {v["title"] for v in static_b}
    assert all(v["chunk_id"] in first for v in static_b if v["title"] != "Static Files")


def _watched(db: str) -> dict[str, Any]:
    path, title = WATCHED
    (v,) = [v for v in rows(db, "path = ?", (path,)) if v["title"] == title]
    return v


def test_removed_sections_are_retracted_from_the_second_snapshots_date(
    history: dict[str, Any],
) -> None:
    db, b = history["db"], history["b"]
    held = {i for ids in current_ids(db).values() for i in ids}
    stored = rows(db)
    removed = {v["chunk_id"] for v in stored} - held
    assert {v["title"] for v in stored if v["chunk_id"] in removed} == REMOVED_TITLES
    assert set(b["retracted"]["ids"]) == removed and len(removed) > len(REMOVED_TITLES) - 1
    retracted = dbtools.query(db, "SELECT entry_seq, chunk_id, from_date FROM retractions")
    assert {r[1] for r in retracted} == removed
    assert {(r[0], r[2]) for r in retracted} == {(b["batch"] + 1, B_DATE)}
    watched = _watched(db)
    assert watched["chunk_id"] in removed

    def decision(pack: dict[str, Any], chunk_id: str) -> tuple[str, Any]:
        for item in pack["admitted"]:
            if item["id"] == chunk_id:
                return "admitted", item
        (item,) = [e for e in pack["evicted"] if e["id"] == chunk_id]
        return item["reason"], item

    reason, item = decision(history["pack_after"], watched["chunk_id"])
    assert reason == "retracted"
    assert item["detail"] == {"from": B_DATE, "entry": b["batch"] + 1}
    assert (item["title"], item["path"]) == (watched["title"], WATCHED[0])
    assert item["lines"] == [watched["loc_first"], watched["loc_last"]]
    every_after = {e["id"]: e["reason"] for e in history["pack_after"]["evicted"]}
    assert all(every_after.get(i) == "retracted" for i in removed)
    # Built as of an earlier date, or before the retraction, each is still a candidate.
    for pack in (history["pack_early"], history["pack_before"]):
        assert all(decision(pack, i)[0] == "admitted" for i in removed)


def test_why_evicted_diff_replay_and_verify_tell_the_retraction(history: dict[str, Any]) -> None:
    db = history["db"]
    watched = _watched(db)
    after, before = history["pack_after"]["pack"], history["pack_before"]["pack"]
    why = ledger_json("why-evicted", watched["chunk_id"], "--pack", str(after), db=db)
    (d,) = why["versions"][0]["decisions"]
    assert d["reason"] == "retracted" and d["retraction"]["reason"].startswith(
        "absent from snapshot"
    )
    plain = run_ledger(
        "why-evicted", watched["chunk_id"], "--pack", str(after), db=db, check=True
    ).stdout
    assert f"retracted it from {B_DATE}" in plain and "absent from snapshot" in plain
    diff = ledger_json("diff", str(before), str(after), db=db)
    (change,) = [c for c in diff["changes"] if c["id"] == watched["chunk_id"]]
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
    again = ingest(db, B, B_VERSION, B_DATE)
    assert again == {
        "batch": None,
        "read": history["b"]["read"],
        "new": 0,
        "unchanged": history["b"]["read"],
        "files": 10,
        "retracted": {"entry": None, "ids": []},
        "reinstated": {"entry": None, "ids": []},
        "parsed": 0,
    }
    assert run_ledger("head", db=db, check=True).stdout == head
