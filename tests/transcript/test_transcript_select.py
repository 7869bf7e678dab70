"""Framing, selection on the selector core, the manifest, sidecar and assignments."""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.core.canonical import digest_value
from ledger.core.errors import InputError, RefusedError
from ledger.core.select import select
from ledger.core.transcript import (
    PRIORITIES,
    TRANSCRIPT_ORDER,
    AssignmentError,
    BudgetTooSmallError,
    SidecarError,
    StaleSidecarError,
    continuation_bytes,
    continuation_header,
    exchange_candidates,
    exchange_record,
    framed_cost,
    omissions_document,
    parse_assignments,
    parse_sidecar,
    parse_transcript,
    record_digest,
    render_omissions,
    render_sidecar,
    select_exchanges,
    transcript_request,
)

from .factory import (
    FIXTURES,
    ExchangeSpec,
    assistant,
    build_transcript,
    lines,
    parse_continuation,
    user,
)

HEADER = len(continuation_header("0" * 64))


def transcript_of(*texts: str, eol: str = "\n"):  # type: ignore[no-untyped-def]
    specs = [ExchangeSpec("plain", t, eol=eol) for t in texts]
    data, payloads = build_transcript(specs)
    return parse_transcript(data, name="t.jsonl"), payloads


# -- framing --------------------------------------------------------------------------


def test_pinned_payloads_appear_verbatim_in_fences() -> None:
    data = (FIXTURES / "plain.jsonl").read_bytes()
    t = parse_transcript(data, name="plain.jsonl")
    priorities = parse_assignments(["e001=pinned", "e002=pinned", "e004=pinned"], t)
    selection = select_exchanges(t, priorities, 10_000)
    out = continuation_bytes(selection)
    assert out.startswith(b"# Continuation\n\nSource SHA-256: " + t.sha256.encode() + b"\n")
    for e in t.exchanges:
        assert t.payload(e) in out
    blocks = parse_continuation(out)
    assert [(i, p) for i, p, _ in blocks] == [
        ("e001", "pinned"),
        ("e002", "pinned"),
        ("e003", "normal"),
        ("e004", "pinned"),
    ]
    assert [b for _, _, b in blocks] == [t.payload(e) for e in t.exchanges]
    assert len(out) == selection.used


def test_fence_grows_past_backtick_runs_in_the_payload() -> None:
    t, payloads = transcript_of("no ticks", "one ` two `` three ```", "seven ``````` ticks")
    out = continuation_bytes(select_exchanges(t, {}, 10_000))
    assert b"\n```jsonl\n" + payloads[0] + b"```\n" in out
    assert b"\n````jsonl\n" + payloads[1] + b"````\n" in out
    assert b"\n````````jsonl\n" + payloads[2] + b"````````\n" in out


def test_pathological_backtick_run_gets_a_longer_fence() -> None:
    t, payloads = transcript_of("x" + "`" * 40 + "y")
    out = continuation_bytes(select_exchanges(t, {}, 10_000))
    assert b"\n" + b"`" * 41 + b"jsonl\n" + payloads[0] + b"`" * 41 + b"\n" in out


def test_crlf_payload_kept_and_missing_final_newline_added_after_it() -> None:
    specs = [
        ExchangeSpec("wrapped", "crlf ü", tools=1, eol="\r\n"),
        ExchangeSpec("plain", "last", eol="\r\n"),
    ]
    data, payloads = build_transcript(specs, final_newline=False)
    assert not data.endswith(b"\n")
    t = parse_transcript(data)
    out = continuation_bytes(select_exchanges(t, {"e001": "pinned", "e002": "pinned"}, 10_000))
    assert b"```jsonl\n" + payloads[0] + b"```\n" in out
    assert b"```jsonl\n" + payloads[1] + b"\n```\n" in out
    assert payloads[0].count(b"\r\n") == 4
    assert framed_cost(t, t.exchanges[1], "pinned") == len(
        b"\n## e002 (pinned, lines 5-6)\n\n```jsonl\n" + payloads[1] + b"\n```\n"
    )


