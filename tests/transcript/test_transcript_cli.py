"""`ledger transcript annotate|export` end to end, in subprocesses, as a user runs them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from .factory import (
    FIXTURES,
    ExchangeSpec,
    assistant,
    build_transcript,
    lines,
    parse_continuation,
    run_cli,
    run_in_pty,
    user,
)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder with both fixtures and a generated CRLF transcript."""
    shutil.copy(FIXTURES / "plain.jsonl", tmp_path / "plain.jsonl")
    shutil.copy(FIXTURES / "wrapped.jsonl", tmp_path / "wrapped.jsonl")
    data, _ = build_transcript(
        [
            ExchangeSpec("wrapped", "crlf ``` ü", tools=2, eol="\r\n"),
            ExchangeSpec("plain", "second 日本", tools=1, eol="\r\n"),
            ExchangeSpec("plain", "third", eol="\r\n"),
        ]
    )
    (tmp_path / "crlf.jsonl").write_bytes(data)
    return tmp_path


def snapshot(path: Path) -> tuple[bytes, int, int]:
    st = os.stat(path)
    return path.read_bytes(), st.st_mtime_ns, st.st_ino


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: "), stderr
    return stderr


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# -- the happy path --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["plain.jsonl", "wrapped.jsonl", "crlf.jsonl"])
def test_annotate_then_export(work: Path, name: str) -> None:
    source = work / name
    before = snapshot(source)
    proc = run_cli(
        "transcript", "annotate", source, work / "p.json", "e001=pinned", "e003=aside", cwd=work
    )
    assert proc.returncode == 0, proc.stderr
    count = {"plain.jsonl": 4, "wrapped.jsonl": 3, "crlf.jsonl": 3}[name]
    assert proc.stdout.startswith(f"{count} exchanges (1 pinned, ")
    sidecar = json.loads((work / "p.json").read_text())
    assert sidecar["version"] == 1
    assert sidecar["sourceSha256"] == hashlib.sha256(before[0]).hexdigest()
    assert list(sidecar["priorities"]) == [f"e{n:03d}" for n in range(1, count + 1)]
    assert sidecar["priorities"]["e001"] == "pinned" and sidecar["priorities"]["e003"] == "aside"
    assert sidecar["priorities"]["e002"] == "normal"
    assert mode(work / "p.json") == 0o600

    budget = 900
    proc = run_cli("transcript", "export", source, work / "p.json", budget, work / "out")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("selected ") and proc.stderr == ""
    out = (work / "out" / "continuation.md").read_bytes()
    assert len(out) <= budget
    manifest = json.loads((work / "out" / "omissions.json").read_text())
    first = manifest["exchanges"][0]
    source_lines = before[0].splitlines(keepends=True)
    pinned_payload = b"".join(source_lines[first["firstLine"] - 1 : first["lastLine"]])
    assert pinned_payload.startswith(source_lines[0]) and pinned_payload in out
    blocks = parse_continuation(out)
    assert blocks[0][:2] == ("e001", "pinned") and blocks[0][2] == pinned_payload
    assert manifest["sourceSha256"] == sidecar["sourceSha256"]
    assert [e["id"] for e in manifest["exchanges"]] == list(sidecar["priorities"])
    assert [e["id"] for e in manifest["exchanges"] if e["status"] == "selected"] == [
        b[0] for b in blocks
    ]
    assert manifest["used"] == len(out) and manifest["budget"] == budget
    assert mode(work / "out" / "continuation.md") == mode(work / "out" / "omissions.json") == 0o600
    assert sorted(os.listdir(work / "out")) == ["continuation.md", "omissions.json"]
    assert snapshot(source) == before  # bytes, mtime and inode untouched


def test_crlf_payload_is_byte_exact_in_the_continuation(work: Path) -> None:
    source = work / "crlf.jsonl"
    run_cli(
        "transcript",
        "annotate",
        source,
        work / "p.json",
        "e001=pinned",
        "e002=pinned",
        "e003=pinned",
    )
    proc = run_cli("transcript", "export", source, work / "p.json", 100_000, work / "out")
    assert proc.returncode == 0, proc.stderr
    out = (work / "out" / "continuation.md").read_bytes()
    data = source.read_bytes()
    assert b"".join(b[2] for b in parse_continuation(out)) == data
    assert out.count(b"\r\n") == data.count(b"\r\n")
    assert b"\n`````jsonl\n" not in out and b"\n````jsonl\n" in out  # ``` in e001 only


