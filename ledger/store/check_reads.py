"""The reads the cases of one `ledger check` run share, each done once.

A check run decides every case in one read transaction at one ledger mark
(`ledger.store.check`), so what one case reads is what the next would read:
the inputs of a date, subject, budget and counter, and the versions of a chunk
id, with their contents (which a case's phrases are matched in). `CheckReads`
keeps them for the run. It is the named fast path of the bench row "check:
1,000 retrieval cases on 100,000 chunks" (bench/bench_check.py), where reading
them again per case was most of a passing case's cost; the rebuilds of one
checked hint (`ledger.store.rebuild.checked_hint`), all at the pack's mark,
share them too. The plain reads are `resolve_inputs`, `live_versions`,
`candidates_for` and `contents_of`; a property test
(tests/check/test_check_reads.py) holds each method equal to its plain read on
generated ledgers, on both backends.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from sqlalchemy import Connection

from ledger.core.select import SELECTOR_V1, Candidate, standing
from ledger.store.candidates import (
    candidates_for,
    candidates_query,
    json_list_in,
    load_candidates,
    read_candidates_and_contents,
)
from ledger.store.fulltext import apply_ranks, unranked_sections
from ledger.store.inputs import DOCUMENTS, Inputs, resolve_inputs
from ledger.store.readers import contents_of
from ledger.store.retriever import live_versions
from ledger.store.schema import versions
from ledger.tokens import ESTIMATED

_PART = 500  # ids per read: well under the drivers' limits on parameters
# The contents kept at most (characters): past it, those kept so far are let go
# (a later case reads its own again), so a run over long chunks holds a few of
# them, not every one it judged.
CONTENTS_KEPT = 1 << 25


class CheckReads:
    """Memos over one read transaction (`conn`) at one ledger `mark`."""

    def __init__(self, conn: Connection, mark: int) -> None:
        self.conn = conn
        self.mark = mark
        self._inputs: dict[tuple[str, str, int | None, str], Inputs] = {}
        # Per chunk id, its document versions at the mark (the stored estimate
        # as their cost) and their version ids; an id with none maps to [].
        self._versions: dict[str, list[tuple[Candidate, int]]] = {}
        self._unranked: list[tuple[Candidate, int]] | None = None
        # The contents of the versions read by `versions`, by version id: a
        # case's admitted chunks are nearly all among them.
        self._contents: dict[int, str | None] = {}
        self._contents_size = 0  # their characters
        self._of_ids = _versions_of_ids(conn.dialect.name)

    def inputs(self, as_of: str, subject: str, budget: int | None, counter: str) -> Inputs:
        """`resolve_inputs(conn, as_of, subject, budget=, counter=, ledger_at=mark)`."""
        key = (as_of, subject, budget, counter)
        if key not in self._inputs:
            self._inputs[key] = resolve_inputs(
                self.conn, as_of, subject, budget=budget, counter=counter, ledger_at=self.mark
            )
        return self._inputs[key]

    def versions(self, ids: Iterable[str]) -> list[tuple[Candidate, int]]:
        """Every document version of `ids` at the mark, with its version id,
        each id read from the database once per run."""
        wanted = list(dict.fromkeys(ids))
        unseen = [chunk_id for chunk_id in wanted if chunk_id not in self._versions]
        for start in range(0, len(unseen), _PART):
            part = unseen[start : start + _PART]
            cands, vid_of, contents = read_candidates_and_contents(
                self.conn, self._of_ids, self.mark, ESTIMATED, {"ids": json.dumps(part)}
            )
            self._keep(contents)
            for chunk_id in part:
                self._versions[chunk_id] = []
            for c in cands:
                self._versions[c.id].append((c, vid_of[c.record_digest]))
        return [pair for chunk_id in wanted for pair in self._versions[chunk_id]]

    def _keep(self, contents: dict[int, str | None]) -> None:
        size = sum(len(body) for body in contents.values() if body is not None)
        if self._contents_size + size > CONTENTS_KEPT:
            self._contents.clear()
            self._contents_size = 0
        self._contents.update(contents)
        self._contents_size += size

    def contents(self, vids: Sequence[int]) -> dict[int, str | None]:
        """`contents_of(conn, vids)`: those of versions `versions` read kept
        from that read, the others read now."""
        kept = {vid: self._contents[vid] for vid in vids if vid in self._contents}
        return {**kept, **contents_of(self.conn, [vid for vid in vids if vid not in kept])}

    def live_of(self, inputs: Inputs, ids: Sequence[str]) -> dict[str, int | None]:
        """`live_versions(conn, inputs, ids)`: per id, the version id of its one
        version that passes gates 1-6 for these inputs, or None."""
        if not self._mine(inputs):
            return live_versions(self.conn, inputs, ids)
        pairs = self.versions(ids)
        vid_of = {c.record_digest: vid for c, vid in pairs}
        live, _out = standing([c for c, _vid in pairs], inputs.request())
        found: dict[str, int | None] = dict.fromkeys(ids)
        for c in live:
            found[c.id] = vid_of[c.record_digest]
        return found

    def candidates(self, inputs: Inputs) -> tuple[list[Candidate], dict[str, int]]:
        """`candidates_for(conn, inputs)`: a retrieval build's candidates (the
        other sections whole, every version of each ranked id) from the run's
        reads, in version id order; any other build's read as the build reads them."""
        record = inputs.retrieval
        if record is None or inputs.counter != ESTIMATED or not self._mine(inputs):
            return candidates_for(self.conn, inputs)
        if self._unranked is None:
            cands, vid_of = load_candidates(
                self.conn, self.mark, ESTIMATED, DOCUMENTS, unranked_sections()
            )
            self._unranked = [(c, vid_of[c.record_digest]) for c in cands]
        by_vid = {vid: c for c, vid in self._unranked}
        by_vid.update((vid, c) for c, vid in self.versions(r.id for r in record.ranked))
        ordered = [by_vid[vid] for vid in sorted(by_vid)]
        every_version = record.query is not None and inputs.selector_version == SELECTOR_V1
        vid_of = {c.record_digest: vid for vid, c in by_vid.items()}
        return apply_ranks(record, ordered, every_version), vid_of

    def _mine(self, inputs: Inputs) -> bool:
        """Whether these inputs read what the memos hold: documents at the mark."""
        return inputs.scope == DOCUMENTS and inputs.mark == self.mark


@cache
def _versions_of_ids(dialect: str) -> Any:
    """The versions of a list of ids (`ids`, a JSON array) with their contents:
    one statement per dialect for every run and every hint, so that
    `fetch_tuples_fast` compiles it once."""
    ids = json_list_in(versions.c.chunk_id, "ids", dialect)
    return candidates_query(dialect, DOCUMENTS, ids, contents=True)


__all__ = ["CheckReads"]
