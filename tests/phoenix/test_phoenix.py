"""End to end: a build's span sent over OTLP/HTTP to a real Phoenix server and
read back through Phoenix's own REST API.

What Phoenix shows must be what the pack recorded: one `ledger.eviction` event per
evicted candidate (capped, with a count of the rest), the scored documents as
Phoenix's retrieval documents, and from a span back to `ledger why` by the pack
number. Nothing is exported that the ledger keeps to itself: no chunk body, no
detail text, and the query only with the opt-in (Phoenix copies it into
`input.value`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import ledger
from ledger.integrations import otel
from tests.conftest import chunk
from tests.integrations.conftest import AS_OF, BUDGET, corpus
from tests.phoenix.conftest import Phoenix

# A question holding personal data: Phoenix may see it only with the opt-in.
QUESTION = "refunds damaged shipping refund for jane.doe@example.com"


class Agent:
    """A team's agent as Phoenix sees it: its own tracer provider (a project of
    its own in Phoenix) exporting over OTLP/HTTP, a turn span holding the
    retrieval (the build) and a model call."""

    def __init__(self, phoenix: Phoenix) -> None:
        self.project = f"agent-{uuid.uuid4().hex[:8]}"
        resource = Resource.create(
            {"service.name": "support-agent", "openinference.project.name": self.project}
        )
        self.provider = TracerProvider(resource=resource)
        exporter = OTLPSpanExporter(endpoint=phoenix.traces_endpoint, timeout=30)
        self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("support-agent")

    def turn(self, lg: ledger.Ledger, **build: Any) -> ledger.Pack:
        with self.tracer.start_as_current_span("agent.turn"):
            with self.tracer.start_as_current_span("retrieve"):
                pack = lg.build(AS_OF, **build)
            with self.tracer.start_as_current_span("chat") as call:
                call.set_attributes({"gen_ai.operation.name": "chat",
                                     "gen_ai.request.model": "house-model"})  # fmt: skip
        return pack

    def sent(self) -> None:
        assert self.provider.force_flush(timeout_millis=30_000)


@pytest.fixture
def agent(phoenix: Phoenix) -> Iterator[Agent]:
    made = Agent(phoenix)
    yield made
    made.provider.shutdown()


@pytest.fixture
def lg(tmp_path: Path) -> Iterator[ledger.Ledger]:
    with ledger.open(str(tmp_path / "ledger.db"), create=True) as opened:
        opened.ingest_records(corpus())
        opened.grant("default", "public-read")
        opened.set_policy(allow_trust=["approved-source"], budget=BUDGET)
        yield opened


def _by_name(spans: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in spans}


def _no_body_anywhere(text: str) -> None:
    for record in corpus():
        assert record["content"] not in text


def _events(span: dict[str, Any]) -> list[dict[str, Any]]:
    assert {e["name"] for e in span["events"]} <= {otel.EVICTION_EVENT}
    return [e["attributes"] for e in span["events"]]


def test_phoenix_shows_each_eviction_next_to_the_model_call(
    phoenix: Phoenix, agent: Agent, lg: ledger.Ledger
) -> None:
    lg.otel_events = True
    # A budget that leaves two retrieved chunks out (the retriever ranks only
    # what the subject could be given, so the gates before it evict nothing here).
    pack = agent.turn(lg, query=QUESTION, top=5, budget=45)
    agent.sent()
    spans = _by_name(phoenix.spans(agent.project, 3))
    assert set(spans) == {"agent.turn", "retrieve", "chat"}
    retrieve, chat = spans["retrieve"], spans["chat"]
    # One trace, the one the pack recorded; the build's span is a retriever.
    assert retrieve["context"]["trace_id"] == chat["context"]["trace_id"]
    assert pack.to_json()["trace"] == retrieve["context"]
    assert retrieve["span_kind"] == "RETRIEVER" and chat["span_kind"] == "LLM"
    attrs = retrieve["attributes"]
    assert attrs[otel.PACK_NUMBER] == pack.number
    assert attrs[otel.PACK_DIGEST] == pack.digest
    assert attrs[otel.PACK_EVICTED] == len(pack.evicted) == 2
    assert attrs[otel.PACK_EVICTED_OMITTED] == 0
    # The events Phoenix stored are the pack's evictions, in the order sent.
    expected, omitted = otel.eviction_events(pack)
    assert omitted == 0
    assert _events(retrieve) == expected
    assert sorted(
        (e[otel.CHUNK_ID], e[otel.CHUNK_SOURCE_VERSION], e[otel.CHUNK_RECORD_DIGEST],
         e[otel.EVICTION_REASON])
        for e in _events(retrieve)
    ) == sorted(
        (e.id, e.source_version, e.record_digest, e.reason) for e in pack.evicted
    )  # fmt: skip
    # Every listed document scored, so Phoenix kept the whole list.
    docs = json.loads(attrs[otel.RETRIEVAL_DOCUMENTS])
    assert [d["id"] for d in docs] == ["refund-window"]  # the scored admitted chunk
    for n, doc in enumerate(docs):
        assert attrs[f"retrieval.documents.{n}.document.id"] == doc["id"]
        assert attrs[f"retrieval.documents.{n}.document.score"] == doc["score"]
    # The opt-in sends the query, and Phoenix shows it as the retriever's input.
    query = pack.to_json()["retrieval"]["query"]
    assert attrs[otel.RETRIEVAL_QUERY_TEXT] == attrs["input.value"] == query
    _no_body_anywhere(json.dumps(spans))


def test_without_the_opt_in_phoenix_gets_no_events_and_no_query(
    phoenix: Phoenix, agent: Agent, lg: ledger.Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(otel.EVENTS_ENV, raising=False)
    pack = agent.turn(lg, query=QUESTION, top=5)
    agent.sent()
    spans = _by_name(phoenix.spans(agent.project, 3))
    retrieve = spans["retrieve"]
    assert retrieve["events"] == []
    attrs = retrieve["attributes"]
    assert otel.PACK_EVICTED_OMITTED not in attrs
    assert otel.RETRIEVAL_QUERY_TEXT not in attrs and "input.value" not in attrs
    assert attrs[otel.PACK_EVICTED] == len(pack.evicted)
    ranked = {r["id"]: r["rank"] for r in pack.to_json()["retrieval"]["ranked"]}
    first = min(("damaged-items", "refund-window"), key=ranked.__getitem__)
    assert attrs["retrieval.documents.0.document.id"] == first  # the best rank first
    text = json.dumps(spans)
    assert "jane.doe" not in text
    _no_body_anywhere(text)


def test_a_pack_of_thousands_of_evictions_stays_a_small_span(
    phoenix: Phoenix, agent: Agent, lg: ledger.Ledger
) -> None:
    many = [
        chunk(id=f"secret-{n:04d}", dedupe_key=f"secret-{n:04d}", required_permission="legal-read",
              content=f"Internal note number {n}.")
        for n in range(2000)
    ]  # fmt: skip
    lg.ingest_records(many)
    lg.otel_events = True
    ids = [c["id"] for c in many]
    pack = agent.turn(lg, candidates=ids)
    agent.sent()
    retrieve = _by_name(phoenix.spans(agent.project, 3))["retrieve"]
    attrs = retrieve["attributes"]
    assert attrs[otel.PACK_EVICTED] == len(pack.evicted) == 2000
    events = _events(retrieve)
    assert len(events) == otel.MAX_LISTED
    assert attrs[otel.PACK_EVICTED_OMITTED] == 2000 - otel.MAX_LISTED
    assert events == otel.eviction_events(pack)[0]
    assert [e[otel.RETRIEVAL_RANK] for e in events] == list(range(1, otel.MAX_LISTED + 1))
    assert len(json.dumps(retrieve)) < 64_000
    assert "Internal note" not in json.dumps(retrieve)
    # The pack number is there to ask the ledger about the rest.
    last = f"secret-{len(many) - 1:04d}"
    assert last not in {e[otel.CHUNK_ID] for e in events}
    why = lg.why(last, pack=attrs[otel.PACK_NUMBER]).to_json()
    assert why["verdict"] == "evicted" and why["matches"][0]["reason"] == "permission_denied"


def test_from_a_span_back_to_the_ledger(phoenix: Phoenix, agent: Agent, lg: ledger.Ledger) -> None:
    lg.otel_events = True
    agent.turn(lg, query=QUESTION, top=5)
    lg.build(AS_OF, budget=500)  # a later pack: the span's number is the one to ask
    agent.sent()
    retrieve = _by_name(phoenix.spans(agent.project, 3))["retrieve"]
    pack_no = retrieve["attributes"][otel.PACK_NUMBER]
    assert pack_no == 1
    for event in _events(retrieve):
        # `ledger why-evicted RECORD_DIGEST --pack N`: that version in that pack.
        found = lg.why_evicted(event[otel.CHUNK_RECORD_DIGEST], pack=pack_no).to_json()
        (version,) = found["versions"]
        (decision,) = version["decisions"]
        assert (version["id"], version["source_version"]) == (
            event[otel.CHUNK_ID],
            event[otel.CHUNK_SOURCE_VERSION],
        )
        assert decision["pack"] == pack_no and decision["admitted"] is False
        assert decision["reason"] == event[otel.EVICTION_REASON]
    # `ledger why TEXT --pack N`: the same question in words.
    why = lg.why("shipping", pack=pack_no).to_json()
    assert why["verdict"] == "evicted" and why["matches"][0]["reason"] == "budget"
    assert lg.why("shipping").to_json()["verdict"] == "admitted"  # the newest pack's answer


def test_each_trace_in_phoenix_finds_its_pack(
    phoenix: Phoenix, agent: Agent, lg: ledger.Ledger
) -> None:
    agent.turn(lg, query=QUESTION, top=5)
    agent.turn(lg, budget=25)
    agent.sent()
    spans = [s for s in phoenix.spans(agent.project, 6) if s["name"] == "retrieve"]
    assert len(spans) == 2
    for span in spans:
        # `ledger packs --trace-id HEX32`, with the trace id Phoenix shows.
        listed = lg.packs(trace_id=span["context"]["trace_id"]).to_json()["packs"]
        assert [p["pack"] for p in listed] == [span["attributes"][otel.PACK_NUMBER]]
        assert listed[0]["trace"]["span_id"] == span["context"]["span_id"]
