"""`ledger erase` on both backends (issue 19): the body's bytes are gone from the
database files (SQLite: the file, its -wal and -shm; PostgreSQL: `pg_dump`),
verify and replay still pass (a pack costed with a real tokenizer included),
a body removed behind the ledger's back is still caught, bad input changes
nothing, and retention erases what ended more than DAYS ago."""

from __future__ import annotations

import datetime
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests import dbtools
from tests.conftest import chunk, run_ledger, write_jsonl

GRANTS = ("public-read", "state-read")


def _marker() -> str:
    # Lower-case letters only: the index stores words case-folded, so the same bytes
    # would also show an index entry that was left behind.
    return "zqx" + "".join(chr(ord("a") + int(c, 16)) for c in uuid.uuid4().hex[:16])


def _ok(*args: str, db: str) -> Any:
    proc = run_ledger(*args, db=db)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr)
    return json.loads(proc.stdout) if "--json" in args else proc


def _seed(db: str, tmp_path: Path, marker: str) -> None:
    """Two versions of `secret` (the first holds the marker, a long body that
    overflows a page and is toasted on PostgreSQL), a chunk that stays, a grant,
    a policy, and packs costed by the records' estimate and by cl100k_base."""
    long_body = f"Customer address of {marker}: " + ("Rue de la Paix 12, Paris. " * 400)
    records = [
        chunk(id="secret", source_version="1", content=long_body, dedupe_key="secret"),
        chunk(
            id="secret",
            source_version="2",
            content="Address withheld.",
            dedupe_key="secret",
            effective_from="2026-03-01",
        ),
        chunk(id="keeper", content="Refunds within 30 days.", dedupe_key="keeper"),
        chunk(
            id="short",
            content=f"Short-lived {marker} note.",
            dedupe_key="short",
            expires_on="2026-02-01",
        ),
    ]
    _ok("ingest", str(write_jsonl(tmp_path / "r.jsonl", records)), db=db)
    _ok("subject", "grant", "default", *GRANTS, db=db)
    _ok("policy", "set", "--allow-trust", "approved-source", "--budget", "10000", db=db)
    _ok("build", "--as-of", "2026-01-15", db=db)
    _ok("build", "--as-of", "2026-01-15", "--counter", "cl100k_base", db=db)
    _ok("build", "--as-of", "2026-07-21", "--counter", "cl100k_base", db=db)


