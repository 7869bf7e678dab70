"""`ledger build --batch`: many packs against one ledger state.

All lines see the ledger as it stood when the batch started (the same ledger
mark), so the candidates are read and costed once. Without `keep_going` every
pack is written in one transaction, all or nothing; with it, each line is a
savepoint, and a failed line is reported and rolled back alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from ledger.core.errors import ContextError, InputError, LedgerError
from ledger.core.select import collector_paused
from ledger.store.build import (
    candidates_for,
    decide,
    load_candidates,
    parse_batch_line,
    record_pack,
    resolve_inputs,
    with_retrieval,
)
from ledger.store.chain import read_head
from ledger.store.engine import write_transaction


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
    if not lines:
        raise InputError(f"{path}: empty batch file")
    result = BatchResult()
    with write_transaction(engine) as conn, collector_paused():
        mark = read_head(conn).seq
        cache: dict[str, Any] = {}
        for i, raw in enumerate(lines, start=1):
            where = f"{path}:{i}"
            try:
                if not raw.strip():
                    raise InputError("blank line")
                spec = parse_batch_line(raw, where)
                # Reading the inputs and costing the candidates write nothing but the
                # token-count cache, which stays valid even if this line fails.
                inputs = resolve_inputs(
                    conn,
                    spec["as_of"],
                    spec["subject"],
                    budget=spec["budget"],
                    counter=counter,
                    ledger_at=mark,
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
                        cache[inputs.counter] = load_candidates(
                            conn, mark, inputs.counter, inputs.scope
                        )
                    candidates, vid_of = cache[inputs.counter]
                with conn.begin_nested() if keep_going else _null():
                    ctx = decide(inputs, candidates)
                    pack_no = record_pack(conn, inputs, candidates, ctx, vid_of)
                result.packs.append(
                    {
                        "pack": pack_no,
                        "subject": inputs.subject,
                        "as_of": inputs.as_of,
                        "budget": inputs.budget,
                        "used": ctx.admitted_tokens(),
                    }
                )
            except LedgerError as exc:
                msg = str(exc)
                if msg.startswith(where + ": "):
                    msg = msg[len(where) + 2 :]
                if not keep_going:
                    raise ContextError(
                        f"{where}: {msg}; no pack of the batch was recorded", exc.exit_code
                    ) from None
                result.failed.append((where, msg))
            if progress is not None:
                progress(1)
    return result


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
