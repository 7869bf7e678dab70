"""A recorded pack's inputs, read back from its row: what `why-evicted`'s hints,
`verify` and `replay` re-run the core on (docs/reference/digests.md, the input
digest). `ledger.store.build` writes them (`record_pack`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from ledger.core.errors import IntegrityError
from ledger.store.access import Policy
from ledger.store.build import DOCUMENTS, INPUT_COLUMNS, Inputs, retractions_at
from ledger.store.packs import retrieval_of, snapshot_of


def inputs_of(head: Any, conn: Connection | None = None) -> Inputs:
    """A recorded pack's inputs, from its snapshots (IntegrityError if unreadable);
    with `conn`, also the retractions at its ledger mark (gate 5)."""
    pol = snapshot_of(head.policy, "policy", head.pack_no)
    grants_list = snapshot_of(head.grants, "grants", head.pack_no)
    try:
        if not isinstance(pol, dict) or not isinstance(grants_list, list):
            raise TypeError
        policy = Policy(tuple(pol["allowed_trust"]), pol["budget"])
        grants_tuple = tuple(grants_list)
    except (KeyError, TypeError):
        raise IntegrityError(
            f"pack {head.pack_no}: its recorded grants or policy do not have the recorded shape; "
            "the database was altered: run `ledger verify`"
        ) from None
    return Inputs(
        **{name: getattr(head, column) for name, column in INPUT_COLUMNS.items()},
        grants=grants_tuple,
        policy=policy,
        retrieval=retrieval_of(head),
        retractions=(
            retractions_at(conn, head.ledger_mark)
            if conn is not None and head.scope == DOCUMENTS
            else {}
        ),
    )


def trace_ids(head: Any) -> tuple[str, str | None] | None:
    """A recorded pack's (trace_id, span_id), as its entry payload covers them."""
    return None if head.trace_id is None else (head.trace_id, head.span_id)
