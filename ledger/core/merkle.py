"""The RFC 9162 Merkle tree over the ledger's entries (section 2.1): pure, no I/O.

Leaf `i` is entry `seq = i + 1`; its data is the 32 raw bytes of the entry hash.
A leaf hashes as SHA-256(0x00 || data), an interior node as SHA-256(0x01 || left ||
right), and the empty tree as SHA-256 of nothing.

Storage model. Every *complete* node of the tree is named `(level, index)`: it
covers the leaves `[index * 2**level, (index + 1) * 2**level)`. Once written a
complete node never changes, because later leaves only ever land to its right.
Appending leaf `i` completes the leaf node `(0, i)` and then one parent per
trailing one-bit of `i` (`append_leaf`): about two nodes per entry. Any tree
hash the RFC asks for, the root of any size and every node of every inclusion and
consistency path, is the hash of a range `[start, end)` whose start is a multiple
of a power of two at least its length; such a range is a short list of complete
nodes (`range_nodes`), at most one per level, folded right to left
(`range_hash`). So `checkpoint` and `prove` read O(log n) stored nodes and hash
O(log n) times instead of rehashing the ledger. The shell fetches the nodes that
`proof_nodes` names in one query and hands them back as a mapping.

The verifiers are the RFC's algorithms (2.1.3.2 and 2.1.4.2) step for step, and
refuse anything that is not exactly 32 bytes where a hash belongs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ledger.core.errors import IntegrityError

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

Node = tuple[int, int]
"""A complete node: (level, index); level 0 holds the leaves."""


def leaf_hash(data: bytes) -> bytes:
    """SHA-256(0x00 || data): the hash of one leaf."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right): the hash of an interior node."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def entry_leaf(entry_hash_hex: str) -> bytes:
    """The leaf hash of a ledger entry: its hash's 32 raw bytes as the leaf data."""
    return leaf_hash(bytes.fromhex(entry_hash_hex))


def _largest_power_below(n: int) -> int:
    """The largest power of two strictly less than n (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


# --------------------------------------------------------------------------
# Ranges as complete nodes
# --------------------------------------------------------------------------


def range_nodes(start: int, end: int) -> list[Node]:
    """The complete nodes, left to right, whose leaves are exactly `[start, end)`.

    Only for the ranges the RFC's recursion produces: `start` a multiple of a power
    of two at least `end - start` (every prefix `[0, n)` is one). One node per
    one-bit of the length, largest first.

    >>> range_nodes(0, 7)
    [(2, 0), (1, 2), (0, 6)]
    """
    length = end - start
    if length < 0 or start < 0:
        raise ValueError(f"bad range [{start}, {end})")
    if length and start % (1 << (length - 1).bit_length()):
        raise ValueError(f"range [{start}, {end}) is not aligned for the RFC 9162 tree")
    nodes: list[Node] = []
    pos = start
    for level in range(length.bit_length() - 1, -1, -1):
        if length >> level & 1:
            nodes.append((level, pos >> level))
            pos += 1 << level
    return nodes


def range_hash(start: int, end: int, nodes: Mapping[Node, bytes]) -> bytes:
    """MTH(D[start:end]) from the range's complete nodes (RFC 9162 2.1.1).

    The RFC splits a range at the largest power of two below its length; for an
    aligned range that puts the largest complete node on the left and the rest,
    recursively, on the right: a right-to-left fold of `range_nodes`.
    """
    parts = range_nodes(start, end)
    if not parts:
        return EMPTY_ROOT
    acc = nodes[parts[-1]]
    for part in reversed(parts[:-1]):
        acc = node_hash(nodes[part], acc)
    return acc


# --------------------------------------------------------------------------
# Proof paths as ranges (RFC 9162 2.1.3.1 and 2.1.4.1)
# --------------------------------------------------------------------------


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The ranges whose hashes form PATH(index, D[0:size]), from the leaf upward."""
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} is not in a tree of size {size}")
    out: list[tuple[int, int]] = []
    start, end, m = 0, size, index
    # The RFC recurses top-down and appends each sibling after the deeper path;
    # walking down and reversing gives the same bottom-up order.
    while end - start > 1:
        k = _largest_power_below(end - start)
        if m < k:
            out.append((start + k, end))
            end = start + k
        else:
            out.append((start, start + k))
            start, m = start + k, m - k
    out.reverse()
    return out


def consistency_ranges(old: int, new: int) -> list[tuple[int, int]]:
    """The ranges whose hashes form PROOF(old, D[0:new]) (RFC 9162 2.1.4.1).

    Empty when old == new; `0 < old <= new` is required (a proof from the empty
    tree proves nothing: every tree extends it).
    """
    if not 0 < old <= new:
        raise ValueError(f"no consistency proof from size {old} to size {new}")
    out: list[tuple[int, int]] = []
    start, end, m, whole = 0, new, old, True
    while True:
        if m == end - start:
            if not whole:
                out.append((start, end))
            break
        k = _largest_power_below(end - start)
        if m <= k:
            out.append((start + k, end))
            end = start + k
        else:
            out.append((start, start + k))
            start, m, whole = start + k, m - k, False
    out.reverse()
    return out


