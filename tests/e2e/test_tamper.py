"""Tampering with a real ledger: `verify`, `verify --checkpoint` and `replay`.

A ledger is built once through the CLI on each backend (a SQLite file and a
database on the throwaway PostgreSQL server; the module runs once per backend).
Every test tampers with its own exact copy (a byte copy of the file, or a
database made from the base as its template) through the backend's own driver
(`sqlite3` or `psycopg`), as an attacker with access to the database would, and
runs the CLI on the copy. The base ledger's entries:

    1 ingest seed-001          4 pack 1 (2026-07-21)      7 pack 2 (2026-09-15)
    2 grant default (4)        5 ingest crp 2026-08       8 revoke legal-read
    3 policy (4 labels, 170)   6 grant legal-read         9 pack 3 (2026-09-15, budget 150)

The expected first bad entry is the entry that owns the changed row.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from tests import dbtools
from tests.conftest import chunk, run_ledger, write_jsonl
from tests.dbtools import query
from tests.e2e.test_build import CRP_V2, content_digest, record_digest, stored
from tests.seeded import REQUEST, seed_ledger


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, module_backend: str) -> Iterator[dict[str, Any]]:
    """The ledger of the module docstring, on this module run's backend. Tests only copy it."""
    folder = tmp_path_factory.mktemp("base")
    db = dbtools.new_ledger(folder, module_backend)

    def ok(*args: str) -> str:
        return run_ledger(*args, db=db, check=True).stdout

    seed_ledger(db, build=False)  # 1-3
    checkpoint_3 = ok("head").strip()
    ok("build", "--as-of", "2026-07-21")  # 4
    ok("ingest", str(write_jsonl(folder / "v2.jsonl", [CRP_V2])))  # 5
    ok("subject", "grant", "default", "legal-read")  # 6
    ok("build", "--as-of", "2026-09-15")  # 7
    ok("subject", "revoke", "default", "legal-read")  # 8
    ok("build", "--as-of", "2026-09-15", "--budget", "150")  # 9
    checkpoint_9 = ok("head").strip()
    assert checkpoint_9.startswith("9:")
    yield {"db": db, "checkpoint_3": checkpoint_3, "checkpoint_9": checkpoint_9}
    dbtools.drop(db)


@pytest.fixture
def copy(base: dict[str, Any], tmp_path: Path) -> Iterator[str]:
    db = dbtools.copy_ledger(base["db"], tmp_path / "copy.db")
    yield db
    dbtools.drop(db)


def tamper(
    db: str, *statements: str | tuple[str, tuple[Any, ...]], bypass_foreign_keys: bool = False
) -> None:
    """Run SQL on the database directly, in one transaction; every statement must
    change something.

    `bypass_foreign_keys` is for rows that break a foreign key. On SQLite nothing
    is needed: the `sqlite3` module leaves foreign keys off unless asked. On
    PostgreSQL the attacker is the server's superuser, who switches off the
    foreign-key triggers for the transaction (session_replication_role = replica).
    """
    with dbtools.connect(db) as con:
        if bypass_foreign_keys and dbtools.is_pg(db):
            con.execute("SET LOCAL session_replication_role = replica")
        for st in statements:
            sql, params = (st, ()) if isinstance(st, str) else st
            changed = dbtools.execute(con, db, sql, params)
            assert changed > 0, f"tampering changed nothing: {sql}"


def vid(db: str, chunk_id: str, source_version: str | None = None) -> int:
    sql = "SELECT vid FROM chunk_versions WHERE chunk_id = ?"
    params: tuple[Any, ...] = (chunk_id,)
    if source_version is not None:
        sql += " AND source_version = ?"
        params += (source_version,)
    (row,) = query(db, sql, params)
    return int(row[0])


def verify(db: str, *args: str) -> tuple[int, str, dict[str, Any]]:
    plain = run_ledger("verify", *args, db=db)
    as_json = run_ledger("verify", *args, "--json", db=db)
    assert plain.returncode == as_json.returncode
    assert "Traceback" not in plain.stderr + as_json.stderr
    return plain.returncode, plain.stdout, json.loads(as_json.stdout)


def assert_caught(db: str, seq: int, kind: str, *args: str) -> dict[str, Any]:
    code, plain, data = verify(db, *args)
    assert code == 4, plain
    assert re.search(rf"\bentry {seq}\b", plain), plain
    assert data["ok"] is False
    bad = data["first_bad"]
    assert set(bad) == {"seq", "kind", "why"}
    assert (bad["seq"], bad["kind"]) == (seq, kind), bad
    assert isinstance(bad["why"], str) and bad["why"]
    return bad


