"""`ledger check`: context tests, what a subject's pack must and must not hold."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ledger.core.errors import EXIT_INVALID
from ledger_cli.common import INTEGER, echo_json, json_option, pass_ledger
from ledger_cli.main import command

if TYPE_CHECKING:
    from ledger.api import Ledger


@command("check")
@click.argument("tests", metavar="TESTS.toml")
@click.option("--junit", metavar="FILE", help="Also write JUnit XML (one testcase per case).")
@click.option(
    "--ledger-at", "ledger_at", type=INTEGER, metavar="SEQ",
    help="Decide every case at this ledger entry (default: the head).",
)  # fmt: skip
@json_option
@pass_ledger
def check_command(
    lg: Ledger, tests: str, junit: str | None, ledger_at: int | None, as_json: bool
) -> None:
    """Run context tests: for each case, is what the agent must know in its pack?

    Each [[case]] of TESTS.toml is decided exactly as `ledger build` with the
    same inputs (subject, as_of, query/top or candidates, budget) would decide
    it, and nothing is recorded. `admit` lists what the pack must hold, `exclude`
    what it must not: chunk ids, or {text = "a phrase"} that an admitted chunk
    holds (case and white space folded). [defaults] gives any key to every case.
    A failed expectation is explained by `why` in the case's pack, with its
    checked hint. A candidates file is named relative to TESTS.toml's folder.

    Exit 0: every case passed; 1: a case failed; 2: a malformed tests file.

    \b
    ledger check context-tests.toml
    ledger check context-tests.toml --junit report.xml
    """
    from ledger.core.checks import case_lines, junit_xml, summary_line

    # The report may not replace what the run reads: refused before any case runs.
    result = lg.check(tests, ledger_at, outputs=[junit] if junit is not None else [])
    data = result.to_json()
    if junit is not None:
        from ledger_cli.packs_cmd import write_private

        write_private(junit, junit_xml(data["cases"]).decode("utf-8"), lg)
    if as_json:
        echo_json(data)
    else:
        for case in data["cases"]:
            for line in case_lines(case):
                click.echo(line)
        click.echo(summary_line(data["passed"], data["failed"]))
    if not result.ok:
        sys.exit(EXIT_INVALID)
