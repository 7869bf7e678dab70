"""OpenTelemetry: a build inside an active span, seen through the real SDK's
in-memory exporter (its attributes, the opt-in eviction events and their cap);
the trace ids stored with the pack; the CLI's --trace-id. tests/phoenix sends
the same spans to a real Phoenix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ledger
from tests.conftest import chunk, ledger_json, run_ledger
from tests.integrations.conftest import AS_OF, corpus

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
    # A retrieval build (candidates from the caller's retriever, given without
    # scores): every listed document must have its score (Phoenix drops the whole
    # list for one unscored item), so with none scored there is no list.
    assert "gen_ai.retrieval.documents" not in attrs
    assert attrs["gen_ai.operation.name"] == "retrieval"
    assert attrs["gen_ai.request.top_k"] == 3  # the candidates given
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
    # Only the scored ones: house-rules (required, not retrieved) and tax-forms
    # (retrieved without a score) are admitted but not listed.
    assert docs == [{"id": "damaged-items", "score": 0.75}]


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
        (["--trace-id", "xyz"], "--trace-id: 'xyz' must be 32 hex digits"),
        (["--trace-id", "0" * 32], "not all zero"),
        (["--trace-id", TRACE, "--span-id", "123"], "--span-id: '123' must be 16 hex digits"),
        (["--span-id", SPAN], "--span-id: goes with a trace id"),
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


def test_the_api_names_its_own_trace_parameters(lg: ledger.Ledger) -> None:
    """The library speaks its own terms: `trace_id`, not the command's flag."""
    for kwargs, param in (({"trace_id": "zz"}, "trace_id"), ({"span_id": SPAN}, "span_id"),
                          ({"trace_id": TRACE, "span_id": 7}, "span_id")):  # fmt: skip
        with pytest.raises(ledger.InputError) as raised:
            lg.build(AS_OF, **kwargs)
        assert raised.value.param == param and str(raised.value).startswith(f"{param}: ")
        assert "--" not in str(raised.value)


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


# --------------------------------------------------------------------------
# The GenAI retrieval attributes and the opt-in eviction events
# --------------------------------------------------------------------------

# A question holding personal data: it may reach a span only with the opt-in.
QUESTION = "refunds damaged shipping refund for jane.doe@example.com"
EVENT_KEYS = {
    "ledger.chunk.id",
    "ledger.chunk.source_version",
    "ledger.chunk.record_digest",
    "ledger.eviction.reason",
}


def _built_in_span(
    lg: ledger.Ledger, spans: tuple[trace.Tracer, InMemorySpanExporter], **build: Any
) -> tuple[ledger.Pack, ReadableSpan]:
    tracer, exporter = spans
    with tracer.start_as_current_span("agent.retrieve"):
        pack = lg.build(AS_OF, **build)
    (finished,) = exporter.get_finished_spans()
    return pack, finished


def _exported_text(finished: ReadableSpan) -> str:
    """Everything the span carries, as an exporter would serialize it."""
    return finished.to_json()


def _no_body_anywhere(text: str) -> None:
    for record in corpus():
        assert record["content"] not in text


def test_a_query_build_is_a_genai_retrieval_and_keeps_its_query_to_itself(
    lg: ledger.Ledger, spans: tuple[trace.Tracer, InMemorySpanExporter]
) -> None:
    pack, finished = _built_in_span(lg, spans, query=QUESTION, top=5)
    attrs = dict(finished.attributes or {})
    ranked = {r["id"]: r for r in pack.to_json()["retrieval"]["ranked"]}
    assert attrs["gen_ai.operation.name"] == "retrieval"
    assert attrs["gen_ai.request.top_k"] == 5
    docs = json.loads(str(attrs["gen_ai.retrieval.documents"]))
    # The admitted chunks the retriever scored, in the pack's order (best rank
    # first), each scored.
    assert {d["id"] for d in docs} == {"damaged-items", "refund-window"}
    assert docs == sorted(
        ({"id": cid, "score": ranked[cid]["score"]} for cid in ("damaged-items", "refund-window")),
        key=lambda d: ranked[d["id"]]["rank"],
    )
    assert all(isinstance(d["score"], float) for d in docs)
    # Without the opt-in: no query, no events, no count of events left out.
    assert "gen_ai.retrieval.query.text" not in attrs
    assert "ledger.pack.evicted_omitted" not in attrs
    assert finished.events == ()
    text = _exported_text(finished)
    assert "jane.doe" not in text
    _no_body_anywhere(text)


