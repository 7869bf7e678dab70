"""Hostile input for `ingest`, `pack`, `select` and `transcript`, as a user runs them.

Each case is malformed or malicious input: duplicate keys, NaN and Infinity,
booleans and floats where integers belong, integers beyond 64 bits or 4300
digits, impossible dates, invalid UTF-8, a byte-order mark, an empty file, a
broken line deep in a large file, nesting 100,000 levels deep, a 20 MB body,
control and NUL characters in ids, symbolic links, directories, devices and
named pipes as input (with a timeout: nothing may hang), a stored version sent
again with other content.

Each gets exactly one clear line and the documented exit code, never a
traceback: `error: ...` and exit 1 (`ingest`, `transcript`); `context pack
error: ...` and exit 2, stdout empty (`pack`); `{"ok": false, "error": ...}` on
stdout and exit 1 (`select`). A refused ingest leaves the database as it was:
the row count of every table and the chain head are equal before and after.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.clitools import (
    Run,
    one_error_line,
    run,
    sqlite_url,
    state,
)
from tests.conftest import FIXTURE, chunk
from tests.seeded import SEED, seed_ledger

TIMEOUT = 60  # /dev/zero and named pipes must not hang: a hang fails here
# The refusals run in a child process each: a hostile input may not take the test
# run down with it (a 100,000-deep nesting, a 20 MB body, a device, a pipe).
DEEP = 100_000
BIG_CONTENT = 20_000_000
BROKEN_AT = 150_000


@dataclass(frozen=True)
class Case:
    """One hostile input: `make(folder)` writes it and returns the command's
    arguments (a path or stdin bytes); `expect` must appear in the one error line."""

    name: str
    make: Callable[[Path], Any]
    expect: str
    args: tuple[str, ...] = field(default=())


# -- building blocks -------------------------------------------------------------------


def text(**overrides: Any) -> bytes:
    return json.dumps(chunk(**overrides), ensure_ascii=False).encode("utf-8")


def literal(field_name: str, raw: bytes, **overrides: Any) -> bytes:
    """A record whose `field_name` holds the raw JSON text `raw`."""
    body = text(**{field_name: "__HOSTILE__"}, **overrides)
    return body.replace(b'"__HOSTILE__"', raw)


def write(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    return make


def line(data: bytes, name: str = "in.jsonl") -> Callable[[Path], Path]:
    return write(name, data + b"\n")


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def symlink_to(target: str, name: str = "link.jsonl") -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        os.symlink(target, path)
        return path

    return make


def directory(folder: Path) -> Path:
    path = folder / "a-folder.json"
    path.mkdir()
    return path


def fifo(name: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        os.mkfifo(path)
        return path

    return make


def device(path: str) -> Callable[[Path], Path]:
    return lambda _folder: Path(path)


def broken_deep_in(folder: Path) -> Path:
    """A large JSON Lines file whose line 150,000 is cut off."""
    template = text(id="bulk-{i}", dedupe_key="bulk-{i}", source_uri="doc://bulk/{i}").decode()
    template = template.replace("{", "{{").replace("}", "}}").replace("{{i}}", "{i}")
    path = folder / "large.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(template.format(i=i) + "\n" for i in range(BROKEN_AT - 1)))
        f.write('{"id": "broken", "section": "evidence"\n')
        f.write("".join(template.format(i=i) + "\n" for i in range(BROKEN_AT, BROKEN_AT + 10)))
    return path


# -- ingest ------------------------------------------------------------------------------

INGEST: list[Case] = [
    Case(
        "duplicate key", line(text()[:-1] + b', "priority": 7}'), "duplicate JSON key: 'priority'"
    ),
    Case("NaN", line(literal("priority", b"NaN")), "non-finite JSON number: NaN"),
    Case("Infinity", line(literal("estimated_tokens", b"Infinity")), "non-finite JSON number"),
    Case("1e999", line(literal("estimated_tokens", b"1e999")), "non-finite JSON number"),
    Case("boolean as integer", line(text(priority=True)), "field 'priority': must be an integer"),
    Case("float as integer", line(literal("estimated_tokens", b"10.0")), "must be an integer"),
    Case("integer beyond 64 bits", line(text(priority=2**70)), "must be between 0 and 100"),
    Case(
        "integer of 5000 digits",
        line(literal("estimated_tokens", b"9" * 5000)),
        "more than 4300 digits",
    ),
    Case("impossible date", line(text(effective_from="2026-02-30")), "must use YYYY-MM-DD"),
    Case("invalid UTF-8", line(literal("content", b'"caf\xe9"')), "invalid UTF-8"),
    Case("lone surrogate", line(literal("content", b'"a\\ud800b"')), "lone surrogate"),
    Case("byte-order mark", line(b"\xef\xbb\xbf" + text()), "byte-order mark"),
    Case("empty file", write("empty.jsonl", b""), "empty file"),
    Case(
        "blank line",
        write("blank.jsonl", text() + b"\n\n" + text(id="beta", dedupe_key="beta") + b"\n"),
        "blank line",
    ),
    Case(
        "broken line 150,000 of a large file",
        broken_deep_in,
        f"large.jsonl:{BROKEN_AT}: invalid JSON",
    ),
    Case("nested 100,000 deep", line(literal("content", nested(DEEP))), "nesting deeper than"),
    Case(
        "nested 100,000 deep, JSON array", write("deep.json", nested(DEEP)), "nesting deeper than"
    ),
    Case(
        "20 MB content",
        line(text(content="x" * BIG_CONTENT)),
        f"field 'content': exceeds {16 * 1024 * 1024} characters",
    ),
    Case("NUL in id", line(text(id="ab\u0000cd")), "field 'id': must match"),
    Case("control character in id", line(text(id="ab\u001b[31mcd")), "field 'id': must match"),
    Case("NUL in content", line(text(content="before\u0000after")), "NUL character"),
    Case("NUL in source_version", line(text(source_version="1\u0000")), "NUL character"),
    Case("a line that is not an object", line(b"[1, 2]"), "must be a JSON object"),
    Case("unknown field", line(text()[:-1] + b', "body": "x"}'), "unknown=['body']"),
    Case(
        "JSON object that is not a fixture", write("obj.json", b'{"records": []}'), "needs `chunks`"
    ),
    Case("symbolic link", symlink_to(str(FIXTURE)), "symbolic link"),
    Case("dangling symbolic link", symlink_to("/nonexistent/x.jsonl"), "symbolic link"),
    Case("directory", directory, "is a directory"),
    Case("/dev/null", device("/dev/null"), "not a regular file", ("--format", "jsonl")),
    Case("/dev/zero", device("/dev/zero"), "not a regular file", ("--format", "jsonl")),
    Case("named pipe", fifo("pipe.jsonl"), "not a regular file"),
    Case(
        "stored version, other content",
        line(text(content="Alpha content, changed.")),
        "already stored with record digest",
    ),
    # Not "already stored": the first is in this very run (the audit's misleading line).
    Case(
        "one version twice in a file, other content",
        write(
            "twice.jsonl",
            text(id="twice", dedupe_key="twice")
            + b"\n"
            + text(id="twice", dedupe_key="twice", content="Other words.")
            + b"\n",
        ),
        "twice.jsonl:1 with other content",
    ),
    Case(
        "dedupe group across a boundary",
        line(text(id="gamma", dedupe_key="alpha", trust="user-input")),
        "crosses trust boundaries",
    ),
]


def chat_with_sidecar(sidecar: Callable[[Path], Path]) -> Callable[[Path], list[str]]:
    """`--format transcript` of a good chat, with a hostile priorities sidecar."""

    def make(folder: Path) -> list[str]:
        chat = folder / "chat.jsonl"
        chat.write_bytes(
            b'{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "hello"}\n'
        )
        return ["--format", "transcript", str(chat), "--priorities", str(sidecar(folder))]

    return make


INGEST += [
    Case("transcript sidecar: named pipe", chat_with_sidecar(fifo("p.json")), "not a regular file"),
    Case(
        "transcript sidecar: /dev/zero",
        chat_with_sidecar(device("/dev/zero")),
        "not a regular file",
    ),
    Case(
        "transcript sidecar: nested 100,000 deep",
        chat_with_sidecar(write("p.json", nested(DEEP))),
        "nesting too deep",
    ),
]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A ledger holding the seed fixture, a pack, and `alpha`@1 (see the
    `stored version, other content` case)."""
    folder = tmp_path_factory.mktemp("hostile")
    url = sqlite_url(folder / "ledger.db")
    seed_ledger(url, init=True)
    (folder / "alpha.jsonl").write_bytes(text() + b"\n")
    run("ingest", str(folder / "alpha.jsonl"), db=url, check=True)
    return url