def test_framed_cost_is_the_exact_block_length() -> None:
    t, payloads = transcript_of("alpha", "beta `` gamma")
    for e, payload in zip(t.exchanges, payloads, strict=True):
        for priority in PRIORITIES:
            head = f"\n## {e.id} ({priority}, lines {e.first_line}-{e.last_line})\n\n".encode()
            fence = b"```"
            assert framed_cost(t, e, priority) == len(
                head + fence + b"jsonl\n" + payload + fence + b"\n"
            )


# -- selection -------------------------------------------------------------------------


def test_pinned_then_normal_oldest_first_then_asides_output_in_source_order() -> None:
    t, _ = transcript_of(*[f"exchange {n}" for n in range(1, 7)])
    priorities = {
        "e001": "aside",
        "e002": "normal",
        "e003": "pinned",
        "e004": "normal",
        "e005": "aside",
        "e006": "pinned",
    }
    cost = {e.id: framed_cost(t, e, priorities[e.id]) for e in t.exchanges}
    # Room for the pinned ones, normal e002 and e004, and exactly one aside (e001).
    budget = HEADER + sum(cost[i] for i in ("e003", "e006", "e002", "e004", "e001"))
    budget += cost["e005"] - 1
    selection = select_exchanges(t, priorities, budget)
    chosen = [d.exchange.id for d in selection.decisions if d.selected]
    assert chosen == ["e001", "e002", "e003", "e004", "e006"]
    e005 = selection.decisions[4]
    assert (e005.selected, e005.reason) == (False, "budget")
    assert dict(e005.detail or {}) == {"needed": cost["e005"], "remaining": cost["e005"] - 1}
    out = continuation_bytes(selection)
    assert [b[0] for b in parse_continuation(out)] == chosen
    assert len(out) == selection.used == budget - (cost["e005"] - 1)


def test_a_later_small_normal_exchange_fills_the_gap_after_a_large_one() -> None:
    t, _ = transcript_of("x" * 500, "y" * 10, "z" * 10)
    cost = [framed_cost(t, e, "normal") for e in t.exchanges]
    budget = HEADER + cost[1] + cost[2]  # the big, oldest one does not fit
    selection = select_exchanges(t, {}, budget)
    assert [d.selected for d in selection.decisions] == [False, True, True]


def test_normal_exchanges_beat_older_asides() -> None:
    t, _ = transcript_of("old aside", "new normal")
    priorities = {"e001": "aside", "e002": "normal"}
    budget = HEADER + framed_cost(t, t.exchanges[1], "normal")
    selection = select_exchanges(t, priorities, budget)
    assert [d.selected for d in selection.decisions] == [False, True]


def test_budget_below_pinned_plus_framing_is_refused_exact_budget_accepted() -> None:
    t, _ = transcript_of("one", "two")
    priorities = {"e001": "pinned", "e002": "normal"}
    needed = HEADER + framed_cost(t, t.exchanges[0], "pinned")
    with pytest.raises(BudgetTooSmallError) as info:
        select_exchanges(t, priorities, needed - 1)
    assert f"({needed} bytes)" in str(info.value) and isinstance(info.value, RefusedError)
    selection = select_exchanges(t, priorities, needed)
    assert selection.used == needed
    assert len(continuation_bytes(selection)) == needed


def test_budget_below_the_header_alone_is_refused() -> None:
    t, _ = transcript_of("one")
    with pytest.raises(BudgetTooSmallError, match=f"framing \\({HEADER} bytes\\)"):
        select_exchanges(t, {}, HEADER - 1)
    selection = select_exchanges(t, {}, HEADER)
    assert continuation_bytes(selection) == continuation_header(t.sha256)
    assert not selection.selected


