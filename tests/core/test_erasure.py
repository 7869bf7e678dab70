"""The pure half of erasure: which versions have ended for good by a date, the
reason rule, and what an erase entry's payload covers."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.canonical import digest_value
from ledger.core.erasure import (
    VersionSpan,
    check_reason,
    ended_versions,
    erase_payload,
    metadata_digest,
)


def span(vid: int, eff: str, exp: str | None = None, batch: int = 1, cid: str = "a") -> VersionSpan:
    return VersionSpan(vid, cid, eff, exp, batch, f"{vid:064x}")


@pytest.mark.parametrize(
    ("spans", "retractions", "date", "ended"),
    [
        # expires_on is exclusive: ended on that very day, not the day before.
        ([span(1, "2026-01-01", "2026-03-01")], {}, "2026-03-01", [1]),
        ([span(1, "2026-01-01", "2026-03-01")], {}, "2026-02-28", []),
        # Superseded for good by a later version valid from the date on.
        ([span(1, "2026-01-01"), span(2, "2026-02-01", batch=2)], {}, "2026-02-01", [1]),
        ([span(1, "2026-01-01"), span(2, "2026-02-01", batch=2)], {}, "2026-01-31", []),
        # Superseded only until the newer one expires: it comes back, so it is kept.
        ([span(1, "2026-01-01"), span(2, "2026-02-01", "2026-09-01", 2)], {}, "2026-03-01", []),
        # ... unless a third version takes over exactly when the second expires.
        (
            [
                span(1, "2026-01-01"),
                span(2, "2026-02-01", "2026-09-01", 2),
                span(3, "2026-09-01", batch=3),
            ],
            {},
            "2026-03-01",
            [1],
        ),
        # A gap between the two later versions: version 1 is valid in it.
        (
            [
                span(1, "2026-01-01"),
                span(2, "2026-02-01", "2026-09-01", 2),
                span(3, "2026-09-02", batch=3),
            ],
            {},
            "2026-03-01",
            [],
        ),
        # Same effective_from: the later ingest wins (gate 6's tie).
        ([span(1, "2026-01-01", batch=1), span(2, "2026-01-01", batch=2)], {}, "2026-01-01", [1]),
        # Retracted from a date on or before DATE, by an entry written after it.
        ([span(1, "2026-01-01")], {"a": [(5, "2026-02-01")]}, "2026-02-01", [1]),
        ([span(1, "2026-01-01")], {"a": [(5, "2026-02-01")]}, "2026-01-31", []),
        # A retraction written before the version was ingested does not touch it.
        ([span(1, "2026-01-01", batch=6)], {"a": [(5, "2026-02-01")]}, "2026-03-01", []),
        # Not yet effective: not ended.
        ([span(1, "2026-05-01", "2026-06-01")], {}, "2026-04-01", []),
        # A retraction withdraws both: version 2 covers version 1 until then.
        (
            [span(1, "2026-01-01", batch=1), span(2, "2026-02-01", batch=3)],
            {"a": [(4, "2026-05-01")]},
            "2026-03-01",
            [1],
        ),
        # A retraction written between them ends version 1 only: 2 is not touched.
        (
            [span(1, "2026-01-01", batch=1), span(2, "2026-02-01", "2026-04-01", 3)],
            {"a": [(2, "2026-06-01")]},
            "2026-03-01",
            [],
        ),
        # Other ids never supersede.
        ([span(1, "2026-01-01"), span(2, "2026-02-01", cid="b")], {}, "2026-03-01", []),
    ],
)
def test_ended_versions(
    spans: list[VersionSpan],
    retractions: dict[str, list[tuple[int, str]]],
    date: str,
    ended: list[int],
) -> None:
    assert ended_versions(spans, retractions, date) == ended


DAYS = st.dates(min_value=datetime.date(2026, 1, 1), max_value=datetime.date(2026, 12, 31))


@given(
    st.lists(
        st.tuples(DAYS, st.one_of(st.none(), st.integers(1, 200)), st.integers(1, 4)),
        min_size=1,
        max_size=6,
    ),
    DAYS,
    st.integers(0, 300),
)
def test_an_ended_version_is_never_the_winner_on_any_later_day(
    raw: list[tuple[datetime.date, int | None, int]], date: datetime.date, probe: int
) -> None:
    """Brute force: on the date and on a later day, an ended version is expired or
    loses to a later valid version (gates 4 and 6): no build admits it again."""
    spans = []
    for vid, (eff, length, batch) in enumerate(raw, start=1):
        exp = None if length is None else (eff + datetime.timedelta(days=length)).isoformat()
        spans.append(span(vid, eff.isoformat(), exp, batch))
    day = (date + datetime.timedelta(days=probe)).isoformat()
    ended = set(ended_versions(spans, {}, date.isoformat()))

    def valid(s: VersionSpan) -> bool:
        return s.effective_from <= day and (s.expires_on is None or day < s.expires_on)

    winner = max((s for s in spans if valid(s)), key=VersionSpan.rank, default=None)
    for s in spans:
        if s.vid in ended:
            assert winner is None or winner.vid != s.vid


def test_reason_is_required_stripped_and_bounded() -> None:
    assert check_reason("  GDPR  ") == "GDPR"
    for bad in (None, "  ", "x" * 501, "a\x00b"):
        with pytest.raises(ValueError):
            check_reason(bad)


def test_the_payload_covers_digests_in_any_order_and_the_reason() -> None:
    a, b = ("1" * 64, "2" * 64), ("3" * 64, "4" * 64)
    assert erase_payload([a, b], "r") == erase_payload([b, a], "r")
    assert erase_payload([a, b], "r") != erase_payload([a, b], "s")
    assert erase_payload([a], "r") != erase_payload([a, b], "r")
    expected = digest_value(
        {
            "kind": "erase",
            "reason": "r",
            "erased": [
                {"record_digest": a[0], "metadata_digest": a[1]},
                {"record_digest": b[0], "metadata_digest": b[1]},
            ],
        }
    )
    assert erase_payload([b, a], "r") == expected


def test_the_metadata_digest_leaves_the_body_out_and_keeps_every_field() -> None:
    rec = {"id": "a", "priority": 5, "content": "secret"}
    same = metadata_digest(rec, "c" * 64)
    assert same == metadata_digest({**rec, "content": "other"}, "c" * 64)
    assert same != metadata_digest({**rec, "priority": 6}, "c" * 64)
    assert same != metadata_digest(rec, "d" * 64)
