"""A real Phoenix server for the end-to-end tests, started once per run.

These tests run only where Phoenix is installed: `make test-phoenix` makes a
virtual environment of its own (.venv-phoenix, ~850 MB) with the `phoenix-test`
extra. Elsewhere, `make test` included, this folder is not collected at all.

The server listens on 127.0.0.1 only (ports the system hands out), keeps its
SQLite database in a temporary working folder, makes no request of its own to the
internet, and is stopped by its own pid when the run ends.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("phoenix") is None:
    # Not a skip: without Phoenix these tests do not exist (see `make test-phoenix`).
    collect_ignore_glob = ["test_*.py"]

START_TIMEOUT = 240.0  # seconds: migrations of a fresh database on a loaded machine
STOP_TIMEOUT = 30.0
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Phoenix:
    """A running server: its base URL (web, REST and OTLP/HTTP) and process."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def traces_endpoint(self) -> str:
        return f"{self.url}/v1/traces"

    def get(self, path: str) -> Any:
        """GET a JSON document of Phoenix's REST API."""
        with urllib.request.urlopen(f"{self.url}{path}", timeout=30) as response:
            return json.load(response)

    def spans(self, project: str, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        """The project's spans once `count` have arrived (Phoenix writes in batches)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                data = self.get(f"/v1/projects/{project}/spans?limit=1000")["data"]
            except urllib.error.HTTPError as err:  # 404 until the first span makes it
                if err.code != 404:
                    raise
                data = []
            if len(data) >= count or time.monotonic() > deadline:
                return list(data)
            time.sleep(0.25)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> list[str]:
    """The local addresses listening on `port` (from /proc/net/tcp and tcp6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


# 127.0.0.1; ::1; 127.0.0.1 on an IPv6 socket (::ffff:127.0.0.1), as /proc writes them.
LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Phoenix exited with {process.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"Phoenix was not up after {START_TIMEOUT:.0f} s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server by its own pid: SIGTERM, then SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT)


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    workdir = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),  # its SQLite database lives here
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_ALLOWED_SANDBOX_PROVIDERS": "NONE",
        "PHOENIX_AGENTS_DISABLE_BASH": "true",
        "PHOENIX_LOG_MIGRATIONS": "false",
    }
    env.pop("PHOENIX_SQL_DATABASE_URL", None)
    env.pop("PHOENIX_COLLECTOR_ENDPOINT", None)
    log = workdir / "server.log"
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, str(HERE / "serve_on_loopback.py")],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_up(url, process, log)
        for p in (port, grpc_port):
            addresses = _listening(p)
            assert addresses and set(addresses) <= LOOPBACK, (p, addresses)
        yield Phoenix(url, process, log)
    finally:
        _stop(process)