# --------------------------------------------------------------------------
# an untouched copy
# --------------------------------------------------------------------------


def test_untouched_copy_verifies_and_replays(copy: str, base: dict[str, Any]) -> None:
    code, plain, data = verify(copy)
    assert code == 0 and plain.startswith("ok")
    seq, entry_hash = base["checkpoint_9"].split(":")
    assert data == {"ok": True, "entries": 9, "head": entry_hash, "first_bad": None}
    for checkpoint in (base["checkpoint_3"], base["checkpoint_9"]):
        assert verify(copy, "--checkpoint", checkpoint)[0] == 0
    for pack in ("1", "2", "3"):
        assert run_ledger("replay", pack, db=copy).returncode == 0


def test_the_chain_is_what_spec_says(copy: str) -> None:
    """Recompute every entry hash independently (RFC 8785 + SHA-256) from its
    four fields: the model the rewrite test below relies on."""
    prev = "0" * 64
    rows = query(
        copy, "SELECT seq, kind, payload_digest, prev_hash, entry_hash FROM entries ORDER BY seq"
    )
    assert [r[0] for r in rows] == list(range(1, 10))
    assert [r[1] for r in rows] == [
        "ingest",
        "grant",
        "policy",
        "pack",
        "ingest",
        "grant",
        "pack",
        "revoke",
        "pack",
    ]
    for seq, kind, payload, prev_hash, entry_hash in rows:
        assert prev_hash == prev
        assert entry_hash == _entry_hash(seq, kind, payload, prev_hash)
        prev = entry_hash


def _entry_hash(seq: int, kind: str, payload: str, prev_hash: str) -> str:
    body = {"seq": seq, "kind": kind, "payload_digest": payload, "prev_hash": prev_hash}
    return hashlib.sha256(rfc8785.dumps(body)).hexdigest()


# --------------------------------------------------------------------------
# each kind of tampering is caught at the entry that owns the row
# --------------------------------------------------------------------------


def _content_byte(db: str) -> None:
    tamper(
        db,
        (
            "UPDATE chunk_versions SET content = substr(content, 1, 9) || 'X' || "
            "substr(content, 11) "
            "WHERE vid = ?",
            (vid(db, "shipping-note"),),
        ),
    )


def _content_byte_newer_batch(db: str) -> None:
    tamper(
        db,
        (
            "UPDATE chunk_versions SET content = content || ' ' WHERE vid = ?",
            (vid(db, "current-refund-policy", "2026-08"),),
        ),
    )


def _record_field(db: str) -> None:
    tamper(db, ("UPDATE chunk_versions SET priority = 99 WHERE vid = ?", (vid(db, "refund-faq"),)))


def _reason(db: str) -> None:
    # shipping-note: budget (7) -> duplicate (6) in pack 2.
    tamper(
        db,
        (
            "UPDATE decisions SET status = 6 WHERE pack_no = 2 AND vid = ?",
            (vid(db, "shipping-note"),),
        ),
    )


def _admitted_to_evicted(db: str) -> None:
    tamper(
        db,
        (
            "UPDATE decisions SET status = 1, position = NULL WHERE pack_no = 3 AND vid = ?",
            (vid(db, "current-input"),),
        ),
    )


def _deleted_eviction(db: str) -> None:
    tamper(db, ("DELETE FROM decisions WHERE pack_no = 1 AND vid = ?", (vid(db, "forum-claim"),)))


def _budget_remaining(db: str) -> None:
    tamper(
        db,
        (
            "UPDATE decisions SET remaining = remaining + 1 WHERE pack_no = 1 AND vid = ?",
            (vid(db, "shipping-note"),),
        ),
    )


def _superseding_ref(db: str) -> None:
    tamper(
        db,
        (
            "UPDATE decisions SET ref_vid = ? WHERE pack_no = 2 AND status = 5",
            (vid(db, "mirror-refund-policy"),),
        ),
    )


def _swapped_positions(db: str) -> None:
    p, t = vid(db, "policy"), vid(db, "task-state")
    tamper(
        db,
        ("UPDATE decisions SET position = -1 WHERE pack_no = 1 AND vid = ?", (p,)),
        ("UPDATE decisions SET position = 0 WHERE pack_no = 1 AND vid = ?", (t,)),
        ("UPDATE decisions SET position = 1 WHERE pack_no = 1 AND vid = ?", (p,)),
    )


def _decision_tokens(db: str) -> None:
    tamper(
        db,
        (
            "UPDATE decisions SET tokens = tokens - 1 WHERE pack_no = 1 AND vid = ?",
            (vid(db, "policy"),),
        ),
    )


