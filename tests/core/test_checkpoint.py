"""C2SP signed notes, verifier keys and tlog checkpoints, against published vectors
(golang.org/x/mod's sumdb tests; fixtures/merkle/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.core.checkpoint import (
    Checkpoint,
    Note,
    format_vkey,
    key_id,
    origin_of,
    parse_checkpoint,
    parse_note,
    parse_skey,
    parse_vkey,
)
from ledger.core.errors import InputError
from ledger.core.merkle import EMPTY_ROOT, leaf_hash
from ledger.signing import signature_holds, signer_from_skey

V = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures/merkle/signed-note-vectors.json").read_text()
)["note"]
TREE = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures/merkle/signed-note-vectors.json").read_text()
)["tree"]


def test_published_verifier_key_parses_and_its_id_checks() -> None:
    vkey = parse_vkey(V["peter_vkey"])
    assert vkey.name == "PeterNeumann"
    assert vkey.key_id.hex() == "c74f20a3"
    assert key_id(vkey.name, vkey.public_key) == vkey.key_id
    assert format_vkey(vkey.name, vkey.public_key) == V["peter_vkey"]


def test_every_mangling_of_a_verifier_key_is_refused() -> None:
    # As sumdb/note's TestNewVerifier: every proper substring and every changed byte.
    key = V["peter_vkey"]
    for i in range(len(key)):
        changed = key[:i] + chr(ord(key[i]) + 1) + key[i + 1 :]
        with pytest.raises(InputError):
            parse_vkey(changed)
    for i in range(len(key)):
        for j in (i + 1, len(key) - 1):
            if (i, j) != (0, len(key)) and i < j:
                with pytest.raises(InputError):
                    parse_vkey(key[i:j])


def test_published_private_key_signs_the_published_signature() -> None:
    signer = signer_from_skey(V["peter_skey"])
    assert signer.vkey == V["peter_vkey"]
    signed = signer.sign(Note(V["text"]))
    assert signed.render() == V["text"] + "\n" + V["peter_signature_line"]
    # The secret never shows in the object's text form.
    assert V["peter_skey"].rsplit("+", 1)[1] not in repr(parse_skey(V["peter_skey"]))


def test_published_note_with_two_signatures_verifies_for_each_key() -> None:
    data = (V["text"] + "\n" + V["peter_signature_line"] + V["enoch_signature_line"]).encode()
    note = parse_note(data)
    assert note.text == V["text"]
    assert [s.name for s in note.signatures] == ["PeterNeumann", "EnochRoot"]
    assert signature_holds(note, parse_vkey(V["peter_vkey"]))
    assert signature_holds(note, parse_vkey(V["enoch_vkey"]))


def test_changed_text_or_signature_fails() -> None:
    vkey = parse_vkey(V["peter_vkey"])
    changed = V["text"].replace("answer", "Answer") + "\n" + V["peter_signature_line"]
    assert not signature_holds(parse_note(changed.encode()), vkey)
    line = V["peter_signature_line"]
    flipped = line[:20] + ("A" if line[20] != "A" else "B") + line[21:]
    assert not signature_holds(parse_note((V["text"] + "\n" + flipped).encode()), vkey)
    # A note signed by another key only: not verified by this one.
    other = parse_note((V["text"] + "\n" + V["enoch_signature_line"]).encode())
    assert not signature_holds(other, vkey)


@pytest.mark.parametrize(
    "data",
    [
        b"no final newline",
        b"text\n\n- Peter abc=\n",  # not an em dash
        "text\n\n\u2014 Peter\n".encode(),  # no signature
        "text\n\n\u2014 Peter !!!!\n".encode(),  # not base64
        "text\n\n\u2014 Peter AAAA\n".encode(),  # too short for id and signature
        b"text\x01\n",  # control character
        b"\xff\xfe\n",  # not UTF-8
    ],
)
def test_malformed_notes_are_refused(data: bytes) -> None:
    with pytest.raises(InputError):
        parse_note(data)


def test_checkpoint_text_matches_the_published_tree_note() -> None:
    cp = Checkpoint("go.sum database tree", TREE["size"], leaf_hash(TREE["record"].encode()))
    assert cp.text() == TREE["note"]
    assert parse_checkpoint(TREE["note"]) == cp


def test_empty_ledger_checkpoint() -> None:
    cp = Checkpoint(origin_of("0123abcd"), 0, EMPTY_ROOT)
    assert cp.text() == "ledger/0123abcd\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"
    assert cp.ledger_id == "0123abcd"


@pytest.mark.parametrize(
    "text",
    [
        "ledger/x\n12\n",  # no root line
        "ledger/x\n012\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",  # leading zero
        "ledger/x\n-1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
        "ledger/x\n1\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=\n",  # Go's bad tree
        "ledger/x\n1\nAAAA\n",  # not 32 bytes
        "\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
    ],
)
def test_malformed_checkpoints_are_refused(text: str) -> None:
    with pytest.raises(InputError):
        parse_checkpoint(text)