def _raw_bytes(db: str) -> bytes:
    """Everything the database holds as bytes: on SQLite the file and its -wal and
    -shm; on PostgreSQL the `pg_dump` of the database (plain SQL, data included)."""
    if not dbtools.is_pg(db):
        path = dbtools.sqlite_file(db)
        return b"".join(
            Path(path + suffix).read_bytes()
            for suffix in ("", "-wal", "-shm")
            if Path(path + suffix).exists()
        )
    from tests import pgserver

    bindir = pgserver.find_bindir()
    assert bindir is not None
    dump = subprocess.run(
        [f"{bindir}/pg_dump", "--no-owner", "--dbname", db.replace("+psycopg", "")],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return dump.stdout


def _verify_and_replay_all(db: str) -> list[dict[str, Any]]:
    assert _ok("verify", "--json", db=db)["ok"] is True
    packs = [p["pack"] for p in _ok("packs", "--json", db=db)["packs"]]
    out = []
    for n in packs:
        result = _ok("replay", str(n), "--json", db=db)
        assert result["identical"] is True, result
        out.append(result)
    return out


def test_erased_body_is_in_no_byte_of_the_database_and_audit_still_holds(
    new_db: Any, tmp_path: Path
) -> None:
    db = new_db("erase")
    marker = _marker()
    _seed(db, tmp_path, marker)
    assert marker.encode() in _raw_bytes(db)  # the search below can find it
    before = _ok("show", "2", "--json", db=db)

    result = _ok("erase", "secret", "--reason", "GDPR art. 17 request 4521", "--json", db=db)
    assert result["entry"] == 7 and result["already_erased"] == []
    assert sorted(e["source_version"] for e in result["erased"]) == ["1", "2"]
    assert result["scrubbed"]["complete"] is True
    short = _ok("erase", "short", "--reason", "expired note", "--json", db=db)
    assert short["entry"] == 8

    assert marker.encode() not in _raw_bytes(db)
    replays = _verify_and_replay_all(db)
    # Pack 2 was costed with cl100k_base: its erased candidates kept their counts.
    assert replays[1]["not_recounted"]["versions"] == ["secret@1", "secret@2", "short@1"]
    assert "not_recounted" not in replays[0]  # estimated_tokens needs no body
    after = _ok("show", "2", "--json", db=db)
    erased = {i["id"]: i["erased"] for i in after["admitted"] + after["evicted"] if "erased" in i}
    assert erased == {
        "secret": {"entry": 7, "reason": "GDPR art. 17 request 4521"},
        "short": {"entry": 8, "reason": "expired note"},
    }
    # Only the `erased` keys were added: digests and decisions are as recorded.
    strip = [{k: v for k, v in i.items() if k != "erased"} for i in after["admitted"]]
    assert strip == before["admitted"] and after["pack_digest"] == before["pack_digest"]
    why = _ok("why-evicted", "secret", "--json", db=db)["versions"]
    assert [v["erased"]["entry"] for v in why] == [7, 7] and why[0]["decisions"]
    shown = run_ledger("show", "2", db=db).stdout
    assert "erased bodies: 3 (entry 7: 2, entry 8: 1; digests and decisions kept)" in shown
    assert _ok("search", marker, "--json", db=db)["results"] == []
    # A new build with the tokenizer costs erased versions from the cached counts.
    _ok("build", "--as-of", "2026-01-20", "--counter", "o200k_base", db=db)
    _verify_and_replay_all(db)


def test_export_and_chunks_show_the_erasure_instead_of_the_body(
    new_db: Any, tmp_path: Path
) -> None:
    db = new_db("export")
    marker = _marker()
    _seed(db, tmp_path, marker)
    _ok("erase", "secret", "--reason", "customer request", db=db)
    export = json.loads(_ok("export", "1", "--format", "json", "--with-content", db=db).stdout)
    by_id = {i["id"]: i for i in export["admitted"]}
    assert "content" not in by_id["secret"]
    assert by_id["secret"]["erased"] == {"entry": 7, "reason": "customer request"}
    assert by_id["keeper"]["content"] == "Refunds within 30 days."
    md = run_ledger("export", "1", "--format", "markdown", "--with-content", db=db).stdout
    assert "(body erased by entry 7: customer request)" in md and "Rue de la Paix" not in md
    assert "Refunds within 30 days." in md
    chunks = _ok("chunks", "--json", db=db)["chunks"]
    assert [c.get("erased") for c in chunks if c["id"] == "secret"] == [
        {"entry": 7, "reason": "customer request"}
    ] * 2
    page = tmp_path / "pack.html"
    _ok("report", "1", "--with-content", "-o", str(page), db=db)
    html = page.read_text(encoding="utf-8")
    assert "Body erased by entry 7: customer request" in html and "Rue de la Paix" not in html


def test_erasing_again_records_nothing_and_says_so(new_db: Any, tmp_path: Path) -> None:
    db = new_db("again")
    _seed(db, tmp_path, _marker())
    first = _ok("erase", "secret", "--reason", "r", "--json", db=db)
    head = _ok("head", "--json", db=db)
    proc = run_ledger("erase", "secret", "--reason", "r", "--json", db=db)
    assert proc.returncode == 0
    again = json.loads(proc.stdout)
    assert again["entry"] is None and again["erased"] == []
    assert [a["erased"] for a in again["already_erased"]] == [
        {"entry": first["entry"], "reason": "r"}
    ] * 2
    assert "already erased; no entry recorded" in proc.stderr
    assert _ok("head", "--json", db=db) == head
    # A mixed run erases the rest in one entry and lists what was erased before.
    mixed = _ok("erase", "secret", "keeper", "--reason", "all", "--json", db=db)
    assert [e["id"] for e in mixed["erased"]] == ["keeper"]
    assert len(mixed["already_erased"]) == 2 and mixed["entry"] == head["seq"] + 1
    _verify_and_replay_all(db)


def test_the_python_api_returns_the_json_of_the_command(new_db: Any, tmp_path: Path) -> None:
    import ledger

    db = new_db("api")
    _seed(db, tmp_path, _marker())
    copy = dbtools.copy_ledger(db, tmp_path / "copy.db")
    try:
        with ledger.open(db) as lg:
            result = lg.erase(["keeper"], reason="api")
        assert isinstance(result, ledger.EraseResult) and result.entry == 7
        assert result.to_json() == _ok("erase", "keeper", "--reason", "api", "--json", db=copy)
    finally:
        dbtools.drop(copy)


def _tamper(db: str, sql: str) -> None:
    with dbtools.connect(db) as con:
        assert dbtools.execute(con, db, sql) >= 1


def _verify_fails(db: str, why: str) -> dict[str, Any]:
    proc = run_ledger("verify", "--json", db=db)
    assert proc.returncode == 4, proc.stdout
    bad = json.loads(proc.stdout)["first_bad"]
    assert why in bad["why"], bad
    return dict(bad)


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        # A body removed without an erase entry.
        ("UPDATE chunk_versions SET content = NULL WHERE chunk_id = 'keeper'", "no erase entry"),
        # An erased version's metadata changed: its metadata digest no longer matches.
        (
            "UPDATE chunk_versions SET priority = 99 WHERE chunk_id = 'secret' "
            "AND source_version = '1'",
            "metadata digest",
        ),
        # A body put back after its erasure.
        (
            "UPDATE chunk_versions SET content = 'back' WHERE chunk_id = 'secret' "
            "AND source_version = '2'",
            "stored again",
        ),
        # The recorded reason rewritten: in one row, and in every row of the entry.
        ("UPDATE erasures SET reason = 'nothing to see' WHERE vid = 1", "disagree on reason"),
        ("UPDATE erasures SET reason = 'nothing to see' WHERE entry_seq = 7", "payload digest"),
        # The erasure's own metadata digest, or its entry, rewritten.
        (
            "UPDATE erasures SET metadata_digest = '" + "0" * 64 + "' WHERE vid = 1",
            "metadata digest",
        ),
        ("UPDATE erasures SET entry_seq = 1 WHERE vid = 1", "of kind ingest"),
        # An erasure slipped in for a body nulled behind the ledger's back, with the
        # fields' own metadata digest: the erase entry's payload does not cover it.
        ("INSERT_ERASURE", "payload digest"),
    ],
)
def test_verify_still_catches_what_no_erase_entry_names(
    new_db: Any, tmp_path: Path, sql: str, why: str
) -> None:
    db = new_db("tamper")
    _seed(db, tmp_path, _marker())
    _ok("erase", "secret", "--reason", "r", db=db)
    if sql == "INSERT_ERASURE":
        from ledger.core.erasure import metadata_digest

        (row,) = dbtools.query(
            db, "SELECT vid, content_digest FROM chunk_versions WHERE chunk_id = 'keeper'"
        )
        rec = chunk(id="keeper", content="", dedupe_key="keeper")
        digest = metadata_digest(rec, row[1])
        _tamper(db, f"INSERT INTO erasures VALUES ({row[0]}, 7, 'r', '{digest}')")
        _tamper(db, f"UPDATE chunk_versions SET content = NULL WHERE vid = {row[0]}")
    else:
        _tamper(db, sql)
    _verify_fails(db, why)