def _pack_used(db: str) -> None:
    tamper(db, "UPDATE packs SET used = used - 1 WHERE pack_no = 3")


def _pack_budget(db: str) -> None:
    tamper(db, "UPDATE packs SET budget = 171 WHERE pack_no = 1")


def _pack_grants(db: str) -> None:
    tamper(
        db,
        (
            "UPDATE packs SET grants = ? WHERE pack_no = 1",
            (
                json.dumps(
                    sorted(REQUEST["granted_permissions"] + ["legal-read"]), separators=(",", ":")
                ),
            ),
        ),
    )


def _pack_digest(db: str) -> None:
    tamper(
        db,
        "UPDATE packs SET pack_digest = replace(pack_digest, substr(pack_digest, 1, 1), 'f') "
        "WHERE pack_no = 2 AND substr(pack_digest, 1, 1) != 'f'",
    )


def _deleted_entry(db: str) -> None:
    # The entry's grant rows stay behind, pointing at it: a broken foreign key.
    tamper(db, "DELETE FROM entries WHERE seq = 6", bypass_foreign_keys=True)


def _reordered_entries(db: str) -> None:
    # Swap all fields but seq between entries 2 and 3 (entry_hash is unique: park one).
    cols = "kind, payload_digest, prev_hash, entry_hash"
    (two,) = query(db, f"SELECT {cols} FROM entries WHERE seq = 2")
    (three,) = query(db, f"SELECT {cols} FROM entries WHERE seq = 3")
    sql = (
        "UPDATE entries SET kind = ?, payload_digest = ?, prev_hash = ?, entry_hash = ? "
        "WHERE seq = ?"
    )
    tamper(
        db,
        "UPDATE entries SET entry_hash = 'parked-2' WHERE seq = 2",
        "UPDATE entries SET entry_hash = 'parked-3' WHERE seq = 3",
        (sql, (*three, 2)),
        (sql, (*two, 3)),
    )


def _entry_payload(db: str) -> None:
    tamper(
        db,
        "UPDATE entries SET payload_digest = "
        "replace(payload_digest, substr(payload_digest, 1, 1), '0') "
        "WHERE seq = 5 AND substr(payload_digest, 1, 1) != '0'",
    )


def _grant_row(db: str) -> None:
    tamper(
        db,
        "UPDATE grants SET permission = 'legal-read' "
        "WHERE entry_seq = 2 AND permission = 'public-read'",
    )


def _revoke_row(db: str) -> None:
    tamper(db, "UPDATE grants SET subject = 'someone' WHERE entry_seq = 8")


def _policy_row(db: str) -> None:
    tamper(db, "UPDATE policies SET budget = 1000 WHERE entry_seq = 3")


def _policy_trust(db: str) -> None:
    labels = sorted(REQUEST["allowed_trust"] + ["unverified"])
    tamper(
        db,
        (
            "UPDATE policies SET allowed_trust = ? WHERE entry_seq = 3",
            (json.dumps(labels, separators=(",", ":")),),
        ),
    )


SMUGGLED = chunk(
    id="smuggled-note",
    source_version="1",
    effective_from="2026-01-01",
    required_permission="public-read",
    content="Slipped in after the fact.",
)


def _insert_version(batch_seq: int, *, under_a_batch: bool = True):  # type: ignore[no-untyped-def]
    def run(db: str) -> None:
        rec = stored(SMUGGLED)
        # A row with correct digests: only the batch's own digest can give it away.
        # Under an entry that is not a batch, batch_seq breaks a foreign key.
        tamper(
            db,
            (
                "INSERT INTO chunk_versions (chunk_id, source_version, section, source_uri, "
                "effective_from, "
                "expires_on, required_permission, trust, dedupe_key, estimated_tokens, priority, "
                "required, "
                "content, content_digest, record_digest, batch_seq) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    rec["id"],
                    rec["source_version"],
                    rec["section"],
                    rec["source_uri"],
                    rec["effective_from"],
                    rec["expires_on"],
                    rec["required_permission"],
                    rec["trust"],
                    rec["dedupe_key"],
                    rec["estimated_tokens"],
                    rec["priority"],
                    bool(rec["required"]),
                    rec["content"],
                    content_digest(SMUGGLED),
                    record_digest(SMUGGLED),
                    batch_seq,
                ),
            ),
            bypass_foreign_keys=not under_a_batch,
        )

    return run


def _deleted_version(db: str) -> None:
    v = vid(db, "old-refund-policy")
    # The full-text index row references the version too (PostgreSQL enforces it).
    tamper(
        db,
        ("DELETE FROM decisions WHERE vid = ?", (v,)),
        ("DELETE FROM chunk_versions WHERE vid = ?", (v,)),
        bypass_foreign_keys=True,
    )


