"""OpenTelemetry: a build inside an active span, seen through the real SDK's
in-memory exporter; the trace ids stored with the pack; the CLI's --trace-id."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ledger
from tests.conftest import ledger_json, run_ledger
from tests.integrations.conftest import AS_OF

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


@pytest.fixture
def spans() -> Iterator[tuple[trace.Tracer, InMemorySpanExporter]]:
    # A provider of our own (the global one can be set only once per process).
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("tests"), exporter
    provider.shutdown()


def test_a_build_in_a_span_annotates_it_and_records_its_ids(
    lg: ledger.Ledger, spans: tuple[trace.Tracer, InMemorySpanExporter]
) -> None:
    tracer, exporter = spans
    with tracer.start_as_current_span("agent.retrieve") as span:
        pack = lg.build(AS_OF, candidates=["refund-window", "shipping", "legal-note"])
        ctx = span.get_span_context()
    (finished,) = exporter.get_finished_spans()
    attrs = dict(finished.attributes or {})
    data = pack.to_json()
    assert attrs["ledger.pack.number"] == 1
    assert attrs["ledger.pack.digest"] == data["pack_digest"]
    assert attrs["ledger.pack.admitted"] == 2  # house-rules, refund-window v2
    assert attrs["ledger.pack.evicted"] == 3  # v1 superseded, shipping budget, legal-note denied
    docs = json.loads(str(attrs["gen_ai.retrieval.documents"]))
    assert docs == [{"id": "house-rules"}, {"id": "refund-window"}]
    assert data["trace"] == {"trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}"}
    assert lg.show(1).to_json()["trace"] == data["trace"]
    listed = lg.packs(trace_id=f"{ctx.trace_id:032x}").to_json()["packs"]
    assert [p["pack"] for p in listed] == [1]


def test_scores_of_the_retriever_go_into_the_documents_attribute(
    lg: ledger.Ledger, spans: tuple[trace.Tracer, InMemorySpanExporter]
) -> None:
    tracer, exporter = spans
    with tracer.start_as_current_span("rag"):
        lg.build(AS_OF, candidates=[{"id": "damaged-items", "score": 0.75}, {"id": "tax-forms"}])
    (finished,) = exporter.get_finished_spans()
    docs = json.loads(str(dict(finished.attributes or {})["gen_ai.retrieval.documents"]))
    assert docs == [
        {"id": "house-rules"},
        {"id": "damaged-items", "score": 0.75},
        {"id": "tax-forms"},
    ]


def test_no_span_no_trace(
    lg: ledger.Ledger, spans: tuple[trace.Tracer, InMemorySpanExporter]
) -> None:
    _, exporter = spans
    pack = lg.build(AS_OF)
    assert pack.to_json()["trace"] is None
    assert exporter.get_finished_spans() == ()
    assert len(lg.packs(trace_id=TRACE).packs) == 0


def test_the_trace_is_covered_by_the_entry_hash(lg: ledger.Ledger, db_url: str) -> None:
    lg.build(AS_OF, trace_id=TRACE, span_id=SPAN)
    assert lg.verify().to_json()["ok"] is True
    assert lg.replay(1).to_json()["identical"] is True
    from sqlalchemy import create_engine, text

    eng = create_engine(db_url)
    with eng.begin() as conn:
        conn.execute(text("UPDATE packs SET trace_id = :t"), {"t": "f" * 32})
    eng.dispose()
    result = lg.verify().to_json()
    assert result["ok"] is False and result["first_bad"]["kind"] == "pack"


def test_build_and_packs_take_trace_ids_on_the_command_line(lg: ledger.Ledger, db_url: str) -> None:
    lg.build(AS_OF)
    built = ledger_json("build", "--as-of", AS_OF, "--trace-id", TRACE.upper(), "--span-id", SPAN,
                        db=db_url)  # fmt: skip
    assert built["trace"] == {"trace_id": TRACE, "span_id": SPAN}
    only_trace = ledger_json("build", "--as-of", AS_OF, "--trace-id", TRACE, db=db_url)
    assert only_trace["trace"] == {"trace_id": TRACE, "span_id": None}
    listed = ledger_json("packs", "--trace-id", TRACE, db=db_url)["packs"]
    assert [p["pack"] for p in listed] == [2, 3]
    assert ledger_json("show", "1", db=db_url)["trace"] is None
    plain = run_ledger("show", "2", db=db_url)
    assert f"trace {TRACE} span {SPAN}" in plain.stdout
    assert ledger_json("verify", db=db_url)["ok"] is True


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--trace-id", "xyz"], "--trace-id 'xyz': must be 32 hex digits"),
        (["--trace-id", "0" * 32], "not all zero"),
        (["--trace-id", TRACE, "--span-id", "123"], "--span-id '123': must be 16 hex digits"),
        (["--span-id", SPAN], "--span-id goes with --trace-id"),
    ],
)
def test_bad_trace_ids_are_refused_and_record_nothing(
    lg: ledger.Ledger, db_url: str, args: list[str], needle: str
) -> None:
    head = lg.head().to_json()
    proc = run_ledger("build", "--as-of", AS_OF, *args, db=db_url)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ") and needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert lg.head().to_json() == head
    bad = run_ledger("packs", "--trace-id", "nothex", db=db_url)
    assert bad.returncode == 1 and "must be 32 hex digits" in bad.stderr


def test_downgrading_below_the_trace_revision_keeps_recorded_traces(
    lg: ledger.Ledger, db_url: str
) -> None:
    from ledger.store.engine import SCHEMA_REVISION, current_revision, make_engine
    from ledger.store.migrate import downgrade_to

    lg.build(AS_OF)  # no trace: dropping the columns loses nothing
    lg.build(AS_OF, trace_id=TRACE)
    lg.close()
    eng = make_engine(db_url)
    try:
        # A traced pack's entry hash covers its ids: dropping them would break verify.
        with pytest.raises(RuntimeError, match="1 packs record a trace"):
            downgrade_to(eng, "0005")
        with eng.connect() as conn:  # refused whole: nothing was downgraded
            assert current_revision(conn) == SCHEMA_REVISION
    finally:
        eng.dispose()
    with ledger.open(db_url) as again:
        assert again.show(2).to_json()["trace"] == {"trace_id": TRACE, "span_id": None}
        assert again.verify().to_json()["ok"] is True


def test_a_ledger_without_traces_downgrades_and_upgrades(lg: ledger.Ledger, db_url: str) -> None:
    from ledger.store.engine import make_engine
    from ledger.store.migrate import downgrade_to, upgrade_to_head

    lg.build(AS_OF)
    lg.close()
    eng = make_engine(db_url)
    try:
        downgrade_to(eng, "0005")
        upgrade_to_head(eng)
    finally:
        eng.dispose()
    with ledger.open(db_url) as again:
        assert again.show(1).to_json()["trace"] is None
        assert again.verify().to_json()["ok"] is True
        assert again.replay(1).to_json()["identical"] is True


def test_traced_packs_are_ordinary_packs(
    lg: ledger.Ledger, spans: tuple[trace.Tracer, InMemorySpanExporter]
) -> None:
    tracer, _ = spans
    with tracer.start_as_current_span("turn-1"):
        lg.build(AS_OF, candidates=["shipping", "tax-forms"])
    with tracer.start_as_current_span("turn-2"):
        lg.build(AS_OF, budget=25, candidates=["shipping", "tax-forms"])
    one, two = lg.show(1).to_json(), lg.show(2).to_json()
    assert one["trace"]["trace_id"] != two["trace"]["trace_id"]
    why = lg.why_evicted("tax-forms").to_json()
    assert [(d["pack"], d["admitted"], d["reason"]) for d in why["versions"][0]["decisions"]] == [
        (2, False, "budget"),
        (1, True, None),
    ]
    diff = lg.diff(1, 2).to_json()
    assert [(c["id"], c["to"]["reason"]) for c in diff["changes"]] == [("tax-forms", "budget")]
    assert lg.verify().to_json()["ok"] is True
    assert all(lg.replay(n).to_json()["identical"] for n in (1, 2))
