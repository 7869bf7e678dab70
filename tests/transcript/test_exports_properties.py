"""Properties of the export readers on generated and mutated exports: they only
ever refuse with a `TranscriptError`, and whatever they accept is covered whole
(every exchange the original lines byte for byte, every other line counted)."""

from __future__ import annotations

import os
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.core.exports import read_export
from ledger.core.transcript import TranscriptError

from .exports_factory import (
    REAL_CLAUDE,
    REAL_CODEX,
    cc_prompt,
    cc_queue,
    cc_snapshot,
    cc_summary,
    cc_system,
    cc_text,
    cc_tool_result,
    cc_tool_use,
    cx_answer,
    cx_call,
    cx_developer,
    cx_event,
    cx_meta,
    cx_output,
    cx_prompt,
    cx_reasoning,
    file_lines,
    jsonl,
)

EXAMPLES = int(os.environ.get("LEDGER_FUZZ_EXAMPLES", "300"))
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

CLAUDE_PARTS = [
    lambda n: [cc_prompt(f"prompt {n}")],
    lambda n: [cc_text(f"answer {n}")],
    lambda n: [cc_tool_use(f"t{n}")],
    lambda n: [cc_tool_result(f"t{n}")],
    lambda n: [cc_tool_result(f"t{n - 1}")],
    lambda n: [cc_prompt("Stop hook feedback:\nfix it")],
    lambda n: [cc_prompt("note", isMeta=True)],
    lambda n: [cc_prompt("[Request interrupted by user]")],
    lambda n: [cc_prompt("side", isSidechain=True)],
    lambda n: [cc_summary(), cc_snapshot(), cc_queue()],
    lambda n: [cc_system("turn_duration"), cc_system("compact_boundary", "Conversation compacted")],
]
CODEX_PARTS = [
    lambda n: cx_prompt(f"prompt {n}"),
    lambda n: [cx_event("user_message", message=f"again {n}")],
    lambda n: [cx_answer(f"answer {n}")],
    lambda n: [cx_reasoning()],
    lambda n: [cx_call(f"c{n}")],
    lambda n: [cx_output(f"c{n}")],
    lambda n: [cx_output(f"c{n - 1}")],
    lambda n: [cx_developer()],
    lambda n: [cx_meta(), cx_event("token_count", info=None)],
    lambda n: [cx_event("turn_aborted", reason="interrupted")],
]


def check_whole(data: bytes, fmt: str) -> None:
    t = read_export(data, fmt)
    assert t.export is not None
    original = file_lines(data)
    covered = 0
    previous = 0
    for ex in t.exchanges:
        assert previous < ex.first_line <= ex.last_line
        previous = ex.last_line
        assert t.payload(ex) == b"".join(original[ex.first_line - 1 : ex.last_line])
        covered += ex.last_line - ex.first_line + 1
    assert len(original) - covered <= sum(t.export.skipped.values())


@PROPERTY
@given(st.lists(st.integers(0, len(CLAUDE_PARTS) - 1), min_size=1, max_size=30))
def test_generated_claude_sessions_are_read_whole(picks: list[int]) -> None:
    records = [r for n, k in enumerate(picks) for r in CLAUDE_PARTS[k](n)]
    data = jsonl(*records)
    try:
        check_whole(data, "claude-code")
    except TranscriptError as exc:  # only a file without any message
        assert "no message record" in str(exc)


@PROPERTY
@given(st.lists(st.integers(0, len(CODEX_PARTS) - 1), min_size=1, max_size=30))
def test_generated_codex_rollouts_are_read_whole(picks: list[int]) -> None:
    records = [r for n, k in enumerate(picks) for r in CODEX_PARTS[k](n)]
    try:
        check_whole(jsonl(*records), "codex")
    except TranscriptError as exc:
        assert "no message record" in str(exc)


@PROPERTY
@given(st.data())
def test_mutated_real_exports_fail_only_with_a_named_line(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(REAL_CLAUDE + REAL_CODEX))
    fmt = "codex" if path in REAL_CODEX else "claude-code"
    raw = bytearray(path.read_bytes()[:20000])
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    for _ in range(data.draw(st.integers(1, 8))):
        at = rng.randrange(len(raw))
        choice = rng.randrange(3)
        if choice == 0:
            raw[at] = rng.randrange(256)
        elif choice == 1:
            del raw[at : at + rng.randrange(1, 40)]
        else:
            raw[at:at] = rng.choice([b"\n", b"{", b'"', b"\xff", b"[]", b"null"])
    try:
        check_whole(bytes(raw), fmt)
    except TranscriptError as exc:
        assert " line " in str(exc) and exc.line >= 1
