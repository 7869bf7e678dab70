"""What the database commands share: the Ledger, JSON output, progress."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import update_wrapper
from typing import TYPE_CHECKING, Any

import click

from ledger_cli.main import Settings

if TYPE_CHECKING:  # generic only in click 8.2+ (the floor is 8.1)
    _IntParam = click.ParamType[int]
else:
    _IntParam = click.ParamType


class WholeNumber(_IntParam):
    """An integer option or argument through the one parser (`ledger.core.numbers`):
    ASCII digits, a leading `-` allowed (the library's range checks then name the
    rule); never `١٧٠`, ` 1`, `+1` or `1_000`, which `int()` would take."""

    name = "integer"

    def __init__(self, minimum: int | None = None) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        from ledger.core.numbers import ascii_int

        if isinstance(value, int) and not isinstance(value, bool):
            n: int | None = value  # a default
        else:
            n = ascii_int(str(value), signed=True)
        text = str(value)
        shown = text if len(text) <= 40 else text[:40] + "..."
        if n is None:
            self.fail(f"{shown!r} is not a whole number (ASCII digits 0-9)", param, ctx)
        if self.minimum is not None and n < self.minimum:
            self.fail(f"{shown} is below {self.minimum}", param, ctx)
        return n


INTEGER = WholeNumber()

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print data alone as JSON on stdout (keys sorted)."
)


def pass_ledger(f: Callable[..., Any]) -> Callable[..., Any]:
    """Call the command with the `ledger.Ledger` of --db as its first argument."""

    @click.pass_context
    def new_func(ctx: click.Context, /, *args: Any, **kwargs: Any) -> Any:
        settings = ctx.find_object(Settings)
        if settings is None:  # only when a command is invoked outside the group
            raise click.UsageError("no --db settings; run this command through `ledger`")
        return f(settings.ledger(ctx), *args, **kwargs)

    return update_wrapper(new_func, f)


def echo_json(data: Any) -> None:
    """Data alone on stdout, keys sorted, stable order (docs/reference/json.md)."""
    click.echo(json_text(data))


def json_text(data: Any) -> str:
    """`json.dumps(data, sort_keys=True, ensure_ascii=False, indent=2)`: the
    same text, made faster. The standard library indents in Python (a hint's
    0.9 MB of displaced chunks: 25 ms); its compact encoder is in C, and
    msgspec indents that text in C without re-encoding a value (4 ms). What
    JSON cannot hold (NaN, a lone surrogate) takes the standard way."""
    import msgspec

    compact = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    try:
        return msgspec.json.format(compact, indent=2)
    except (msgspec.DecodeError, UnicodeEncodeError):
        return json.dumps(data, sort_keys=True, ensure_ascii=False, indent=2)


@contextmanager
def byte_progress(
    total: int, label: str, threshold: int = 8 << 20
) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr for large inputs, only when stderr is a terminal."""
    if total < threshold or not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update


def say(text: str) -> None:
    """Echo text that holds stored metadata (titles, paths, versions, reasons):
    each line escaped for the terminal (`printable`), so a control character a
    changed or older database holds cannot move the cursor or fake a line."""
    from ledger.core.records import printable

    click.echo("\n".join(printable(line) for line in text.split("\n")))


def render_table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """A plain aligned text table; cells escaped for the terminal (`printable`)."""
    from ledger.core.records import printable

    header = tuple(printable(h) for h in header)
    rows = [tuple(printable(c) for c in r) for r in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)
