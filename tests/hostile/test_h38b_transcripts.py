"""Every transcript reader, and what is made from its result, refuses by line and
never with a traceback (issue 38, item 13): any field of a real line (the
strict seed-003 reader's fixtures, a Claude Code session, a Codex rollout)
replaced by an arbitrary JSON value is read, selected, rendered as
continuation.md and omissions.json, or refused with a LedgerError."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.errors import LedgerError
from ledger.core.exports import read_export
from ledger.core.transcript import (
    continuation_bytes,
    omissions_document,
    parse_transcript,
    select_exchanges,
)
from tests.conftest import ROOT
from tests.transcript.test_export_readers_never_crash import JSON, paths, replaced

FIXTURES = ROOT / "fixtures" / "transcripts"
SOURCES = {
    None: FIXTURES / "plain.jsonl",
    "claude-code": FIXTURES / "claude-code" / "codemie-incremental-simple-turn-1.jsonl",
    "codex": FIXTURES / "codex" / "simonw-sample_codex_session.jsonl",
}


# One JSON strategy and one way to replace a field: the real-export readers' test's.
@pytest.mark.parametrize("fmt", list(SOURCES), ids=lambda f: f or "strict")
def test_a_changed_field_is_read_through_selection_or_refused(fmt: str | None) -> None:
    text = SOURCES[fmt].read_text(encoding="utf-8")
    lines = [json.loads(x) for x in text.splitlines() if x.strip()][:40]

    @settings(max_examples=200, deadline=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(lines) - 1))
        at = data.draw(st.sampled_from(paths(lines[i])))
        changed = [*lines[:i], replaced(lines[i], at, data.draw(JSON)), *lines[i + 1 :]]
        raw = "".join(json.dumps(x) + "\n" for x in changed).encode()
        try:
            if fmt is None:
                transcript = parse_transcript(raw, name="t.jsonl")
            else:
                transcript = read_export(raw, fmt, name="t.jsonl")
            selection = select_exchanges(transcript, {}, 10**9)
            assert continuation_bytes(selection)
            json.dumps(omissions_document(selection))
        except LedgerError as exc:
            assert str(exc).startswith("t.jsonl"), str(exc)
            assert "\n" not in str(exc)

    check()
