"""The real-export readers refuse by line, never with a traceback (issue 38,
item 13: `--from codex` crashed on a `payload.type` that was a list): every
field of real export lines replaced by arbitrary JSON values is read or refused
with a TranscriptError naming its line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.exports import read_export
from ledger.core.transcript_model import TranscriptError
from tests.conftest import ROOT, run_ledger

FIXTURES = ROOT / "fixtures" / "transcripts"
SOURCES = {
    "claude-code": FIXTURES / "claude-code" / "codemie-incremental-simple-turn-1.jsonl",
    "codex": FIXTURES / "codex" / "simonw-sample_codex_session.jsonl",
}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside a JSON value (dict keys and list indexes)."""
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, (*at, i))
    return out


def replaced(value: Any, at: tuple[Any, ...], new: Any) -> Any:
    if not at:
        return new
    head, rest = at[0], at[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = replaced(value[head], rest, new)
    return copy


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_any_field_of_a_real_line_replaced_is_read_or_refused_by_line(fmt: str) -> None:
    lines = [json.loads(x) for x in SOURCES[fmt].read_text(encoding="utf-8").splitlines() if x]

    @settings(max_examples=300, deadline=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(lines) - 1))
        at = data.draw(st.sampled_from(paths(lines[i])))
        changed = [*lines[:i], replaced(lines[i], at, data.draw(JSON)), *lines[i + 1 :]]
        raw = "".join(json.dumps(x) + "\n" for x in changed).encode()
        try:
            read_export(raw, fmt, name="t.jsonl")
        except TranscriptError as exc:
            assert str(exc).startswith("t.jsonl"), str(exc)

    check()


@pytest.mark.parametrize("bad", [["message"], {"kind": "message"}, 7])
def test_a_codex_payload_type_that_is_no_string_is_one_line(tmp_path: Path, bad: Any) -> None:
    line = {"timestamp": "2025-01-01T00:00:00Z", "type": "response_item",
            "payload": {"type": bad, "role": "user"}}  # fmt: skip
    src = tmp_path / "rollout.jsonl"
    src.write_text(json.dumps(line) + "\n", encoding="utf-8")
    proc = run_ledger(
        "transcript", "annotate", str(src), str(tmp_path / "p.json"), "--from", "codex"
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    [message] = proc.stderr.strip().splitlines()
    assert "line 1" in message and "payload 'type' must be a string" in message