def test_a_tampered_body_is_not_erased(new_db: Any, tmp_path: Path) -> None:
    db = new_db("refuse")
    _seed(db, tmp_path, _marker())
    _tamper(db, "UPDATE chunk_versions SET content = 'changed' WHERE chunk_id = 'keeper'")
    before = dbtools.snapshot(db)
    proc = run_ledger("erase", "keeper", "--reason", "hide it", db=db)
    assert proc.returncode == 4 and proc.stderr.startswith("error: chunk keeper@1: content")
    assert len(proc.stderr.splitlines()) == 1
    assert dbtools.snapshot(db) == before


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("nope-nope", "--reason", "r"), 3, "no chunk id"),
        (("--ended-before", "2026-02-30", "--reason", "r"), 1, "must use YYYY-MM-DD"),
        (("secret",), 2, "--reason TEXT is required"),
        (("secret", "--reason", "   "), 1, "must not be blank"),
        (("secret", "--ended-before", "2026-02-01", "--reason", "r"), 2, "one way"),
        (("--retention", "--ended-before", "2026-02-01", "--reason", "r"), 2, "one way"),
        (("--reason", "r"), 2, "nothing to erase"),
        (("--retention", "--reason", "r"), 1, "no retention"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(
    new_db: Any, tmp_path: Path, args: tuple[str, ...], code: int, words: str
) -> None:
    db = new_db("bad")
    _seed(db, tmp_path, _marker())
    before = dbtools.snapshot(db)
    proc = run_ledger("erase", *args, db=db)
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("error: ")
    assert words in proc.stderr
    assert dbtools.snapshot(db) == before


def test_ended_before_erases_what_ended_for_good(new_db: Any, tmp_path: Path) -> None:
    db = new_db("ended")
    records = [
        # Expired on 2026-03-01.
        chunk(id="exp", expires_on="2026-03-01", dedupe_key="exp"),
        # v1 superseded from 2026-02-01 on by v2, which stays valid: ended.
        chunk(id="sup", source_version="1", dedupe_key="sup"),
        chunk(id="sup", source_version="2", effective_from="2026-02-01", dedupe_key="sup"),
        # v1 superseded only until v2 expires: a build after that admits v1 again.
        chunk(id="tmp", source_version="1", dedupe_key="tmp"),
        chunk(
            id="tmp",
            source_version="2",
            effective_from="2026-02-01",
            expires_on="2026-09-01",
            dedupe_key="tmp",
        ),
        # Not yet effective on the date, and a plain current version.
        chunk(id="later", effective_from="2026-06-01", dedupe_key="later"),
        chunk(id="now", dedupe_key="now"),
        # Withdrawn from 2026-03-15 by the retract below; restricted and untrusted,
        # which does not matter.
        chunk(
            id="gone",
            dedupe_key="gone",
            required_permission="legal-read",
            trust="unverified",
        ),
    ]
    _ok("ingest", str(write_jsonl(tmp_path / "e.jsonl", records)), db=db)
    _ok("retract", "gone", "--from", "2026-03-15", db=db)
    result = _ok(
        "erase", "--ended-before", "2026-04-01", "--reason", "audit period", "--json", db=db
    )
    assert result["ended_before"] == "2026-04-01"
    erased = sorted((e["id"], e["source_version"]) for e in result["erased"])
    assert erased == [("exp", "1"), ("gone", "1"), ("sup", "1")]
    # On the expiry day itself a version has ended (expires_on is exclusive).
    assert (
        _ok("erase", "--ended-before", "2026-03-01", "--reason", "x", "--json", db=db)[
            "already_erased"
        ][0]["id"]
        == "exp"
    )
    _verify_and_replay_all(db)


def test_retention_is_a_policy_entry_and_erase_applies_it(new_db: Any, tmp_path: Path) -> None:
    db = new_db("retain")
    today = datetime.date.today()

    def ago(days: int) -> str:
        return (today - datetime.timedelta(days=days)).isoformat()

    records = [
        chunk(id="old", effective_from=ago(400), expires_on=ago(100), dedupe_key="old"),
        chunk(id="recent", effective_from=ago(400), expires_on=ago(10), dedupe_key="recent"),
        chunk(id="live", effective_from=ago(400), dedupe_key="live"),
    ]
    _ok("ingest", str(write_jsonl(tmp_path / "t.jsonl", records)), db=db)
    _ok("subject", "grant", "default", *GRANTS, db=db)
    _ok("policy", "set", "--allow-trust", "approved-source", "--budget", "100", db=db)
    first = _ok("build", "--as-of", ago(200), "--json", db=db)
    change = run_ledger("policy", "set", "--retain-bodies", "30", db=db)
    assert change.returncode == 0 and "kept 30 days" in change.stdout
    shown = _ok("policy", "show", "--json", db=db)
    assert shown["policy"] == {
        "allowed_trust": ["approved-source"],
        "budget": 100,
        "retain_bodies": 30,
    }
    assert "retain_bodies" not in shown["history"][0]  # the first policy entry is as it was
    # The retention is no selection input: the same build has the same pack digest.
    assert _ok("build", "--as-of", ago(200), "--json", db=db)["pack_digest"] == first["pack_digest"]
    result = _ok("erase", "--retention", "--reason", "retention policy", "--json", db=db)
    assert result["ended_before"] == ago(30)
    assert [e["id"] for e in result["erased"]] == ["old"]
    assert _ok("policy", "set", "--retain-bodies", "off", db=db)
    assert "retain_bodies" not in _ok("policy", "show", "--json", db=db)["policy"]
    bad = run_ledger("policy", "set", "--retain-bodies", "ninety", db=db)
    assert bad.returncode == 1 and "not a number of days" in bad.stderr
    _verify_and_replay_all(db)


def test_sqlite_erase_zeroes_freed_bytes_even_when_secure_delete_is_off(tmp_path: Path) -> None:
    """The bytes go because erase turns `secure_delete` on, merges the index and
    checkpoints, not because this SQLite is built with secure_delete on: the
    connections here start with it off. Nulling the body by hand the same way
    leaves the marker in the file (the control)."""
    import sqlite3

    from sqlalchemy import event

    from ledger.store.engine import make_engine
    from ledger.store.erase import erase

    db = dbtools.new_ledger(tmp_path / "sd", "sqlite")
    marker = _marker()
    _seed(db, tmp_path, marker)
    control = tmp_path / "control.db"
    dbtools.copy_ledger(db, control)
    con = sqlite3.connect(control, isolation_level=None)
    try:
        con.execute("PRAGMA secure_delete = OFF")
        con.execute(
            "UPDATE chunk_versions SET content = NULL WHERE chunk_id IN ('secret', 'short')"
        )
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    assert marker.encode() in _raw_bytes(str(control))

    engine = make_engine("sqlite:///" + db)
    event.listen(engine, "connect", lambda c, _r: c.execute("PRAGMA secure_delete = OFF"))
    try:
        result = erase(engine, ["secret", "short"], reason="r")
    finally:
        engine.dispose()
    assert result["scrubbed"] == {"method": "sqlite wal_checkpoint(TRUNCATE)", "complete": True}
    assert marker.encode() not in _raw_bytes(db)
    assert not Path(db + "-wal").exists() or Path(db + "-wal").stat().st_size == 0
    _verify_and_replay_all(db)


def test_a_reader_holding_a_snapshot_delays_the_scrub_and_a_rerun_finishes_it(
    tmp_path: Path,
) -> None:
    import sqlite3

    db = dbtools.new_ledger(tmp_path / "reader", "sqlite")
    marker = _marker()
    _seed(db, tmp_path, marker)
    reader = sqlite3.connect(db, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM chunk_versions").fetchone()  # holds a snapshot
        proc = run_ledger("erase", "secret", "short", "--reason", "r", "--json", db=db)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["scrubbed"]["complete"] is False
        assert "did not finish (another connection holds an old snapshot)" in proc.stderr
    finally:
        reader.close()
    again = _ok("erase", "secret", "short", "--reason", "r", "--json", db=db)
    assert again["entry"] is None and again["scrubbed"]["complete"] is True
    assert marker.encode() not in _raw_bytes(db)


def test_postgresql_statistics_hold_no_erased_body(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Autovacuum's ANALYZE copies common values, histogram bounds and lexemes of
    the content into pg_stats, readable by any user of the database: an erase
    must leave none of the marker there (issue 38, item 2)."""
    request.getfixturevalue("pg_server")
    db = dbtools.new_ledger(tmp_path / "db", "postgresql")
    marker = _marker()
    body = f"Home address {marker} street"
    records = [
        chunk(id=f"copy-{i:02d}", content=body, dedupe_key=f"copy-{i:02d}") for i in range(40)
    ]
    records.append(chunk(id="keeper", content="Refunds within 30 days.", dedupe_key="keeper"))
    _ok("ingest", str(write_jsonl(tmp_path / "r.jsonl", records)), db=db)

    def statistics() -> str:
        with dbtools.connect(db) as con:
            con.execute("ANALYZE")  # what autovacuum does on its own schedule
            rows = con.execute(
                "SELECT tablename, attname, most_common_vals::text, histogram_bounds::text, "
                "most_common_elems::text FROM pg_stats WHERE schemaname = current_schema()"
            ).fetchall()
            ext = con.execute("SELECT * FROM pg_stats_ext").fetchall()
        return repr(rows) + repr(ext)

    assert marker in statistics()  # the statistics did hold the body
    _ok("erase", *[f"copy-{i:02d}" for i in range(40)], "--reason", "erasure request", db=db)
    with dbtools.connect(db) as con:  # the statistics as the erase left them
        rows = con.execute(
            "SELECT most_common_vals::text, histogram_bounds::text, most_common_elems::text "
            "FROM pg_stats WHERE schemaname = current_schema()"
        ).fetchall()
    assert marker not in repr(rows)
    assert marker not in statistics()
    dbtools.drop(db)
