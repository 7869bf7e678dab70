"""`ledger mcp`."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from ledger.core.errors import InputError
from ledger_cli.common import pass_ledger
from ledger_cli.main import command

if TYPE_CHECKING:
    from ledger.api import Ledger


@command("mcp", pause_collector=False)
@pass_ledger
def mcp_command(lg: Ledger) -> None:
    """Serve the ledger to an MCP client over stdio (read only).

    Tools: why, why_evicted, search, show_pack, diff_packs, verify; each returns
    the JSON of the matching command (`ledger why --json`, ...), never a chunk's
    body. The client starts this command itself; stdout carries the protocol, so
    nothing else is printed there. Needs the `mcp` extra.

    \b
    ledger --db ledger.db mcp
    claude mcp add ledger -- ledger --db /abs/path/ledger.db mcp
    """
    if importlib.util.find_spec("mcp") is None:
        raise InputError(
            "ledger mcp needs the MCP SDK; install it with pip install 'context-ledger[mcp]'"
        )
    from ledger.integrations.mcp import serve

    serve(lg)
