"""ledger: versioned context chunks and audited context packs.

`import ledger` is the library a program uses; the `ledger` command is a thin
layer over it:

    with ledger.open("ledger.db", create=True) as lg:
        lg.ingest_paths(["chunks.jsonl"])
        pack = lg.build(as_of="2026-07-21")

The pure selector is `ledger.core` (no database): `ledger.select(candidates,
request)` with `ledger.Candidate` and `ledger.Request`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger.core.context import Candidate, Context
from ledger.core.errors import (
    EXIT_INTEGRITY,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    InputError,
    IntegrityError,
    LedgerError,
    NotFoundError,
    RefusedError,
    SchemaError,
)
from ledger.core.select import Request, select

if TYPE_CHECKING:
    from ledger.api import Ledger, init, open
    from ledger.core.checkpoint import Checkpoint
    from ledger.core.checks import CheckFileError
    from ledger.core.proofs import CheckpointResult, ConsistencyProof, InclusionProof

    # The result types, for type checkers; at run time `__getattr__` below loads them.
    from ledger.core.results import *  # noqa: F403
    from ledger.core.results import IngestSummary

    IngestResult = IngestSummary

# The database half loads SQLAlchemy; it is imported on first use, so that the
# pure core and the database-free commands (`ledger pack`, `ledger select`) start fast.
# Each module with the names it gives (space-separated).
_LAZY_MODULES = {
    "ledger.core.results": (
        "Admission BatchBuild CheckResult ChunkList Diff DocumentIngestSummary EraseResult Export "
        "GrantChange HeadResult IngestSummary InitResult Pack PackList PolicyChange "
        "PolicyState ReplayResult RetractResult SearchResult SubjectGrants VerifyResult WhyAnswer "
        "WhyEvicted Withheld"
    ),
    "ledger.api": "Ledger open init",
    # Context tests (`Ledger.check`): a malformed tests file's error
    "ledger.core.checks": "CheckFileError",
    # Proofs and checkpoints
    "ledger.core.checkpoint": "Checkpoint",
    "ledger.core.proofs": "CheckpointResult ConsistencyProof InclusionProof",
}
_LAZY = {name: (module, name) for module, names in _LAZY_MODULES.items() for name in names.split()}
_LAZY["IngestResult"] = _LAZY["IngestSummary"]  # the name docs/reference/json.md uses


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'ledger' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "EXIT_INTEGRITY",
    "EXIT_INVALID",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_USAGE",
    "Admission",
    "BatchBuild",
    "Candidate",
    "CheckFileError",
    "CheckResult",
    "Checkpoint",
    "CheckpointResult",
    "ChunkList",
    "ConsistencyProof",
    "Context",
    "Diff",
    "DocumentIngestSummary",
    "EraseResult",
    "Export",
    "GrantChange",
    "HeadResult",
    "InclusionProof",
    "IngestResult",
    "IngestSummary",
    "InitResult",
    "InputError",
    "IntegrityError",
    "Ledger",
    "LedgerError",
    "NotFoundError",
    "Pack",
    "PackList",
    "PolicyChange",
    "PolicyState",
    "RefusedError",
    "ReplayResult",
    "Request",
    "RetractResult",
    "SchemaError",
    "SearchResult",
    "SubjectGrants",
    "VerifyResult",
    "WhyAnswer",
    "WhyEvicted",
    "Withheld",
    "__version__",
    "init",
    "open",
    "select",
]