def test_manifest_accounts_for_every_exchange() -> None:
    t, _ = transcript_of("a", "b" * 300, "c", "d")
    priorities = {"e001": "pinned", "e002": "normal", "e003": "aside", "e004": "normal"}
    budget = HEADER + sum(framed_cost(t, e, priorities[e.id]) for e in t.exchanges) - 5
    selection = select_exchanges(t, priorities, budget)
    doc = json.loads(render_omissions(selection))
    assert doc == omissions_document(selection)
    assert doc["sourceSha256"] == t.sha256 and doc["budget"] == budget
    assert doc["used"] == selection.used and doc["remaining"] == budget - selection.used
    assert doc["framingBytes"] == HEADER
    assert [e["id"] for e in doc["exchanges"]] == ["e001", "e002", "e003", "e004"]
    # The aside is the one that no longer fits (5 bytes short).
    assert [e["status"] for e in doc["exchanges"]] == [
        "selected",
        "selected",
        "omitted",
        "selected",
    ]
    assert [e["reason"] for e in doc["exchanges"]] == ["selected", "selected", "budget", "selected"]
    assert doc["exchanges"][2]["detail"] == {
        "needed": doc["exchanges"][2]["framedBytes"],
        "remaining": doc["exchanges"][2]["framedBytes"] - 5,
    }
    assert doc["selectedCount"] == 3 and doc["omittedCount"] == 1 and doc["exchangeCount"] == 4
    for entry, e in zip(doc["exchanges"], t.exchanges, strict=True):
        assert entry["priority"] == priorities[e.id]
        assert entry["framedBytes"] == framed_cost(t, e, priorities[e.id])
        assert entry["contentSha256"] == hashlib.sha256(t.payload(e)).hexdigest()
        assert (entry["firstLine"], entry["lastLine"]) == (e.first_line, e.last_line)
    assert (
        HEADER + sum(e["framedBytes"] for e in doc["exchanges"] if e["status"] == "selected")
        == doc["used"]
    )


# -- the candidate mapping on the selector core ------------------------------------------


def test_candidates_map_exchanges_for_the_selector_core() -> None:
    t, payloads = transcript_of("a", "b", "c")
    priorities = {"e001": "aside", "e002": "pinned", "e003": "normal"}
    cands = exchange_candidates(t, priorities, id_prefix="chat-")
    assert [c.id for c in cands] == ["chat-e001", "chat-e002", "chat-e003"]
    assert [c.required for c in cands] == [False, True, False]
    assert [c.priority for c in cands] == [0, 100, 50]
    assert [c.ingest_rank for c in cands] == [1, 2, 3]
    assert len({c.dedupe_key for c in cands}) == 3
    for c, e, payload in zip(cands, t.exchanges, payloads, strict=True):
        assert c.tokens == framed_cost(t, e, priorities[e.id])
        assert c.content_digest == hashlib.sha256(payload).hexdigest()
        assert c.source_version == t.sha256
        record = exchange_record(t, e, priorities[e.id], id_prefix="chat-")
        assert record["content"].encode() == payload
        assert c.record_digest == digest_value(record)
    context = select(cands, transcript_request(10_000), TRANSCRIPT_ORDER)
    assert [c.id for c in context.items] == ["chat-e001", "chat-e002", "chat-e003"]
    assert context.evicted == ()


def test_transcript_order_sorts_e1000_after_e999() -> None:
    t, _ = transcript_of(*["q"] * 1000)
    cands = exchange_candidates(t, {})
    shuffled = cands[::-1]
    ordered = sorted(shuffled, key=TRANSCRIPT_ORDER.output)
    assert [c.id for c in ordered[-3:]] == ["e998", "e999", "e1000"]
    # Budget for exactly two normal exchanges: the two oldest are preferred.
    budget = cands[0].tokens + cands[1].tokens
    context = select(shuffled, transcript_request(budget), TRANSCRIPT_ORDER)
    assert [c.id for c in context.items] == ["e001", "e002"]


@given(st.text(max_size=200))
def test_fast_record_digest_equals_canonical_digest(text: str) -> None:
    data = lines(user(text), assistant(text[::-1]))
    t = parse_transcript(data)
    for priority in PRIORITIES:
        record = exchange_record(t, t.exchanges[0], priority, id_prefix="x-")
        assert record_digest(record) == digest_value(record)


# -- properties over random transcripts and budgets ----------------------------------------