@pytest.fixture(scope="module")
def head_before(ledger: str) -> str:
    return run("head", db=ledger, check=True).stdout


@pytest.mark.parametrize("case", INGEST, ids=[c.name for c in INGEST])
def test_ingest_refuses(case: Case, ledger: str, head_before: str, tmp_path: Path) -> None:
    made = case.make(tmp_path)
    paths = made if isinstance(made, list) else [str(made)]
    before = state(ledger)
    result = run("ingest", *case.args, *paths, db=ledger, timeout=TIMEOUT, subprocess_run=True)
    message = one_error_line(result)
    assert case.expect in message, message
    assert state(ledger) == before


def test_ledger_head_is_unchanged_by_every_refusal(ledger: str, head_before: str) -> None:
    """Runs after the battery (module order): `ledger head` still names the same entry."""
    assert run("head", db=ledger, check=True).stdout == head_before


# -- pack ------------------------------------------------------------------------------


def fixture_with(**changes: Any) -> bytes:
    """The seed fixture with its first chunk changed."""
    doc = json.loads(json.dumps(SEED))
    doc["chunks"][0].update(changes)
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


def fixture_literal(field_name: str, raw: bytes) -> bytes:
    return fixture_with(**{field_name: "__HOSTILE__"}).replace(b'"__HOSTILE__"', raw)


