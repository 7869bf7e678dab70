"""Defects of a hostile audit of the command line: each bad input is one line
on stderr (what, where, how to fix) with its documented exit code, no
traceback, and the ledger exactly as it was."""

from __future__ import annotations

import json
from pathlib import Path

from tests import dbtools
from tests.clitools import Run, ledger_args, one_error_line, run
from tests.conftest import chunk, run_in_process


def test_a_dedupe_group_across_trust_labels_names_a_few_ids_and_counts_the_rest(
    tmp_path: Path, db_path: Path
) -> None:
    """200,000 records of one dedupe_key, the last of another trust label, gave a
    2.4 MB line naming every id: now a few ids per label and how many more,
    and how to fix it."""
    records = [chunk(id=f"h{i:07d}", dedupe_key="shared-key") for i in range(5000)]
    records.append(chunk(id="z-last", dedupe_key="shared-key", trust="user-input"))
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    before = dbtools.snapshot(db_path)
    line = one_error_line(run("ingest", str(source), db=db_path))
    assert len(line) < 400, line
    assert "crosses trust boundaries" in line, line
    assert "'h0000000', 'h0000001', 'h0000002' and 4,997 more" in line, line
    assert "'user-input': 'z-last'" in line, line
    assert "one trust label, or different dedupe keys" in line, line
    assert "h0000003" not in line, line
    assert dbtools.snapshot(db_path) == before


def test_a_file_name_with_controls_is_escaped_in_the_one_error_line(
    tmp_path: Path, db_path: Path
) -> None:
    """`ingest $'in/evil\\x1b[31mname\\nfake.jsonl'` printed the name across two
    lines with its ESC dropped; U+202E (right-to-left override) went out raw."""
    for name, shown in [
        ("evil\x1b[31mname\nfake.jsonl", "evil\\x1b[31mname\\nfake.jsonl:1:"),
        ("\u202eevil.jsonl", "\\u202eevil.jsonl:1:"),
    ]:
        source = tmp_path / name
        source.write_text(json.dumps(chunk(priority=101)) + "\n", encoding="utf-8")
        before = dbtools.snapshot(db_path)
        line = one_error_line(run("ingest", str(source), db=db_path, subprocess_run=True))
        assert shown in line, line
        assert "\x1b" not in line and "\u202e" not in line, line
        assert "priority" in line, line
        assert dbtools.snapshot(db_path) == before


def test_a_db_path_with_a_newline_cannot_forge_a_second_error_line(tmp_path: Path) -> None:
    """`--db $'/tmp/x\\nerror: fake.db' head` printed a forged `error:` line."""
    db = f"{tmp_path}/x\nerror: fake.db"
    result = run("head", db=db, subprocess_run=True)
    line = one_error_line(result)
    assert "x\\nerror: fake.db" in line, line
    assert not Path(db).exists()


def test_a_pack_fixture_missing_its_other_keys_is_refused(tmp_path: Path, db_path: Path) -> None:
    """`{"chunks": [<valid record>]}` was stored (exit 0), though a pack fixture
    is an object with exactly `fixture_version`, `selector_version`, `request`
    and `chunks`: a missing key is refused as an unknown one is."""
    source = tmp_path / "bad-obj.json"
    source.write_text(json.dumps({"chunks": [chunk(id="new-chunk")]}), encoding="utf-8")
    before = dbtools.snapshot(db_path)
    line = one_error_line(run("ingest", str(source), db=db_path))
    assert line.startswith(f"{source}: not a pack fixture: missing top-level fields"), line
    assert "['fixture_version', 'request', 'selector_version']" in line, line
    assert dbtools.snapshot(db_path) == before


def test_ctrl_c_during_an_ingest_is_one_line_and_records_nothing(
    tmp_path: Path, db_path: Path
) -> None:
    """Ctrl-C during a long ingest printed an empty line, then `error: aborted`,
    and did not say whether anything was stored. The command runs in this
    process, and a timer raises KeyboardInterrupt (what Ctrl-C raises) after a
    fifth of a second of this process's CPU time (SIGPROF: the in-process
    runner keeps SIGALRM for its own deadline): the 100,000 records take
    seconds to store, so the interrupt always lands inside the ingest."""
    import signal

    source = tmp_path / "big.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for i in range(100_000):
            out.write(json.dumps(chunk(id=f"c{i:07d}", dedupe_key=f"c{i:07d}")) + "\n")
    before = dbtools.snapshot(db_path)

    def ctrl_c(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGPROF, ctrl_c)
    signal.setitimer(signal.ITIMER_PROF, 0.2)
    try:  # in this process always (not LEDGER_TEST_SUBPROCESS's child)
        done = run_in_process(ledger_args("ingest", str(source), db=db_path), timeout=120)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    line = one_error_line(Run(("ingest",), done.returncode, done.stdout, done.stderr))
    assert line == "interrupted; nothing was recorded by this command (run it again)", line
    assert dbtools.snapshot(db_path) == before


def test_a_ledger_in_a_folder_the_user_may_not_write_says_how_to_read_it(
    db_path: Path,
) -> None:
    """A ledger (WAL) needs its -wal and -shm files beside it even to be read: in
    a folder this user may not write, every command failed with SQLite's words
    alone ("attempt to write a readonly database"). The line now says why and
    how to read it, and the way it names reads a ledger: `verify` passes through
    the immutable URI, with no -wal or -shm file made beside it."""
    from ledger.store.engine import sqlite_open_failure

    said = sqlite_open_failure("attempt to write a readonly database")
    assert said.startswith("attempt to write a readonly database (a ledger's reader needs")
    url = said[said.index("'sqlite:///") + 1 : said.rindex("'")]
    assert sqlite_open_failure("disk I/O error") == "disk I/O error"
    for side in ("-wal", "-shm"):
        Path(f"{db_path}{side}").unlink(missing_ok=True)
    verified = run("verify", db=url.replace("PATH", str(db_path)), subprocess_run=True)
    assert verified.returncode == 0 and verified.stdout.startswith("ok: "), verified
    assert not Path(f"{db_path}-shm").exists() and not Path(f"{db_path}-wal").exists()