TEXT = st.lists(
    st.sampled_from(
        ["a", " ", "`", "``", "```", "````", "é", "日本", "👍", "\\", '"', "\t", "\u2028", "zz"]
    )
    | st.text(max_size=4),
    max_size=10,
).map("".join)
SPECS = st.lists(
    st.builds(
        ExchangeSpec,
        shape=st.sampled_from(["plain", "wrapped"]),
        text=TEXT,
        tools=st.integers(0, 2),
        eol=st.sampled_from(["\n", "\r\n"]),
        ascii_only=st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


def greedy_oracle(costs: list[int], classes: list[str], budget: int) -> list[bool]:
    """The rule in plain words, independent of the selector core."""
    remaining = (
        budget - HEADER - sum(c for c, k in zip(costs, classes, strict=True) if k == "pinned")
    )
    chosen = [k == "pinned" for k in classes]
    for wanted in ("normal", "aside"):
        for i, (cost, klass) in enumerate(zip(costs, classes, strict=True)):
            if klass == wanted and cost <= remaining:
                chosen[i] = True
                remaining -= cost
    return chosen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=SPECS,
    final_newline=st.booleans(),
    classes=st.lists(st.sampled_from(PRIORITIES), min_size=12, max_size=12),
    fraction=st.floats(0, 1.2),
    slack=st.integers(-3, 3),
)
def test_never_over_budget_every_exchange_accounted_payloads_verbatim(
    specs: list[ExchangeSpec],
    final_newline: bool,
    classes: list[str],
    fraction: float,
    slack: int,
) -> None:
    data, payloads = build_transcript(specs, final_newline=final_newline)
    t = parse_transcript(data, name="random.jsonl")
    assert len(t.exchanges) == len(specs)
    assert [t.payload(e) for e in t.exchanges] == payloads
    priorities = {e.id: classes[i] for i, e in enumerate(t.exchanges)}
    costs = [framed_cost(t, e, priorities[e.id]) for e in t.exchanges]
    pinned = HEADER + sum(
        c for c, e in zip(costs, t.exchanges, strict=True) if priorities[e.id] == "pinned"
    )
    budget = max(0, int(fraction * (HEADER + sum(costs))) + slack)
    if budget < pinned:
        with pytest.raises(BudgetTooSmallError):
            select_exchanges(t, priorities, budget)
        return
    selection = select_exchanges(t, priorities, budget)
    out = continuation_bytes(selection)
    assert len(out) <= budget
    assert len(out) == selection.used
    expected = greedy_oracle(costs, [priorities[e.id] for e in t.exchanges], budget)
    assert [d.selected for d in selection.decisions] == expected
    blocks = parse_continuation(out)
    chosen = [e for e, keep in zip(t.exchanges, expected, strict=True) if keep]
    assert [b[0] for b in blocks] == [e.id for e in chosen]
    for (_, klass, body), e in zip(blocks, chosen, strict=True):
        payload = t.payload(e)
        assert body == (payload if payload.endswith(b"\n") else payload + b"\n")
        assert klass == priorities[e.id]
    doc = json.loads(render_omissions(selection))
    assert [x["id"] for x in doc["exchanges"]] == [e.id for e in t.exchanges]
    assert {x["status"] for x in doc["exchanges"]} <= {"selected", "omitted"}
    assert all((x["status"] == "selected") == (x["reason"] == "selected") for x in doc["exchanges"])
    assert doc["used"] == len(out) and doc["budget"] == budget


# -- sidecar and assignments ----------------------------------------------------------------


def test_assignments_full_mapping_and_refusals() -> None:
    t, _ = transcript_of("a", "b", "c")
    assert parse_assignments(["e003=aside", "e001=pinned"], t) == {
        "e001": "pinned",
        "e002": "normal",
        "e003": "aside",
    }
    assert parse_assignments([], t) == {"e001": "normal", "e002": "normal", "e003": "normal"}
    bad = {
        "e001": "not ID=PRIORITY",
        "=pinned": "not ID=PRIORITY",
        "e001=urgent": "unknown priority 'urgent'",
        "e001=": "unknown priority ''",
        "e004=pinned": "unknown exchange id 'e004'; t.jsonl has e001 to e003",
        "e1=pinned": "unknown exchange id 'e1'",
        "E001=pinned": "unknown exchange id 'E001'",
    }
    for arg, fragment in bad.items():
        with pytest.raises(AssignmentError) as info:
            parse_assignments([arg], t)
        assert fragment in str(info.value), (arg, str(info.value))
        assert isinstance(info.value, InputError)
    with pytest.raises(AssignmentError, match="named twice"):
        parse_assignments(["e001=pinned", "e001=aside"], t)


def test_sidecar_round_trip_and_shape() -> None:
    t, _ = transcript_of("a", "b")
    raw = render_sidecar(t, {"e002": "aside"})
    assert json.loads(raw) == {
        "version": 1,
        "sourceSha256": t.sha256,
        "priorities": {"e001": "normal", "e002": "aside"},
    }
    assert raw.endswith(b"\n")
    assert parse_sidecar(raw, t, name="p.json") == {"e001": "normal", "e002": "aside"}


def test_stale_sidecar_is_refused() -> None:
    t, _ = transcript_of("a", "b")
    other, _ = transcript_of("a", "changed")
    with pytest.raises(StaleSidecarError) as info:
        parse_sidecar(render_sidecar(other, {}), t, name="p.json")
    assert "p.json: sourceSha256" in str(info.value) and "source changed" in str(info.value)


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ("[]", "not a JSON object"),
        ('{"version": 1}', "invalid fields"),
        ('{"version": 2, "sourceSha256": "%s", "priorities": {}}', "unsupported version 2"),
        ('{"version": true, "sourceSha256": "%s", "priorities": {}}', "unsupported version"),
        ('{"version": 1, "sourceSha256": "ABC", "priorities": {}}', "64 lower-case hex"),
        ('{"version": 1, "sourceSha256": "%s", "priorities": []}', "must be a JSON object"),
        (
            '{"version": 1, "sourceSha256": "%s", "priorities": {"e009": "pinned"}}',
            "unknown exchange id 'e009'",
        ),
        (
            '{"version": 1, "sourceSha256": "%s", "priorities": {"e001": "urgent"}}',
            "unknown priority 'urgent'",
        ),
        (
            '{"version": 1, "version": 1, "sourceSha256": "%s", "priorities": {}}',
            "duplicate JSON key",
        ),
        ('{"version": 1, "sourceSha256": "%s", "priorities": {}, "extra": 1}', "unknown"),
        ("{not json", "invalid JSON"),
    ],
)
def test_invalid_sidecar_is_refused(document: str, fragment: str) -> None:
    t, _ = transcript_of("a")
    raw = (document % t.sha256 if "%s" in document else document).encode()
    with pytest.raises(SidecarError) as info:
        parse_sidecar(raw, t, name="p.json")
    assert info.value.args[0].startswith("p.json: ") and fragment in str(info.value)