PACK: list[Case] = [
    Case("duplicate key", write("f.json", b'{"chunks": [], "chunks": []}'), "duplicate JSON key"),
    Case("NaN", write("f.json", fixture_literal("priority", b"NaN")), "non-finite JSON number"),
    Case(
        "boolean as integer",
        write("f.json", fixture_with(estimated_tokens=True)),
        "chunks[0].estimated_tokens must be an integer",
    ),
    Case(
        "float as integer",
        write("f.json", fixture_literal("priority", b"1e2")),
        "must be an integer",
    ),
    Case(
        "integer beyond 64 bits",
        write("f.json", fixture_with(estimated_tokens=2**64 + 1)),
        "must be between 1 and 10000000",
    ),
    Case(
        "integer of 5000 digits",
        write("f.json", fixture_literal("priority", b"7" * 5000)),
        "more than 4300 digits",
    ),
    Case(
        "impossible date",
        write("f.json", fixture_with(expires_on="2026-13-01")),
        "must use YYYY-MM-DD",
    ),
    Case(
        "invalid UTF-8", write("f.json", fixture_literal("content", b'"\xc3\x28"')), "invalid UTF-8"
    ),
    Case(
        "byte-order mark",
        write("f.json", b"\xef\xbb\xbf" + FIXTURE.read_bytes()),
        "byte-order mark",
    ),
    Case("empty file", write("f.json", b""), "empty JSON text"),
    Case("nested 100,000 deep", write("f.json", nested(DEEP)), "nesting deeper than"),
    Case(
        "20 MB content",
        write("f.json", fixture_with(content="x" * BIG_CONTENT)),
        "chunks[0].content exceeds 10000 characters",
    ),
    Case("NUL in id", write("f.json", fixture_with(id="po\u0000licy")), "chunks[0].id must match"),
    Case("control character in id", write("f.json", fixture_with(id="po\tlicy")), "must match"),
    Case(
        "duplicate chunk ids",
        write("f.json", fixture_with(id=SEED["chunks"][1]["id"])),
        "chunk ids must be unique",
    ),
    Case("directory", directory, "is a directory"),
    Case("/dev/null", device("/dev/null"), "not a regular file"),
    Case("/dev/zero", device("/dev/zero"), "not a regular file"),
    Case("named pipe", fifo("pipe.json"), "not a regular file"),
    Case("dangling symbolic link", symlink_to("/nonexistent/f.json", "f.json"), "does not exist"),
]


@pytest.mark.parametrize("case", PACK, ids=[c.name for c in PACK])
def test_pack_refuses(case: Case, tmp_path: Path) -> None:
    path = case.make(tmp_path)
    out = tmp_path / "out" / "pack.json"
    result = run(
        "pack",
        "--fixture",
        str(path),
        "--json-pack",
        str(out),
        timeout=TIMEOUT,
        subprocess_run=True,
    )
    message = one_error_line(result, code=2, prefix="context pack error: ")
    assert case.expect in message, message
    assert not out.exists()


# -- select ----------------------------------------------------------------------------


def item(**changes: Any) -> dict[str, Any]:
    base = {"id": "a", "cost": 1, "priority": 0, "required": False, "content": "x"}
    base.update(changes)
    return base