def test_budget_below_pinned_is_refused_with_the_needed_size(work: Path) -> None:
    run_cli("transcript", "annotate", work / "plain.jsonl", work / "p.json", "e004=pinned")
    proc = run_cli("transcript", "export", work / "plain.jsonl", work / "p.json", 300, work / "out")
    assert proc.returncode == 1
    assert "budget 300 bytes is below the 1 pinned exchange(s) plus Markdown framing" in (
        one_error_line(proc.stderr)
    )
    assert not (work / "out").exists()


def test_unknown_exchange_and_bad_priority_refused_by_annotate(work: Path) -> None:
    for arg, fragment in (
        ("e009=pinned", "unknown exchange id 'e009'"),
        ("e001=critical", "unknown priority 'critical'"),
        ("e001", "not ID=PRIORITY"),
    ):
        proc = run_cli("transcript", "annotate", work / "plain.jsonl", work / "p.json", arg)
        assert proc.returncode == 1
        assert fragment in one_error_line(proc.stderr)
        assert not (work / "p.json").exists()


def test_usage_errors_exit_2(work: Path) -> None:
    proc = run_cli(
        "transcript", "export", work / "plain.jsonl", work / "p.json", "lots", work / "out"
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    proc = run_cli(
        "transcript", "export", work / "plain.jsonl", work / "p.json", "-5", work / "out"
    )
    assert proc.returncode == 2


def test_help_documents_commands_with_examples() -> None:
    for args in (("transcript",), ("transcript", "annotate"), ("transcript", "export")):
        proc = run_cli(*args, "--help")
        assert proc.returncode == 0
        assert "ledger transcript annotate chat.jsonl" in proc.stdout or (
            "ledger transcript export chat.jsonl" in proc.stdout
        )
    assert "OVERWRITE" in run_cli("transcript", "--help").stdout


# -- fail-closed input through the command line ------------------------------------------


@pytest.mark.parametrize(
    ("data", "line", "fragment"),
    [
        (
            lines(user("q"), assistant(None, "c1"), user("next"), assistant("a")),
            2,
            "outstanding call",
        ),
        (
            lines(user("q"), {"role": "tool", "tool_call_id": "x"}, assistant("a")),
            2,
            "orphaned result",
        ),
        (lines(user("q"), assistant("a"), user("dangling")), 3, "final user prompt"),
        (lines({"type": "summary", "summary": "s"}), 1, "metadata record"),
        (b"\xef\xbb\xbf" + lines(user("q"), assistant("a")), 1, "byte-order mark"),
        (b"", 1, "empty file"),
    ],
)
def test_invalid_transcripts_fail_with_file_and_line(
    work: Path, data: bytes, line: int, fragment: str
) -> None:
    bad = work / "bad.jsonl"
    bad.write_bytes(data)
    proc = run_cli("transcript", "annotate", bad, work / "p.json", cwd=work)
    assert proc.returncode == 1
    message = one_error_line(proc.stderr)
    assert message.startswith(f"error: {bad} line {line}: ") and fragment in message
    assert not (work / "p.json").exists()


def test_missing_source_is_an_input_error(work: Path) -> None:
    proc = run_cli("transcript", "annotate", work / "nope.jsonl", work / "p.json")
    assert proc.returncode == 1 and "no such transcript file" in one_error_line(proc.stderr)


# -- refused outputs -------------------------------------------------------------------------


def annotate(work: Path, *extra: str) -> None:
    proc = run_cli("transcript", "annotate", work / "plain.jsonl", work / "p.json", *extra)
    assert proc.returncode == 0, proc.stderr


def export(
    work: Path, outdir: Path | None = None, budget: int = 2000
) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "transcript",
        "export",
        work / "plain.jsonl",
        work / "p.json",
        budget,
        outdir or work / "out",
    )


