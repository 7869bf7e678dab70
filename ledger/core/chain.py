"""The hash chain's formulas, pure: what an entry hash and a pack entry's payload
digest are. The store seals entries with them and verify recomputes them; a proof
verifier checks a pack's inclusion with them, without a database."""

from __future__ import annotations

from typing import Any

from ledger.core.canonical import digest_value

GENESIS = "0" * 64
"""The previous hash of entry 1."""


def entry_hash(seq: int, kind: str, payload_digest: str, prev_hash: str) -> str:
    """The hash of one entry: SHA-256 of the canonical JSON of its four fields."""
    return digest_value(
        {"seq": seq, "kind": kind, "payload_digest": payload_digest, "prev_hash": prev_hash}
    )


def pack_entry_payload(
    pack_no: int,
    pack_dig: str,
    in_digest: str,
    mark: int,
    trace: tuple[str, str | None] | None = None,
) -> str:
    """The payload digest of a pack entry: its number, pack and input digests, mark,
    and the OpenTelemetry trace it ran in when it had one (only then, so the entries
    of packs without one keep their hashes)."""
    payload: dict[str, Any] = {
        "kind": "pack",
        "pack": pack_no,
        "pack_digest": pack_dig,
        "input_digest": in_digest,
        "ledger_mark": mark,
    }
    if trace is not None:
        payload["trace"] = {"trace_id": trace[0], "span_id": trace[1]}
    return digest_value(payload)
