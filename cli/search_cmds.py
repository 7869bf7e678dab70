"""`ledger search` and `ledger why`: ask the ledger in words."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ledger.core.reasons import describe_hint
from ledger_cli.common import INTEGER, echo_json, json_option, pass_ledger, say
from ledger_cli.main import Command, command

if TYPE_CHECKING:
    from ledger.api import Ledger


@command("search")
@click.argument("text")
@click.option("--as-of", "as_of", metavar="DATE", help="Only versions valid on DATE (YYYY-MM-DD).")
@click.option("--limit", type=INTEGER, default=10, show_default=True, help="At most N results.")
@click.option("--with-content", is_flag=True, help="Add a snippet of each body around the match.")
@json_option
@pass_ledger
def search_command(
    lg: Ledger, text: str, as_of: str | None, limit: int, with_content: bool, as_json: bool
) -> None:
    """Full-text search over every chunk version's content and title, best first.

    TEXT is plain words and "quoted phrases": a version matches when it holds
    any word (a phrase only as written); ranked by BM25 (SQLite) or cover
    density (PostgreSQL), higher is better. Never parsed as FTS syntax.

    \b
    ledger search 'refund window'
    ledger search '"damaged items" refund' --as-of 2026-07-21 --limit 3 --json
    """
    result = lg.search(text, as_of, limit, with_content).to_json()
    if as_json:
        echo_json(result)
        return
    if not result["results"]:
        say(f'no chunk version matches "{result["query"]}"')
    for r in result["results"]:
        title = f'  "{r["title"]}"' if r["title"] else ""
        say(f"{r['score']:>10g}  {r['id']}@{r['source_version']}{title}")
        if with_content and r.get("snippet"):
            say(f"            {r['snippet']}")


class TextCommand(Command):
    """A command whose argument is free text: a word starting with "-" that
    names none of the command's options is text (`ledger why -refund`), as is
    everything after `--`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        names = set(ctx.help_option_names)
        takes_value = set()
        for param in self.params:
            if isinstance(param, click.Option):
                names.update(param.opts + param.secondary_opts)
                if not param.is_flag:
                    takes_value.update(param.opts)
        options: list[str] = []
        text: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                text += args[i + 1 :]
                break
            name = arg.split("=", 1)[0]
            if name in names:
                options.append(arg)
                if name in takes_value and "=" not in arg and i + 1 < len(args):
                    i += 1
                    options.append(args[i])
            else:
                text.append(arg)
            i += 1
        return super().parse_args(ctx, [*options, "--", *text])


@command("why", cls=TextCommand)
@click.argument("text")
@click.option(
    "--pack", "pack_ref", metavar="PACK", help="The pack to ask about (number or digest prefix)."
)
@click.option("--subject", default="default", show_default=True,
              help="Without --pack: the newest pack of this subject.")  # fmt: skip
@click.option(
    "--limit", type=INTEGER, default=5, show_default=True, help="At most N matching versions."
)
@json_option
@pass_ledger
def why_command(
    lg: Ledger, text: str, pack_ref: str | None, subject: str, limit: int, as_json: bool
) -> None:
    """Why did the agent (not) know this? TEXT in words, answered for one pack.

    Finds the chunk ids matching TEXT and says what the pack did with each, as
    the version the pack would have seen (its superseded versions listed under
    it; --limit counts ids): admitted; evicted, with the reason; not a
    candidate, with the first gate that kept it out at the pack's own inputs
    (permission, trust, dates, retraction, supersession), or not retrieved,
    ingested after the pack, or another scope; or never ingested, with the
    closest terms the index knows. Every match not admitted has a hint: a hint
    that admits was checked by rebuilding the pack as it was built with the
    change. TEXT may start with "-" (or follow `--`).

    \b
    ledger why "cache CORS responses"
    ledger why '"refund window"' --pack 3 --json
    ledger why -- --without-hashes
    """
    if pack_ref is not None and click.get_current_context().get_parameter_source("subject") not in (
        None,
        click.core.ParameterSource.DEFAULT,
    ):
        raise click.UsageError("give --pack or --subject, not both")
    result = lg.why(text, pack_ref, subject, limit).to_json()
    if as_json:
        echo_json(result)
        return
    say(result["sentence"])
    for m in result["matches"]:
        reason = f" {m['reason']}" if m["reason"] else ""
        gone = f" [body erased by entry {m['erased']['entry']}]" if "erased" in m else ""
        name = f"{m['id']}@{m['source_version']}"
        say(f"  {m['status']}{reason}: {name} (score {m['score']:g}){gone}")
        if m["hint"] and m["hint"]["steps"]:  # every match not admitted, its hint
            say(f"    to admit it: {describe_hint(m['hint'])}")