def test_existing_sidecar_without_a_terminal_is_refused(work: Path) -> None:
    annotate(work, "e001=pinned")
    before = snapshot(work / "p.json")
    proc = run_cli("transcript", "annotate", work / "plain.jsonl", work / "p.json", "e002=aside")
    assert proc.returncode == 1
    message = one_error_line(proc.stderr)
    assert "already exists" in message and "without a terminal" in message
    assert snapshot(work / "p.json") == before


def test_existing_outputs_without_a_terminal_are_refused(work: Path) -> None:
    annotate(work)
    assert export(work).returncode == 0
    before = [snapshot(work / "out" / n) for n in ("continuation.md", "omissions.json")]
    proc = export(work, budget=1000)
    assert proc.returncode == 1
    assert "without a terminal" in one_error_line(proc.stderr)
    assert [snapshot(work / "out" / n) for n in ("continuation.md", "omissions.json")] == before
    # One existing output is enough to refuse; the other is not written either.
    (work / "out" / "continuation.md").unlink()
    proc = export(work, budget=1000)
    assert proc.returncode == 1 and "omissions.json already exists" in proc.stderr
    assert sorted(os.listdir(work / "out")) == ["omissions.json"]


def test_symlinked_output_is_refused(work: Path) -> None:
    annotate(work)
    (work / "out").mkdir()
    (work / "elsewhere.md").write_text("keep me")
    (work / "out" / "continuation.md").symlink_to(work / "elsewhere.md")
    proc = export(work)
    assert proc.returncode == 1 and "symbolic link" in one_error_line(proc.stderr)
    assert (work / "elsewhere.md").read_text() == "keep me"
    assert (work / "out" / "continuation.md").is_symlink()


def test_symlinked_sidecar_output_is_refused(work: Path) -> None:
    (work / "real.json").write_text("{}")
    (work / "p.json").symlink_to(work / "real.json")
    proc = run_cli("transcript", "annotate", work / "plain.jsonl", work / "p.json")
    assert proc.returncode == 1 and "symbolic link" in one_error_line(proc.stderr)
    assert (work / "real.json").read_text() == "{}"


def test_symlinked_output_directory_is_refused(work: Path) -> None:
    annotate(work)
    (work / "real-out").mkdir()
    (work / "out").symlink_to(work / "real-out")
    proc = export(work)
    assert proc.returncode == 1 and "output directory is a symbolic link" in proc.stderr
    assert os.listdir(work / "real-out") == []


def test_hard_linked_output_is_refused(work: Path) -> None:
    annotate(work)
    (work / "out").mkdir()
    (work / "keep.json").write_text("mine")
    os.link(work / "keep.json", work / "out" / "omissions.json")
    proc = export(work)
    assert proc.returncode == 1 and "hard links" in one_error_line(proc.stderr)
    assert (work / "keep.json").read_text() == "mine"


def test_outputs_aliasing_the_source_or_sidecar_are_refused(work: Path) -> None:
    # The source is named continuation.md and lives in OUTDIR.
    (work / "out").mkdir()
    source = work / "out" / "continuation.md"
    shutil.copy(work / "plain.jsonl", source)
    assert run_cli("transcript", "annotate", source, work / "p.json").returncode == 0
    before = snapshot(source)
    proc = run_cli("transcript", "export", source, work / "p.json", 5000, work / "out")
    assert proc.returncode == 1 and "same path as the input" in one_error_line(proc.stderr)
    assert snapshot(source) == before
    # The sidecar is hard-linked as OUTDIR/omissions.json.
    os.link(work / "p.json", work / "out2-omissions")
    (work / "out2").mkdir()
    os.link(work / "p.json", work / "out2" / "omissions.json")
    proc = run_cli("transcript", "export", source, work / "p.json", 5000, work / "out2")
    assert proc.returncode == 1 and "same file as the input" in one_error_line(proc.stderr)
    # annotate writing its sidecar over its own source.
    proc = run_cli("transcript", "annotate", work / "plain.jsonl", work / "plain.jsonl")
    assert proc.returncode == 1 and "same path as the input" in one_error_line(proc.stderr)
    # The source reached through a symlink named like the output.
    (work / "out3").mkdir()
    link = work / "out3" / "omissions.json"
    link.symlink_to(work / "plain.jsonl")
    proc = run_cli(
        "transcript", "export", work / "plain.jsonl", work / "p.json", 5000, work / "out3"
    )
    assert proc.returncode == 1 and "symbolic link" in one_error_line(proc.stderr)


