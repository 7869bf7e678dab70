"""OpenTelemetry: a build inside an active span annotates it and records its trace.

Nothing here configures an exporter: the application's own OpenTelemetry setup
decides where spans go (docs/guides/opentelemetry.md). `Ledger.build` calls this
module only when the caller passes trace ids or the application has imported
OpenTelemetry, so a program without it pays nothing.

On the active span, always:

- `ledger.pack.number`, `ledger.pack.digest`; `ledger.pack.admitted`,
  `ledger.pack.evicted` (counts);
- `gen_ai.retrieval.documents`: the admitted chunks the retriever scored, as a
  JSON string `[{"id": ..., "score": ...}]` in the pack's order (the GenAI
  conventions' form on spans). Every listed document has its score: a viewer may
  drop the whole list for one unscored item (Phoenix 20 does), so chunks without
  a score (required ones, a plain build's) are not listed, and without any the
  attribute is not set. At most `MAX_LISTED` are listed;
- in a retrieval build, `gen_ai.operation.name` `retrieval` and
  `gen_ai.request.top_k` (the query's K, or the number of candidates given).

Only when asked for (`ledger.open(..., otel_events=True)`, or
`LEDGER_OTEL_EVENTS=1` in the environment when the argument is left out):

- one span event `ledger.eviction` per evicted candidate, with
  `ledger.chunk.id`, `ledger.chunk.source_version`, `ledger.chunk.record_digest`,
  `ledger.eviction.reason` (the reason code, docs/reference/gates.md) and
  `ledger.retrieval.rank` when it was retrieved: never a body, never the
  detail's text. At most `MAX_LISTED` events, retrieved ones best rank first,
  then the others in the pack's order; `ledger.pack.evicted_omitted` counts the
  rest (0 when none), and with the pack number `ledger show N` lists them all
  and `ledger why-evicted DIGEST --pack N` explains one;
- `gen_ai.retrieval.query.text`: a query build's query (a question may hold
  personal data, so never without the opt-in).

The pack stores the span's `trace_id` and `span_id` (`show --json` "trace"), so
`ledger packs --trace-id HEX32` finds the packs of one trace.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ledger.core.errors import InputError

if TYPE_CHECKING:
    from ledger.core.results import Pack

# --------------------------------------------------------------------------
# Every name this module writes, once (the reference: docs/guides/opentelemetry.md).
# --------------------------------------------------------------------------

# Span attributes: the pack.
PACK_NUMBER = "ledger.pack.number"
PACK_DIGEST = "ledger.pack.digest"
PACK_ADMITTED = "ledger.pack.admitted"
PACK_EVICTED = "ledger.pack.evicted"
PACK_EVICTED_OMITTED = "ledger.pack.evicted_omitted"  # with the events: those not sent
# Span attributes: the OpenTelemetry GenAI conventions for a retrieval.
OPERATION_NAME = "gen_ai.operation.name"
OPERATION_RETRIEVAL = "retrieval"  # its value in a retrieval build
REQUEST_TOP_K = "gen_ai.request.top_k"
RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"
RETRIEVAL_QUERY_TEXT = "gen_ai.retrieval.query.text"  # only with the opt-in
# The span event of one evicted candidate (only with the opt-in) and its attributes.
EVICTION_EVENT = "ledger.eviction"
CHUNK_ID = "ledger.chunk.id"
CHUNK_SOURCE_VERSION = "ledger.chunk.source_version"
CHUNK_RECORD_DIGEST = "ledger.chunk.record_digest"
EVICTION_REASON = "ledger.eviction.reason"
RETRIEVAL_RANK = "ledger.retrieval.rank"
# The opt-in's environment variable (when `Ledger(otel_events=...)` is left out).
EVENTS_ENV = "LEDGER_OTEL_EVENTS"

# At most this many eviction events, and documents listed, on one span: below the
# SDK's default of 128 events a span keeps (OTEL_SPAN_EVENT_COUNT_LIMIT), and a
# pack of thousands of evictions stays a span of some tens of kilobytes.
MAX_LISTED = 100

_HEX = re.compile(r"[0-9a-f]+")


def _check_w3c_id(given: str, digits: int, param: str, role: str) -> str:
    """`given` as a W3C traceparent id of `digits` hex digits, not all zero, lower-case."""
    value = given.strip().lower() if isinstance(given, str) else ""
    if len(value) != digits or not _HEX.fullmatch(value) or value == "0" * digits:
        raise InputError(
            f"{param}: {str(given)[:40]!r} must be {digits} hex digits, not all zero "
            f"(the W3C traceparent's {role})",
            param=param,
        )
    return value


def check_trace_id(trace_id: str) -> str:
    """A W3C trace id: 32 hex digits, not all zero; returned lower-case."""
    return _check_w3c_id(trace_id, 32, "trace_id", "trace id")


def check_span_id(span_id: str) -> str:
    """A W3C span id: 16 hex digits, not all zero; returned lower-case."""
    return _check_w3c_id(span_id, 16, "span_id", "parent id")


def active_span() -> Any | None:
    """The application's current recording span, or None (also without OpenTelemetry)."""
    if "opentelemetry" not in sys.modules:
        return None  # the application never imported it: no span can be active
    try:
        from opentelemetry import trace
    except ImportError:  # pragma: no cover - a partly installed package
        return None
    span = trace.get_current_span()
    ctx = span.get_span_context()
    return span if ctx.is_valid else None