def proof_nodes(ranges: Iterable[tuple[int, int]]) -> set[Node]:
    """Every complete node the given ranges need: what the shell fetches in one query."""
    need: set[Node] = set()
    for start, end in ranges:
        need.update(range_nodes(start, end))
    return need


def inclusion_proof(index: int, size: int, nodes: Mapping[Node, bytes]) -> list[bytes]:
    """The inclusion path of leaf `index` in the tree of `size` leaves."""
    return [range_hash(a, b, nodes) for a, b in inclusion_ranges(index, size)]


def consistency_proof(old: int, new: int, nodes: Mapping[Node, bytes]) -> list[bytes]:
    """The consistency proof between the trees of `old` and `new` leaves."""
    return [range_hash(a, b, nodes) for a, b in consistency_ranges(old, new)]


# --------------------------------------------------------------------------
# Appending
# --------------------------------------------------------------------------


def append_siblings(index: int) -> list[Node]:
    """The complete nodes that appending leaf `index` combines with: one per
    trailing one-bit of `index`, lowest first (all of them on the frontier)."""
    out: list[Node] = []
    level, i = 0, index
    while i & 1:
        out.append((level, i - 1))
        level, i = level + 1, i >> 1
    return out


def append_leaf(
    index: int, leaf: bytes, siblings: Mapping[Node, bytes]
) -> list[tuple[int, int, bytes]]:
    """The nodes that leaf `index` completes: `(level, index, hash)`, the leaf first.

    `siblings` holds at least the nodes `append_siblings(index)` names.
    """
    out = [(0, index, leaf)]
    level, i, acc = 0, index, leaf
    while i & 1:
        acc = node_hash(siblings[(level, i - 1)], acc)
        level, i = level + 1, i >> 1
        out.append((level, i, acc))
    return out


@dataclass(slots=True)
class CompactRange:
    """The frontier of a tree: the roots of its perfect subtrees, largest first.

    A compact range `[0, size)` in the sense of transparency-dev's `compact`
    package: append a leaf in O(1) amortised hashing, read the root in O(log n),
    without keeping the leaves. Used by `verify --since` to extend a checkpoint's
    tree with the new entries alone.
    """

    size: int = 0
    hashes: list[bytes] = field(default_factory=list)

    @classmethod
    def from_nodes(cls, size: int, nodes: Mapping[Node, bytes]) -> CompactRange:
        """The frontier of the tree of `size` leaves from its stored nodes."""
        return cls(size, [nodes[n] for n in range_nodes(0, size)])

    def nodes(self) -> list[Node]:
        """The names of the frontier's nodes, largest first."""
        return range_nodes(0, self.size)

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Add one leaf; returns the nodes it completed (as `append_leaf`)."""
        index = self.size
        frontier = dict(zip(self.nodes(), self.hashes, strict=True))
        done = append_leaf(index, leaf, frontier)
        # The merged subtrees leave the frontier; the newest node takes their place.
        del self.hashes[len(self.hashes) - (len(done) - 1) :]
        self.hashes.append(done[-1][2])
        self.size += 1
        return done

    def root(self) -> bytes:
        """MTH of the whole range: the frontier folded right to left."""
        if not self.hashes:
            return EMPTY_ROOT
        acc = self.hashes[-1]
        for h in reversed(self.hashes[:-1]):
            acc = node_hash(h, acc)
        return acc


def levels_of(leaves: Sequence[bytes]) -> list[list[bytes]]:
    """Every complete node, level by level: `levels[L][i]` is node (L, i).

    What `verify` recomputes from the entries themselves; lists instead of a dict
    keep a million-entry ledger at about 130 MB.
    """
    levels = [list(leaves)]
    while len(levels[-1]) > 1:
        prev = levels[-1]
        levels.append([node_hash(prev[i], prev[i + 1]) for i in range(0, len(prev) - 1, 2)])
    return levels


class LevelNodes(Mapping[Node, bytes]):
    """`levels_of`'s lists seen as the node mapping the proof functions read."""

    def __init__(self, levels: list[list[bytes]]) -> None:
        self.levels = levels

    def __getitem__(self, node: Node) -> bytes:
        level, idx = node
        if level >= len(self.levels) or not 0 <= idx < len(self.levels[level]):
            raise KeyError(node)
        return self.levels[level][idx]

    def __iter__(self) -> Iterator[Node]:
        for level, row in enumerate(self.levels):
            for idx in range(len(row)):
                yield (level, idx)

    def __len__(self) -> int:
        return sum(len(row) for row in self.levels)


