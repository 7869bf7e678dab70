"""`parse_seq_hash`: the one reading of an entry checkpoint `SEQ:HASH`."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.checkpoint import parse_seq_hash

HASH = "0123456789abcdef" * 4


def test_examples() -> None:
    assert parse_seq_hash(f"12:{HASH}") == (12, HASH)
    assert parse_seq_hash(f"  0:{'0' * 64}\n") == (0, "0" * 64)
    for text in ("", "12", f"12:{HASH.upper()}", f"12:{HASH}0", f"-1:{HASH}", f"1 :{HASH}"):
        assert parse_seq_hash(text) is None, text
    assert parse_seq_hash("checkpoint.txt") is None


texts = st.builds(
    lambda pre, seq, sep, digest, post: f"{pre}{seq}{sep}{digest}{post}",
    st.sampled_from(["", " ", "\t", "x"]),
    st.sampled_from(["0", "7", "123", "", "1a", "٣"]),
    st.sampled_from([":", "", "::", " :"]),
    st.text("0123456789abcdefA", min_size=63, max_size=65),
    st.sampled_from(["", " ", "\n", "y"]),
)


@settings(max_examples=300, deadline=None)
@given(texts | st.text(max_size=80))
def test_the_two_forms_it_replaces(text: str) -> None:
    # As `verify` and the API told the form apart and read it before.
    old_is = re.fullmatch(r"\s*\d+:[0-9a-f]{64}\s*", text) is not None
    m = re.fullmatch(r"(\d+):([0-9a-f]{64})", text.strip())
    old = (int(m.group(1)), m.group(2)) if m else None
    assert (parse_seq_hash(text) is not None) == old_is
    if old_is:
        assert parse_seq_hash(text) == old
