"""`ledger mcp` through the official MCP client over stdio: the tools an agent
sees, and answers equal to the CLI's JSON, on each backend."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import ledger
from tests.conftest import ledger_json, run_ledger
from tests.integrations.conftest import AS_OF

TOOLS = {"why", "why_evicted", "search", "show_pack", "diff_packs", "verify"}


def server(db: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k != "LEDGER_DB"}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ledger_cli", "--db", db, "mcp"], env=env
    )


async def session_run(db: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any]]:
    with open(os.devnull, "w") as errlog:
        async with stdio_client(server(db), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                results = [await session.call_tool(name, args) for name, args in calls]
    return tools, results


def two_packs(lg: ledger.Ledger) -> None:
    lg.build(AS_OF)
    lg.revoke("default", "public-read")
    lg.grant("default", "public-read", "legal-read")
    lg.build(AS_OF, budget=60)


def test_the_six_read_only_tools_are_listed_with_descriptions(
    lg: ledger.Ledger, db_url: str
) -> None:
    tools, _ = asyncio.run(session_run(db_url, []))
    by_name = {t.name: t for t in tools.tools}
    assert set(by_name) == TOOLS
    for tool in by_name.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        # An agent needs more than a name: what it answers and the command it mirrors.
        assert tool.description is not None and "--json" in tool.description
    assert set(by_name["diff_packs"].input_schema["required"]) == {"from_pack", "to_pack"}
    assert by_name["why_evicted"].input_schema["required"] == ["ref"]


def test_every_tool_answers_what_the_cli_prints(lg: ledger.Ledger, db_url: str) -> None:
    two_packs(lg)
    calls: list[tuple[str, dict[str, Any], list[str]]] = [
        ("why", {"text": "refunds accepted"}, ["why", "refunds accepted"]),
        ("why", {"text": "statutory law", "pack": 1}, ["why", "statutory law", "--pack", "1"]),
        ("why_evicted", {"ref": "shipping"}, ["why-evicted", "shipping"]),
        ("why_evicted", {"ref": "legal-note", "pack": "1"},
         ["why-evicted", "legal-note", "--pack", "1"]),
        ("search", {"text": "refund", "limit": 3}, ["search", "refund", "--limit", "3"]),
        ("show_pack", {"pack": 2}, ["show", "2"]),
        ("diff_packs", {"from_pack": 1, "to_pack": 2}, ["diff", "1", "2"]),
        ("verify", {}, ["verify"]),
    ]  # fmt: skip
    _, results = asyncio.run(session_run(db_url, [(n, a) for n, a, _ in calls]))
    for (name, _args, argv), result in zip(calls, results, strict=True):
        assert not result.is_error, (name, result.content)
        expected = ledger_json(*argv, db=db_url)
        assert result.structured_content == expected, name
        # Clients that read only text get the same JSON.
        assert json.loads(result.content[0].text) == expected, name
    diff = results[6].structured_content
    assert {c["id"] for c in diff["changes"]} >= {"legal-note"}


def test_a_bad_reference_is_a_tool_error_with_the_commands_message(
    lg: ledger.Ledger, db_url: str
) -> None:
    lg.build(AS_OF)
    _, results = asyncio.run(
        session_run(db_url, [("why_evicted", {"ref": "no-such-chunk"}), ("show_pack", {"pack": 9})])
    )
    cli = run_ledger("why-evicted", "no-such-chunk", db=db_url)
    assert cli.returncode == 3
    for result in results:
        assert result.is_error
    text = results[0].content[0].text
    # The SDK puts "Error executing tool why_evicted: " before the command's message.
    assert text.endswith(cli.stderr.strip().removeprefix("error: ") + " (exit 3)")
    assert "no pack 9" in results[1].content[0].text


def test_the_tools_only_read(lg: ledger.Ledger, db_url: str) -> None:
    lg.build(AS_OF)
    head = lg.head().to_json()
    asyncio.run(session_run(db_url, [("why", {"text": "refund"}), ("verify", {})]))
    assert lg.head().to_json() == head
    assert len(lg.packs().packs) == 1


def test_mcp_on_a_missing_database_fails_before_serving(tmp_path: Any) -> None:
    proc = run_ledger("--db", str(tmp_path / "absent.db"), "mcp")
    assert proc.returncode != 0
    assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