def test_a_plain_build_lists_no_unscored_documents(
    lg: ledger.Ledger, spans: tuple[trace.Tracer, InMemorySpanExporter]
) -> None:
    _, finished = _built_in_span(lg, spans)
    attrs = dict(finished.attributes or {})
    assert attrs["ledger.pack.admitted"] >= 1 and attrs["ledger.pack.evicted"] >= 1
    assert not any(name.startswith("gen_ai.") for name in attrs)
    assert finished.events == ()


def _events(finished: ReadableSpan) -> list[dict[str, Any]]:
    assert all(e.name == "ledger.eviction" for e in finished.events)
    return [dict(e.attributes or {}) for e in finished.events]


def test_with_the_opt_in_each_eviction_is_an_event_and_the_query_is_sent(
    lg: ledger.Ledger, spans: tuple[trace.Tracer, InMemorySpanExporter]
) -> None:
    lg.otel_events = True
    # A budget that leaves out two of the retrieved (the retriever ranks only what
    # the subject could be given: legal-note and refund-window v1 are not candidates).
    pack, finished = _built_in_span(lg, spans, query=QUESTION, top=5, budget=45)
    data = pack.to_json()
    attrs = dict(finished.attributes or {})
    assert attrs["gen_ai.retrieval.query.text"] == data["retrieval"]["query"]
    assert attrs["ledger.pack.evicted_omitted"] == 0
    ranks = {r["id"]: r["rank"] for r in data["retrieval"]["ranked"]}
    events = _events(finished)
    # Every eviction, best rank first: damaged-items and shipping (budget).
    by_rank = sorted(["damaged-items", "shipping"], key=ranks.__getitem__)
    assert [(e["ledger.chunk.id"], e["ledger.retrieval.rank"]) for e in events] == [
        (chunk_id, ranks[chunk_id]) for chunk_id in by_rank
    ]
    expected = {
        (e["id"], e["source_version"], e["record_digest"], e["reason"]) for e in data["evicted"]
    }
    got = {
        (
            e["ledger.chunk.id"],
            e["ledger.chunk.source_version"],
            e["ledger.chunk.record_digest"],
            e["ledger.eviction.reason"],
        )
        for e in events
    }
    assert got == expected and len(events) == len(data["evicted"]) == 2
    for event in events:  # nothing else: never a body, never a detail's text
        assert set(event) == EVENT_KEYS | {"ledger.retrieval.rank"}
    _no_body_anywhere(_exported_text(finished))


def test_events_of_a_plain_build_have_no_rank(
    lg: ledger.Ledger, spans: tuple[trace.Tracer, InMemorySpanExporter]
) -> None:
    lg.otel_events = True
    pack, finished = _built_in_span(lg, spans, budget=25)
    events = _events(finished)
    evicted = pack.to_json()["evicted"]
    # The pack's order, each with the four names and no rank.
    assert [(e["ledger.chunk.id"], e["ledger.chunk.source_version"]) for e in events] == [
        (e["id"], e["source_version"]) for e in evicted
    ]
    assert all(set(e) == EVENT_KEYS for e in events)
    assert "gen_ai.retrieval.query.text" not in dict(finished.attributes or {})


@pytest.mark.parametrize(
    ("argument", "env", "sent"),
    [
        (None, None, False),
        (None, "1", True),
        (None, "0", False),
        (None, "true", True),
        (False, "1", False),  # the argument wins
        (True, None, True),
    ],
)
def test_the_opt_in_by_argument_or_environment(
    db_url: str,
    spans: tuple[trace.Tracer, InMemorySpanExporter],
    monkeypatch: pytest.MonkeyPatch,
    argument: bool | None,
    env: str | None,
    sent: bool,
) -> None:
    from ledger.store import engine

    if env is None:
        monkeypatch.delenv("LEDGER_OTEL_EVENTS", raising=False)
    else:
        monkeypatch.setenv("LEDGER_OTEL_EVENTS", env)
    with ledger.Ledger(db_url, engine.open_engine(db_url), otel_events=argument) as lg:
        lg.ingest_records(corpus())
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=200)
        _, finished = _built_in_span(lg, spans, query=QUESTION)
    attrs = dict(finished.attributes or {})
    assert (len(finished.events) == 1) is sent  # shipping, over the budget
    assert ("gen_ai.retrieval.query.text" in attrs) is sent
    assert ("jane.doe" in _exported_text(finished)) is sent


