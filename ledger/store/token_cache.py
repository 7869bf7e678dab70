"""Token counts of chunk versions under a counter other than the stored estimate,
computed once per version and counter and kept (`token_counts`)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, insert, select

from ledger.core.errors import RefusedError
from ledger.store.schema import token_counts, versions
from ledger.tokens import text_counter


def count_tokens(conn: Connection, vids: Sequence[int], counter: str) -> dict[int, int]:
    """Token counts of versions under a counter id, computed once and cached."""
    cached = {
        r.vid: r.tokens
        for r in conn.execute(
            select(token_counts.c.vid, token_counts.c.tokens).where(
                token_counts.c.counter == counter
            )
        )
    }
    missing = [v for v in vids if v not in cached]
    if missing:
        count = text_counter(counter.split("@", 1)[0])
        new_rows = []
        for start in range(0, len(missing), 5000):
            part = missing[start : start + 5000]
            for r in conn.execute(
                select(
                    versions.c.vid,
                    versions.c.content,
                    versions.c.chunk_id,
                    versions.c.source_version,
                ).where(versions.c.vid.in_(part))
            ):
                if r.content is None:  # erased before this counter's count was cached
                    raise RefusedError(
                        f"chunk {r.chunk_id}@{r.source_version}: its body was erased and its "
                        f"{counter} count was not cached; build with counter estimated_tokens",
                        param="counter",
                    )
                n = count(r.content)
                cached[r.vid] = n
                new_rows.append({"vid": r.vid, "counter": counter, "tokens": n})
        if new_rows and conn.get_execution_options().get("ledger_write"):
            conn.execute(insert(token_counts), new_rows)
    return {v: cached[v] for v in vids}
