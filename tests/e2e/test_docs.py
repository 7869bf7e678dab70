"""The README is true: every command `ledger --help` lists is documented, every
command has help with an example, and the README's example blocks run as written
in a fresh folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ledger_cli.main import cli
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text("utf-8")


def commands() -> list[str]:
    ctx = click.Context(cli)
    return cli.list_commands(ctx)


def block(heading: str, language: str) -> str:
    """The first fenced block of `language` under the README section `heading`."""
    start = README.index(f"\n## {heading}\n")
    end = README.find("\n## ", start + 1)
    section = README[start : end if end != -1 else None]
    found = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert found is not None, f"no {language} block under {heading}"
    return found.group(1)


def test_help_lists_the_commands_we_know() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = commands()
    assert {"init", "ingest", "build", "why-evicted", "verify", "replay", "pack"} <= set(listed)
    for name in listed:
        assert name in result.output


@pytest.mark.parametrize("name", commands())
def test_every_command_is_documented_in_the_readme(name: str) -> None:
    assert re.search(rf"`ledger {re.escape(name)}\b", README), f"`ledger {name}` not in README"


@pytest.mark.parametrize("name", commands())
def test_every_command_has_help_with_an_example(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    text = command.help or ""
    assert text.strip(), f"{name} has no help"
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            assert (sub.help or "").strip(), f"{name} {sub.name} has no help"
            assert "ledger " in (sub.help or "") + text, f"{name} {sub.name}: no example"
    else:
        assert "ledger " in text, f"{name}: no example in its help"


@pytest.fixture
def fresh_folder(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    return tmp_path


def test_the_what_it_does_block_runs_as_written(fresh_folder: Path) -> None:
    script = block("What it does", "sh")
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=fresh_folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "pack 1 reproduces exactly" in result.stdout
    assert "ok: " in result.stdout
    assert (fresh_folder / "pack-1.html").is_file()


def test_the_python_api_block_runs_as_written(fresh_folder: Path) -> None:
    script = block("Python API", "python")
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=fresh_folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("1 162 ['policy', 'task-state'")
    assert "True True" in lines


# The reference pages in docs/ (tests/e2e/test_reference_docs.py checks them in
# detail): the index reaches every page, and no page names a command that the
# command line does not have.

DOCS = ROOT / "docs"


def test_the_docs_index_links_every_page() -> None:
    index = (DOCS / "index.md").read_text("utf-8")
    linked = {(DOCS / target).resolve() for target in re.findall(r"\]\(([^)#\s]+)", index)}
    # The reference and the architecture page (guides are linked as they land).
    pages = {p.resolve() for p in (DOCS / "reference").glob("*.md")}
    pages.add((DOCS / "architecture.md").resolve())
    assert pages <= linked, sorted(str(p.relative_to(ROOT)) for p in pages - linked)


def named_commands(markdown: str) -> set[str]:
    """The command of every `ledger ...` in a code span or a shell line."""
    spans = re.findall(r"`(ledger [^`]*)`", markdown)
    blocks = "\n".join(re.findall(r"^```(?:sh|console)?\n(.*?)^```", markdown, re.S | re.M))
    lines = re.findall(r"^(?:\$ )?(ledger [^\n]*)", blocks, re.M)
    named = set()
    for use in spans + lines:
        words = [w for w in use.split()[1:] if not w.startswith("-")]
        if words and re.fullmatch(r"[a-z][a-z-]*", words[0]):
            named.add(words[0])
    return named


@pytest.mark.parametrize("page", sorted(DOCS.rglob("*.md")), ids=lambda p: p.name)
def test_the_docs_name_only_commands_that_exist(page: Path) -> None:
    markdown = page.read_text("utf-8")
    # `--db PATH ledger ...` forms: drop a global option's value before the command.
    markdown = re.sub(r"ledger --db \S+", "ledger", markdown)
    unknown = named_commands(markdown) - set(commands())
    assert not unknown, f"{page.name} names commands ledger lacks: {sorted(unknown)}"
