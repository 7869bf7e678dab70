"""Proof documents: what `ledger prove` prints and `ledger proof verify` checks.

Pure: JSON values in, checked values out. A proof is self-contained: an auditor
verifies it with nothing but the file (and, to bind it to a signed tree, the
checkpoint and the verifier key), never the database.

Inclusion proof of a pack:
    {"pack", "entry", "leaf_index", "tree_size", "leaf_hash", "root", "path",
     "origin", "entry_hash", "entry_fields": {"seq", "kind", "payload_digest",
     "prev_hash"}, "pack_payload": {"pack", "pack_digest", "input_digest",
     "ledger_mark"}}
The last four keys let the verifier recompute the leaf from the pack's own
digests: pack payload -> the entry's payload digest -> the entry hash -> the leaf
hash, so the proof says "the pack with this pack digest is entry SEQ of the
tree with this root", not only "this leaf hash is".

Consistency proof: {"old_size", "new_size", "old_root", "new_root", "path",
"origin"}.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ledger.core.canonical import with_set
from ledger.core.chain import entry_hash, pack_entry_payload
from ledger.core.checkpoint import Checkpoint
from ledger.core.errors import InputError, IntegrityError
from ledger.core.merkle import entry_leaf, verify_consistency, verify_inclusion
from ledger.core.results import JSONResult

_HEX64 = re.compile(r"[0-9a-f]{64}")


def _hex(value: object, where: str) -> bytes:
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise InputError(f"{where} is not a SHA-256 hash in lower-case hex (64 characters)")
    return bytes.fromhex(value)


def _count(value: object, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{where} is not an integer of at least {minimum}")
    return value


def _positive(value: object, where: str) -> int:
    return _count(value, where, 1)


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{where} is not a string")
    return value


def _path(value: object) -> list[bytes]:
    if not isinstance(value, list):
        raise InputError("path is not a list of hashes")
    return [_hex(h, f"path[{i}]") for i, h in enumerate(value)]


def _keys(doc: Mapping[str, Any], required: set[str], what: str) -> None:
    missing = sorted(required - doc.keys())
    if missing:
        raise InputError(f"the {what} lacks {', '.join(missing)}")


_Check = Callable[[object, str], object]
# The members of an inclusion proof's `entry_fields` and `pack_payload` (but its
# optional `trace`), each with its check, in the order they are checked.
_ENTRY_FIELDS: dict[str, _Check] = {
    "seq": _positive,
    "kind": _string,
    "payload_digest": _hex,
    "prev_hash": _hex,
}
_PACK_PAYLOAD: dict[str, _Check] = {
    "pack": _positive,
    "pack_digest": _hex,
    "input_digest": _hex,
    "ledger_mark": _count,
}


def _object(value: object, what: str, members: Mapping[str, _Check]) -> None:
    """Check an object member of a proof: a JSON object with every one of `members`,
    each passing its check (named `what.member` in messages)."""
    if not isinstance(value, dict):
        raise InputError(f"{what} is not an object")
    _keys(value, set(members), what)
    for key, check in members.items():
        check(value[key], f"{what}.{key}")


def _json_value(value: object) -> object:
    """A proof field as its document writes it: a hash (and each hash of the path)
    in lower-case hex, an object as a plain dict."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, tuple):
        return [h.hex() for h in value]
    if isinstance(value, Mapping):
        return dict(value)
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class _Proof:
    """What both proofs have: the audit path (RFC 9162 hashes, in lower-case hex in
    the document) and the origin of the log, when known; each document lists its
    keys always present (`_KEYS`, in order) and those present when set (`_SET`)."""

    path: tuple[bytes, ...]
    origin: str | None = None

    _KEYS: ClassVar[tuple[str, ...]]
    _SET: ClassVar[tuple[str, ...]]

    def to_json(self) -> dict[str, Any]:
        out = {key: _json_value(getattr(self, key)) for key in self._KEYS}
        return with_set(out, **{key: _json_value(getattr(self, key)) for key in self._SET})

    @staticmethod
    def _origin(doc: Mapping[str, Any]) -> str | None:
        origin = doc.get("origin")
        if origin is not None and (not isinstance(origin, str) or not origin):
            raise InputError("origin is not a non-empty string")
        return origin


