"""`ledger build --batch`: many packs against one ledger state.

All lines see the ledger as it stood when the batch started (the same ledger
mark), so the candidates are read and costed once. Without `keep_going` every
pack is written in one transaction, all or nothing; with it, each line is a
savepoint, and a failed line is reported and rolled back alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine

from ledger.core.errors import ContextError, InputError, LedgerError
from ledger.core.strictjson import loads_object
from ledger.store.build import decide
from ledger.store.candidates import candidates_for, load_candidates
from ledger.store.chain import read_head
from ledger.store.engine import write_transaction
from ledger.store.inputs import check_counter, resolve_inputs
from ledger.store.recording import record_pack
from ledger.store.retriever import with_retrieval


@dataclass
class BatchResult:
    packs: list[dict[str, Any]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


def run_batch(
    engine: Engine,
    path: str,
    lines: list[bytes],
    counter: str,
    keep_going: bool,
    progress: Callable[[int], None] | None = None,
) -> BatchResult:
    """Build one pack per line; see the module docstring for the transaction rules."""
    check_counter(counter)
    if not lines:
        raise InputError(f"{path}: empty batch file")
    result = BatchResult()
    with write_transaction(engine) as conn:
        mark = read_head(conn).seq
        cache: dict[str, Any] = {}
        for i, raw in enumerate(lines, start=1):
            where = f"{path}:{i}"
            try:
                result.packs.append(
                    _line_pack(conn, path, raw, where, counter, mark, cache, keep_going)
                )
            except LedgerError as exc:
                msg = str(exc)
                if msg.startswith(where + ": "):
                    msg = msg[len(where) + 2 :]
                if not keep_going:
                    raise ContextError(
                        f"{where}: {msg}; no pack of the batch was recorded",
                        exc.exit_code,
                        param=exc.param,
                    ) from None
                result.failed.append((where, msg))
            if progress is not None:
                progress(1)
    return result


def _line_pack(
    conn: Connection,
    path: str,
    raw: bytes,
    where: str,
    counter: str,
    mark: int,
    cache: dict[str, Any],
    keep_going: bool,
) -> dict[str, Any]:
    """Build and record the pack of one batch line, in a savepoint of its own
    (the whole batch's transaction when a failed line fails the batch)."""
    if not raw.strip():
        raise InputError("blank line")
    spec = parse_batch_line(raw, where)
    # Reading the inputs and costing the candidates write nothing but the
    # token-count cache, which stays valid even if this line fails.
    inputs = resolve_inputs(
        conn, spec["as_of"], spec["subject"], budget=spec["budget"], counter=counter, ledger_at=mark
    )
    # A line's candidates file is named relative to the batch file.
    cands_file = spec["candidates"]
    if cands_file is not None:
        cands_file = os.path.join(os.path.dirname(path), cands_file)
    inputs = with_retrieval(conn, inputs, spec["query"], spec["top"], cands_file)
    if inputs.retrieval is not None:
        candidates, vid_of = candidates_for(conn, inputs)
    else:
        if inputs.counter not in cache:
            cache[inputs.counter] = load_candidates(conn, mark, inputs.counter, inputs.scope)
        candidates, vid_of = cache[inputs.counter]
    with conn.begin_nested() if keep_going else nullcontext():
        ctx = decide(inputs, candidates)
        pack_no = record_pack(conn, inputs, candidates, ctx, vid_of)
    return {
        "pack": pack_no,
        "subject": inputs.subject,
        "as_of": inputs.as_of,
        "budget": inputs.budget,
        "used": ctx.admitted_tokens(),
    }


def parse_batch_line(raw: bytes, where: str) -> dict[str, Any]:
    """One batch line: {"subject", "as_of", "budget"?, "query"?, "top"?, "candidates"?}."""
    obj = loads_object(
        raw,
        where,
        "an object with subject, as_of and optional budget",
        frozenset({"subject", "as_of", "budget", "query", "top", "candidates"}),
        frozenset({"subject", "as_of"}),
    )
    if not isinstance(obj["subject"], str) or not isinstance(obj["as_of"], str):
        raise InputError(f"{where}: subject and as_of must be strings")
    b = obj.get("budget")
    if b is not None and (isinstance(b, bool) or not isinstance(b, int)):
        raise InputError(f"{where}: field 'budget': must be an integer")
    for name, kind in (("query", str), ("candidates", str), ("top", int)):
        value = obj.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
            words = "an integer" if kind is int else "a string"
            raise InputError(f"{where}: field '{name}': must be {words}")
    return {
        "subject": obj["subject"],
        "as_of": obj["as_of"],
        "budget": b,
        "query": obj.get("query"),
        "top": obj.get("top"),
        "candidates": obj.get("candidates"),
    }
