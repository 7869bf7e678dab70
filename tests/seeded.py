"""The seeded ledger: the one set-up most tests start from, written once.

`seed_ledger(db)` records, on a ledger that exists (or `init=True` makes it):

    1  ingest fixtures/support-chunks.json (the pack fixture's eleven chunks)
    2  grant `default` the fixture request's permissions
       (policy-read, state-read, user-input, public-read)
    3  policy: allow the request's four trust labels, budget 170
    4  pack 1: build as of 2026-07-21                       (unless build=False)

(`seed_open_ledger(lg)` records entries 1-3 through the Python API.) Variants
take parameters (another budget, no pack, extra files ingested right
after the fixture, extra permissions granted). The fixtures over it are in
tests/conftest.py: `seeded` (entries 1-3 on each backend, a copy per test),
`seeded_file` (SQLite, the secret chunk and pack 2 on top, a copy per test) and
`seeded_sqlite_base` (SQLite, entries 1-4, shared by a module).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURE, chunk, run_ledger, write_jsonl

SEED: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
REQUEST: dict[str, Any] = SEED["request"]
# The fixture's request as ledger commands (grants and policy).
SEED_GRANTS: tuple[str, ...] = tuple(REQUEST["granted_permissions"])
SEED_TRUST: tuple[str, ...] = tuple(REQUEST["allowed_trust"])
SEED_BUDGET = 170
AS_OF = "2026-07-21"

# A body no message may ever show: in a chunk of `seeded_file`'s ledger.
BODY_MARKER = "Confidential-body-7f3a9c: the secret refund code is 4417"
SECRET_CHUNK = chunk(
    id="secret-note",
    section="evidence",
    source_uri="doc://secret",
    dedupe_key="secret-note",
    required_permission="public-read",
    trust="approved-source",
    effective_from="2026-01-01",
    estimated_tokens=5,
    priority=10,
    content=BODY_MARKER,
)


def trust_flags(labels: Sequence[str]) -> list[str]:
    """`--allow-trust LABEL` for each label, in order."""
    flags: list[str] = []
    for label in labels:
        flags += ["--allow-trust", label]
    return flags


def seed_ledger(
    db: str | Path,
    *,
    budget: int = SEED_BUDGET,
    build: bool = True,
    init: bool = False,
    also_ingest: Sequence[Sequence[str]] = (),
    extra_grants: Sequence[str] = (),
) -> None:
    """The seeded ledger's entries (module docstring) on `db`. `init` runs `ledger
    init` first; each of `also_ingest` is the arguments of one more `ledger ingest`
    recorded right after the fixture's (so it takes entry 2 and the rest move up);
    `extra_grants` are granted to `default` with the request's permissions."""
    if init:
        run_ledger("init", db=db, check=True)
    run_ledger("ingest", str(FIXTURE), db=db, check=True)
    for args in also_ingest:
        run_ledger("ingest", *args, db=db, check=True)
    grants = (*SEED_GRANTS, *extra_grants)
    run_ledger("subject", "grant", "default", *grants, db=db, check=True)
    flags = trust_flags(SEED_TRUST)
    run_ledger("policy", "set", *flags, "--budget", str(budget), db=db, check=True)
    if build:
        run_ledger("build", "--as-of", AS_OF, db=db, check=True)


def seed_open_ledger(lg: Any, *, budget: int = SEED_BUDGET) -> None:
    """Entries 1-3 of the seeded ledger through the Python API, on an open
    `ledger.Ledger` (`ledger.open(...)`): ingest, grant, policy; no pack."""
    lg.ingest_paths([FIXTURE])
    lg.grant("default", *SEED_GRANTS)
    lg.set_policy(allow_trust=list(SEED_TRUST), budget=budget)


def make_seeded_file(folder: Path, *, secret: bool = False) -> Path:
    """A seeded SQLite ledger at `folder`/ledger.db, made by `ledger init`: entries
    1-4; with `secret`, then 5 ingest of `SECRET_CHUNK` and 6 pack 2 (as of
    2026-07-21, which considers it)."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "ledger.db"
    seed_ledger(str(db), init=True)
    if secret:
        secret_file = write_jsonl(folder / "secret.jsonl", [SECRET_CHUNK])
        run_ledger("ingest", str(secret_file), db=db, check=True)
        run_ledger("build", "--as-of", AS_OF, db=db, check=True)
    return db


def copy_file(src: Path, folder: Path) -> Path:
    """A byte copy of a SQLite ledger file as `folder`/ledger.db."""
    dst = folder / "ledger.db"
    shutil.copyfile(src, dst)
    return dst
