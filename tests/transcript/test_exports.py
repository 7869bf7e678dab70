"""The `--from claude-code|codex` readers on real exports and on generated cases.

Expected numbers for the real files were counted by hand (and by a throwaway
line-type counter, not this code) from the files in fixtures/transcripts/; see
SOURCES.md there for what each file shows.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ledger.core.exports import read_export, session_slug, transcript_date
from ledger.core.transcript import (
    FRAMING_BYTES,
    TranscriptError,
    continuation_bytes,
    framed_cost,
    select_exchanges,
)

from .exports_factory import (
    cc_prompt,
    cc_queue,
    cc_snapshot,
    cc_summary,
    cc_system,
    cc_text,
    cc_thinking,
    cc_tool_result,
    cc_tool_use,
    cx,
    cx_answer,
    cx_call,
    cx_developer,
    cx_event,
    cx_meta,
    cx_output,
    cx_prompt,
    cx_reasoning,
    cx_turn_context,
    cx_user_item,
    jsonl,
)

# A heading of continuation.md, marks included: "## e004 (normal, lines 9-15, interrupted)".
_HEADING = re.compile(
    rb"\n## (e\d{3,}) \((pinned|normal|aside), lines (\d+)-(\d+)((?:, [a-z]+)*)\)\n\n(`{3,})jsonl\n"
)


def blocks(continuation: bytes) -> dict[str, tuple[tuple[int, int], list[str], bytes]]:
    """Each block of continuation.md: id -> ((first, last), marks, payload), read
    with a regex and the closing fence, not with the library."""
    out = {}
    for match in _HEADING.finditer(continuation):
        fence = match.group(6)
        body = match.end()
        close = continuation.index(b"\n" + fence + b"\n", body - 1)
        marks = [m for m in match.group(5).decode().split(", ") if m]
        lines = (int(match.group(3)), int(match.group(4)))
        out[match.group(1).decode()] = (lines, marks, continuation[body : close + 1])
    return out


def record_type(line: bytes, fmt: str) -> str:
    rec = json.loads(line)
    if fmt == "codex" and rec["type"] in ("event_msg", "response_item"):
        return f"{rec['type']}:{rec['payload']['type']}"
    if rec.get("type") == "system" and not isinstance(rec.get("content"), str):
        return f"system:{rec['subtype']}"
    return str(rec["type"])


# -- the real exports ------------------------------------------------------------------


# -- generated Claude Code cases -----------------------------------------------------------


def cc(*records: dict[str, Any]) -> list[tuple[int, int, tuple[str, ...]]]:
    t = read_export(jsonl(*records), "claude-code")
    return [(e.first_line, e.last_line, e.marks) for e in t.exchanges]


def cc_skipped(*records: dict[str, Any]) -> dict[str, int]:
    t = read_export(jsonl(*records), "claude-code")
    assert t.export is not None
    return dict(t.export.skipped)


@pytest.mark.parametrize(
    ("record", "key"),
    [
        (cc_summary(), "summary"),
        (cc_queue("enqueue"), "queue-operation"),
        (cc_queue("dequeue", None), "queue-operation"),
        (cc_snapshot(), "file-history-snapshot"),
        (cc_system("turn_duration"), "system:turn_duration"),
        ({"type": "progress", "data": {"type": "hook_progress"}}, "progress"),
        ({"type": "last-prompt", "lastPrompt": "x", "sessionId": "s"}, "last-prompt"),
        ({"type": "some-future-record", "x": 1}, "some-future-record"),
    ],
)
def test_claude_records_without_a_message_are_skipped_and_counted(
    record: dict[str, Any], key: str
) -> None:
    records = [record, cc_prompt("p1"), cc_text("a1"), record, cc_prompt("p2"), cc_text("a2")]
    assert cc_skipped(*records) == {key: 2}
    # Between two exchanges a skipped record belongs to neither.
    assert cc(*records) == [(2, 3, ()), (5, 6, ())]


@pytest.mark.parametrize(
    "injected",
    [
        cc_prompt("Stop hook feedback:\n- tests are failing, fix them"),
        cc_prompt("<system-reminder>The todo list is empty</system-reminder>"),
        cc_prompt("Caveat: the messages below were generated", isMeta=True),
        cc_prompt(
            "This session is being continued from a previous conversation", isCompactSummary=True
        ),
        cc_prompt("<local-command-stdout>done</local-command-stdout>"),
        cc_system("stop_hook_summary", "Stop hook ran: 1 hook, exit 2"),
        cc_system("compact_boundary", "Conversation compacted"),
        {"type": "attachment", "attachment": {"type": "hook_additional_context"}},
    ],
    ids=[
        "stop-hook",
        "system-reminder",
        "isMeta",
        "compact-summary",
        "local-stdout",
        "system-hook",
        "system-compact",
        "attachment",
    ],
)
def test_claude_injected_messages_join_the_exchange_in_progress(injected: dict[str, Any]) -> None:
    got = cc(
        cc_prompt("the task"),
        cc_text("working"),
        injected,
        cc_text("fixed"),
        cc_prompt("next"),
        cc_text("ok"),
    )
    assert got == [(1, 4, ("injected",)), (5, 6, ())]
    assert cc_skipped(cc_prompt("the task"), injected, cc_text("a")) == {}


def test_hook_feedback_keeps_the_task_whole_within_its_budget() -> None:
    """The issue's case: a big task, then "Stop hook feedback". One exchange; at
    exactly its framed cost the continuation holds the task and the complaint."""
    task = "implement the feature " + "with care " * 2000
    data = jsonl(
        cc_prompt(task),
        cc_thinking(),
        cc_tool_use("t1"),
        cc_tool_result("t1"),
        cc_text("done"),
        cc_prompt("Stop hook feedback:\nlint fails"),
        cc_text("fixed"),
    )
    t = read_export(data, "claude-code")
    assert [(e.first_line, e.last_line) for e in t.exchanges] == [(1, 7)]
    cost = framed_cost(t, t.exchanges[0], "normal")
    selection = select_exchanges(t, {"e001": "normal"}, FRAMING_BYTES + cost)
    out = continuation_bytes(selection)
    assert len(out) == FRAMING_BYTES + cost
    assert task.encode() in out and b"lint fails" in out


def test_prompt_after_an_unanswered_tool_result_closes_the_exchange_as_interrupted() -> None:
    got = cc(
        cc_prompt("p1"), cc_tool_use("t1"), cc_tool_result("t1"), cc_prompt("p2"), cc_text("a2")
    )
    assert got == [(1, 3, ("interrupted",)), (4, 5, ())]


def test_prompt_while_a_tool_call_is_outstanding_is_interrupted() -> None:
    got = cc(
        cc_prompt("p1"), cc_text("let me look"), cc_tool_use("t1"), cc_prompt("p2"), cc_text("a2")
    )
    assert got == [(1, 3, ("interrupted",)), (4, 5, ())]


def test_request_interrupted_by_user_marks_the_exchange() -> None:
    note = cc_prompt("[Request interrupted by user]")
    assert cc(cc_prompt("p1"), cc_text("a1"), note, cc_prompt("p2"), cc_text("a2")) == [
        (1, 3, ("injected", "interrupted")),
        (4, 5, ()),
    ]
    # Beside a tool result (as the tool writes it for an interrupted tool use).
    beside = cc_tool_result(
        "t1", extra_blocks=[{"type": "text", "text": "[Request interrupted by user for tool use]"}]
    )
    assert cc(cc_prompt("p1"), cc_tool_use("t1"), beside, cc_prompt("p2"), cc_text("a")) == [
        (1, 3, ("interrupted",)),
        (4, 5, ()),
    ]


def test_final_prompt_without_answer_is_kept_and_marked_unanswered() -> None:
    data = jsonl(cc_prompt("p1"), cc_text("a1"), cc_prompt("are you there?"), cc_snapshot())
    t = read_export(data, "claude-code")
    assert [(e.first_line, e.last_line, e.marks) for e in t.exchanges] == [
        (1, 2, ()),
        (3, 3, ("unanswered",)),
    ]
    # Two prompts in a row: the first is unanswered too, not merged or dropped.
    assert cc(cc_prompt("a"), cc_prompt("b"), cc_text("x")) == [(1, 1, ("unanswered",)), (2, 3, ())]


def test_sidechain_records_in_a_main_session_stay_with_their_exchange() -> None:
    side = {"isSidechain": True}
    got = cc(
        cc_prompt("p1"),
        cc_tool_use("task1"),
        cc_prompt("subagent prompt", **side),
        cc_tool_use("inner", **side),
        cc_tool_result("inner", **side),
        cc_text("subagent done", **side),
        cc_tool_result("task1"),
        cc_text("a1"),
        cc_prompt("p2"),
        cc_text("a2"),
    )
    assert got == [(1, 8, ("injected", "sidechain")), (9, 10, ())]


def test_orphaned_result_and_assistant_before_the_first_prompt_are_kept() -> None:
    assert cc(cc_prompt("p"), cc_tool_result("nobody"), cc_text("a")) == [(1, 3, ("orphaned",))]
    # A resumed file that starts with the assistant: those lines open e001.
    assert cc(cc_text("continuing"), cc_prompt("p"), cc_text("a")) == [(1, 3, ())]
    assert cc(cc_text("only the assistant")) == [(1, 1, ())]


def test_blank_lines_are_counted_not_refused() -> None:
    data = jsonl(cc_prompt("p"), cc_text("a")) + b"\n" + jsonl(cc_prompt("q"), cc_text("b"))
    t = read_export(data, "claude-code")
    assert t.export is not None and dict(t.export.skipped) == {"(blank line)": 1}
    assert [(e.first_line, e.last_line) for e in t.exchanges] == [(1, 2), (4, 5)]


@pytest.mark.parametrize(
    ("data", "line", "words"),
    [
        (b"", 1, "empty file"),
        (b"\xef\xbb\xbf" + jsonl(cc_prompt("p")), 1, "byte-order mark"),
        (jsonl(cc_prompt("p")) + b"{not json\n", 2, "invalid JSON"),
        (jsonl(cc_prompt("p")) + b"[1, 2]\n", 2, "not an object"),
        (jsonl(cc_prompt("p")) + b'{"type": "user"}\n', 2, "no 'message' object"),
        (
            jsonl(cc_prompt("p")) + b'{"type":"user","message":{"content":7}}\n',
            2,
            "string or a list",
        ),
        (jsonl(cc_prompt("p")) + b'{"a": 1, "a": 2}\n', 2, "duplicate JSON key"),
        (jsonl(cc_prompt("p")) + b"\xff\n", 2, "invalid UTF-8"),
        (jsonl(cc_summary(), cc_snapshot()), 2, "no message record"),
        (b'{"type":"assistant","message":{"content":[{"type":"tool_use"}]}}\n', 1, "no 'id'"),
    ],
)
def test_what_is_no_export_at_all_is_refused_naming_the_line(
    data: bytes, line: int, words: str
) -> None:
    with pytest.raises(TranscriptError) as err:
        read_export(data, "claude-code", name="x.jsonl")
    assert err.value.line == line and words in str(err.value)
    assert str(err.value).startswith(f"x.jsonl line {line}: ")


# -- generated Codex cases ---------------------------------------------------------------


def cxr(*records: dict[str, Any]) -> list[tuple[int, int, tuple[str, ...]]]:
    t = read_export(jsonl(*records), "codex")
    return [(e.first_line, e.last_line, e.marks) for e in t.exchanges]


@pytest.mark.parametrize(
    ("record", "key"),
    [
        (cx_meta(), "session_meta"),
        (cx_turn_context(), "turn_context"),
        (cx_event("token_count", info=None), "event_msg:token_count"),
        (cx_event("agent_message", message="dup"), "event_msg:agent_message"),
        (cx_event("task_started"), "event_msg:task_started"),
        (cx_event("exec_command_end", exit_code=0), "event_msg:exec_command_end"),
        (
            cx("response_item", {"type": "ghost_snapshot", "ghost_commit": {}}),
            "response_item:ghost_snapshot",
        ),
        (cx("something_new", {"type": "x"}), "something_new"),
    ],
)
def test_codex_records_without_a_message_are_skipped_and_counted(
    record: dict[str, Any], key: str
) -> None:
    records = [record, *cx_prompt("p1"), cx_answer("a1"), record, *cx_prompt("p2"), cx_answer("a2")]
    t = read_export(jsonl(*records), "codex")
    assert t.export is not None and dict(t.export.skipped) == {key: 2}
    assert [(e.first_line, e.last_line) for e in t.exchanges] == [(2, 4), (6, 8)]


def test_codex_prompt_written_twice_is_one_prompt_but_a_repeated_prompt_is_two() -> None:
    assert cxr(*cx_prompt("hi"), cx_reasoning(), cx_answer("hello")) == [(1, 4, ())]
    # The person sends the same words again after the answer: a second exchange.
    assert cxr(*cx_prompt("again"), cx_answer("a"), *cx_prompt("again"), cx_answer("b")) == [
        (1, 3, ()),
        (4, 6, ()),
    ]


@pytest.mark.parametrize(
    "injected",
    [
        cx_developer(),
        cx_user_item("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
        cx_user_item("# AGENTS.md instructions for /repo\n\nbe brief"),
        cx_user_item("<user_instructions>be brief</user_instructions>"),
        cx("compacted", {"message": "summary of the earlier turns", "replacement_history": []}),
    ],
    ids=["developer", "environment", "agents-md", "user-instructions", "compacted"],
)
def test_codex_injected_messages_never_open_an_exchange(injected: dict[str, Any]) -> None:
    assert cxr(injected, *cx_prompt("p"), cx_answer("a")) == [(1, 4, ("injected",))]
    assert cxr(*cx_prompt("p"), cx_answer("a"), injected, *cx_prompt("q"), cx_answer("b")) == [
        (1, 4, ("injected",)),
        (5, 7, ()),
    ]


@pytest.mark.parametrize(
    ("call", "output"),
    [("function_call", "function_call_output"), ("custom_tool_call", "custom_tool_call_output")],
)
def test_codex_tool_calls_pair_with_outputs(call: str, output: str) -> None:
    answered = [*cx_prompt("p"), cx_call("c1", call), cx_output("c1", output), cx_answer("a")]
    assert cxr(*answered) == [(1, 5, ())]
    # A prompt while the output waits for the assistant, or the call for its output.
    assert cxr(
        *cx_prompt("p"),
        cx_call("c1", call),
        cx_output("c1", output),
        *cx_prompt("q"),
        cx_answer("b"),
    ) == [(1, 4, ("interrupted",)), (5, 7, ())]
    assert cxr(*cx_prompt("p"), cx_call("c1", call), *cx_prompt("q"), cx_answer("b")) == [
        (1, 3, ("interrupted",)),
        (4, 6, ()),
    ]


def test_codex_turn_aborted_and_unanswered_final_prompt() -> None:
    assert cxr(
        *cx_prompt("p"),
        cx_answer("partial"),
        cx_event("turn_aborted", reason="interrupted"),
        *cx_prompt("q"),
    ) == [(1, 3, ("interrupted",)), (5, 6, ("unanswered",))]


def test_codex_record_without_payload_is_refused() -> None:
    with pytest.raises(TranscriptError) as err:
        read_export(jsonl(*cx_prompt("p"), {"type": "response_item"}), "codex", name="r.jsonl")
    assert err.value.line == 3 and "payload" in str(err.value)


# -- session names and dates ---------------------------------------------------------------


def test_session_slugs_never_collide() -> None:
    sha = "ab" * 32
    uuid = "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
    assert session_slug(uuid, sha) == uuid
    names = ["My_Session", "my-session", "MY SESSION", "my.session", "my-session-2"]
    slugs = [session_slug(n, sha) for n in names]
    assert len(set(slugs)) == len(names)
    for slug in [*slugs, session_slug("x" * 300, sha), session_slug(None, sha)]:
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]{1,63}", slug + "-e1000"), slug
    assert session_slug(None, sha) == "session-" + sha[:16]
    assert session_slug(None, "cd" * 32) != session_slug(None, sha)


def test_dates_come_from_the_timestamps() -> None:
    data = jsonl(
        cc_prompt("p", ts="2026-01-21T23:59:00.000Z"), cc_text("a", ts="2026-01-22T00:01:00Z")
    )
    t = read_export(data, "claude-code")
    assert transcript_date(t) == ("2026-01-21", "2026-01-22")
    undated = jsonl({"type": "user", "message": {"role": "user", "content": "p"}})
    assert transcript_date(read_export(undated, "claude-code")) is None
