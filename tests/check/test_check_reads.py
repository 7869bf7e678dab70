"""A check run's shared reads (`ledger.store.check_reads.CheckReads`) equal the
plain reads they stand for, on generated ledgers with history: each case's
pack decided through them is the pack decided by the build's own reads, and
the live version of any list of ids is the retriever's."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import ledger
from ledger.core.checks import Case, Expect
from ledger.core.errors import LedgerError
from ledger.core.select import Candidate
from ledger.store import check_reads
from ledger.store.chain import read_head
from ledger.store.check import Decided, admitted_of, decide_case
from ledger.store.check_reads import CheckReads
from ledger.store.engine import read_transaction
from ledger.store.inputs import resolve_inputs
from ledger.store.retriever import live_versions
from tests.conftest import chunk

WORDS = ["harbor", "pilot", "refund", "window", "tax", "ship", "cargo", "storm", "fee", "port"]
DATES = ["2026-01-01", "2026-03-01", "2026-05-01", "2026-07-01"]
SECTIONS = ["evidence", "evidence", "evidence", "policy", "state", "current-input"]


def corpus(rnd: random.Random, batch: int) -> list[dict[str, Any]]:
    """Chunks of every section; a later batch re-versions about half the ids."""
    out = []
    for i in range(16):
        if batch and rnd.random() < 0.5:
            continue
        start = rnd.choice(DATES[:3])
        expires = rnd.choice([None, None, rnd.choice(DATES[1:])])
        permission = rnd.choice(["public-read"] * 3 + ["staff-read"])
        section = rnd.choice(SECTIONS)
        trust = rnd.choice(["approved-source"] * 3 + ["unverified"])
        out.append(
            chunk(
                id=f"c{i:02d}",
                source_version=f"v{batch}",
                section=section,
                # A dedupe key stays within one section, permission and trust.
                dedupe_key=f"{section}-{permission}-{trust}-{rnd.randrange(2)}",
                effective_from=start,
                expires_on=expires if expires is None or expires > start else None,
                required_permission=permission,
                trust=trust,
                estimated_tokens=rnd.randrange(10, 60),
                priority=rnd.randrange(0, 5) * 20,
                content=" ".join(rnd.choices(WORDS, k=rnd.randrange(3, 8))) + f" u{i}v{batch}",
            )
        )
    return out


def make_ledger(url: str, seed: int) -> str:
    rnd = random.Random(seed)
    with ledger.open(url) as lg:
        lg.ingest_records(corpus(rnd, 0))
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=120)
        lg.ingest_records(corpus(rnd, 1))
        lg.retract([f"c{rnd.randrange(16):02d}"], from_date=rnd.choice(DATES))
        lg.grant("staff", "staff-read")
        lg.ingest_records(corpus(rnd, 2))
        lg.erase([f"c{rnd.randrange(16):02d}"], reason="a body erased: its content is None")
    return url


def cases(rnd: random.Random, n: int) -> list[Case]:
    out = []
    for k in range(n):
        query = " ".join(rnd.sample(WORDS, rnd.randrange(1, 3)))
        out.append(
            Case(
                name=f"case {k}",
                as_of=rnd.choice(DATES),
                subject=rnd.choice(["default", "default", "staff"]),
                query=query if rnd.random() < 0.8 else None,
                top=rnd.randrange(1, 8),
                budget=rnd.choice([None, 60, 200]),
                admit=(Expect(id=f"c{rnd.randrange(16):02d}"),),
            )
        )
        if out[-1].query is None:
            out[-1] = replace(out[-1], top=None)
    return out


def decided(conn: Any, case: Case, mark: int, reads: CheckReads | None) -> Any:
    """The case's decision, or the refusal's text when its build fails."""
    try:
        d: Decided = decide_case(conn, case, Path.cwd(), mark, reads)
    except LedgerError as exc:
        return str(exc)
    return (
        d.inputs,
        sorted(d.candidates, key=_identity),
        d.ctx,
        d.vid_of,
        d.pack_digest,
        admitted_of(conn, d, True, reads),  # the contents kept from the reads, or read
    )


def _identity(c: Candidate) -> tuple[str, str, str]:
    return (c.id, c.source_version, c.record_digest)


@pytest.mark.parametrize("seed", range(6))
def test_each_case_decides_through_the_shared_reads_as_through_the_plain_ones(
    db_url: str, seed: int
) -> None:
    db = make_ledger(db_url, seed)
    rnd = random.Random(seed)
    with ledger.open(db) as lg, read_transaction(lg._engine) as conn:
        head = read_head(conn).seq
        for mark in (head, head - 2):
            reads = CheckReads(conn, mark)  # shared by all the cases, as in a run
            for case in cases(rnd, 40):
                assert decided(conn, case, mark, reads) == decided(conn, case, mark, None), case


def test_contents_let_go_past_their_cap_are_read_again(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run keeps at most CONTENTS_KEPT characters of contents: past it, a
    case's admitted contents are read again, the same."""
    monkeypatch.setattr(check_reads, "CONTENTS_KEPT", 40)
    db = make_ledger(db_url, 7)
    rnd = random.Random(7)
    with ledger.open(db) as lg, read_transaction(lg._engine) as conn:
        mark = read_head(conn).seq
        reads = CheckReads(conn, mark)
        for case in cases(rnd, 40):
            assert decided(conn, case, mark, reads) == decided(conn, case, mark, None), case
        # Some were let go: fewer are kept than the versions read.
        assert len(reads._contents) < sum(len(pairs) for pairs in reads._versions.values())