@dataclass(frozen=True, slots=True, kw_only=True)
class InclusionProof(_Proof):
    """Leaf `leaf_index` (entry `leaf_index + 1`) is in the tree of `tree_size`
    with `root`. A bare RFC 9162 proof claims no entry and no pack; the ledger's
    own proofs claim the entry (bound by `entry_fields` and `entry_hash`) and a
    pack (bound by `pack_payload`): a claim is never without its binding."""

    pack: int | None
    entry: int | None
    leaf_index: int
    tree_size: int
    leaf_hash: bytes
    root: bytes
    entry_hash: str | None = None
    entry_fields: Mapping[str, Any] | None = None
    pack_payload: Mapping[str, Any] | None = None

    _KEYS = ("pack", "entry", "leaf_index", "tree_size", "leaf_hash", "root", "path")
    _SET = ("origin", "entry_hash", "entry_fields", "pack_payload")

    @property
    def bare(self) -> bool:
        """Whether the proof claims only that a leaf hash is in a tree."""
        return self.entry is None

    def verify(self) -> None:
        """Raise IntegrityError unless the path leads from the leaf to the root and,
        when the proof carries them, the pack's digests lead to the leaf."""
        if self.entry_hash is not None:
            if entry_leaf(self.entry_hash) != self.leaf_hash:
                raise IntegrityError("leaf_hash is not the leaf of entry_hash")
        if self.entry_fields is not None:
            f = self.entry_fields
            if f["seq"] != self.entry:
                raise IntegrityError("entry_fields.seq is not the proof's entry")
            if self.entry_hash is None:
                raise IntegrityError("entry_fields come without entry_hash")
            computed = entry_hash(f["seq"], f["kind"], f["payload_digest"], f["prev_hash"])
            if computed != self.entry_hash:
                raise IntegrityError("entry_hash is not the hash of entry_fields")
        if self.pack_payload is not None:
            p = self.pack_payload
            if self.entry_fields is None or self.entry_fields["kind"] != "pack":
                raise IntegrityError("pack_payload comes without the fields of a pack entry")
            if p["pack"] != self.pack:
                raise IntegrityError("pack_payload.pack is not the proof's pack")
            t = p.get("trace")
            trace = None if t is None else (t["trace_id"], t["span_id"])
            digest = pack_entry_payload(
                p["pack"], p["pack_digest"], p["input_digest"], p["ledger_mark"], trace
            )
            if digest != self.entry_fields["payload_digest"]:
                raise IntegrityError("the entry's payload digest is not that of pack_payload")
        verify_inclusion(self.leaf_index, self.tree_size, self.leaf_hash, self.path, self.root)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> InclusionProof:
        """Parse an inclusion proof document; InputError names what is malformed,
        a claim without its binding included (docs/reference/proofs.md)."""
        _keys(doc, {"leaf_index", "tree_size", "leaf_hash", "root", "path"}, "proof")
        index = _count(doc["leaf_index"], "leaf_index")
        entry, pack = doc.get("entry"), doc.get("pack")
        ehash, fields, payload = (
            doc.get(k) for k in ("entry_hash", "entry_fields", "pack_payload")
        )
        if entry is None:
            if pack is not None or fields is not None or payload is not None:
                raise InputError(
                    "the proof claims a pack or entry fields without naming its entry: "
                    "give entry, or drop pack, entry_fields and pack_payload for a bare proof"
                )
        else:
            entry = _count(entry, "entry", 1)
            if index != entry - 1:
                raise InputError("leaf_index must be entry - 1 (leaf i is entry i + 1)")
            _require_binding(doc, entry, pack)
        if pack is not None:
            pack = _count(pack, "pack", 1)
        origin = cls._origin(doc)
        if ehash is not None:
            _hex(ehash, "entry_hash")
        if fields is not None:
            _object(fields, "entry_fields", _ENTRY_FIELDS)
        if payload is not None:
            _object(payload, "pack_payload", _PACK_PAYLOAD)
            trace = payload.get("trace")
            if trace is not None and not (
                isinstance(trace, dict)
                and set(trace) == {"trace_id", "span_id"}
                and isinstance(trace["trace_id"], str)
                and (trace["span_id"] is None or isinstance(trace["span_id"], str))
            ):
                raise InputError("pack_payload.trace is not {trace_id, span_id}")
        return cls(
            pack=pack,
            entry=entry,
            leaf_index=index,
            tree_size=_count(doc["tree_size"], "tree_size", 1),
            leaf_hash=_hex(doc["leaf_hash"], "leaf_hash"),
            root=_hex(doc["root"], "root"),
            path=tuple(_path(doc["path"])),
            origin=origin,
            entry_hash=ehash,
            entry_fields=fields,
            pack_payload=payload,
        )