def select_input(*items: dict[str, Any], budget: Any = 10) -> bytes:
    return json.dumps({"budget": budget, "items": list(items)}).encode()


SELECT: list[Case] = [
    Case(
        "duplicate key", lambda _f: b'{"budget": 1, "budget": 2, "items": []}', "duplicate JSON key"
    ),
    Case(
        "NaN",
        lambda _f: select_input(item()).replace(b'"cost": 1', b'"cost": NaN'),
        "non-finite JSON number",
    ),
    Case("Infinity budget", lambda _f: b'{"budget": Infinity, "items": []}', "non-finite"),
    Case("boolean as integer", lambda _f: select_input(item(cost=True)), "must be an integer"),
    Case("float as integer", lambda _f: select_input(item(priority=1.0)), "must be an integer"),
    Case(
        "integer of 5000 digits",
        lambda _f: b'{"budget": ' + b"1" * 5000 + b', "items": []}',
        "more than 4300 digits",
    ),
    Case(
        "invalid UTF-8",
        lambda _f: select_input(item(content="\u00e9")).replace(b"\\u00e9", b"\xe9"),
        "invalid UTF-8",
    ),
    Case("byte-order mark", lambda _f: b"\xef\xbb\xbf" + select_input(item()), "byte-order mark"),
    Case("empty input", lambda _f: b"", "empty JSON text"),
    Case("nested 100,000 deep", lambda _f: nested(DEEP), "nesting deeper than"),
    Case("extra field", lambda _f: select_input(item(extra=1)), "unknown extra"),
    Case("duplicate ids", lambda _f: select_input(item(), item()), "duplicates an earlier id"),
    Case("/dev/zero as stdin", lambda _f: Path("/dev/zero"), "larger than 64 MiB"),
    Case("/dev/null as stdin", lambda _f: Path("/dev/null"), "empty JSON text"),
]


@pytest.mark.parametrize("case", SELECT, ids=[c.name for c in SELECT])
def test_select_refuses(case: Case, tmp_path: Path) -> None:
    given = case.make(tmp_path)
    if isinstance(given, Path):
        with open(given, "rb") as stdin:
            result = run("select", stdin=stdin, timeout=TIMEOUT, subprocess_run=True)
    else:
        result = run("select", input=given, timeout=TIMEOUT, subprocess_run=True)
    assert_select_error(result, case.expect)


def assert_select_error(result: Run, expect: str) -> None:
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert result.stderr == "", result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout[:2000]
    envelope = json.loads(lines[0])
    assert envelope["ok"] is False and set(envelope) == {"ok", "error"}, envelope
    assert expect in envelope["error"], envelope
    assert "\n" not in envelope["error"]


# -- transcript ------------------------------------------------------------------------


def exchange(prompt: str = "hello", answer: str = "hi") -> bytes:
    return (
        json.dumps({"role": "user", "content": prompt}).encode()
        + b"\n"
        + json.dumps({"role": "assistant", "content": answer}).encode()
        + b"\n"
    )


