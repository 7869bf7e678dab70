"""Reading transcripts: both record shapes, exchanges, byte ranges, fail-closed input."""

from __future__ import annotations

import json

import pytest

from ledger.core.errors import InputError
from ledger.core.transcript import TranscriptError, exchange_name, parse_transcript

from .factory import (
    FIXTURES,
    assistant,
    encode,
    lines,
    tool,
    user,
    w_assistant,
    w_result,
    w_tool_use,
    w_user,
)


def split_lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def test_plain_fixture_with_tool_calls() -> None:
    data = (FIXTURES / "plain.jsonl").read_bytes()
    t = parse_transcript(data, name="plain.jsonl")
    spans = [(e.id, e.first_line, e.last_line) for e in t.exchanges]
    assert spans == [("e001", 1, 2), ("e002", 3, 6), ("e003", 7, 8), ("e004", 9, 13)]
    source = split_lines(data)
    for e in t.exchanges:
        assert t.payload(e) == b"".join(source[e.first_line - 1 : e.last_line])
    assert b"".join(t.payload(e) for e in t.exchanges) == data


def test_wrapped_fixture_with_tool_use_blocks() -> None:
    data = (FIXTURES / "wrapped.jsonl").read_bytes()
    t = parse_transcript(data, name="wrapped.jsonl")
    assert [(e.id, e.first_line, e.last_line) for e in t.exchanges] == [
        ("e001", 1, 2),
        ("e002", 3, 6),
        ("e003", 7, 8),
    ]
    assert "über".encode() in t.payload(t.exchanges[1])


def test_mixed_shapes_crlf_non_ascii_kept_byte_exact() -> None:
    records = [
        user("héllo ``` wörld"),
        assistant("ok"),
        w_user([{"type": "text", "text": "日本語 prompt"}]),
        w_assistant([w_tool_use("t1")]),
        w_result("t1"),
        w_assistant("done 👍"),
    ]
    data = b"".join(encode(r, eol="\r\n") for r in records)
    t = parse_transcript(data)
    assert [e.id for e in t.exchanges] == ["e001", "e002"]
    first, second = (t.payload(e) for e in t.exchanges)
    assert first == encode(records[0], eol="\r\n") + encode(records[1], eol="\r\n")
    assert first.count(b"\r\n") == 2 and second.count(b"\r\n") == 4
    assert first + second == data


def test_original_whitespace_kept_and_last_line_without_newline() -> None:
    data = b'  {"role":"user","content":"a"}  \r\n{ "role" : "assistant" ,"content":"b"}'
    t = parse_transcript(data)
    assert t.payload(t.exchanges[0]) == data


def test_result_only_user_and_tool_records_belong_to_the_exchange() -> None:
    data = lines(
        user("p1"),
        assistant(None, "a", "b"),
        tool("b"),
        tool("a"),
        assistant("thinking"),
        assistant("more", "c"),
        tool("c"),
        assistant("final"),
        user("p2"),
        assistant("r2"),
    )
    t = parse_transcript(data)
    assert [(e.first_line, e.last_line) for e in t.exchanges] == [(1, 8), (9, 10)]


def test_plain_user_record_with_tool_result_blocks_is_a_result() -> None:
    data = lines(
        user("p"),
        {"role": "assistant", "content": [w_tool_use("x")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]},
        assistant("done"),
    )
    assert len(parse_transcript(data).exchanges) == 1


def test_ids_grow_past_e999() -> None:
    data = lines(*[r for _ in range(1001) for r in (user("q"), assistant("a"))])
    t = parse_transcript(data)
    ids = [e.id for e in t.exchanges]
    assert ids[0] == "e001" and ids[998] == "e999" and ids[999] == "e1000"
    assert ids[1000] == "e1001" and len(set(ids)) == 1001
    assert t.exchange("e1000") is t.exchanges[999]
    assert t.exchange("e01") is None and t.exchange("e0001") is None
    assert t.exchange("e1002") is None and t.exchange("e000") is None
    assert exchange_name(7) == "e007" and exchange_name(12345) == "e12345"


