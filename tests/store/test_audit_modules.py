"""The audit commands' modules: verify's tables read from the one table of
reasons, one checker per kind of entry, errors in API terms, and no import
cycles held apart inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ledger.core.errors import InputError
from ledger.core.reasons import (
    BUDGET,
    DUPLICATE,
    EXPIRED,
    NOT_YET_EFFECTIVE,
    PERMISSION_DENIED,
    REASON_CODES,
    RETRACTED,
    SUPERSEDED,
    TABLE,
    TRUST_DENIED,
)
from ledger.store.chain import KINDS
from ledger.store.verify import CHECKERS, REVOKE, verify
from ledger.store.verify_packs import _REFERRING, VERIFY_DETAIL, VerifyRow

STORE = Path(__file__).resolve().parents[2] / "ledger" / "store"
AUDIT_MODULES = (
    "why_evicted",
    "diff",
    "verify",
    "verify_packs",
    "verify_rows",
    "replay",
    "readers",
    "inputs",
    "packs",
    "erase",
)

# The fields that decide each reason's detail in verify, as written by hand
# before the table was read (equal fields, equal details).
HAND_WRITTEN = {
    PERMISSION_DENIED: ("required_permission",),
    TRUST_DENIED: ("trust",),
    NOT_YET_EFFECTIVE: ("effective_from",),
    EXPIRED: ("expires_on",),
    RETRACTED: ("remaining", "chunk_id"),
    SUPERSEDED: ("ref_vid",),
    DUPLICATE: ("ref_vid",),
    BUDGET: ("tokens", "remaining"),
}


def test_verify_detail_is_read_from_the_reasons_table() -> None:
    stored = {r.name: r.status for r in TABLE if r.status is not None}
    assert set(VERIFY_DETAIL) == set(stored.values())
    for name, status in stored.items():
        maker = VERIFY_DETAIL[status]
        assert maker.reason == name
        assert tuple(VerifyRow._fields[i] for i in maker.positions) == HAND_WRITTEN[name]
    assert _REFERRING == {REASON_CODES[SUPERSEDED], REASON_CODES[DUPLICATE]}


def test_one_checker_per_kind_of_entry() -> None:
    # A revoke's rows are grant rows: the grants' checker reads both kinds.
    assert set(CHECKERS) | {REVOKE} == set(KINDS)


def test_a_malformed_entry_checkpoint_names_the_parameter() -> None:
    with pytest.raises(InputError) as caught:
        verify(None, "not-a-checkpoint")  # type: ignore[arg-type]  # refused before any read
    assert caught.value.param == "checkpoint"
    assert str(caught.value).startswith("checkpoint: ") and "SEQ:HASH" in str(caught.value)


@pytest.mark.parametrize("name", AUDIT_MODULES)
def test_no_store_imports_inside_functions(name: str) -> None:
    tree = ast.parse((STORE / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom):
                    assert not (inner.module or "").startswith("ledger"), (name, inner.module)
                    assert not any(a.name.startswith("_") for a in inner.names), name
