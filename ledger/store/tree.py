"""The stored Merkle tree: its nodes as entries are sealed, checkpoints, proofs, checks.

The arithmetic is the pure core's (`ledger.core.merkle`); this module only reads
and writes `merkle_nodes` and `ledger_meta`. Every read names the complete
nodes it needs first and fetches them in one query, so a checkpoint or a proof
costs O(log n) rows whatever the size of the ledger.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, and_, func, insert, or_, select

from ledger.core import merkle
from ledger.core.checkpoint import Checkpoint, origin_of
from ledger.core.errors import InputError, IntegrityError, NotFoundError
from ledger.core.proofs import ConsistencyProof, InclusionProof
from ledger.store.schema import entries, meta_t, nodes_t, packs


def ledger_id(conn: Connection) -> str:
    """The random id fixed when the ledger was created (migration 0008)."""
    value = conn.execute(select(meta_t.c.value).where(meta_t.c.key == "ledger_id")).scalar()
    if value is None:
        raise IntegrityError(
            "the ledger has no ledger id (ledger_meta was changed); run ledger init"
        )
    return str(value)


def fetch_nodes(conn: Connection, need: Iterable[merkle.Node]) -> dict[merkle.Node, bytes]:
    """The stored hashes of the named nodes, in one query; a missing one is an
    integrity failure (the tree is written in the transaction of every entry)."""
    by_level: dict[int, list[int]] = {}
    for level, idx in need:
        by_level.setdefault(level, []).append(idx)
    if not by_level:
        return {}
    c = nodes_t.c
    cond = or_(*(and_(c.level == lv, c.idx.in_(ix)) for lv, ix in sorted(by_level.items())))
    got = {
        (r.level, r.idx): bytes.fromhex(r.hash)
        for r in conn.execute(select(c.level, c.idx, c.hash).where(cond))
    }
    for level, ix in by_level.items():
        for idx in ix:
            if (level, idx) not in got:
                raise IntegrityError(
                    f"the Merkle tree lacks node (level {level}, index {idx}); "
                    "the tree table was changed: run `ledger verify`"
                )
    return got


def append_entry(conn: Connection, seq: int, entry_hash_hex: str) -> None:
    """Add entry `seq` as leaf `seq - 1` (inside the entry's write transaction)."""
    index = seq - 1
    siblings = fetch_nodes(conn, merkle.append_siblings(index))
    done = merkle.append_leaf(index, merkle.entry_leaf(entry_hash_hex), siblings)
    conn.execute(insert(nodes_t), [{"level": lv, "idx": ix, "hash": h.hex()} for lv, ix, h in done])


def tree_size(conn: Connection) -> int:
    """The number of leaves: the newest entry's number (entries have no gaps)."""
    return int(conn.execute(select(func.coalesce(func.max(entries.c.seq), 0))).scalar_one())


def _size(conn: Connection, size: int | None, param: str = "size") -> tuple[int, int]:
    """(`size`, or the tree size when None; the tree size), the first checked to be
    a tree size of the ledger (InputError naming the API parameter `param`)."""
    now = tree_size(conn)
    if size is None:
        return now, now
    if size < 0 or size > now:
        raise InputError(
            f"{param}: {size}: the ledger has {now} entries; give 0 to {now}", param=param
        )
    return size, now


def root_at(conn: Connection, size: int) -> bytes:
    """The root of the tree of the first `size` entries, from O(log n) stored nodes."""
    return merkle.range_hash(0, size, fetch_nodes(conn, merkle.range_nodes(0, size)))


def checkpoint(conn: Connection, size: int | None = None) -> Checkpoint:
    """The checkpoint of the tree of `size` entries (default: all of them)."""
    n, _ = _size(conn, size)
    return Checkpoint(origin_of(ledger_id(conn)), n, root_at(conn, n))


def prove_pack(conn: Connection, pack_no: int, size: int | None = None) -> InclusionProof:
    """The inclusion proof of a pack's entry in the tree of `size` entries."""
    head = conn.execute(
        select(
            packs.c.pack_no,
            packs.c.entry_seq,
            packs.c.pack_digest,
            packs.c.input_digest,
            packs.c.ledger_mark,
            packs.c.trace_id,
            packs.c.span_id,
        ).where(packs.c.pack_no == pack_no)
    ).first()
    if head is None:
        raise NotFoundError(f"pack {pack_no} does not exist; `ledger packs` lists them")
    n, _ = _size(conn, size)
    if head.entry_seq > n:
        raise InputError(
            f"size: {n}: pack {pack_no} is entry {head.entry_seq}, after that tree; "
            f"give a size of at least {head.entry_seq}",
            param="size",
        )
    proof = prove_entry(conn, head.entry_seq, n)
    payload: dict[str, Any] = {
        "pack": head.pack_no,
        "pack_digest": head.pack_digest,
        "input_digest": head.input_digest,
        "ledger_mark": head.ledger_mark,
    }
    if head.trace_id is not None:  # the entry's payload covers the trace only then
        payload["trace"] = {"trace_id": head.trace_id, "span_id": head.span_id}
    return replace(proof, pack=head.pack_no, pack_payload=payload)


def prove_entry(conn: Connection, seq: int, size: int) -> InclusionProof:
    """The inclusion proof of entry `seq` in the tree of `size` entries."""
    e = conn.execute(select(entries).where(entries.c.seq == seq)).first()
    if e is None:
        raise NotFoundError(f"entry {seq} does not exist")
    ranges = merkle.inclusion_ranges(seq - 1, size)
    nodes = fetch_nodes(conn, merkle.proof_nodes([*ranges, (0, size), (seq - 1, seq)]))
    return InclusionProof(
        pack=None,
        entry=seq,
        leaf_index=seq - 1,
        tree_size=size,
        leaf_hash=nodes[(0, seq - 1)],
        root=merkle.range_hash(0, size, nodes),
        path=tuple(merkle.range_hash(a, b, nodes) for a, b in ranges),
        origin=origin_of(ledger_id(conn)),
        entry_hash=e.entry_hash,
        entry_fields={
            "seq": e.seq,
            "kind": e.kind,
            "payload_digest": e.payload_digest,
            "prev_hash": e.prev_hash,
        },
    )


def prove_consistency(conn: Connection, old: int, new: int | None = None) -> ConsistencyProof:
    """The consistency proof from the tree of `old` entries to that of `new` (default: now)."""
    n, now = _size(conn, new, "new")
    if old < 1 or old > n:
        raise InputError(
            f"old: {old}: a consistency proof runs from a tree of at least 1 entry to new ({n}); "
            f"give old from 1 to {n}",
            param="old",
        )
    ranges = merkle.consistency_ranges(old, n)
    nodes = fetch_nodes(conn, merkle.proof_nodes([*ranges, (0, old), (0, n)]))
    return ConsistencyProof(
        old_size=old,
        new_size=n,
        old_root=merkle.range_hash(0, old, nodes),
        new_root=merkle.range_hash(0, n, nodes),
        path=tuple(merkle.range_hash(a, b, nodes) for a, b in ranges),
        origin=origin_of(ledger_id(conn)),
    )


# --------------------------------------------------------------------------
# Checks for verify
# --------------------------------------------------------------------------


def check_whole_tree(
    conn: Connection, chain: Sequence[Any]
) -> tuple[merkle.LevelNodes | None, int, str]:
    """Recompute the tree from the entries' stored hashes and compare every stored node.

    Returns the recomputed nodes (None when an entry hash is not hex: the chain
    check names that entry) and the first disagreement: the lowest entry under a
    node that differs, is missing or is extra, and why (0 and "" when none).
    """
    try:
        levels = merkle.levels_of([merkle.entry_leaf(e.entry_hash) for e in chain])
    except ValueError:
        return None, 0, ""
    c = nodes_t.c
    # The first difference per level: (first leaf under it, leaves it covers, why).
    firsts: list[tuple[int, int, str]] = []
    top = conn.execute(select(c.level).order_by(c.level.desc()).limit(1)).scalar()
    for level in range(max(len(levels), (top or 0) + 1)):
        want = levels[level] if level < len(levels) else []
        have = conn.execute(select(c.idx, c.hash).where(c.level == level).order_by(c.idx)).all()
        found: tuple[int, str] | None = None
        for i, row in enumerate(have):
            if i >= len(want) or row.idx != i:
                found = (
                    min(i, row.idx),
                    f"the Merkle tree holds node (level {level}, index "
                    f"{row.idx}) that the entries do not make",
                )
                break
            if row.hash != want[i].hex():
                found = (
                    i,
                    f"Merkle tree node (level {level}, index {i}) does not match the entries",
                )
                break
        else:
            if len(have) < len(want):
                found = (
                    len(have),
                    f"the Merkle tree lacks node (level {level}, index {len(have)})",
                )
        if found is not None:
            firsts.append((found[0] << level, 1 << level, found[1]))
    # A changed leaf also changes every node above it; a node above counts on its
    # own only when no lower difference lies under or before it.
    best: tuple[int, str] = (0, "")
    for first_leaf, width, why in firsts:  # level 0 first
        if best[0] and best[0] - 1 < first_leaf + width:
            continue
        best = (first_leaf + 1, why)
    return merkle.LevelNodes(levels), best[0], best[1]


def entry_row(conn: Connection, seq: int) -> Any:
    """Entry `seq` (kind, hash, ...) or None."""
    return conn.execute(select(entries).where(entries.c.seq == seq)).first()


def checkpoint_json(cp: Checkpoint) -> dict[str, Any]:
    """A checkpoint in verify's JSON: origin, size, root (hex)."""
    return {"origin": cp.origin, "size": cp.size, "root": cp.root.hex()}


def check_origin(conn: Connection, cp: Checkpoint) -> None:
    """A checkpoint of another ledger (or of this one re-created) is an integrity failure."""
    mine = origin_of(ledger_id(conn))
    if cp.origin != mine:
        raise IntegrityError(
            f"the checkpoint is of {cp.origin}, this database is {mine}: another ledger, "
            "or this ledger re-created since the checkpoint was taken"
        )
    if cp.size == 0 and cp.root != merkle.EMPTY_ROOT:
        raise IntegrityError("the checkpoint has size 0 but not the empty tree's root")


def _rewritten(m: int) -> str:
    return (
        f"the first {m} entries do not have the checkpoint's tree root: an entry at or "
        f"before {m} was rewritten, removed, inserted or reordered since the checkpoint"
    )


def check_whole(
    conn: Connection, chain: Sequence[Any], cp: Checkpoint | None
) -> list[tuple[int, str]]:
    """Full verify: the stored tree against the entries, and the entries against `cp`."""
    levels, bad, why = check_whole_tree(conn, chain)
    problems = [(bad, why)] if bad else []
    if cp is None:
        return problems
    check_origin(conn, cp)
    n = len(chain)
    if cp.size > n:
        problems.append(
            (
                n + 1,
                f"the checkpoint covers {cp.size} entries, the ledger has {n}: "
                f"entries {n + 1} to {cp.size} were removed",
            )
        )
    elif levels is not None and merkle.range_hash(0, cp.size, levels) != cp.root:
        problems.append((cp.size, _rewritten(cp.size)))
    return problems


def check_since(conn: Connection, cp: Checkpoint, chain: Sequence[Any]) -> list[tuple[int, str]]:
    """`verify --since`: the stored tree has the checkpoint's root at its size, entry
    `size` is the checkpoint's last leaf, and the tree grown from the checkpoint's
    frontier by the new entries' hashes is the stored one. O(k + log n) for k new
    entries."""
    check_origin(conn, cp)
    m = cp.size
    now = tree_size(conn)
    if m > now:
        return [
            (
                now + 1,
                f"the checkpoint covers {m} entries, the ledger has {now}: "
                f"entries {now + 1} to {m} were removed",
            )
        ]
    nodes: dict[merkle.Node, bytes] = {}
    if m:
        ranges = merkle.inclusion_ranges(m - 1, m)
        try:
            nodes = fetch_nodes(conn, merkle.proof_nodes([*ranges, (0, m)]))
        except IntegrityError as exc:
            return [(m, str(exc))]
        if merkle.range_hash(0, m, nodes) != cp.root:
            return [(m, _rewritten(m))]
        last = entry_row(conn, m)
        path = [merkle.range_hash(a, b, nodes) for a, b in ranges]
        try:
            leaf = merkle.entry_leaf(last.entry_hash) if last is not None else b""
            merkle.verify_inclusion(m - 1, m, leaf, path, cp.root)
        except (ValueError, IntegrityError):
            return [
                (m, f"entry {m} is not the last entry of the checkpoint's tree: it was rewritten")
            ]
    frontier = merkle.CompactRange.from_nodes(m, nodes)
    expected: dict[merkle.Node, bytes] = {}
    for e in chain:
        if e.seq != frontier.size + 1:
            break  # a gap: the chain check names it
        try:
            leaf = merkle.entry_leaf(e.entry_hash)
        except ValueError:
            break  # a malformed hash: the chain check names it
        for level, idx, h in frontier.append(leaf):
            expected[(level, idx)] = h
    by_level: dict[int, list[int]] = {}
    for level, idx in expected:
        by_level.setdefault(level, []).append(idx)
    c = nodes_t.c
    problems: list[tuple[int, str]] = []
    for level, idxs in sorted(by_level.items()):
        lo, hi = min(idxs), max(idxs)
        have = {
            r.idx: r.hash
            for r in conn.execute(
                select(c.idx, c.hash).where(c.level == level, c.idx >= lo, c.idx <= hi)
            )
        }
        for idx in sorted(idxs):
            stored = have.get(idx)
            if stored != expected[(level, idx)].hex():
                what = "lacks" if stored is None else "has another hash for"
                problems.append(
                    (
                        (idx << level) + 1,
                        f"the Merkle tree {what} node (level {level}, "
                        f"index {idx}) of the new entries",
                    )
                )
                break
    return problems
