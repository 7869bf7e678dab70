"""MCP: the ledger's read-only questions as tools over stdio (`ledger mcp`).

Built on the official `mcp` SDK (`pip install 'context-ledger[mcp]'`). Every tool
returns the JSON of the matching command (`ledger why --json`, ...), computed by
the `Ledger` API's `to_json()`; none writes to the ledger, and none returns a
chunk's body. A refused or unknown reference comes back as a tool error whose
text is the command's one-line message.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from ledger.api import Ledger
from ledger.core.bounded import MAX_CHARS, bound
from ledger.core.errors import InputError, LedgerError

INSTRUCTIONS = """\
This server answers questions about an audited context ledger: versioned context
chunks and the recorded packs (what an agent was given for one request, and why
every other candidate was left out). It only reads.

Start with `why` for a question in words ("why did the agent not know about the
refund window?"), or `search` to find chunk ids. A PACK is a pack number (1, 2, ...)
or a pack-digest prefix of at least 8 hex digits; a REF is a chunk id, a content or
record digest, or a hex prefix of at least 8 digits. Eviction reasons, in gate
order: permission_denied, trust_denied, not_yet_effective, expired, retracted,
superseded, duplicate, budget (each with a `detail` object).

Replies are bounded for your context: a list inside an item keeps its first 10
and says how many it left out (`displaced_by_omitted`); a reply over
`max_chars` (default 16000) drops the last items of its longest lists and says
so in `truncated`. Pass a larger `max_chars` (or 0 for no bound) to see more."""

# Arguments are read strictly, as the command line and the Python API read
# them: `true` is not 1, `1.0` is not pack 1, "5" is not a count.
# A reply's bound in characters: an integer, 0 or more.
Bound = Annotated[int, Field(strict=True, ge=0)]
Count = Annotated[int, Field(strict=True)]
# A pack: its number, or a pack-digest prefix (the API checks which).
PackRef = Annotated[int, Field(strict=True)] | Annotated[str, Field(strict=True)]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)


def _answer(call: Any, max_chars: int = MAX_CHARS) -> dict[str, Any]:
    """The command's JSON, bounded (ledger.core.bounded); a refusal as a tool error."""
    try:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 0:
            raise InputError(f"max_chars must be a non-negative integer, not {max_chars!r}")
        data: dict[str, Any] = call().to_json()
    except LedgerError as exc:
        raise ToolError(f"{exc} (exit {exc.exit_code})") from None
    return bound(data, max_chars)


def make_server(lg: Ledger) -> MCPServer[Any]:
    """The MCP server over an open ledger, with the six read-only tools."""
    server: MCPServer[Any] = MCPServer(name="ledger", instructions=INSTRUCTIONS)

    @server.tool(annotations=READ_ONLY)
    def why(
        text: str,
        pack: PackRef | None = None,
        subject: str = "default",
        limit: Count = 5,
        max_chars: Bound = MAX_CHARS,
    ) -> dict[str, Any]:
        """Answer "why did the agent (not) know X?" in words. Finds the chunk versions
        matching `text` (plain words, "quoted phrases") and says what `pack` did with
        each: status admitted, evicted (with reason, detail and a hint: the smallest
        change that would admit it), or not_candidate (not retrieved, ingested later,
        other scope). Default pack: the newest pack of `subject`. Returns {"text",
        "pack", "verdict", "sentence", "matches": [...]}; verdict never_ingested when
        nothing matches. Same as `ledger why TEXT --json`."""
        return _answer(lambda: lg.why(text, pack=pack, subject=subject, limit=limit), max_chars)

    @server.tool(annotations=READ_ONLY)
    def why_evicted(
        ref: str, pack: PackRef | None = None, max_chars: Bound = MAX_CHARS
    ) -> dict[str, Any]:
        """For a chunk (REF: id, digest or 8+ hex prefix), every pack that considered
        each of its versions, newest pack first: admitted, or the eviction reason with
        its detail and the smallest change that would have admitted it. `pack`
        limits the answer to one pack. An unknown REF is an error (not found). Same
        as `ledger why-evicted REF --json`."""
        return _answer(lambda: lg.why_evicted(ref, pack=pack), max_chars)

    @server.tool(annotations=READ_ONLY)
    def search(
        text: str, as_of: str | None = None, limit: Count = 10, max_chars: Bound = MAX_CHARS
    ) -> dict[str, Any]:
        """Full-text search over every chunk version (BM25, best first): plain words
        match any of them, "quoted phrases" only as written. `as_of` (YYYY-MM-DD)
        keeps the versions valid on that date. Returns {"query", "results": [{"id",
        "source_version", "title", "path", "score", "record_digest",
        "content_digest"}]} without bodies. Same as `ledger search TEXT --json`."""
        return _answer(lambda: lg.search(text, as_of=as_of, limit=limit), max_chars)

    @server.tool(annotations=READ_ONLY)
    def show_pack(pack: PackRef, max_chars: Bound = MAX_CHARS) -> dict[str, Any]:
        """One recorded pack: its request (as_of, subject, budget, grants, policy),
        `admitted` in output order and `evicted` (each with reason and detail), the
        retrieval record of a retrieval build, its OpenTelemetry trace, and its
        digests. Same as `ledger show PACK --json`."""
        return _answer(lambda: lg.show(pack), max_chars)

    @server.tool(annotations=READ_ONLY)
    def diff_packs(
        from_pack: PackRef, to_pack: PackRef, max_chars: Bound = MAX_CHARS
    ) -> dict[str, Any]:
        """What changed between two packs, per chunk id: entered, left, changed
        version or changed eviction reason, each with its cause (a new version, a
        grant or policy change, the budget, the date). Returns {"from", "to",
        "used", "changes": [{"id", "from", "to", "cause"}]}. Same as `ledger diff A B
        --json`."""
        return _answer(lambda: lg.diff(from_pack, to_pack), max_chars)

    @server.tool(annotations=READ_ONLY)
    def verify() -> dict[str, Any]:
        """Recompute every digest and the hash chain of the whole ledger. Returns
        {"ok", "entries", "head", "first_bad": null or {"seq", "kind", "why"}};
        ok false means the database was altered outside the ledger. Same as `ledger
        verify --json`."""
        return _answer(lambda: lg.verify())

    return server


def serve(lg: Ledger) -> None:
    """Serve the ledger over stdio until the client closes the connection."""
    make_server(lg).run("stdio")