def test_sidecar_with_bom_or_bad_utf8_is_refused() -> None:
    t, _ = transcript_of("a")
    good = render_sidecar(t, {})
    for raw in (b"\xef\xbb\xbf" + good, good.replace(b"normal", b"norm\xffal")):
        with pytest.raises(SidecarError):
            parse_sidecar(raw, t, name="p.json")


# -- purity ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "transcript.py",
        "transcript_model.py",
        "transcript_strict.py",
        "exports.py",
        "export_records.py",
    ],
)
def test_core_imports_no_io_click_or_database(name: str) -> None:
    source = Path(__file__).resolve().parents[2] / "ledger" / "core" / name
    imported = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported <= {
        "__future__",
        "hashlib",
        "json",
        "math",
        "re",
        "collections.abc",
        "dataclasses",
        "typing",
        "ledger.core.errors",
        "ledger.core.select",
        "ledger.core.strictjson",
        "collections",
        "ledger.core.transcript",
        "ledger.core.transcript_model",
        "ledger.core.transcript_strict",
        "ledger.core.export_records",
    }, imported
    assert "open(" not in source.read_text(encoding="utf-8")


def test_transcript_command_does_not_load_sqlalchemy() -> None:
    code = (
        "import sys, ledger_cli.transcript_cmd; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'alembic')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