@pytest.mark.parametrize("seed", range(6))
def test_the_live_version_of_any_ids_is_the_retrievers(db_url: str, seed: int) -> None:
    db = make_ledger(db_url, seed)
    rnd = random.Random(seed)
    ids = [f"c{i:02d}" for i in range(18)]  # two ids were never ingested
    with ledger.open(db) as lg, read_transaction(lg._engine) as conn:
        mark = read_head(conn).seq
        reads = CheckReads(conn, mark)
        for _ in range(30):
            inputs = resolve_inputs(
                conn, rnd.choice(DATES), rnd.choice(["default", "staff"]), ledger_at=mark
            )
            asked = rnd.sample(ids, rnd.randrange(1, len(ids)))
            assert reads.live_of(inputs, asked) == live_versions(conn, inputs, asked)


@pytest.mark.parametrize("seed", range(4))
def test_a_failing_case_is_explained_as_why_explains_its_recorded_pack(
    db_url: str, seed: int
) -> None:
    """A failing case's hints start from the pack the case decided (`built`)
    instead of rebuilding it: each answer equals `why`'s own about the same
    recorded pack, whose hints rebuild it."""
    from ledger.store.check import CASE_PACK
    from ledger.store.engine import rehearsal_transaction
    from ledger.store.rebuild import Rebuilt
    from ledger.store.recording import record_pack
    from ledger.store.search import why, why_chunk

    db = make_ledger(db_url, seed)
    rnd = random.Random(seed)
    hinted = 0
    with ledger.open(db) as lg:
        with read_transaction(lg._engine) as conn:
            mark = read_head(conn).seq
            reads = CheckReads(conn, mark)
            runs = []
            for case in cases(rnd, 30):
                try:
                    d = decide_case(conn, case, Path.cwd(), mark, reads)
                except LedgerError:
                    continue
                if all(c.id != case.admit[0].id for c in d.ctx.items):
                    runs.append((case, d))
        assert runs
        for case, d in runs:
            built = Rebuilt(d.inputs, d.candidates, d.ctx)
            chunk_id = str(case.admit[0].id)
            with rehearsal_transaction(lg._engine) as conn:
                pack_no = record_pack(conn, d.inputs, d.candidates, d.ctx, d.vid_of)
                words = " ".join(rnd.sample(WORDS, 2))
                pairs = [
                    (
                        why_chunk(conn, chunk_id, pack_no, CASE_PACK, b),
                        why(conn, words, pack_no, limit=2, label=CASE_PACK, built=b),
                    )
                    for b in (built, None)
                ]
                assert pairs[0] == pairs[1], case
                hinted += sum(m.hint is not None for a in pairs[0] for m in a.matches)
    assert hinted  # hints were compared, not only verdicts
