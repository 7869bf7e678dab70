"""Shared helpers for the pure-core tests: candidate factories, the fixture, the CLI."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import pytest

from ledger.core.select import Candidate, Request

FIXTURE_BYTES = files("ledger_fixtures").joinpath("support-chunks.json").read_bytes()


def _candidate(**overrides: Any) -> Candidate:
    values: dict[str, Any] = {
        "id": "chunk-a",
        "source_version": "v1",
        "section": "evidence",
        "effective_from": "2026-01-01",
        "expires_on": None,
        "required_permission": "read",
        "trust": "approved-source",
        "dedupe_key": None,
        "tokens": 10,
        "priority": 50,
        "required": False,
        "record_digest": None,
        "content_digest": None,
        "ingest_rank": 0,
    }
    values.update(overrides)
    if values["dedupe_key"] is None:
        values["dedupe_key"] = values["id"]
    if values["record_digest"] is None:
        values["record_digest"] = f"r-{values['id']}-{values['source_version']}"
    if values["content_digest"] is None:
        values["content_digest"] = f"c-{values['id']}-{values['source_version']}"
    return Candidate(**values)


@pytest.fixture
def cand() -> Callable[..., Candidate]:
    """A candidate factory: passes every gate of `request()` unless told otherwise."""
    return _candidate


@pytest.fixture
def request_for() -> Callable[..., Request]:
    """A request factory: as of 2026-07-01, `read` granted, approved-source allowed."""

    def make(**overrides: Any) -> Request:
        values: dict[str, Any] = {
            "as_of": "2026-07-01",
            "granted": frozenset({"read"}),
            "allowed_trust": frozenset({"approved-source"}),
            "budget": 1000,
        }
        values.update(overrides)
        return Request(**values)

    return make


@pytest.fixture
def fixture_dict() -> dict[str, Any]:
    """A fresh, mutable copy of the project's seed-001 fixture."""
    return copy.deepcopy(json.loads(FIXTURE_BYTES))


@pytest.fixture
def fixture_bytes() -> bytes:
    """The project's seed-001 fixture, as shipped."""
    return FIXTURE_BYTES


@pytest.fixture
def run_cli(tmp_path: Any) -> Callable[..., subprocess.CompletedProcess[bytes]]:
    """Run `python [-O] -m ledger_cli ARGS` as a user would; bytes in, bytes out."""

    def run(
        *args: str,
        stdin: bytes | None = None,
        optimize: bool = False,
        cwd: Any = None,
    ) -> subprocess.CompletedProcess[bytes]:
        command = [sys.executable, *(["-O"] if optimize else []), "-m", "ledger_cli", *args]
        env = dict(os.environ)
        env.pop("PYTHONOPTIMIZE", None)
        return subprocess.run(
            command,
            input=stdin if stdin is not None else b"",
            capture_output=True,
            cwd=cwd if cwd is not None else tmp_path,
            env=env,
            timeout=60,
            check=False,
        )

    return run