def transcript_broken_deep_in(folder: Path) -> Path:
    path = folder / "long.jsonl"
    pair = exchange("question", "answer")
    with open(path, "wb") as f:
        f.write(pair * (BROKEN_AT // 2 - 1))  # lines 1 .. 149,998
        f.write(b'{"role": "user", "content": "cut off\n')  # line 149,999
        f.write(pair)
    return path


TRANSCRIPT: list[Case] = [
    Case(
        "duplicate key",
        write("t.jsonl", b'{"role": "user", "role": "user", "content": "x"}\n'),
        "line 1: duplicate JSON key",
    ),
    Case(
        "NaN",
        write("t.jsonl", b'{"role": "user", "content": "x", "n": NaN}\n'),
        "non-finite JSON number",
    ),
    Case(
        "integer of 5000 digits",
        write("t.jsonl", b'{"role": "user", "content": "x", "n": ' + b"5" * 5000 + b"}\n"),
        "more than 4300 digits",
    ),
    Case(
        "invalid UTF-8",
        write("t.jsonl", exchange() + b'{"role": "user", "content": "\xff"}\n'),
        "line 3: invalid UTF-8",
    ),
    Case("byte-order mark", write("t.jsonl", b"\xef\xbb\xbf" + exchange()), "byte-order mark"),
    Case("empty file", write("t.jsonl", b""), "empty file"),
    Case(
        "nested 100,000 deep",
        write("t.jsonl", b'{"role": "user", "content": ' + nested(DEEP) + b"}\n"),
        "nesting too deep",
    ),
    Case(
        "NUL and control characters in a tool call id",
        write(
            "t.jsonl",
            b'{"role": "user", "content": "x"}\n'
            b'{"role": "assistant", "tool_calls": [{"id": "a\\u0000\\u001b"}]}\n',
        ),
        "has no result",
    ),
    Case(
        "broken line 149,999 of a large file",
        transcript_broken_deep_in,
        f"long.jsonl line {BROKEN_AT - 1}: invalid JSON",
    ),
    Case("directory", directory, "is a directory"),
    Case("/dev/null", device("/dev/null"), "not a regular file"),
    Case("/dev/zero", device("/dev/zero"), "not a regular file"),
    Case("named pipe", fifo("t.jsonl"), "not a regular file"),
    Case("dangling symbolic link", symlink_to("/nonexistent/t.jsonl", "t.jsonl"), "no such"),
]


@pytest.mark.parametrize("case", TRANSCRIPT, ids=[c.name for c in TRANSCRIPT])
def test_transcript_refuses(case: Case, tmp_path: Path) -> None:
    source = case.make(tmp_path)
    sidecar = tmp_path / "out" / "priorities.json"
    sidecar.parent.mkdir()
    result = run(
        "transcript", "annotate", str(source), str(sidecar), timeout=TIMEOUT, subprocess_run=True
    )
    message = one_error_line(result)
    assert case.expect in message, message
    assert list(sidecar.parent.iterdir()) == []


def test_transcript_export_refuses_a_hostile_sidecar(tmp_path: Path) -> None:
    source = tmp_path / "t.jsonl"
    source.write_bytes(exchange())
    out = tmp_path / "out"
    for raw, expect in [
        (b'{"version": 1, "version": 1}', "duplicate JSON key"),
        (b"[" * DEEP + b"]" * DEEP, "nesting too deep"),
        (b"\xef\xbb\xbf{}", "byte-order mark"),
    ]:
        sidecar = tmp_path / "p.json"
        sidecar.write_bytes(raw)
        message = one_error_line(
            run(
                "transcript",
                "export",
                str(source),
                str(sidecar),
                "10000",
                str(out),
                timeout=TIMEOUT,
                subprocess_run=True,
            )
        )
        assert expect in message, message
        assert not out.exists()


def test_battery_size() -> None:
    """The issue asks for at least 30 hostile inputs."""
    assert len(INGEST) + len(PACK) + len(SELECT) + len(TRANSCRIPT) >= 30


BOTH_BACKENDS: list[Case] = [
    # PostgreSQL text cannot hold U+0000: it used to fail there with a traceback
    # that printed the statement's parameters, chunk bodies included.
    Case(
        "NUL in content",
        line(text(id="nul-body", dedupe_key="nul-body", content="a\u0000b")),
        "field 'content': must not contain a NUL character",
    ),
    Case(
        "NUL in source_uri",
        line(text(id="nul-uri", dedupe_key="nul-uri", source_uri="doc://a\u0000b")),
        "NUL character",
    ),
    Case(
        "stored version, other content",
        line(text(content="Alpha content, changed.")),
        "already stored with record digest",
    ),
    Case("duplicate key", line(text()[:-1] + b', "id": "x"}'), "duplicate JSON key: 'id'"),
    Case(
        "bad record after many good ones",
        write(
            "many.jsonl",
            b"".join(text(id=f"many-{i}", dedupe_key=f"many-{i}") + b"\n" for i in range(5000))
            + text(id="many-bad", priority=101)
            + b"\n",
        ),
        "many.jsonl:5001: field 'priority'",
    ),
]


@pytest.mark.parametrize("case", BOTH_BACKENDS, ids=[c.name for c in BOTH_BACKENDS])
def test_ingest_refuses_on_both_backends(case: Case, db_url: str, tmp_path: Path) -> None:
    alpha = tmp_path / "alpha.jsonl"
    alpha.write_bytes(text() + b"\n")
    run("ingest", str(alpha), db=db_url, check=True)
    before = state(db_url)
    head = run("head", db=db_url, check=True).stdout
    message = one_error_line(
        run("ingest", str(case.make(tmp_path)), db=db_url, timeout=TIMEOUT, subprocess_run=True)
    )
    assert case.expect in message, message
    assert state(db_url) == before
    assert run("head", db=db_url, check=True).stdout == head
