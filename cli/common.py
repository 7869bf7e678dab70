"""What the database commands share: opening the ledger, JSON output, progress."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from ledger_cli.main import Settings

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print data alone as JSON on stdout (keys sorted)."
)


def echo_json(data: Any) -> None:
    """SPEC: data alone on stdout, keys sorted, stable order."""
    click.echo(json.dumps(data, sort_keys=True, ensure_ascii=False, indent=2))


def open_ledger(settings: Settings):  # type: ignore[no-untyped-def]
    """The engine of the ledger named by --db, checked to be initialized and current."""
    from ledger.store.engine import open_engine

    return open_engine(settings.url)


@contextmanager
def byte_progress(total: int, label: str, threshold: int = 8 << 20) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr for large inputs, only when stderr is a terminal."""
    if total < threshold or not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update