def test_sha256_is_of_the_source_bytes() -> None:
    import hashlib

    data = lines(user("q"), assistant("a"))
    assert parse_transcript(data).sha256 == hashlib.sha256(data).hexdigest()


U, A = user("q"), assistant("a")
OK = lines(U, A)

# (name, transcript bytes, expected line, fragment of the message)
FAILURES = [
    ("empty file", b"", 1, "empty file"),
    ("byte-order mark", b"\xef\xbb\xbf" + OK, 1, "byte-order mark"),
    ("blank line", lines(U) + b"\n" + lines(A), 2, "blank line"),
    ("whitespace-only line", OK + b"  \r\n" + OK, 3, "blank line"),
    ("trailing blank line", OK + b"\n", 3, "blank line"),
    ("invalid UTF-8", lines(U) + b'{"role":"assistant","content":"\xff"}\n', 2, "invalid UTF-8"),
    ("invalid JSON", lines(U) + b'{"role":"assistant",}\n', 2, "invalid JSON"),
    ("two objects on a line", lines(U) + b'{"role":"assistant"} {}\n', 2, "invalid JSON"),
    (
        "duplicate key",
        lines(U) + b'{"role":"assistant","role":"assistant"}\n',
        2,
        "duplicate JSON key 'role'",
    ),
    (
        "nested duplicate key",
        b'{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}\n' + lines(A),
        1,
        "duplicate JSON key 'text'",
    ),
    ("NaN", lines(U) + b'{"role":"assistant","n":NaN}\n', 2, "non-finite JSON number"),
    ("huge float", lines(U) + b'{"role":"assistant","n":1e999}\n', 2, "non-finite"),
    ("JSON array line", lines(U) + b"[1, 2]\n", 2, "not an object"),
    ("JSON string line", b'"hello"\n', 1, "not an object"),
    ("JSON number line", OK + b"42\n", 3, "not an object"),
    (
        "system role",
        lines({"role": "system", "content": "x"}, U, A),
        1,
        "unsupported role 'system'",
    ),
    (
        "wrapped system type",
        lines(U, A, {"type": "system", "message": {"role": "system"}}),
        3,
        "unsupported record type 'system'",
    ),
    (
        "summary metadata",
        lines(U, A, {"type": "summary", "summary": "s", "leafUuid": "x"}),
        3,
        "metadata record (type 'summary')",
    ),
    ("no role, no message", lines(U, {"content": "x"}, A), 2, "neither 'role' nor 'message'"),
    (
        "message role mismatch",
        lines({"type": "user", "message": {"role": "assistant", "content": "x"}}),
        1,
        "does not match record type",
    ),
    ("message not an object", lines({"type": "user", "message": "hi"}), 1, "not a JSON object"),
    (
        "orphaned tool result (plain)",
        lines(U, assistant("a"), tool("nope"), A),
        3,
        "orphaned result",
    ),
    (
        "orphaned tool result (wrapped)",
        lines(U, w_assistant("a"), w_result("zz"), A),
        3,
        "orphaned result",
    ),
    ("result before the first prompt", lines(tool("x"), U, A), 1, "before the first user prompt"),
    ("assistant before the first prompt", lines(A, U, A), 1, "before the first user prompt"),
    (
        "result of a call from an earlier exchange",
        lines(U, assistant(None, "c1"), tool("c1"), A, U, tool("c1"), A),
        6,
        "orphaned result",
    ),
    (
        "duplicate result",
        lines(U, assistant(None, "c1"), tool("c1"), tool("c1"), A),
        4,
        "orphaned result",
    ),
    (
        "outstanding call before the next prompt",
        lines(U, assistant(None, "c1"), A, U, A),
        2,
        "tool call 'c1' has no result before the next user prompt (line 4)",
    ),
    (
        "outstanding call at the end",
        lines(U, w_assistant([w_tool_use("t9")])),
        2,
        "tool call 't9' has no result before the end of the file",
    ),
    (
        "final prompt without response",
        lines(U, A, user("last?")),
        3,
        "final user prompt has no assistant response",
    ),
    (
        "prompt followed by prompt",
        lines(U, user("again"), A),
        1,
        "no assistant response before the next user prompt (line 2)",
    ),
    (
        "exchange ends with a tool result",
        lines(U, assistant(None, "c"), tool("c"), U, A),
        3,
        "ends with a tool result",
    ),
    (
        "file ends with a tool result",
        lines(U, assistant(None, "c"), tool("c")),
        3,
        "ends with a tool result",
    ),
    (
        "mixed result and text blocks",
        lines(
            U,
            w_assistant([w_tool_use("t")]),
            w_user(
                [
                    {"type": "tool_result", "tool_use_id": "t", "content": "r"},
                    {"type": "text", "text": "and another question"},
                ]
            ),
            A,
        ),
        3,
        "mixes tool_result blocks with other content blocks",
    ),
    (
        "repeated tool call id",
        lines(U, assistant(None, "c", "c"), tool("c"), tool("c"), A),
        2,
        "tool call id 'c' is repeated",
    ),
    ("tool_use in a user record", lines(w_user([w_tool_use("t")]), A), 1, "tool_use block"),
    (
        "tool_result in an assistant record",
        lines(U, w_assistant([{"type": "tool_result", "tool_use_id": "x"}])),
        2,
        "tool_result block",
    ),
    (
        "tool record without tool_call_id",
        lines(U, assistant(None, "c"), {"role": "tool"}, A),
        3,
        "tool 'tool_call_id' must be a non-empty string",
    ),
    (
        "tool call without id",
        lines(U, {"role": "assistant", "tool_calls": [{"type": "function"}]}, A),
        2,
        "'id' must be a non-empty string",
    ),
    (
        "tool_calls not a list",
        lines(U, {"role": "assistant", "tool_calls": {"id": "x"}}),
        2,
        "'tool_calls' must be a list",
    ),
    (
        "user content a number",
        lines({"role": "user", "content": 5}, A),
        1,
        "user content must be a string or a list",
    ),
    ("user without content", lines({"role": "user"}, A), 1, "no 'content'"),
    ("empty user content list", lines(w_user([]), A), 1, "empty list"),
    ("content block not an object", lines(w_user(["text"]), A), 1, "block 1 is not a JSON object"),
    ("content block without type", lines(w_user([{"text": "x"}]), A), 1, "no string 'type'"),
]


@pytest.mark.parametrize(
    ("data", "line", "fragment"),
    [pytest.param(d, n, f, id=name) for name, d, n, f in FAILURES],
)
def test_fails_closed_naming_file_and_line(data: bytes, line: int, fragment: str) -> None:
    with pytest.raises(TranscriptError) as info:
        parse_transcript(data, name="chat.jsonl")
    message = str(info.value)
    assert info.value.line == line
    assert message.startswith(f"chat.jsonl line {line}: "), message
    assert fragment in message
    assert "\n" not in message
    assert isinstance(info.value, InputError)


def test_every_record_type_error_is_one_line_even_for_long_values() -> None:
    long_role = "x" * 500
    with pytest.raises(TranscriptError) as info:
        parse_transcript(lines({"role": long_role}), name="t")
    assert len(str(info.value)) < 200


def test_lone_carriage_returns_are_not_line_breaks() -> None:
    # Only "\n" ends a line: old Mac "\r" separators make one line of two objects.
    data = json.dumps(U).encode() + b"\r" + json.dumps(A).encode() + b"\n"
    with pytest.raises(TranscriptError, match="line 1: invalid JSON"):
        parse_transcript(data)