def test_open_takes_the_opt_in(
    db_url: str,
    spans: tuple[trace.Tracer, InMemorySpanExporter],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LEDGER_OTEL_EVENTS", raising=False)
    with ledger.open(db_url, otel_events=True) as lg:
        assert lg.otel_events is True
        lg.ingest_records(corpus())
        lg.grant("default", "public-read")
        lg.set_policy(allow_trust=["approved-source"], budget=200)
        pack, finished = _built_in_span(lg, spans, query=QUESTION)
    assert len(finished.events) == len(pack.evicted) == 1
    with ledger.open(db_url) as lg:
        assert lg.otel_events is None


def test_the_events_are_capped_with_a_count_of_the_rest(
    lg: ledger.Ledger, spans: tuple[trace.Tracer, InMemorySpanExporter]
) -> None:
    from ledger.integrations import otel

    # 1,500 retrieved candidates the subject may not read, best ranked last-named.
    many = [
        chunk(id=f"secret-{n:04d}", dedupe_key=f"secret-{n:04d}", required_permission="legal-read",
              content=f"Internal note {n}.")
        for n in range(1500)
    ]  # fmt: skip
    lg.ingest_records(many)
    lg.otel_events = True
    ids = [c["id"] for c in reversed(many)]
    pack, finished = _built_in_span(lg, spans, candidates=ids)
    attrs = dict(finished.attributes or {})
    assert attrs["ledger.pack.evicted"] == 1500 == len(pack.evicted)
    events = _events(finished)
    assert len(events) == otel.MAX_LISTED == 100
    assert attrs["ledger.pack.evicted_omitted"] == 1400
    assert attrs["ledger.pack.number"] == pack.number  # to ask the ledger for the rest
    # The best ranked first: the candidates as given, ranks 1..100.
    assert [e["ledger.chunk.id"] for e in events] == ids[:100]
    assert [e["ledger.retrieval.rank"] for e in events] == list(range(1, 101))
    assert len(_exported_text(finished)) < 64_000


def test_the_cap_keeps_retrieved_evictions_before_the_others(
    lg: ledger.Ledger,
    spans: tuple[trace.Tracer, InMemorySpanExporter],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ledger.integrations import otel

    # A policy chunk the subject may not read: a candidate of every build, never ranked.
    lg.ingest_records(
        [chunk(id="board-policy", section="policy", dedupe_key="board-policy",
               required_permission="legal-read", content="Board policy.")]
    )  # fmt: skip
    monkeypatch.setattr(otel, "MAX_LISTED", 2)
    lg.otel_events = True
    pack, finished = _built_in_span(lg, spans, query=QUESTION, top=5, budget=45)
    events = _events(finished)
    assert len(pack.evicted) == 3
    ranks = {r["id"]: r["rank"] for r in pack.to_json()["retrieval"]["ranked"]}
    by_rank = sorted(["damaged-items", "shipping"], key=ranks.__getitem__)
    assert [e["ledger.chunk.id"] for e in events] == by_rank
    assert dict(finished.attributes or {})["ledger.pack.evicted_omitted"] == 1
    monkeypatch.setattr(otel, "MAX_LISTED", 3)
    _, again = _built_in_span(lg, (spans[0], _cleared(spans[1])), query=QUESTION, top=5, budget=45)
    last = _events(again)[-1]
    assert last["ledger.chunk.id"] == "board-policy" and "ledger.retrieval.rank" not in last


def _cleared(exporter: InMemorySpanExporter) -> InMemorySpanExporter:
    exporter.clear()
    return exporter