def _require_binding(doc: Mapping[str, Any], entry: int, pack: object) -> None:
    """A claimed entry needs its hashed fields and hash; a claimed pack its payload."""
    missing = [k for k in ("entry_fields", "entry_hash") if doc.get(k) is None]
    if missing:
        raise InputError(
            f"the proof claims entry {entry} without {' and '.join(missing)}, which bind the "
            "leaf to it: make the proof again with `ledger prove`, or drop entry and pack "
            "for a bare RFC 9162 proof"
        )
    if pack is not None and doc.get("pack_payload") is None:
        raise InputError(
            f"the proof claims pack {pack!r} without pack_payload, which binds the entry to "
            "it: make the proof again with `ledger prove`, or drop pack"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsistencyProof(_Proof):
    """The tree of `new_size` with `new_root` extends the one of `old_size`."""

    old_size: int
    new_size: int
    old_root: bytes
    new_root: bytes

    _KEYS = ("old_size", "new_size", "old_root", "new_root", "path")
    _SET = ("origin",)

    def verify(self) -> None:
        """Raise IntegrityError unless the path proves the new tree extends the old."""
        verify_consistency(self.old_size, self.new_size, self.old_root, self.new_root, self.path)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ConsistencyProof:
        """Parse a consistency proof document; InputError names what is malformed."""
        _keys(doc, {"old_size", "new_size", "old_root", "new_root", "path"}, "proof")
        origin = cls._origin(doc)
        return cls(
            old_size=_count(doc["old_size"], "old_size"),
            new_size=_count(doc["new_size"], "new_size"),
            old_root=_hex(doc["old_root"], "old_root"),
            new_root=_hex(doc["new_root"], "new_root"),
            path=tuple(_path(doc["path"])),
            origin=origin,
        )


def parse_proof(doc: object) -> InclusionProof | ConsistencyProof:
    """An inclusion or a consistency proof, told apart by their keys."""
    if not isinstance(doc, dict):
        raise InputError("a proof is a JSON object")
    if "leaf_index" in doc or "leaf_hash" in doc:
        return InclusionProof.from_json(doc)
    if "old_size" in doc or "new_size" in doc:
        return ConsistencyProof.from_json(doc)
    raise InputError("neither an inclusion proof (leaf_index) nor a consistency proof (old_size)")


def check_against(proof: InclusionProof | ConsistencyProof, checkpoint: Checkpoint) -> None:
    """Bind a proof to a checkpoint: same origin (when the proof names one), and the
    proof's tree (for a consistency proof, its old or its new tree) is the
    checkpoint's tree.

    The RFC 9162 verifier reads a tree size only for the shape of the path, so
    only the checkpoint's signed size and root make the size part of the claim.
    """
    if proof.origin is not None and proof.origin != checkpoint.origin:
        raise IntegrityError(
            f"the proof is for {proof.origin}, the checkpoint for {checkpoint.origin}"
        )
    held = (checkpoint.size, checkpoint.root)
    if isinstance(proof, InclusionProof):
        trees = [(proof.tree_size, proof.root)]
    else:
        # An auditor holds the old checkpoint (is today's tree an extension of the
        # one I saw?) or the new one (was the one I saw earlier kept?).
        trees = [(proof.old_size, proof.old_root), (proof.new_size, proof.new_root)]
    if held not in trees:
        sizes = " or ".join(str(size) for size, _ in trees)
        raise IntegrityError(
            f"the proof's tree (size {sizes}) is not the checkpoint's tree "
            f"(size {checkpoint.size}, or the same size with another root)"
        )


class CheckpointResult(JSONResult):
    """What `ledger checkpoint --json` prints: origin, size, root (lower-case
    hex), the note text as written, signed or not (keep it outside the
    database), and whether it is signed."""

    origin: str
    size: int
    root: str
    note: str
    signed: bool