def trace_of(trace_id: str | None, span_id: str | None) -> tuple[str, str | None] | None:
    """The trace a build records: the ids given, else the active span's, else None."""
    if trace_id is not None:
        return check_trace_id(trace_id), None if span_id is None else check_span_id(span_id)
    if span_id is not None:
        raise InputError(
            "span_id: goes with a trace id (a span id alone names no trace)", param="span_id"
        )
    span = active_span()
    if span is None:
        return None
    ctx = span.get_span_context()
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"


def events_wanted(otel_events: bool | None) -> bool:
    """The opt-in: `otel_events` when given, else `LEDGER_OTEL_EVENTS` is 1 (or
    true, yes, on)."""
    if otel_events is not None:
        return otel_events
    return os.environ.get(EVENTS_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


class _Ranks:
    """The ranked item that made each version a candidate in a retrieval build,
    by the build's own rule (a query ranks every version of an id, a candidates
    file may name one version); none in a plain build."""

    def __init__(self, retrieval: Mapping[str, Any] | None) -> None:
        self.by_id: dict[str, Mapping[str, Any]] = {}
        self.by_version: dict[tuple[str, str], Mapping[str, Any]] = {}
        if retrieval is None:
            return
        all_versions = retrieval["query"] is not None
        for r in retrieval["ranked"]:
            if r["source_version"] is None or all_versions:
                self.by_id.setdefault(r["id"], r)
            else:
                self.by_version.setdefault((r["id"], r["source_version"]), r)

    def item(self, chunk_id: str, source_version: str) -> Mapping[str, Any] | None:
        """`{"id", "source_version", "rank", "score"}`, or None: not retrieved."""
        return self.by_version.get((chunk_id, source_version), self.by_id.get(chunk_id))


def scored_documents(pack_data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`gen_ai.retrieval.documents`: the admitted chunks the retriever scored,
    `{"id", "score"}` in the pack's order, each id once, at most `MAX_LISTED`."""
    ranks = _Ranks(pack_data["retrieval"])
    docs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for a in pack_data["admitted"]:
        item = ranks.item(a["id"], a["source_version"])
        if item is None or item["score"] is None or a["id"] in seen:
            continue
        seen.add(a["id"])
        docs.append({"id": a["id"], "score": item["score"]})
    return docs[:MAX_LISTED]


def span_attributes(pack: Pack, *, query_text: bool = False) -> dict[str, Any]:
    """The attributes a build sets on its span (see the module docstring);
    `query_text` adds a query build's query (the opt-in)."""
    data = pack.data
    attrs: dict[str, Any] = {
        PACK_NUMBER: data["pack"],
        PACK_DIGEST: data["pack_digest"],
        PACK_ADMITTED: len(data["admitted"]),
        PACK_EVICTED: len(data["evicted"]),
    }
    docs = scored_documents(data)
    if docs:
        attrs[RETRIEVAL_DOCUMENTS] = json.dumps(docs, separators=(",", ":"))
    retrieval = data["retrieval"]
    if retrieval is not None:
        attrs[OPERATION_NAME] = OPERATION_RETRIEVAL
        top = retrieval["top"]
        attrs[REQUEST_TOP_K] = top if top is not None else len(retrieval["ranked"])
        if query_text and retrieval["query"] is not None:
            attrs[RETRIEVAL_QUERY_TEXT] = retrieval["query"]
    return attrs


def eviction_events(pack: Pack) -> tuple[list[dict[str, Any]], int]:
    """The attributes of each `ledger.eviction` event to send, and how many
    evictions are left out: at most `MAX_LISTED` events, the retrieved evictions
    best rank first, then the others in the pack's order. Names, versions,
    digests, reason codes and ranks only: never a body, never a detail's text."""
    data = pack.data
    ranks = _Ranks(data["retrieval"])
    retrieved: list[tuple[int, dict[str, Any]]] = []
    others: list[dict[str, Any]] = []
    for e in data["evicted"]:  # the pack's order
        attrs: dict[str, Any] = {
            CHUNK_ID: e["id"],
            CHUNK_SOURCE_VERSION: e["source_version"],
            CHUNK_RECORD_DIGEST: e["record_digest"],
            EVICTION_REASON: e["reason"],
        }
        item = ranks.item(e["id"], e["source_version"])
        if item is None:
            others.append(attrs)
        else:
            attrs[RETRIEVAL_RANK] = item["rank"]
            retrieved.append((item["rank"], attrs))
    retrieved.sort(key=lambda pair: pair[0])  # stable: one rank's versions keep the pack's order
    events = [attrs for _, attrs in retrieved] + others
    listed = events[:MAX_LISTED]
    return listed, len(events) - len(listed)


def annotate_span(pack: Pack, otel_events: bool | None = None) -> None:
    """Set the pack's attributes on the active span, if there is one recording;
    with the opt-in (`events_wanted`) also its eviction events and the query."""
    span = active_span()
    if span is None or not span.is_recording():
        return
    wanted = events_wanted(otel_events)
    span.set_attributes(span_attributes(pack, query_text=wanted))
    if wanted:
        listed, omitted = eviction_events(pack)
        for attrs in listed:
            span.add_event(EVICTION_EVENT, attrs)
        span.set_attribute(PACK_EVICTED_OMITTED, omitted)
