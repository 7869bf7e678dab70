"""`ledger_cli.collector`: a command runs with the cyclic collector paused, and
what a large run allocated does not stay in the youngest generation for the
collector to walk. (Moved here from the core's tests: the policy belongs to the
program's edge, not to the library.)"""

from __future__ import annotations

import gc

import click
import pytest

from ledger_cli.collector import PROMOTE_AT, collector_paused
from ledger_cli.main import COMMANDS, Command, main


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_a_large_run_leaves_its_objects_to_the_oldest_generation() -> None:
    assert gc.isenabled()
    gc.collect()  # the generations' counts from zero: no older collection is due
    with collector_paused():
        assert not gc.isenabled()
        kept = [(i, [i]) for i in range(PROMOTE_AT)]  # 2 tracked objects each
    assert gc.isenabled()
    # Old already: the next collections of the young generations do not walk them.
    assert _in_generation(kept[0], 2) and _in_generation(kept[-1][1], 2)
    assert not _in_generation(kept[0], 0)


def test_a_small_run_leaves_the_generations_alone() -> None:
    gc.collect()
    made = [[i] for i in range(10)]  # young
    with collector_paused():
        small = [[i] for i in range(300)]
    assert gc.isenabled()
    assert not _in_generation(made[0], 2) and not _in_generation(small[0], 2)


def test_a_paused_or_frozen_collector_is_left_as_the_caller_had_it() -> None:
    gc.disable()
    try:
        with collector_paused():
            [[i] for i in range(30)]
        assert not gc.isenabled()  # only the caller resumes it
    finally:
        gc.enable()
    gc.freeze()  # a server that froze its objects before forking
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            kept = [(i, [i]) for i in range(PROMOTE_AT)]  # a large run
        assert gc.get_freeze_count() == frozen  # not thawed
        assert gc.isenabled() and not _in_generation(kept[0], 2)
    finally:
        gc.unfreeze()


SEEN: list[bool] = []


@click.command("probe", cls=Command)
def probe_command() -> None:
    SEEN.append(gc.isenabled())


@click.command("serve", cls=Command, pause_collector=False)
def serve_command() -> None:
    SEEN.append(gc.isenabled())


@pytest.mark.parametrize(("name", "enabled"), [("probe", False), ("serve", True)])
def test_a_command_runs_with_the_collector_paused_a_server_does_not(
    monkeypatch: pytest.MonkeyPatch, name: str, enabled: bool
) -> None:
    monkeypatch.setitem(COMMANDS, name, f"{__name__}:{name}_command")
    SEEN.clear()
    with pytest.raises(SystemExit) as exit_:
        main([name])
    assert exit_.value.code == 0
    assert SEEN == [enabled]
    assert gc.isenabled()


def test_the_mcp_server_does_not_pause_the_collector() -> None:
    from ledger_cli.mcp_cmd import mcp_command

    assert isinstance(mcp_command, Command) and not mcp_command.pause_collector


def test_every_command_is_a_ledger_command() -> None:
    """Every command and subcommand runs through `Command.invoke` (the collector's
    pause, the errors' option names)."""
    from ledger_cli.main import cli

    ctx = click.Context(cli)
    todo = [cli.get_command(ctx, name) for name in cli.list_commands(ctx)]
    seen = 0
    while todo:
        command = todo.pop()
        assert isinstance(command, Command), command
        seen += 1
        if isinstance(command, click.Group):
            todo.extend(command.commands.values())
    assert seen > 30