def _deleted_pack_rows(db: str) -> None:
    tamper(db, "DELETE FROM decisions WHERE pack_no = 2", "DELETE FROM packs WHERE pack_no = 2")


# name: (tamper, first bad seq, its kind)
CASES = {
    "changed content byte": (_content_byte, 1, "ingest"),
    "changed content in a later batch": (_content_byte_newer_batch, 5, "ingest"),
    "changed record field": (_record_field, 1, "ingest"),
    "changed reason": (_reason, 7, "pack"),
    "admitted made evicted": (_admitted_to_evicted, 9, "pack"),
    "deleted eviction row": (_deleted_eviction, 4, "pack"),
    "changed budget detail": (_budget_remaining, 4, "pack"),
    "changed superseding version": (_superseding_ref, 7, "pack"),
    "swapped output order": (_swapped_positions, 4, "pack"),
    "changed decision tokens": (_decision_tokens, 4, "pack"),
    "changed packs.used": (_pack_used, 9, "pack"),
    "changed packs.budget": (_pack_budget, 4, "pack"),
    "changed pack grants snapshot": (_pack_grants, 4, "pack"),
    "changed pack digest": (_pack_digest, 7, "pack"),
    "deleted entry": (_deleted_entry, 6, "grant"),
    # Entry 2 now holds entry 3's fields, kind included.
    "reordered entries": (_reordered_entries, 2, "policy"),
    "changed entry payload": (_entry_payload, 5, "ingest"),
    "changed grant row": (_grant_row, 2, "grant"),
    "changed revoke row": (_revoke_row, 8, "revoke"),
    "changed policy budget": (_policy_row, 3, "policy"),
    "changed policy trust": (_policy_trust, 3, "policy"),
    "inserted version into an old batch": (_insert_version(1), 1, "ingest"),
    "inserted version under a grant entry": (_insert_version(2, under_a_batch=False), 2, "grant"),
    "deleted chunk version": (_deleted_version, 1, "ingest"),
    "deleted a pack's rows": (_deleted_pack_rows, 7, "pack"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_verify_catches_tampering(copy: str, case: str) -> None:
    change, seq, kind = CASES[case]
    assert verify(copy)[0] == 0
    change(copy)
    assert_caught(copy, seq, kind)


def test_verify_reports_the_lowest_bad_entry(copy: str) -> None:
    _pack_used(copy)  # entry 9
    _policy_row(copy)  # entry 3
    _reason(copy)  # entry 7
    assert_caught(copy, 3, "policy")


# --------------------------------------------------------------------------
# truncation and rewritten history need the checkpoint
# --------------------------------------------------------------------------


def test_checkpoint_catches_truncation_of_the_newest_entries(
    copy: str, base: dict[str, Any]
) -> None:
    tamper(
        copy,
        "DELETE FROM decisions WHERE pack_no = 3",
        "DELETE FROM packs WHERE pack_no = 3",
        "DELETE FROM entries WHERE seq = 9",
        "DELETE FROM merkle_nodes WHERE level = 0 AND idx = 8",
    )  # entry 9's only node
    # What is left is a consistent shorter ledger: only the checkpoint can tell.
    code, _plain, data = verify(copy)
    assert code == 0 and data["entries"] == 8
    bad = assert_caught(copy, 9, "?", "--checkpoint", base["checkpoint_9"])
    assert "truncat" in bad["why"]
    # An older checkpoint is still extended by what is left.
    assert verify(copy, "--checkpoint", base["checkpoint_3"])[0] == 0
    assert run_ledger("head", db=copy, check=True).stdout.startswith("8:")


def test_checkpoint_catches_rewritten_history(copy: str, base: dict[str, Any]) -> None:
    """Change the policy of entry 3 and recompute every hash after it: a rewrite
    consistent in itself, which only a checkpoint from before can expose."""
    tamper(copy, "UPDATE policies SET budget = 1000 WHERE entry_seq = 3")
    policy = {"kind": "policy", "allowed_trust": sorted(REQUEST["allowed_trust"]), "budget": 1000}
    payload = hashlib.sha256(rfc8785.dumps(policy)).hexdigest()
    rows = query(copy, "SELECT seq, kind, payload_digest, prev_hash FROM entries ORDER BY seq")
    prev = query(copy, "SELECT entry_hash FROM entries WHERE seq = 2")[0][0]
    rewrite = []
    for seq, kind, old_payload, _prev in rows[2:]:
        new_payload = payload if seq == 3 else old_payload
        new_hash = _entry_hash(seq, kind, new_payload, prev)
        rewrite.append(
            (
                "UPDATE entries SET payload_digest = ?, prev_hash = ?, entry_hash = ? "
                "WHERE seq = ?",
                (new_payload, prev, new_hash, seq),
            )
        )
        prev = new_hash
    tamper(copy, *rewrite)
    dbtools.rebuild_merkle_tree(copy)  # and the tree over the entries, as an attacker would

    code, _plain, data = verify(copy)
    assert code == 0, data  # consistent in itself
    assert data["head"] != base["checkpoint_9"].split(":")[1]
    bad = assert_caught(copy, 9, "pack", "--checkpoint", base["checkpoint_9"])
    assert "rewritten" in bad["why"]
    assert_caught(copy, 3, "policy", "--checkpoint", base["checkpoint_3"])


@pytest.mark.parametrize("checkpoint", ["9", "9:abc", "x:" + "0" * 64, ""])
def test_malformed_checkpoint_is_invalid_input(copy: str, checkpoint: str) -> None:
    proc = run_ledger("verify", "--checkpoint", checkpoint, db=copy)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ")


def test_head_prints_the_checkpoint(copy: str, base: dict[str, Any]) -> None:
    assert run_ledger("head", db=copy, check=True).stdout.strip() == base["checkpoint_9"]
    assert re.fullmatch(r"9:[0-9a-f]{64}", base["checkpoint_9"])
    (row,) = query(copy, "SELECT entry_hash FROM entries WHERE seq = 9")
    assert base["checkpoint_9"] == f"9:{row[0]}"


# --------------------------------------------------------------------------
# replay compares the recorded decisions with a rebuild
# --------------------------------------------------------------------------


def _replay(db: str, pack: str) -> tuple[int, str, dict[str, Any]]:
    plain = run_ledger("replay", pack, db=db)
    as_json = run_ledger("replay", pack, "--json", db=db)
    assert plain.returncode == as_json.returncode
    return plain.returncode, plain.stdout, json.loads(as_json.stdout)


@pytest.mark.parametrize(
    ("case", "pack", "names"),
    [
        ("changed reason", "2", "shipping-note"),
        ("admitted made evicted", "3", "current-input"),
        ("changed budget detail", "1", "shipping-note"),
        ("changed superseding version", "2", "current-refund-policy"),
        ("changed decision tokens", "1", "policy"),
        ("deleted eviction row", "1", "forum-claim"),
        ("inserted version into an old batch", "1", "smuggled-note"),
        ("changed packs.used", "3", "used"),
        ("swapped output order", "1", "order"),
    ],
)
def test_replay_reports_the_first_difference(copy: str, case: str, pack: str, names: str) -> None:
    assert _replay(copy, pack)[0] == 0
    CASES[case][0](copy)
    code, plain, data = _replay(copy, pack)
    assert code == 4, plain
    assert data["identical"] is False
    assert names in data["first_difference"], data
    assert names in plain
    # The other packs are untouched by this change (when it is theirs alone).
    if case not in ("inserted version into an old batch",):
        others = {"1", "2", "3"} - {pack}
        assert all(_replay(copy, other)[0] == 0 for other in others)


# --------------------------------------------------------------------------
# rows no honest write produces: one line and exit 4, never a traceback
# --------------------------------------------------------------------------

UNREADABLE = {
    "pack grants not JSON": (
        "UPDATE packs SET grants = 'nope' WHERE pack_no = 1",
        4,
        "pack",
        [("show", "1"), ("replay", "1"), ("export", "1")],
    ),
    "pack policy not an object": (
        "UPDATE packs SET policy = '[1]' WHERE pack_no = 2",
        7,
        "pack",
        [("replay", "2"), ("why-evicted", "shipping-note", "--pack", "2")],
    ),
    "unknown decision status": (
        "UPDATE decisions SET status = 42 WHERE pack_no = 1 AND status = 7",
        4,
        "pack",
        [("show", "1"), ("why-evicted", "shipping-note"), ("diff", "1", "2")],
    ),
    "policy row not JSON": (
        "UPDATE policies SET allowed_trust = 'nope' WHERE entry_seq = 3",
        3,
        "policy",
        [("policy", "show"), ("build", "--as-of", "2026-07-21", "--ledger-at", "3")],
    ),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_unreadable_rows_are_integrity_failures(copy: str, case: str) -> None:
    sql, seq, kind, commands = UNREADABLE[case]
    tamper(copy, sql)
    assert_caught(copy, seq, kind)
    for args in commands:
        proc = run_ledger(*args, db=copy)
        assert proc.returncode == 4, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "verify" in lines[0], (
            args,
            proc.stderr,
        )
