"""Confidentiality: chunk bodies are printed only when asked, files are owner-only.

Every chunk body here holds a unique marker. No command prints it, on stdout
or stderr, in human or `--json` form, on success or on error (the immutability
refusal, every validation error, a failing build), unless `--with-content` asks
for it; `ledger export --with-content` does, which proves the marker is there.

The ledger's own files are owner-only (0600) even under umask 000: the database
and its -wal and -shm, `ledger export -o`, the transcript outputs and the
backup `ledger init` writes before an upgrade. `ledger pack --json-pack` is the
seed-001 reference's drop-in: it gets the mode a plain open() gives, but never
more group or other permission than the fixture whose bodies it holds.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.clitools import Run, run, write_lines
from tests.conftest import ROOT, chunk
from tests.seeded import SEED

MARKER = "ZEBRA-CONFIDENTIAL-4f9a2c"
OTHER = "OKAPI-CONFIDENTIAL-77e1d0"  # a body that is refused, never stored


def body(name: str) -> str:
    return f"{name}: {MARKER} the secret body of {name}."


def rec(**fields: Any) -> dict[str, Any]:
    name = fields["id"]
    defaults = {"dedupe_key": name, "source_uri": f"doc://{name}", "content": body(name)}
    return chunk(**{**defaults, **fields})


CHUNKS = [
    rec(
        id="open-policy",
        section="policy",
        trust="application-policy",
        required_permission="policy-read",
        required=True,
        priority=90,
    ),
    rec(id="open-faq", estimated_tokens=30),
    rec(id="legal-memo", required_permission="legal-read"),
    rec(id="rumour", trust="unverified"),
    rec(id="old-notice", expires_on="2026-03-01"),
    rec(id="future-notice", effective_from="2027-01-01"),
    rec(id="big-appendix", estimated_tokens=5000, priority=1),
    rec(id="faq-mirror", dedupe_key="faq-group", priority=10),
    rec(id="faq-main", dedupe_key="faq-group", priority=20),
    rec(id="versioned", source_version="1", effective_from="2026-01-01"),
    rec(id="versioned", source_version="2", effective_from="2026-02-01"),
]


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("confidential")
    db = folder / "ledger.db"
    (folder / "chunks.jsonl").write_bytes(jsonl(CHUNKS))
    run("init", db=db, check=True)
    run("ingest", str(folder / "chunks.jsonl"), db=db, check=True)
    run("subject", "grant", "default", "policy-read", "public-read", db=db, check=True)
    run(
        "policy",
        "set",
        "--allow-trust",
        "application-policy",
        "--allow-trust",
        "approved-source",
        "--budget",
        "200",
        db=db,
        check=True,
    )
    run("build", "--as-of", "2026-07-21", db=db, check=True)
    run("subject", "grant", "default", "legal-read", db=db, check=True)
    run("build", "--as-of", "2026-07-22", "--budget", "300", db=db, check=True)
    return db


# Every read command, human and --json; REFs by id, by digest prefix, by pack digest.
READS: list[tuple[str, ...]] = [
    ("chunks",),
    ("chunks", "--id", "versioned"),
    ("packs",),
    ("show", "1"),
    ("show", "2"),
    ("diff", "1", "2"),
    ("verify",),
    ("head",),
    ("replay", "1"),
    ("replay", "2"),
    ("subject", "show", "default"),
    ("policy", "show"),
    ("export", "1"),
    ("export", "2", "--format", "markdown"),
    *[("why-evicted", i, "--hints", "all") for i in sorted({c["id"] for c in CHUNKS})],
    ("why-evicted", "versioned", "--pack", "2"),
]


def no_marker(result: Run, *markers: str) -> None:
    for marker in (MARKER, *markers):
        assert marker not in result.stdout, (result.args, "stdout", result.stdout[:3000])
        assert marker not in result.stderr, (result.args, "stderr", result.stderr[:3000])


@pytest.mark.parametrize("args", READS, ids=[" ".join(a) for a in READS])
def test_read_commands_never_print_bodies(ledger: Path, args: tuple[str, ...]) -> None:
    human = run(*args, db=ledger)
    assert human.returncode == 0, human.stderr
    no_marker(human)
    if args[0] not in ("export",):
        as_json = run(*args, "--json", db=ledger)
        assert as_json.returncode == 0, as_json.stderr
        json.loads(as_json.stdout)
        no_marker(as_json)


def test_why_evicted_by_digest_never_prints_bodies(ledger: Path) -> None:
    versions = json.loads(run("chunks", "--json", db=ledger, check=True).stdout)["chunks"]
    for v in versions[:4]:
        for ref in (v["record_digest"], v["content_digest"][:12]):
            no_marker(run("why-evicted", ref, "--json", db=ledger, check=True))


def test_building_never_prints_bodies(ledger: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    shutil.copyfile(ledger, copy)
    no_marker(run("build", "--as-of", "2026-07-23", db=copy, check=True))
    no_marker(run("build", "--as-of", "2026-07-23", "--json", db=copy, check=True))
    batch = write_lines(tmp_path / "b.jsonl", [b'{"subject": "default", "as_of": "2026-07-24"}'])
    no_marker(run("build", "--batch", str(batch), "--json", db=copy, check=True))
    (tmp_path / "more.jsonl").write_bytes(jsonl([rec(id="late-arrival")]))
    no_marker(run("ingest", str(tmp_path / "more.jsonl"), "--json", db=copy, check=True))


def test_export_prints_bodies_only_with_content(ledger: Path) -> None:
    for fmt in ("json", "markdown"):
        without = run("export", "1", "--format", fmt, db=ledger, check=True)
        no_marker(without)
        with_content = run("export", "1", "--format", fmt, "--with-content", db=ledger, check=True)
        assert MARKER in with_content.stdout  # the control: the bodies are there


# Refused input whose bodies carry the markers: one error line, and no body in it.
BAD_INGESTS: list[tuple[str, bytes]] = [
    ("changed version (immutability)", jsonl([rec(id="open-faq", content=f"{OTHER} {MARKER}")])),
    ("content over the limit", jsonl([rec(id="huge", content=MARKER + "x" * 16 * 1024 * 1024)])),
    (
        "lone surrogate in the body",
        json.dumps(rec(id="sur", content=MARKER + "\ud800")).encode() + b"\n",
    ),
    ("NUL in the body", jsonl([rec(id="nul", content=MARKER + "\u0000")])),
    (
        "invalid UTF-8 in the body",
        json.dumps(rec(id="utf", content=MARKER + "@")).encode().replace(b"@", b"\xff") + b"\n",
    ),
    (
        "duplicate key after the body",
        json.dumps(rec(id="dup"))[:-1].encode() + b', "content": "' + OTHER.encode() + b'"}\n',
    ),
    ("bad date beside the body", jsonl([rec(id="date", effective_from="2026-02-30")])),
    ("unknown field beside the body", jsonl([{**rec(id="unknown"), "note": OTHER}])),
    ("blank body", jsonl([rec(id="blank", content="  \n ")]) + jsonl([rec(id="b2")])),
    (
        "dedupe group refused",
        jsonl([rec(id="faq-third", dedupe_key="faq-group", trust="user-input")]),
    ),
    (
        "required chunk in a shared group",
        jsonl([rec(id="faq-required", dedupe_key="faq-group", required=True)]),
    ),
    ("NaN beside the body", json.dumps(rec(id="nan"))[:-1].encode() + b', "x": NaN}\n'),
]


@pytest.mark.parametrize("name,data", BAD_INGESTS, ids=[n for n, _ in BAD_INGESTS])
def test_ingest_errors_never_print_bodies(
    ledger: Path, tmp_path: Path, name: str, data: bytes
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    result = run("ingest", str(path), db=ledger)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    no_marker(result, OTHER)
    as_array = tmp_path / "bad.json"
    as_array.write_bytes(b"[" + b",".join(data.splitlines()) + b"]")
    result = run("ingest", str(as_array), db=ledger)
    assert result.returncode == 1 and result.stderr.startswith("error: "), result.stderr[-2000:]
    no_marker(result, OTHER)


def test_failing_build_never_prints_bodies(ledger: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    shutil.copyfile(ledger, copy)
    for args in (
        ("build", "--as-of", "2026-07-21", "--budget", "1"),  # required over budget
        ("build", "--as-of", "2026-07-21", "--subject", "nobody"),  # required denied
        ("why-evicted", "no-such-chunk"),
        ("show", "99"),
    ):
        result = run(*args, db=copy)
        assert result.returncode in (1, 3) and result.stderr.startswith("error: "), result
        no_marker(result)


def test_pack_and_select_errors_never_print_bodies(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(SEED))
    for item in doc["chunks"]:
        item["content"] = f"{MARKER} {item['content']}"
    cases = []
    over = json.loads(json.dumps(doc))
    over["chunks"][0]["content"] = MARKER + "x" * 10_001
    cases.append(json.dumps(over))
    bad_date = json.loads(json.dumps(doc))
    bad_date["chunks"][2]["effective_from"] = "2026-02-30"
    cases.append(json.dumps(bad_date))
    cases.append(json.dumps(doc)[:-1] + ', "chunks": []}')  # duplicate key at the end
    surrogate = json.loads(json.dumps(doc))
    surrogate["chunks"][1]["content"] = MARKER + "\ud800"
    cases.append(json.dumps(surrogate))
    for i, text in enumerate(cases):
        path = tmp_path / f"f{i}.json"
        path.write_text(text, encoding="utf-8")
        result = run("pack", "--fixture", str(path))
        assert result.returncode == 2 and result.stderr.startswith("context pack error: ")
        no_marker(result)
    select_cases = [
        {
            "budget": 1,
            "items": [
                {"id": "a", "cost": True, "priority": 0, "required": False, "content": MARKER}
            ],
        },
        {
            "budget": 1,
            "items": [{"id": "a", "cost": 5, "priority": 0, "required": True, "content": MARKER}],
        },
        {
            "budget": 1,
            "items": [
                {
                    "id": "a",
                    "cost": 1,
                    "priority": 0,
                    "required": False,
                    "content": MARKER + "\ud800",
                }
            ],
        },
    ]
    for doc_in in select_cases:
        result = run("select", input=json.dumps(doc_in).encode())
        assert result.returncode == 1 and json.loads(result.stdout)["ok"] is False
        no_marker(result)


# -- owner-only files --------------------------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def permissive() -> None:
    os.umask(0)


def test_database_and_its_wal_are_owner_only_under_umask_000(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    run("init", db=db, check=True, preexec_fn=permissive)
    assert mode(db) == 0o600
    (tmp_path / "c.jsonl").write_bytes(jsonl(CHUNKS[:3]))
    holder = sqlite3.connect(db)  # keeps -wal and -shm from being removed at the end
    try:
        holder.execute("SELECT count(*) FROM entries").fetchone()
        run("ingest", str(tmp_path / "c.jsonl"), db=db, check=True, preexec_fn=permissive)
        for suffix in ("-wal", "-shm"):
            side = Path(str(db) + suffix)
            assert side.exists(), suffix
            assert mode(side) == 0o600, (suffix, oct(mode(side)))
    finally:
        holder.close()
    assert mode(db) == 0o600


def test_exports_are_owner_only(ledger: Path, tmp_path: Path) -> None:
    target = tmp_path / "pack.md"
    run(
        "export",
        "1",
        "--format",
        "markdown",
        "--with-content",
        "-o",
        str(target),
        db=ledger,
        check=True,
        preexec_fn=permissive,
    )
    assert mode(target) == 0o600
    os.chmod(target, 0o644)  # replacing a readable file makes it owner-only
    run(
        "export",
        "1",
        "--with-content",
        "-o",
        str(target),
        db=ledger,
        check=True,
        preexec_fn=permissive,
    )
    assert mode(target) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pack.md"]  # no temporary left


def test_transcript_outputs_are_owner_only(tmp_path: Path) -> None:
    source = tmp_path / "chat.jsonl"
    source.write_text(
        json.dumps({"role": "user", "content": MARKER})
        + "\n"
        + json.dumps({"role": "assistant", "content": "ok"})
        + "\n",
        encoding="utf-8",
    )
    sidecar = tmp_path / "side" / "p.json"
    annotated = run(
        "transcript",
        "annotate",
        str(source),
        str(sidecar),
        "e001=pinned",
        check=True,
        preexec_fn=permissive,
    )
    no_marker(annotated)
    exported = run(
        "transcript",
        "export",
        str(source),
        str(sidecar),
        "100000",
        str(tmp_path / "out"),
        check=True,
        preexec_fn=permissive,
    )
    no_marker(exported)
    assert mode(sidecar) == 0o600
    for name in ("continuation.md", "omissions.json"):
        assert mode(tmp_path / "out" / name) == 0o600
    assert MARKER in (tmp_path / "out" / "continuation.md").read_text(encoding="utf-8")
    assert MARKER not in (tmp_path / "out" / "omissions.json").read_text(encoding="utf-8")


def test_upgrade_backup_is_owner_only(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    shutil.copyfile(ROOT / "fixtures" / "ledger-schema-0001.db", db)
    os.chmod(db, 0o644)  # even when the database itself was left readable
    result = run("init", db=db, check=True, preexec_fn=permissive)
    backup = Path(result.stderr.splitlines()[0].split(" to ", 1)[1])
    assert mode(backup) == 0o600


def test_json_pack_is_never_more_readable_than_its_fixture(tmp_path: Path) -> None:
    """The documented choice: a plain open()'s mode, limited to the fixture's."""
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json.dumps(SEED), encoding="utf-8")

    def umask_022() -> None:
        os.umask(0o022)

    os.chmod(fixture, 0o600)
    run(
        "pack",
        "--fixture",
        str(fixture),
        "--json-pack",
        str(tmp_path / "a.json"),
        check=True,
        preexec_fn=umask_022,
    )
    assert mode(tmp_path / "a.json") == 0o600
    os.chmod(fixture, 0o640)
    run(
        "pack",
        "--fixture",
        str(fixture),
        "--json-pack",
        str(tmp_path / "b.json"),
        check=True,
        preexec_fn=umask_022,
    )
    assert mode(tmp_path / "b.json") == 0o640
    os.chmod(fixture, 0o644)
    run(
        "pack",
        "--fixture",
        str(fixture),
        "--json-pack",
        str(tmp_path / "c.json"),
        check=True,
        preexec_fn=umask_022,
    )
    assert mode(tmp_path / "c.json") == 0o644  # as the reference writes it
