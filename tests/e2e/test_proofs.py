"""Proofs and checkpoints end to end, on SQLite and PostgreSQL, as a user runs them.

A ledger is built once per backend through the CLI (the entries of
tests/e2e/test_tamper.py, 1-9, plus entry 10: an ingest of one new chunk), and
checkpoint files are taken at sizes 3, 9 and 10, signed with a key made by
`ledger keygen`. Tests read it, or tamper with their own copy through the
backend's driver and check that `verify --checkpoint FILE` catches it.

Expected roots are computed here from the raw entry hashes by RFC 9162's
recursive definition (not by the ledger's stored-node arithmetic).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from tests import dbtools
from tests.conftest import chunk, run_ledger, write_jsonl
from tests.dbtools import query
from tests.e2e.test_build import CRP_V2, record_digest, stored
from tests.e2e.test_tamper import _entry_hash, tamper, verify
from tests.seeded import seed_ledger

NEW_CHUNK = chunk(id="audit-note", content="The auditor's note, ingested as entry 10.")


def _mth(leaves: list[bytes]) -> bytes:
    """MTH(D[n]) exactly as RFC 9162 section 2.1.1 defines it."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


def _leaves(db: str, size: int) -> list[bytes]:
    rows = query(db, "SELECT entry_hash FROM entries WHERE seq <= ? ORDER BY seq", (size,))
    return [bytes.fromhex(h) for (h,) in rows]


def expected_root(db: str, size: int) -> bytes:
    return _mth(_leaves(db, size))


def _rfc_path(m: int, leaves: list[bytes]) -> list[bytes]:
    """PATH(m, D[n]) exactly as RFC 9162 section 2.1.3.1 defines it."""
    if len(leaves) == 1:
        return []
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    if m < k:
        return [*_rfc_path(m, leaves[:k]), _mth(leaves[k:])]
    return [*_rfc_path(m - k, leaves[k:]), _mth(leaves[:k])]


def expected_path(db: str, index: int, size: int) -> list[bytes]:
    return _rfc_path(index, _leaves(db, size))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, module_backend: str) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("proofs")
    db = dbtools.new_ledger(folder, module_backend)

    def ok(*args: str) -> str:
        return run_ledger(*args, db=db, check=True).stdout

    key, vkey = folder / "ledger.key", folder / "ledger.vkey"
    vkey.write_text(ok("keygen", "auditor.example/ledger", "-o", str(key)))
    seed_ledger(db, build=False)  # 1-3
    ok("checkpoint", "--key", str(key), "-o", str(folder / "cp3.txt"))
    ok("build", "--as-of", "2026-07-21")  # 4
    ok("ingest", str(write_jsonl(folder / "v2.jsonl", [CRP_V2])))  # 5
    ok("subject", "grant", "default", "legal-read")  # 6
    ok("build", "--as-of", "2026-09-15")  # 7
    ok("subject", "revoke", "default", "legal-read")  # 8
    ok("build", "--as-of", "2026-09-15", "--budget", "150")  # 9
    ok("checkpoint", "--key", str(key), "-o", str(folder / "cp9.txt"))
    ok("ingest", str(write_jsonl(folder / "new.jsonl", [NEW_CHUNK])))  # 10
    ok("checkpoint", "--key", str(key), "-o", str(folder / "cp10.txt"))
    yield {
        "db": db,
        "folder": folder,
        "key": key,
        "vkey": vkey,
        **{f"cp{n}": folder / f"cp{n}.txt" for n in (3, 9, 10)},
    }
    dbtools.drop(db)


@pytest.fixture
def copy(base: dict[str, Any], tmp_path: Path) -> Iterator[str]:
    db = dbtools.copy_ledger(base["db"], tmp_path / "copy.db")
    yield db
    dbtools.drop(db)


def cli_json(*args: str, db: str | None = None) -> Any:
    proc = run_ledger(*args, "--json", db=db, check=True)
    return json.loads(proc.stdout)