class MemoryTree:
    """A whole tree in memory, every complete node kept: a reference for tests and
    the in-memory recomputation `verify` does from the entries themselves."""

    def __init__(self, leaves: Iterable[bytes] = ()) -> None:
        self.nodes: dict[Node, bytes] = {}
        self.size = 0
        for leaf in leaves:
            self.append(leaf)

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Add one leaf hash; returns the nodes it completed."""
        done = append_leaf(self.size, leaf, self.nodes)
        for level, index, h in done:
            self.nodes[(level, index)] = h
        self.size += 1
        return done

    def root(self, size: int | None = None) -> bytes:
        """The root of the tree of the first `size` leaves (default: all)."""
        n = self.size if size is None else size
        if not 0 <= n <= self.size:
            raise ValueError(f"size {n} is not in 0..{self.size}")
        return range_hash(0, n, self.nodes)

    def inclusion(self, index: int, size: int | None = None) -> list[bytes]:
        """The inclusion path of leaf `index` in the tree of `size` leaves."""
        return inclusion_proof(index, self.size if size is None else size, self.nodes)

    def consistency(self, old: int, new: int | None = None) -> list[bytes]:
        """The consistency proof from `old` leaves to `new` (default: all)."""
        return consistency_proof(old, self.size if new is None else new, self.nodes)


# --------------------------------------------------------------------------
# Verification (RFC 9162 2.1.3.2 and 2.1.4.2)
# --------------------------------------------------------------------------


def _check_hash(value: bytes, what: str) -> None:
    if len(value) != HASH_SIZE:
        raise IntegrityError(f"{what} has {len(value)} bytes, not {HASH_SIZE}")


def _walk(
    fn: int, sn: int, seed: bytes, path: Iterable[tuple[int, bytes]], more: str, fewer: str
) -> tuple[bytes, bytes]:
    """RFC 9162's walk up the tree, written once for both proofs (2.1.3.2 and
    2.1.4.2 steps 5-7): from node `fn` of a level whose last node is `sn`, the
    hash `seed` is combined with one path hash a level (each numbered `path[i]` in
    messages). Returns (fr, sr): `seed` combined with the left siblings only, and
    with every hash. An inclusion proof's root is sr; a consistency proof's old
    root is fr and its new root sr. `more` and `fewer` say that the path is longer
    or shorter than the levels."""
    fr = sr = seed
    for i, p in path:
        _check_hash(p, f"path[{i}]")
        if sn == 0:
            raise IntegrityError(more)
        if fn & 1 or fn == sn:
            fr = node_hash(p, fr)
            sr = node_hash(p, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise IntegrityError(fewer)
    return fr, sr


def root_from_inclusion(index: int, size: int, leaf: bytes, path: Sequence[bytes]) -> bytes:
    """The root that an inclusion path leads to; raises IntegrityError when the path
    cannot belong to a leaf `index` of a tree of `size` leaves."""
    if not 0 <= index < size:
        raise IntegrityError(f"leaf index {index} is not in a tree of size {size}")
    _check_hash(leaf, "the leaf hash")
    _, root = _walk(
        index,
        size - 1,
        leaf,
        enumerate(path),
        f"the path has {len(path)} hashes, more than the tree has levels",
        f"the path has {len(path)} hashes, fewer than the tree needs",
    )
    return root


def verify_inclusion(
    index: int, size: int, leaf: bytes, path: Sequence[bytes], root: bytes
) -> None:
    """Check that `leaf` is leaf `index` of the tree of `size` leaves with `root`.

    Raises IntegrityError saying why not.

    >>> a, b = leaf_hash(b"a"), leaf_hash(b"b")
    >>> verify_inclusion(1, 2, b, [a], node_hash(a, b))
    """
    _check_hash(root, "the root")
    if root_from_inclusion(index, size, leaf, path) != root:
        raise IntegrityError(f"the inclusion path of leaf {index} does not lead to the root")


def verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, path: Sequence[bytes]
) -> None:
    """Check that the tree of `new` leaves with `new_root` extends the tree of `old`
    leaves with `old_root`. Raises IntegrityError saying why not.

    Sizes must satisfy 0 < old <= new (as transparency-dev/merkle: a proof from the
    empty tree is meaningless); equal sizes need equal roots and an empty path.
    """
    _check_hash(old_root, "the old root")
    _check_hash(new_root, "the new root")
    for i, p in enumerate(path):
        _check_hash(p, f"path[{i}]")
    if old < 1 or new < old:
        raise IntegrityError(f"no consistency proof exists from size {old} to size {new}")
    if old == new:
        if path:
            raise IntegrityError("equal sizes need an empty consistency path")
        if old_root != new_root:
            raise IntegrityError(f"two different roots for the same size {old}")
        return
    # 1. An empty path proves nothing between different sizes.
    if not path:
        raise IntegrityError("the consistency path is empty")
    # 2. When old is a power of two its root is a node of the new tree and the
    # proof leaves it out.
    if old & (old - 1) == 0:
        seed, rest = old_root, enumerate(path)
    else:
        seed, rest = path[0], enumerate(path[1:], start=1)
    # 3-4.
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    # 5-7.
    fr, sr = _walk(
        fn,
        sn,
        seed,
        rest,
        "the consistency path has more hashes than the trees need",
        "the consistency path has fewer hashes than the trees need",
    )
    if fr != old_root:
        raise IntegrityError(f"the consistency path does not lead to the old root (size {old})")
    if sr != new_root:
        raise IntegrityError(f"the consistency path does not lead to the new root (size {new})")
