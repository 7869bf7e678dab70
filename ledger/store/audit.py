"""Temporary: the audit commands moved to one module each; this re-exports their
public names for the importers outside this change (ledger/__init__.py,
ledger/api.py, ledger/store/search.py, ledger/store/report_data.py, bench/), and
goes when they import from the new modules:

- `why_evicted`, `hint_for`: ledger.store.why_evicted
- `diff`: ledger.store.diff (its causes: ledger.core.diff)
- `verify`, `VerifyResult`: ledger.store.verify
- `replay`, `ReplayResult`: ledger.store.replay
- `resolve_ref`: ledger.store.readers
- `inputs_of`, `trace_ids`: ledger.store.inputs; `retrieval_of`: ledger.store.packs
- `erased_info`, `erased_by_digest` (were in ledger.store.erase): ledger.store.readers
- `is_seq_hash(text)`: `ledger.core.checkpoint.parse_seq_hash(text) is not None`
"""

from __future__ import annotations

from ledger.core.checkpoint import parse_seq_hash
from ledger.store.diff import diff
from ledger.store.inputs import inputs_of, trace_ids
from ledger.store.packs import retrieval_of
from ledger.store.readers import resolve_ref
from ledger.store.replay import ReplayResult, replay
from ledger.store.verify import VerifyResult, verify
from ledger.store.why_evicted import hint_for, why_evicted


def is_seq_hash(text: str) -> bool:
    """Whether a checkpoint value is the `SEQ:HASH` form (else: a checkpoint file)."""
    return parse_seq_hash(text) is not None


__all__ = [
    "ReplayResult",
    "VerifyResult",
    "diff",
    "hint_for",
    "inputs_of",
    "is_seq_hash",
    "replay",
    "resolve_ref",
    "retrieval_of",
    "trace_ids",
    "verify",
    "why_evicted",
]