# --------------------------------------------------------------------------
# checkpoints and keys
# --------------------------------------------------------------------------


def test_checkpoint_is_a_tlog_checkpoint_with_the_rfc_root(base: dict[str, Any]) -> None:
    db = base["db"]
    text = run_ledger("checkpoint", db=db, check=True).stdout
    origin, size, root_b64, rest = text.split("\n", 3)
    assert re.fullmatch(r"ledger/[0-9a-f]{32}", origin)
    assert size == "10" and rest == ""
    assert base64.b64decode(root_b64) == expected_root(db, 10)
    # The signed files: the same text, a blank line, one em-dash signature line.
    signed = base["cp10"].read_text(encoding="utf-8")
    body, sig = signed.split("\n\n")
    assert body + "\n" == text
    assert re.fullmatch(r"\u2014 auditor\.example/ledger [A-Za-z0-9+/]+=*\n", sig)
    raw = base64.b64decode(sig.split(" ")[2])
    vkey = base["vkey"].read_text().strip()
    assert raw[:4].hex() == vkey.split("+")[1] and len(raw) == 4 + 64
    # The older checkpoints name the same origin and the roots of their sizes.
    for n in (3, 9):
        lines = base[f"cp{n}"].read_text().split("\n")
        assert lines[0] == origin and lines[1] == str(n)
        assert base64.b64decode(lines[2]) == expected_root(db, n)


