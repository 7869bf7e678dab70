"""`ledger pack` and `ledger select` end to end, in subprocesses, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

Run = Callable[..., subprocess.CompletedProcess[bytes]]

SEED_STDOUT = (
    b"budget=170 used=162 remaining=8\n"
    b"selected: policy, task-state, current-refund-policy, refund-faq, current-input\n"
    b"excluded: forum-claim(trust_denied), future-refund-policy(not_yet_effective), "
    b"legal-note(permission_denied), mirror-refund-policy(duplicate), "
    b"old-refund-policy(expired), shipping-note(budget)\n"
)
SEED_000 = {
    "budget": 8,
    "items": [
        {
            "id": "contract",
            "cost": 3,
            "priority": 0,
            "required": True,
            "content": "Requested outcome",
        },
        {"id": "recent", "cost": 4, "priority": 9, "required": False, "content": "Recent result"},
        {"id": "older", "cost": 3, "priority": 2, "required": False, "content": "Old result"},
    ],
}


def schema() -> dict[str, Any]:
    return json.loads(files("ledger").joinpath("schemas/pack.schema.json").read_text("utf-8"))


@pytest.mark.parametrize("optimize", [False, True])
def test_pack_default_fixture(run_cli: Run, optimize: bool) -> None:
    result = run_cli("pack", optimize=optimize)
    assert (result.returncode, result.stdout, result.stderr) == (0, SEED_STDOUT, b"")


def test_pack_explicit_fixture(run_cli: Run, tmp_path: Path, fixture_bytes: bytes) -> None:
    path = tmp_path / "chunks.json"
    path.write_bytes(fixture_bytes)
    result = run_cli("pack", "--fixture", str(path))
    assert (result.returncode, result.stdout, result.stderr) == (0, SEED_STDOUT, b"")


def test_json_pack_is_byte_identical_and_valid(run_cli: Run, tmp_path: Path) -> None:
    first = tmp_path / "new" / "folders" / "pack.json"
    second = tmp_path / "again.json"
    results = [
        run_cli("pack", "--json-pack", str(first)),
        run_cli("pack", "--json-pack", str(second), optimize=True),
    ]
    for result, path in zip(results, (first, second), strict=True):
        assert result.returncode == 0 and result.stderr == b""
        assert result.stdout == SEED_STDOUT + f"wrote {path.resolve()}\n".encode()
    data = first.read_bytes()
    assert data == second.read_bytes()
    assert data.endswith(b"}\n") and not data.startswith(b"\xef\xbb\xbf")
    pack = json.loads(data)
    assert data == (json.dumps(pack, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()
    jsonschema.Draft202012Validator.check_schema(schema())
    jsonschema.Draft202012Validator(schema()).validate(pack)
    assert [s["id"] for s in pack["selected"]] == [
        "policy",
        "task-state",
        "current-refund-policy",
        "refund-faq",
        "current-input",
    ]


def test_json_pack_relative_path_is_reported_absolute(run_cli: Run, tmp_path: Path) -> None:
    result = run_cli("pack", "--json-pack", "out/p.json", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == f"wrote {tmp_path / 'out' / 'p.json'}".encode()


def test_schema_refuses_what_the_pack_must_not_hold(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "pack.json"
    assert run_cli("pack", "--json-pack", str(path)).returncode == 0
    validator = jsonschema.Draft202012Validator(schema())
    pack = json.loads(path.read_bytes())
    assert validator.is_valid(pack)
    bad_packs = [
        {**pack, "extra": 1},
        {**pack, "excluded": [{"id": "x-y", "reason": "superseded"}]},
        {**pack, "excluded": [{"id": "x-y", "reason": "budget", "detail": {}}]},
        {**pack, "used_tokens": 1.5},
        {**pack, "selected": [{**pack["selected"][0], "content": " padded "}]},
        {**pack, "selected": [{**pack["selected"][0], "trust": "gossip"}]},
    ]
    for bad in bad_packs:
        assert not validator.is_valid(bad)


def write(tmp_path: Path, data: bytes | str, name: str = "f.json") -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def pack_error(result: subprocess.CompletedProcess[bytes], words: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("context pack error: "), lines
    assert words in lines[0]
    assert "Traceback" not in result.stderr.decode()


def test_pack_errors(run_cli: Run, tmp_path: Path, fixture_bytes: bytes) -> None:
    pack_error(run_cli("pack", "--fixture", str(tmp_path / "missing.json")), "does not exist")
    pack_error(run_cli("pack", "--fixture", str(tmp_path)), "is a directory")
    pack_error(run_cli("pack", "--fixture", str(write(tmp_path, ""))), "empty JSON text")
    pack_error(
        run_cli("pack", "--fixture", str(write(tmp_path, b"\xef\xbb\xbf{}"))), "byte-order mark"
    )
    pack_error(
        run_cli("pack", "--fixture", str(write(tmp_path, '{"a": 1, "a": 2}'))), "duplicate JSON key"
    )
    pack_error(
        run_cli("pack", "--fixture", str(write(tmp_path, '{"a": NaN}'))), "non-finite JSON number"
    )
    pack_error(
        run_cli("pack", "--fixture", str(write(tmp_path, b'{"a": "\xff"}'))), "invalid UTF-8"
    )
    fixture = json.loads(fixture_bytes)
    fixture["chunks"][0]["required_permission"] = "root-only"
    path = write(tmp_path, json.dumps(fixture))
    pack_error(
        run_cli("pack", "--fixture", str(path), optimize=True),
        "required chunk 'policy' failed gate: permission_denied",
    )
    fixture = json.loads(fixture_bytes)
    fixture["request"]["pack_budget_tokens"] = 50
    pack_error(
        run_cli("pack", "--fixture", str(write(tmp_path, json.dumps(fixture)))),
        "required chunks exceed the pack budget",
    )


def test_pack_unreadable_fixture(run_cli: Run, tmp_path: Path, fixture_bytes: bytes) -> None:
    path = write(tmp_path, fixture_bytes)
    path.chmod(0)
    if os.access(path, os.R_OK):
        # Running as root, which reads anything: a symlink loop is unreadable too.
        path = tmp_path / "loop"
        path.symlink_to(path)
    pack_error(run_cli("pack", "--fixture", str(path)), "cannot read fixture")


def test_pack_bad_json_pack_target_leaves_stdout_empty(run_cli: Run, tmp_path: Path) -> None:
    pack_error(run_cli("pack", "--json-pack", str(tmp_path)), "is a directory")
    blocker = write(tmp_path, "x", "blocker")
    pack_error(run_cli("pack", "--json-pack", str(blocker / "pack.json")), "cannot write")
    assert blocker.read_text() == "x"


def test_pack_output_identical_under_optimize(
    run_cli: Run, tmp_path: Path, fixture_bytes: bytes
) -> None:
    fixture = json.loads(fixture_bytes)
    fixture["chunks"][3]["priority"] = 100.0  # a float is not an integer, even with -O
    path = write(tmp_path, json.dumps(fixture))
    normal = run_cli("pack", "--fixture", str(path))
    optimized = run_cli("pack", "--fixture", str(path), optimize=True)
    pack_error(normal, "chunks[3].priority must be an integer")
    assert (normal.returncode, normal.stdout, normal.stderr) == (
        optimized.returncode,
        optimized.stdout,
        optimized.stderr,
    )


def envelope(result: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    assert result.stderr == b""
    value = json.loads(result.stdout)
    assert result.stdout.endswith(b"\n") and result.stdout.count(b"\n") == 1
    return value


@pytest.mark.parametrize("optimize", [False, True])
def test_select_seed_example(run_cli: Run, optimize: bool) -> None:
    result = run_cli("select", stdin=json.dumps(SEED_000).encode(), optimize=optimize)
    assert result.returncode == 0
    assert envelope(result) == {
        "ok": True,
        "result": {"selected": ["contract", "recent"], "omitted": ["older"], "used": 7},
    }


def bad_item(**changes: Any) -> bytes:
    data = json.loads(json.dumps(SEED_000))
    data["items"][1].update(changes)
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    ("stdin", "words"),
    [
        (b'{"budget": 8, "budget": 9, "items": []}', "duplicate JSON key"),
        (b'{"budget": NaN, "items": []}', "non-finite JSON number"),
        (b'{"budget": 8, "items": [], "note": "x"}', "invalid fields"),
        (bad_item(extra=1), "items[1] has invalid fields"),
        (bad_item(cost=True), "items[1].cost must be an integer"),
        (bad_item(priority=False), "items[1].priority must be an integer"),
        (b'{"budget": 8}', "missing items"),
        (json.dumps({"budget": 8, "items": [{"id": "a", "cost": 3}]}).encode(), "missing"),
        (bad_item(required=True, cost=6), "more than the budget"),
        (b"", "empty JSON text"),
        (b"[1, 2", "invalid JSON"),
    ],
)
def test_select_invalid_input(run_cli: Run, stdin: bytes, words: str) -> None:
    result = run_cli("select", stdin=stdin)
    assert result.returncode == 1
    value = envelope(result)
    assert value["ok"] is False and set(value) == {"ok", "error"}
    assert words in value["error"]


def test_database_free_commands_do_not_import_sqlalchemy(tmp_path: Path) -> None:
    probe = (
        "import sys, io\n"
        "from ledger_cli.main import main\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[2].encode()))\n"
        "try:\n"
        "    main([sys.argv[1]])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'alembic'))\n"
        "sys.stderr.write(repr((code, heavy)))\n"
    )
    for command, stdin in (("pack", ""), ("select", json.dumps(SEED_000))):
        result = subprocess.run(
            [sys.executable, "-c", probe, command, stdin],
            capture_output=True,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
        assert result.stderr.decode().endswith("(0, [])"), result.stderr


def test_commands_have_help_with_an_example(run_cli: Run) -> None:
    for command in ("pack", "select"):
        result = run_cli(command, "--help")
        assert result.returncode == 0
        assert b"Example:" in result.stdout and f"ledger {command}".encode() in result.stdout
