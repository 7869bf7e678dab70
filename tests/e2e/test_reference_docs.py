"""The reference in docs/ is true of the code: the gate-and-reason table, every
command and option, every exit code, every core module, every JSON key of a
pack, and every relative link. Each test reads the page as a person would
(its tables and headings), so a page that drifts from the code fails here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

import ledger
from ledger.core import errors
from ledger.core.reasons import REASONS, TABLE, Reason
from ledger_cli.main import cli
from tests.conftest import ROOT
from tests.seeded import seed_open_ledger

DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"
CORE = ROOT / "ledger" / "core"
# Every Markdown page of the documentation, and the core's README it links to.
PAGES = sorted(DOCS.rglob("*.md")) + [CORE / "README.md"]


def text(path: Path) -> str:
    return path.read_text("utf-8")


def prose(markdown: str) -> str:
    """The page without its fenced code blocks (a `# comment` there is no heading)."""
    return re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)


def tables(markdown: str) -> Iterator[list[dict[str, str]]]:
    """Each Markdown table of the page as a list of rows, cells keyed by header."""
    lines = prose(markdown).splitlines()
    i = 0
    while i < len(lines) - 1:
        if lines[i].startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1]):
            header = cells(lines[i])
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(dict(zip(header, cells(lines[i]), strict=True)))
                i += 1
            yield rows
        else:
            i += 1


def cells(line: str) -> list[str]:
    # A `\|` inside a cell is a literal bar, not a column separator.
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def unquote(cell: str) -> str:
    return cell.strip().strip("`")


def key_list(cell: str) -> tuple[str, ...]:
    return tuple(unquote(k) for k in cell.split(",")) if unquote(cell) else ()


def headings(markdown: str) -> list[tuple[int, str]]:
    return [
        (len(m.group(1)), m.group(2).strip())
        for m in re.finditer(r"^(#{1,6}) (.+)$", prose(markdown), re.M)
    ]


def slug(heading: str) -> str:
    """The anchor a Markdown site (mkdocs, GitHub) gives a heading."""
    plain = re.sub(r"[^\w\- ]", "", heading.lower().replace("`", ""))
    return plain.strip().replace(" ", "-")


# ---------------------------------------------------------------------------
# gates.md: the table of reasons


def reason_rows() -> dict[str, dict[str, str]]:
    rows: dict[str, dict[str, str]] = {}
    for table in tables(text(REFERENCE / "gates.md")):
        if table and "reason" in table[0] and "sentence" in table[0]:
            for row in table:
                rows[unquote(row["reason"])] = row
    return rows


@pytest.mark.parametrize("reason", TABLE, ids=lambda r: r.name)
def test_every_reason_is_in_the_gates_table_as_the_code_has_it(reason: Reason) -> None:
    rows = reason_rows()
    assert reason.name in rows, f"{reason.name} has no row in docs/reference/gates.md"
    row = rows[reason.name]
    if reason.gate is None:  # an answer of `why`: no gate, no stored status
        assert "gate" not in row, f"{reason.name} is listed among the gates"
    else:
        assert row["gate"] == str(reason.gate), reason.name
        assert row["stored status"] == str(reason.status), reason.name
    assert key_list(row["detail keys"]) == reason.detail_keys, reason.name
    assert row["sentence"] == reason.words, reason.name
    assert row["diff cause"] == (reason.cause or "-"), reason.name
    assert unquote(row["admitting change"]) == (reason.change or "-"), reason.name


def test_the_gates_table_holds_no_reason_the_code_lacks() -> None:
    assert set(reason_rows()) == {r.name for r in TABLE}


def test_the_gates_are_listed_in_gate_order() -> None:
    page = prose(text(REFERENCE / "gates.md"))
    section = page[page.index("## Selection: gates in this order") :]
    listed = re.findall(r"^(\d)\. \*\*`([a-z_]+)`\*\*", section, re.M)
    assert listed == [(str(i), name) for i, name in enumerate(REASONS, 1)]


# ---------------------------------------------------------------------------
# commands.md: every command, subcommand and option


def command_paths() -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []

    def walk(command: click.Command, path: str) -> None:
        found.append((path, command))
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, f"{path} {name}")

    walk(cli, "ledger")
    return found


def command_section(path: str) -> str:
    """The text under the heading `` `ledger ...` `` up to the next heading."""
    page = prose(text(REFERENCE / "commands.md"))
    found = re.search(rf"^#+ `{re.escape(path)}`\n(.*?)(?=^#+ |\Z)", page, re.S | re.M)
    assert found is not None, f"no heading `{path}` in docs/reference/commands.md"
    return found.group(1)


@pytest.mark.parametrize(("path", "command"), command_paths(), ids=lambda v: str(v))
def test_every_command_has_a_heading_with_each_of_its_options(
    path: str, command: click.Command
) -> None:
    section = command_section(path)
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        for opt in param.opts + param.secondary_opts:
            assert re.search(rf"`{re.escape(opt)}`", section), f"{path}: {opt} not documented"


def test_commands_page_documents_no_command_the_cli_lacks() -> None:
    known = {path for path, _command in command_paths()}
    page = prose(text(REFERENCE / "commands.md"))
    documented = set(re.findall(r"^#+ `(ledger[a-z -]*)`$", page, re.M))
    assert documented == known


# ---------------------------------------------------------------------------
# exit-codes.md


def exit_constants() -> dict[str, int]:
    return {
        name: value
        for name, value in vars(errors).items()
        if name.startswith("EXIT_") and isinstance(value, int)
    }


@pytest.mark.parametrize(("name", "code"), sorted(exit_constants().items()))
def test_every_exit_code_constant_is_in_the_exit_codes_table(name: str, code: int) -> None:
    rows = {
        unquote(row["constant (`ledger.core.errors`)"]): row["code"]
        for table in tables(text(REFERENCE / "exit-codes.md"))
        for row in table
        if "constant (`ledger.core.errors`)" in row
    }
    assert rows.get(name) == str(code), f"{name} = {code} not in docs/reference/exit-codes.md"


def error_classes() -> list[type[errors.LedgerError]]:
    return [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.LedgerError)
    ]


@pytest.mark.parametrize("cls", error_classes(), ids=lambda c: c.__name__)
def test_every_error_class_is_in_the_exit_codes_table_with_its_code(
    cls: type[errors.LedgerError],
) -> None:
    rows = {
        unquote(row["class"]): row["code"]
        for table in tables(text(REFERENCE / "exit-codes.md"))
        for row in table
        if "class" in row
    }
    assert cls.__name__ in rows, f"{cls.__name__} not in docs/reference/exit-codes.md"
    if cls is errors.ContextError:  # its code is the wrapped error's, per instance
        assert "wrapped" in rows[cls.__name__]
    else:
        assert rows[cls.__name__] == str(cls.exit_code), cls.__name__


# ---------------------------------------------------------------------------
# ledger/core/README.md


def core_modules() -> list[str]:
    return sorted(p.name for p in CORE.glob("*.py"))


@pytest.mark.parametrize("module", core_modules())
def test_every_core_module_has_its_line_in_the_core_readme(module: str) -> None:
    listed = {
        unquote(row["module"])
        for table in tables(text(CORE / "README.md"))
        for row in table
        if "module" in row
    }
    assert module in listed, f"ledger/core/{module} is not listed in ledger/core/README.md"


def test_the_core_readme_lists_each_module_once() -> None:
    names = [
        unquote(row["module"])
        for table in tables(text(CORE / "README.md"))
        for row in table
        if "module" in row
    ]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z_]+\.py", name) for name in names)


# ---------------------------------------------------------------------------
# json.md: every key of a real pack


@pytest.fixture(scope="module")
def pack_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    db = tmp_path_factory.mktemp("docs") / "ledger.db"
    with ledger.open(str(db), create=True) as lg:
        seed_open_ledger(lg)
        return lg.build(as_of="2026-07-21").to_json()


def test_every_key_of_a_pack_is_in_json_md(pack_json: dict[str, object]) -> None:
    page = text(REFERENCE / "json.md")
    section = page[page.index("## A pack") : page.index("## `packs --json`")]
    keys = set(pack_json)
    for part in ("admitted", "evicted"):
        items = pack_json[part]
        assert isinstance(items, list) and items
        keys |= set(items[0])
    for key in sorted(keys):
        assert f'"{key}"' in section, f"the pack's key {key!r} is not in docs/reference/json.md"


# ---------------------------------------------------------------------------
# Every page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(text(page))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        assert linked.exists(), f"{page.relative_to(ROOT)}: {target} does not exist"
        if anchor and linked.suffix == ".md":
            anchors = {slug(h) for _level, h in headings(text(linked))}
            assert anchor in anchors, f"{page.relative_to(ROOT)}: no #{anchor} in {file_part}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_page_has_one_title(page: Path) -> None:
    titles = [h for level, h in headings(text(page)) if level == 1]
    assert len(titles) == 1, f"{page.relative_to(ROOT)}: {len(titles)} H1 headings"


def example_lines() -> list[str]:
    """Every `ledger ...` line of the shell blocks in the reference pages."""
    found = []
    for page in sorted(REFERENCE.glob("*.md")):
        for block in re.findall(r"^```sh\n(.*?)^```", text(page), re.S | re.M):
            found += [line for line in block.splitlines() if line.startswith("ledger ")]
    return found


@pytest.mark.parametrize("line", example_lines())
def test_every_example_uses_options_its_command_has(line: str) -> None:
    words = line.split("#")[0].split("|")[0].split(">")[0].split()[1:]
    command: click.Command = cli
    options = {o for p in cli.params for o in getattr(p, "opts", [])}
    if words[:1] == ["--db"]:
        words = words[2:]  # the global option and its value
    while isinstance(command, click.Group):
        sub = next((w for w in words if not w.startswith("-")), None)
        found = command.get_command(click.Context(command), sub) if sub else None
        if found is None:
            break
        command, words = found, words[words.index(sub) + 1 :]
        options |= {o for p in command.params for o in getattr(p, "opts", [])}
    flags = {w.split("=")[0] for w in words if re.fullmatch(r"--?[a-z][a-z-]*(=.*)?", w)}
    assert flags <= options | {"--help", "-h"}, f"{line}: {sorted(flags - options)}"