def test_checkpoint_json_and_empty_ledger(
    base: dict[str, Any], tmp_path: Path, module_backend: str
) -> None:
    data = cli_json("checkpoint", db=base["db"])
    assert data["size"] == 10 and data["root"] == expected_root(base["db"], 10).hex()
    assert data["note"] == run_ledger("checkpoint", db=base["db"], check=True).stdout
    empty = dbtools.new_ledger(tmp_path, module_backend, "empty")
    try:
        lines = run_ledger("checkpoint", db=empty, check=True).stdout.split("\n")
        assert lines[1:] == ["0", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", ""]
        # Two ledgers never share an origin.
        assert lines[0] != data["origin"]
    finally:
        dbtools.drop(empty)


def test_keygen_writes_an_owner_only_key_and_refuses_to_overwrite(tmp_path: Path) -> None:
    key = tmp_path / "k.key"
    proc = run_ledger("keygen", "team/ledger", "-o", str(key), check=True)
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    secret = key.read_text().strip()
    assert secret.startswith("PRIVATE+KEY+team/ledger+")
    vkey = proc.stdout.strip()
    assert re.fullmatch(r"team/ledger\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}", vkey)
    assert secret.split("+", 4)[4] not in proc.stdout + proc.stderr
    again = run_ledger("keygen", "team/ledger", "-o", str(key))
    assert again.returncode == 1 and again.stderr.startswith("error: ")
    assert "Traceback" not in again.stderr and key.read_text().strip() == secret
    bad = run_ledger("keygen", "two words", "-o", str(tmp_path / "x.key"))
    assert bad.returncode == 1 and not (tmp_path / "x.key").exists()


def test_a_key_name_beyond_ascii_signs_and_verifies(base: dict[str, Any], tmp_path: Path) -> None:
    """Issue 38, item 15: signed-note names are UTF-8; keygen wrote its file as
    ASCII and gave a UnicodeEncodeError traceback for `café.example/ledger`."""
    key, vkey = tmp_path / "k.key", tmp_path / "k.vkey"
    proc = run_ledger("keygen", "café.example/ledger", "-o", str(key))
    assert proc.returncode == 0, proc.stderr
    vkey.write_text(proc.stdout)
    assert proc.stdout.startswith("café.example/ledger+")
    cp = tmp_path / "cp.txt"
    run_ledger("checkpoint", "--key", str(key), "-o", str(cp), db=base["db"], check=True)
    ok = run_ledger("verify", "--checkpoint", str(cp), "--vkey", str(vkey), db=base["db"])
    assert ok.returncode == 0, ok.stderr


def test_checkpoint_verify_exit_codes(base: dict[str, Any], tmp_path: Path) -> None:
    vkey = base["vkey"].read_text().strip()
    ok = run_ledger("checkpoint", "verify", str(base["cp9"]), "--vkey", vkey)
    assert ok.returncode == 0 and ok.stdout.startswith("ok:")
    # The key as a file works too.
    assert (
        run_ledger("checkpoint", "verify", str(base["cp9"]), "--vkey", str(base["vkey"])).returncode
        == 0
    )
    # A changed size, a changed root: the signature no longer holds.
    text = base["cp9"].read_text()
    lines = text.split("\n")
    root = lines[2]
    other_root = ("B" if root[0] == "A" else "A") + root[1:]
    for changed in (text.replace("\n9\n", "\n8\n", 1), text.replace(root, other_root, 1)):
        f = tmp_path / "changed.txt"
        f.write_text(changed)
        proc = run_ledger("checkpoint", "verify", str(f), "--vkey", vkey)
        assert proc.returncode == 4 and proc.stdout.startswith("FAILED"), proc.stderr
    # Another key: exit 4. An unsigned checkpoint: exit 4.
    other = run_ledger("keygen", "other", "-o", str(tmp_path / "o.key"), check=True).stdout.strip()
    assert run_ledger("checkpoint", "verify", str(base["cp9"]), "--vkey", other).returncode == 4
    unsigned = tmp_path / "unsigned.txt"
    unsigned.write_text(text.split("\n\n")[0] + "\n")
    assert run_ledger("checkpoint", "verify", str(unsigned), "--vkey", vkey).returncode == 4
    # Malformed: exit 1 with one line.
    for junk in ("not a checkpoint\n", "x\n\n- bad line\n"):
        f = tmp_path / "junk.txt"
        f.write_text(junk)
        proc = run_ledger("checkpoint", "verify", str(f), "--vkey", vkey)
        assert (
            proc.returncode == 1
            and proc.stderr.startswith("error: ")
            and proc.stderr.count("\n") == 1
        )
    assert (
        run_ledger("checkpoint", "verify", str(base["cp9"]), "--vkey", "nonsense").returncode == 1
    )


def test_head_at(base: dict[str, Any]) -> None:
    rows = dict(query(base["db"], "SELECT seq, entry_hash FROM entries"))
    assert run_ledger("head", db=base["db"], check=True).stdout.strip() == f"10:{rows[10]}"
    assert (
        run_ledger("head", "--at", "4", db=base["db"], check=True).stdout.strip() == f"4:{rows[4]}"
    )
    missing = run_ledger("head", "--at", "11", db=base["db"])
    assert missing.returncode == 3
    # In the command's words: no `head()` of the Python API in a command's line.
    assert missing.stderr == "error: --at: entry 11 does not exist (the newest is entry 10)\n"


# --------------------------------------------------------------------------
# inclusion and consistency proofs
# --------------------------------------------------------------------------

PROOF_KEYS = {"pack", "entry", "leaf_index", "tree_size", "leaf_hash", "root", "path"}


def proof_verify(tmp_path: Path, doc: Any, *args: str) -> int:
    f = tmp_path / "proof.json"
    f.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    proc = run_ledger("proof", "verify", str(f), *args)
    assert "Traceback" not in proc.stderr
    if proc.returncode == 1:
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
    return proc.returncode


@pytest.mark.parametrize("pack", [1, 2, 3])
def test_prove_every_pack_and_verify_offline(
    base: dict[str, Any], tmp_path: Path, pack: int
) -> None:
    db = base["db"]
    doc = cli_json("prove", str(pack), db=db)
    assert PROOF_KEYS <= set(doc)
    entry = {1: 4, 2: 7, 3: 9}[pack]
    assert (doc["pack"], doc["entry"], doc["leaf_index"], doc["tree_size"]) == (
        pack,
        entry,
        entry - 1,
        10,
    )
    assert doc["root"] == expected_root(db, 10).hex()
    (entry_hash,) = query(db, "SELECT entry_hash FROM entries WHERE seq = ?", (entry,))[0]
    assert doc["leaf_hash"] == hashlib.sha256(b"\x00" + bytes.fromhex(entry_hash)).hexdigest()
    (digest,) = query(db, "SELECT pack_digest FROM packs WHERE pack_no = ?", (pack,))[0]
    assert doc["pack_payload"]["pack_digest"] == digest
    assert doc["path"] == [h.hex() for h in expected_path(db, entry - 1, 10)]
    # No database: the proof alone, then bound to the signed checkpoint of size 10.
    assert proof_verify(tmp_path, doc) == 0
    assert (
        proof_verify(tmp_path, doc, "--checkpoint", str(base["cp10"]), "--vkey", str(base["vkey"]))
        == 0
    )
    # Against the checkpoint of another size it is not that tree's proof.
    assert proof_verify(tmp_path, doc, "--checkpoint", str(base["cp9"])) == 4
    # In the tree of size 9, matching cp9.
    older = cli_json("prove", str(pack), "--size", "9", db=db)
    assert older["tree_size"] == 9 and older["root"] == expected_root(db, 9).hex()
    assert proof_verify(tmp_path, older, "--checkpoint", str(base["cp9"])) == 0


def test_a_claim_without_its_binding_is_malformed_and_a_bare_proof_says_only_what_it_proves(
    base: dict[str, Any], tmp_path: Path
) -> None:
    doc = cli_json("prove", "1", db=base["db"])
    # Stripped of what binds the leaf to its entry and pack, yet claiming pack 77.
    stripped = {
        k: v for k, v in doc.items() if k not in ("pack_payload", "entry_fields", "entry_hash")
    }
    for claim in ({**stripped, "pack": 77}, stripped, {**doc, "pack": 77, "pack_payload": None}):
        f = tmp_path / "claim.json"
        f.write_text(json.dumps({k: v for k, v in claim.items() if v is not None}))
        proc = run_ledger("proof", "verify", str(f))
        assert proc.returncode == 1, proc.stdout
        assert proc.stdout == "" and "without" in proc.stderr and "ok" not in proc.stderr
    # A pack claimed with another pack's payload is not that pack's proof either.
    assert proof_verify(tmp_path, {**doc, "pack": 2}) == 4
    # Bare RFC 9162: leaf_index, tree_size, leaf_hash, root, path; no entry, no pack.
    bare = {k: doc[k] for k in ("leaf_index", "tree_size", "leaf_hash", "root", "path")}
    f = tmp_path / "bare.json"
    f.write_text(json.dumps(bare))
    proc = run_ledger("proof", "verify", str(f), check=True)
    assert proc.stdout.startswith(f"ok: leaf hash {doc['leaf_hash']} is leaf {doc['leaf_index']}")
    assert "pack" not in proc.stdout.replace("no entry or pack is claimed", "")
    assert proof_verify(tmp_path, {**bare, "leaf_index": doc["leaf_index"] + 1}) == 4


def _flip_hex(value: str, bit: int) -> str:
    raw = bytearray(bytes.fromhex(value))
    raw[bit // 8] ^= 1 << (bit % 8)
    return raw.hex()


def test_every_single_bit_change_of_an_inclusion_proof_is_rejected(
    base: dict[str, Any], tmp_path: Path
) -> None:
    doc = cli_json("prove", "2", db=base["db"])
    cp = ("--checkpoint", str(base["cp10"]))
    cases: list[tuple[str, Any]] = []
    for bit in (0, 255):
        for i in range(len(doc["path"])):
            path = list(doc["path"])
            path[i] = _flip_hex(path[i], bit)
            cases.append((f"path[{i}] bit {bit}", {**doc, "path": path}))
        for key in ("root", "leaf_hash", "entry_hash"):
            cases.append((f"{key} bit {bit}", {**doc, key: _flip_hex(doc[key], bit)}))
        for key in ("pack_digest", "input_digest"):
            payload = {**doc["pack_payload"], key: _flip_hex(doc["pack_payload"][key], bit)}
            cases.append((f"{key} bit {bit}", {**doc, "pack_payload": payload}))
    for b in (0, 1, 3):
        cases.append((f"leaf_index bit {b}", {**doc, "leaf_index": doc["leaf_index"] ^ (1 << b)}))
        cases.append(
            (
                f"entry and index bit {b}",
                {
                    **doc,
                    "entry": ((doc["entry"] - 1) ^ (1 << b)) + 1,
                    "leaf_index": doc["leaf_index"] ^ (1 << b),
                },
            )
        )
        cases.append((f"tree_size bit {b}", {**doc, "tree_size": doc["tree_size"] ^ (1 << b)}))
    for desc, bad in cases:
        code = proof_verify(tmp_path, bad, *cp)
        assert code in (1, 4), desc  # rejected: invalid, or not even well formed
    # Structural damage is malformed input (exit 1); a missing hash is invalid (exit 4).
    assert proof_verify(tmp_path, {k: v for k, v in doc.items() if k != "root"}) == 1
    assert proof_verify(tmp_path, "{not json") == 1
    assert proof_verify(tmp_path, {**doc, "path": doc["path"][:-1]}) == 4
    assert proof_verify(tmp_path, {**doc, "path": [*doc["path"], doc["root"]]}) == 4
    assert proof_verify(tmp_path, {**doc, "tree_size": True}) == 1


def test_prove_refusals(base: dict[str, Any]) -> None:
    db = base["db"]
    assert run_ledger("prove", "99", db=db).returncode == 3
    too_small = run_ledger("prove", "3", "--size", "8", db=db)  # pack 3 is entry 9
    assert too_small.returncode == 1 and too_small.stderr.startswith("error: ")
    assert run_ledger("prove", "1", "--size", "11", db=db).returncode == 1
    assert run_ledger("prove", "--consistency", "0", "5", db=db).returncode == 1
    assert run_ledger("prove", "--consistency", "6", "5", db=db).returncode == 1
    assert run_ledger("prove", "--consistency", db=db).returncode == 2
    assert run_ledger("prove", db=db).returncode == 2


def test_consistency_proofs_tie_old_checkpoints_to_new(
    base: dict[str, Any], tmp_path: Path
) -> None:
    db = base["db"]
    for old, new in [(3, 10), (9, 10), (10, 10), (4, 8)]:
        doc = cli_json("prove", "--consistency", str(old), str(new), db=db)
        assert {"old_size", "new_size", "old_root", "new_root", "path"} <= set(doc)
        assert doc["old_root"] == expected_root(db, old).hex()
        assert doc["new_root"] == expected_root(db, new).hex()
        assert proof_verify(tmp_path, doc) == 0
        for bit in (0,) if old == 3 else ():
            for i in range(len(doc["path"])):
                path = list(doc["path"])
                path[i] = _flip_hex(path[i], bit)
                assert proof_verify(tmp_path, {**doc, "path": path}) == 4
            for key in ("old_root", "new_root"):
                assert proof_verify(tmp_path, {**doc, key: _flip_hex(doc[key], bit)}) == 4
    # NEW defaults to now; the auditor's old checkpoint (cp3) and the new one bind it.
    doc = cli_json("prove", "--consistency", "3", db=db)
    assert doc["new_size"] == 10
    signed = ("--vkey", str(base["vkey"]))
    assert proof_verify(tmp_path, doc, "--checkpoint", str(base["cp3"]), *signed) == 0
    assert proof_verify(tmp_path, doc, "--checkpoint", str(base["cp10"]), *signed) == 0
    assert proof_verify(tmp_path, doc, "--checkpoint", str(base["cp9"]), *signed) == 4


# --------------------------------------------------------------------------
# verify --checkpoint FILE and verify --since FILE
# --------------------------------------------------------------------------


def test_verify_against_checkpoint_files(base: dict[str, Any]) -> None:
    db = base["db"]
    for n in (3, 9, 10):
        code, plain, data = verify(
            db, "--checkpoint", str(base[f"cp{n}"]), "--vkey", str(base["vkey"])
        )
        assert code == 0, plain
        assert data["checkpoint"]["size"] == n
    code, plain, data = verify(db, "--since", str(base["cp3"]))
    assert code == 0, plain
    assert (data["since"], data["checked"], data["entries"]) == (3, 7, 10)
    assert "7 entries after checkpoint 3" in plain
    code, _plain, data = verify(db, "--since", str(base["cp10"]))
    assert code == 0 and data["checked"] == 0


def test_checkpoint_of_another_ledger_is_an_integrity_failure(
    base: dict[str, Any], tmp_path: Path, module_backend: str
) -> None:
    other = dbtools.new_ledger(tmp_path, module_backend, "other")
    try:
        for flag in ("--checkpoint", "--since"):
            proc = run_ledger("verify", flag, str(base["cp3"]), db=other)
            assert proc.returncode == 4, proc.stderr
            assert proc.stderr.startswith("error: ") and "another ledger" in proc.stderr
    finally:
        dbtools.drop(other)


def test_forged_signature_is_refused_by_verify(base: dict[str, Any], tmp_path: Path) -> None:
    forged = tmp_path / "forged.txt"
    forged.write_text(base["cp9"].read_text().replace("\n9\n", "\n8\n", 1))
    proc = run_ledger(
        "verify", "--checkpoint", str(forged), "--vkey", str(base["vkey"]), db=base["db"]
    )
    assert proc.returncode == 4 and "signature" in proc.stderr


def test_migration_builds_the_tree_of_an_existing_ledger(tmp_path: Path) -> None:
    """A ledger made before 0006 (the shipped schema-0001 file): upgrading computes the
    tree of its entries and gives it an id; proofs then work and verify passes."""
    old = Path(__file__).resolve().parents[2] / "fixtures" / "ledger-schema-0001.db"
    db = tmp_path / "old.db"
    db.write_bytes(old.read_bytes())
    run_ledger("init", db=str(db), check=True)
    data = cli_json("checkpoint", db=str(db))
    n = int(query(str(db), "SELECT count(*) FROM entries")[0][0])
    assert n > 0 and data["size"] == n
    assert data["root"] == expected_root(str(db), n).hex()
    assert re.fullmatch(r"ledger/[0-9a-f]{32}", data["origin"])
    assert verify(str(db))[0] == 0


# --------------------------------------------------------------------------
# tampering caught by a checkpoint taken before
# --------------------------------------------------------------------------


def rewrite_chain_from(db: str, seq: int, payloads: dict[int, str] | None = None) -> None:
    """Recompute every entry hash from `seq` on (with new payload digests where given)
    and then the Merkle tree: a database consistent in itself."""
    payloads = payloads or {}
    rows = query(
        db, "SELECT seq, kind, payload_digest FROM entries WHERE seq >= ? ORDER BY seq", (seq,)
    )
    prev = (
        query(db, "SELECT entry_hash FROM entries WHERE seq = ?", (seq - 1,))[0][0]
        if seq > 1
        else "0" * 64
    )
    sql = "UPDATE entries SET payload_digest = ?, prev_hash = ?, entry_hash = ? WHERE seq = ?"
    statements = []
    for s, kind, payload in rows:
        payload = payloads.get(s, payload)
        h = _entry_hash(s, kind, payload, prev)
        statements.append((sql, (payload, prev, h, s)))
        prev = h
    tamper(db, *statements)
    dbtools.rebuild_merkle_tree(db)


def assert_checkpoint_catches(db: str, cp: Path, seq: int, *extra: str) -> dict[str, Any]:
    code, plain, data = verify(db, "--checkpoint", str(cp), *extra)
    assert code == 4, plain
    assert data["first_bad"]["seq"] == seq, data
    assert re.search(rf"\bentry {seq}\b", plain), plain
    return data["first_bad"]


def test_whole_chain_rewritten_consistently(copy: str, base: dict[str, Any]) -> None:
    """Change the policy of entry 3 and recompute every hash and the tree after it."""
    tamper(copy, "UPDATE policies SET budget = 1000 WHERE entry_seq = 3")
    (allowed,) = query(copy, "SELECT allowed_trust FROM policies WHERE entry_seq = 3")[0]
    policy = {"kind": "policy", "allowed_trust": json.loads(allowed), "budget": 1000}
    rewrite_chain_from(copy, 3, {3: hashlib.sha256(rfc8785.dumps(policy)).hexdigest()})
    assert verify(copy)[0] == 0  # consistent in itself: only a checkpoint can tell
    bad = assert_checkpoint_catches(copy, base["cp10"], 10)
    assert "rewritten" in bad["why"]
    assert_checkpoint_catches(copy, base["cp3"], 3)
    # --since finds it from the stored tree without reading the history.
    code, _plain, data = verify(copy, "--since", str(base["cp9"]))
    assert code == 4 and data["first_bad"]["seq"] == 9


def test_truncation(copy: str, base: dict[str, Any]) -> None:
    """Remove entry 10 with its records and its tree nodes: a shorter ledger that is
    consistent in itself."""
    tamper(
        copy,
        "DELETE FROM chunk_versions WHERE batch_seq = 10",
        "DELETE FROM batches WHERE seq = 10",
        "DELETE FROM entries WHERE seq = 10",
        "DELETE FROM merkle_nodes WHERE (level = 0 AND idx = 9) OR (level = 1 AND idx = 4)",
        bypass_foreign_keys=True,  # the full-text index still names the version
    )
    assert verify(copy)[0] == 0
    bad = assert_checkpoint_catches(copy, base["cp10"], 10)
    assert "removed" in bad["why"]
    code, _plain, data = verify(copy, "--since", str(base["cp10"]))
    assert code == 4 and data["first_bad"]["seq"] == 10
    assert verify(copy, "--checkpoint", str(base["cp9"]))[0] == 0  # what is left is intact


def test_reordering(copy: str, base: dict[str, Any]) -> None:
    """Swap entries 5 (ingest) and 6 (grant), records included, and rehash: every
    record still matches an entry of its kind, so only the tree root tells."""
    tamper(
        copy,
        "UPDATE entries SET seq = 1005 WHERE seq = 5",
        "UPDATE entries SET seq = 5 WHERE seq = 6",
        "UPDATE entries SET seq = 6 WHERE seq = 1005",
        "UPDATE batches SET seq = 6 WHERE seq = 5",
        "UPDATE chunk_versions SET batch_seq = 6 WHERE batch_seq = 5",
        "UPDATE grants SET entry_seq = 5 WHERE entry_seq = 6",
        bypass_foreign_keys=True,
    )
    rewrite_chain_from(copy, 5)
    code, plain, _data = verify(copy)
    assert code == 0, plain  # the packs saw both entries either way (ledger marks 6 and 8)
    assert_checkpoint_catches(copy, base["cp10"], 10)
    assert_checkpoint_catches(copy, base["cp9"], 9)
    assert verify(copy, "--checkpoint", str(base["cp3"]))[0] == 0


def test_changed_body(copy: str, base: dict[str, Any]) -> None:
    """Change the body of entry 10's chunk and every digest above it (content,
    record, the ingest payload, the entry hash, the tree): consistent in itself."""
    new = {**NEW_CHUNK, "content": "A different note, put there afterwards."}
    old_digest = record_digest(NEW_CHUNK)
    new_digest = record_digest(new)
    tamper(
        copy,
        (
            "UPDATE chunk_versions SET content = ?, content_digest = ?, record_digest = ? "
            "WHERE record_digest = ?",
            (
                new["content"],
                hashlib.sha256(new["content"].encode()).hexdigest(),
                new_digest,
                old_digest,
            ),
        ),
    )
    payload = {"kind": "ingest", "new": [new_digest], "read": 1, "unchanged": 0}
    rewrite_chain_from(copy, 10, {10: hashlib.sha256(rfc8785.dumps(payload)).hexdigest()})
    assert stored(new)["content"] == new["content"]
    assert verify(copy)[0] == 0
    assert_checkpoint_catches(copy, base["cp10"], 10)
    assert verify(copy, "--checkpoint", str(base["cp9"]))[0] == 0


def test_tree_table_changed_alone_is_caught_without_a_checkpoint(copy: str) -> None:
    """The stored tree must be the entries' tree: a node changed by hand is named."""
    tamper(copy, ("UPDATE merkle_nodes SET hash = ? WHERE level = 0 AND idx = 6", ("ab" * 32,)))
    code, plain, data = verify(copy)
    assert code == 4 and data["first_bad"]["seq"] == 7 and "Merkle" in plain


def test_offline_verifiers_never_load_the_database_layer(
    base: dict[str, Any], tmp_path: Path
) -> None:
    """`proof verify` and `checkpoint verify` need no database: not even SQLAlchemy."""
    proof = tmp_path / "p.json"
    proof.write_text(json.dumps(cli_json("prove", "1", db=base["db"])))
    for args in (
        [
            "proof",
            "verify",
            str(proof),
            "--checkpoint",
            str(base["cp10"]),
            "--vkey",
            str(base["vkey"]),
        ],
        ["checkpoint", "verify", str(base["cp10"]), "--vkey", str(base["vkey"])],
    ):
        code = (
            "import sys\nfrom ledger_cli.main import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
            "loaded = [m for m in sys.modules if m.startswith(('sqlalchemy', 'alembic'))]\n"
            "assert not loaded, loaded\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_python_api_results_equal_the_commands_json(base: dict[str, Any]) -> None:
    """Each Ledger method's `to_json()` is the matching command's `--json`."""
    import ledger

    db = base["db"]
    with ledger.open(db) as lg:
        assert lg.checkpoint().to_json() == cli_json("checkpoint", db=db)
        signed = lg.checkpoint(key=base["key"])
        assert signed.signed and signed.note.startswith(lg.checkpoint().note + "\n\u2014 ")
        assert lg.prove(2).to_json() == cli_json("prove", "2", db=db)
        assert lg.prove(2, size=9).to_json() == cli_json("prove", "2", "--size", "9", db=db)
        assert lg.prove_consistency(3).to_json() == cli_json("prove", "--consistency", "3", db=db)
        assert lg.prove_consistency(3, 9).to_json() == cli_json(
            "prove", "--consistency", "3", "9", db=db
        )
        assert lg.head(at=4).to_json() == cli_json("head", "--at", "4", db=db)
        since = lg.verify(since=base["cp3"], vkey=str(base["vkey"]))
        assert since.to_json() == cli_json("verify", "--since", str(base["cp3"]), db=db)
        full = lg.verify(base["cp9"])
        assert full.ok and full.to_json() == cli_json(
            "verify", "--checkpoint", str(base["cp9"]), db=db
        )
        with pytest.raises(ledger.NotFoundError):
            lg.head(at=99)
        assert isinstance(lg.prove(1), ledger.InclusionProof)
        assert isinstance(lg.prove_consistency(1), ledger.ConsistencyProof)
        assert isinstance(lg.checkpoint(), ledger.CheckpointResult)


def test_the_api_refuses_a_vkey_that_would_check_nothing(base: dict[str, Any]) -> None:
    """`verify(vkey=...)` without a checkpoint file would verify the chain and
    say ok, as if a signature had been checked: refused, as the command line
    refuses it; with the signed checkpoint it checks the signature."""
    import ledger
    from ledger.core.errors import InputError

    vkey = base["vkey"].read_text().strip()
    with ledger.open(base["db"]) as lg:
        for kwargs in ({}, {"checkpoint": lg.head(3).checkpoint}):
            with pytest.raises(InputError) as raised:
                lg.verify(vkey=vkey, **kwargs)
            assert raised.value.param == "vkey"
        assert lg.verify(str(base["cp9"]), vkey=vkey).ok
