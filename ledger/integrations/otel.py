"""OpenTelemetry: a build inside an active span annotates it and records its trace.

Nothing here configures an exporter: the application's own OpenTelemetry setup
decides where spans go. `Ledger.build` calls this module only when the caller
passes trace ids or the application has imported OpenTelemetry, so a program
without it pays nothing. Span attributes set on the active span:

- `ledger.pack.number`, `ledger.pack.digest`
- `ledger.pack.admitted`, `ledger.pack.evicted` (counts)
- `gen_ai.retrieval.documents`: the admitted ids, `[{"id": ..., "score"?: ...}]`
  as a JSON string (the GenAI conventions' form on spans, whose attributes
  cannot hold structured values in the Python API)

The pack stores the span's `trace_id` and `span_id` (`show --json` "trace"), so
`ledger packs --trace-id HEX32` finds the packs of one trace.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any

from ledger.core.errors import InputError

if TYPE_CHECKING:
    from ledger.core.results import Pack

_HEX = re.compile(r"[0-9a-f]+")


def _check_w3c_id(given: str, digits: int, option: str, role: str) -> str:
    """`given` as a W3C traceparent id of `digits` hex digits, not all zero, lower-case."""
    value = given.strip().lower()
    if len(value) != digits or not _HEX.fullmatch(value) or value == "0" * digits:
        raise InputError(
            f"{option} {given[:40]!r}: must be {digits} hex digits, not all zero "
            f"(the W3C traceparent's {role})"
        )
    return value


def check_trace_id(trace_id: str) -> str:
    """A W3C trace id: 32 hex digits, not all zero; returned lower-case."""
    return _check_w3c_id(trace_id, 32, "--trace-id", "trace id")


def check_span_id(span_id: str) -> str:
    """A W3C span id: 16 hex digits, not all zero; returned lower-case."""
    return _check_w3c_id(span_id, 16, "--span-id", "parent id")


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
        raise InputError("--span-id goes with --trace-id (a span id alone names no trace)")
    span = active_span()
    if span is None:
        return None
    ctx = span.get_span_context()
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"


def span_attributes(pack: Pack) -> dict[str, Any]:
    """The attributes a build sets on its span (see the module docstring)."""
    data = pack.to_json()
    scores: dict[str, float] = {}
    retrieval = data.get("retrieval")
    if retrieval is not None:
        for r in retrieval["ranked"]:
            if r.get("score") is not None:
                scores.setdefault(r["id"], r["score"])
    docs: list[dict[str, Any]] = []
    for a in data["admitted"]:
        doc: dict[str, Any] = {"id": a["id"]}
        if a["id"] in scores:
            doc["score"] = scores[a["id"]]
        docs.append(doc)
    return {
        "ledger.pack.number": data["pack"],
        "ledger.pack.digest": data["pack_digest"],
        "ledger.pack.admitted": len(data["admitted"]),
        "ledger.pack.evicted": len(data["evicted"]),
        "gen_ai.retrieval.documents": json.dumps(docs, separators=(",", ":")),
    }


def annotate_span(pack: Pack) -> None:
    """Set the pack's attributes on the active span, if there is one recording."""
    span = active_span()
    if span is not None and span.is_recording():
        span.set_attributes(span_attributes(pack))
