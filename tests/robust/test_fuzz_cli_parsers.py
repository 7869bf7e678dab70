"""Issue 14: a Hypothesis run over the command line's argument parsers and the
readers shows no traceback on any input.

The CLI runs in-process (`ledger_cli.main.main`, the console entry point, with
stdout and stderr captured), on a real seeded SQLite ledger, so thousands of
examples take seconds. Every run must end in one of SPEC's exit codes; an
exception other than SystemExit, or "Traceback" on stderr, fails the property.
`LEDGER_FUZZ_EXAMPLES` raises the number of examples for a long run.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.seeded import make_seeded_file

EXAMPLES = int(os.environ.get("LEDGER_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
EXIT_CODES = {0, 1, 2, 3, 4}


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("fuzz")
    db = make_seeded_file(folder / "base", secret=True)
    work = folder / "work"
    work.mkdir()
    copy = work / "ledger.db"
    shutil.copyfile(db, copy)
    cwd = os.getcwd()
    os.chdir(work)  # a stray relative path lands here, never in the repository
    try:
        yield copy
    finally:
        os.chdir(cwd)


def ledger_main(*args: str) -> tuple[int, str, str]:
    """`ledger ARGS...` in-process: (exit code, stdout, stderr)."""
    from ledger_cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code: object = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code
    assert isinstance(code, int), code
    return code, out.getvalue(), err.getvalue()


def no_traceback(code: int, stderr: str, args: tuple[str, ...]) -> None:
    assert code in EXIT_CODES, (args, code, stderr[-1000:])
    assert "Traceback" not in stderr, (args, stderr[-2000:])
    if code not in (0, 4):
        assert stderr.strip(), (args, code)


# Text that looks like the arguments users give, and text that does not.
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["0", "1", "2", "²", "١", "0x1", "1e3", " 1", "1 ", "00001", "9" * 30]),
)
HEXISH = st.text(alphabet="0123456789abcdefABCDEFg", min_size=0, max_size=70)
ANY_TEXT = st.text(min_size=0, max_size=40).filter(lambda s: "\x00" not in s)
ARG = st.one_of(NUMBERS, HEXISH, ANY_TEXT)


@FUZZ
@given(command=st.sampled_from(["show", "replay", "export", "why-evicted", "prove"]), ref=ARG)
def test_pack_and_ref_arguments(ledger: Path, command: str, ref: str) -> None:
    args = ("--db", str(ledger), command, ref)
    no_traceback(*ledger_main(*args)[::2], args)


# Every other place a PACK, REF or number is given (`{}`); a report goes to the
# work folder (the fixture's cwd), never the repository.
PLACES = [
    ("why", "refund", "--pack", "{}"),
    ("report", "{}", "-o", "r.html"),
    ("report", "--diff", "1", "{}", "-o", "r.html"),
    ("report", "--chunk", "{}", "-o", "r.html"),
    ("prove", "--consistency", "{}"),
    ("prove", "1", "--size", "{}"),
    ("head", "--at", "{}"),
    ("build", "--as-of", "2026-07-21", "--top", "{}", "--query", "refund"),
    ("search", "refund", "--limit", "{}"),
]


@FUZZ
@given(place=st.sampled_from(PLACES), value=ARG)
def test_every_pack_ref_and_number_place(ledger: Path, place: tuple[str, ...], value: str) -> None:
    args = ("--db", str(ledger), *(value if a == "{}" else a for a in place))
    code, _out, err = ledger_main(*args)
    no_traceback(code, err, args)
    if code not in (0, 4):
        assert len(err.splitlines()) == 1, (args, err[-1000:])


@FUZZ
@given(text=st.one_of(NUMBERS, ANY_TEXT, st.text(alphabet="0123456789-+ _\n²١", max_size=25)))
def test_the_one_number_parser(text: str) -> None:
    """ASCII digits only (a leading `-` where signed): the value int() gives them;
    anything else is no number, whatever int() or str.isdigit() would say."""
    from ledger.core.numbers import ascii_int

    digits = bool(text) and all(c in "0123456789" for c in text)
    assert (ascii_int(text) is not None) == digits, text
    if digits:
        assert ascii_int(text) == int(text)
    body = text[1:] if text.startswith("-") else text
    signed_ok = bool(body) and all(c in "0123456789" for c in body)
    assert (ascii_int(text, signed=True) is not None) == signed_ok, text
    if signed_ok:
        assert ascii_int(text, signed=True) == int(text)


@FUZZ
@given(a=ARG, b=ARG)
def test_diff_and_pack_options(ledger: Path, a: str, b: str) -> None:
    for args in (
        ("--db", str(ledger), "diff", a, b),
        ("--db", str(ledger), "why-evicted", "refund-faq", "--pack", a),
        ("--db", str(ledger), "verify", "--checkpoint", a),
    ):
        no_traceback(*ledger_main(*args)[::2], args)


@FUZZ
@given(as_of=ARG, budget=NUMBERS, mark=NUMBERS, subject=ARG)
def test_build_options(ledger: Path, as_of: str, budget: str, mark: str, subject: str) -> None:
    args = (
        "--db",
        str(ledger),
        "build",
        "--as-of",
        as_of,
        "--budget",
        budget,
        "--ledger-at",
        mark,
        "--subject",
        subject,
    )
    no_traceback(*ledger_main(*args)[::2], args)


@FUZZ
@given(subject=ARG, permission=ARG)
def test_grant_arguments(ledger: Path, subject: str, permission: str) -> None:
    args = ("--db", str(ledger), "subject", "grant", subject, permission)
    no_traceback(*ledger_main(*args)[::2], args)


@FUZZ
@given(
    url=st.one_of(
        ANY_TEXT,
        st.builds(
            lambda port, q: f"postgresql+psycopg://u@127.0.0.1:{port}/x{q}",
            st.one_of(st.text(max_size=8), st.integers(-5, 10**6).map(str)),
            st.sampled_from(["", "?password=pw", "?sslpassword=pw&x=1", "?port=zz"]),
        ),
        st.builds(lambda s: f"sqlite:///{s}", ANY_TEXT),
    )
)
# Found by this test: a host the IDNA codec refuses raised UnicodeError in the driver.
@example(url="postgresql+psycopg://@\x80")
@example(url="postgresql+psycopg://u:pw@\x80/db?password=pw")
def test_db_urls(ledger: Path, url: str) -> None:
    """Any --db value: one line or success, never a traceback, never a password."""
    args = ("--db", url, "packs")
    code, _out, err = ledger_main(*args)
    no_traceback(code, err, args)
    assert "=pw" not in err, err


@FUZZ
@given(
    data=st.one_of(
        st.binary(max_size=600),
        st.lists(
            st.sampled_from(
                [
                    b'{"subject": "default", "as_of": "2026-07-21"}',
                    b'{"subject": 1}',
                    b"",
                    b"\xff",
                    b'{"subject": "x", "as_of": "2026-07-21", "budget": 99999999999999999999}',
                    b'{"subject": "default", "as_of": "9999-99-99"}',
                    b"[",
                    b'{"a":1,"a":2}',
                ]
            ),
            max_size=6,
        ).map(lambda lines: b"\n".join(lines)),
    )
)
def test_build_batch_reader(ledger: Path, data: bytes) -> None:
    path = ledger.parent / "batch.jsonl"
    path.write_bytes(data)
    args = ("--db", str(ledger), "build", "--batch", str(path), "--keep-going")
    no_traceback(*ledger_main(*args)[::2], args)


@FUZZ
@given(data=st.binary(max_size=800), name=st.sampled_from(["in.jsonl", "in.json"]))
def test_ingest_reader(ledger: Path, data: bytes, name: str) -> None:
    path = ledger.parent / name
    path.write_bytes(data)
    args = ("--db", str(ledger), "ingest", str(path))
    no_traceback(*ledger_main(*args)[::2], args)