def test_stale_sidecar_is_refused(work: Path) -> None:
    annotate(work, "e001=pinned")
    with open(work / "plain.jsonl", "ab") as handle:
        handle.write(lines(user("one more"), assistant("ok")))
    proc = export(work)
    assert proc.returncode == 1
    message = one_error_line(proc.stderr)
    assert "does not match" in message and "rerun `ledger transcript annotate`" in message
    assert not (work / "out").exists()


def test_sidecar_for_another_transcript_is_refused(work: Path) -> None:
    proc = run_cli("transcript", "annotate", work / "wrapped.jsonl", work / "p.json")
    assert proc.returncode == 0
    proc = export(work)
    assert proc.returncode == 1 and "sourceSha256" in one_error_line(proc.stderr)


# -- OVERWRITE at a terminal (a real pseudo-terminal) -------------------------------------


def test_overwrite_typed_at_a_terminal_replaces_the_sidecar(work: Path) -> None:
    annotate(work, "e001=pinned")
    code, screen, err = run_in_pty(
        "transcript",
        "annotate",
        work / "plain.jsonl",
        work / "p.json",
        "e002=aside",
        answer="OVERWRITE",
    )
    assert code == 0, (screen, err)
    assert "Type OVERWRITE to replace" in screen and "4 exchanges" in screen
    priorities = json.loads((work / "p.json").read_text())["priorities"]
    assert priorities == {"e001": "normal", "e002": "aside", "e003": "normal", "e004": "normal"}
    assert mode(work / "p.json") == 0o600


def test_wrong_word_at_a_terminal_keeps_the_sidecar(work: Path) -> None:
    annotate(work, "e001=pinned")
    before = snapshot(work / "p.json")
    code, screen, err = run_in_pty(
        "transcript", "annotate", work / "plain.jsonl", work / "p.json", "e002=aside", answer="yes"
    )
    assert code == 1 and "not confirmed" in one_error_line(err)
    assert snapshot(work / "p.json") == before


def test_overwrite_typed_at_a_terminal_replaces_both_outputs(work: Path) -> None:
    annotate(work, "e001=pinned")
    assert export(work, budget=5000).returncode == 0
    source_before = snapshot(work / "plain.jsonl")
    code, screen, err = run_in_pty(
        "transcript",
        "export",
        work / "plain.jsonl",
        work / "p.json",
        600,
        work / "out",
        answer="OVERWRITE",
    )
    assert code == 0, (screen, err)
    assert "continuation.md" in screen and "omissions.json" in screen
    assert "selected 2 of 4 exchanges, 578 of 600 bytes" in screen  # e001 pinned, e003 fits
    assert len((work / "out" / "continuation.md").read_bytes()) <= 600
    assert json.loads((work / "out" / "omissions.json").read_text())["budget"] == 600
    assert sorted(os.listdir(work / "out")) == ["continuation.md", "omissions.json"]
    assert snapshot(work / "plain.jsonl") == source_before


def test_wrong_word_at_a_terminal_keeps_both_outputs(work: Path) -> None:
    annotate(work)
    assert export(work, budget=5000).returncode == 0
    names = ("continuation.md", "omissions.json")
    before = [snapshot(work / "out" / n) for n in names]
    code, screen, err = run_in_pty(
        "transcript",
        "export",
        work / "plain.jsonl",
        work / "p.json",
        600,
        work / "out",
        answer="overwrite",
    )
    assert code == 1 and "not confirmed" in one_error_line(err)
    assert [snapshot(work / "out" / n) for n in names] == before
    assert sorted(os.listdir(work / "out")) == list(names)


def test_no_prompt_at_a_terminal_when_nothing_exists(work: Path) -> None:
    annotate(work)
    code, screen, err = run_in_pty(
        "transcript",
        "export",
        work / "plain.jsonl",
        work / "p.json",
        5000,
        work / "out",
        answer=None,
    )
    assert code == 0, (screen, err)
    assert "OVERWRITE" not in screen
