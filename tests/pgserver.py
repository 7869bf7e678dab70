"""A throwaway PostgreSQL server on loopback for the tests and benchmarks.

`start()` runs `initdb` into a new temporary folder and starts `postgres` on a
free 127.0.0.1 port (as the `postgres` system user when we are root, since the
server refuses to run as root); `stop()` ends it by its process id and removes
the folder. Nothing is mocked: the tests talk to a real server.

Set LEDGER_TEST_PG_URL to use a server of your own instead (a URL whose user is
a superuser: the tests CREATE DATABASE, and two tamper tests switch off
foreign-key triggers as an attacker with the server would).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass

USER = "ledger"


@dataclass
class Server:
    url: str  # postgresql+psycopg://ledger@127.0.0.1:PORT/postgres
    pid: int | None
    folder: str | None
    proc: subprocess.Popen[bytes] | None = None

    def database_url(self, name: str) -> str:
        return self.url.rsplit("/", 1)[0] + "/" + name


def find_bindir() -> str | None:
    """The newest installed PostgreSQL server binaries, or None."""
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    for d in reversed(dirs):
        if os.path.exists(os.path.join(d, "postgres")):
            return d
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start() -> Server:
    """Start a fresh cluster; raise RuntimeError with the server's words if it fails."""
    if os.environ.get("LEDGER_TEST_PG_URL"):
        return Server(os.environ["LEDGER_TEST_PG_URL"], None, None)
    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError(
            "PostgreSQL server binaries not found under /usr/lib/postgresql; "
            "`make test` installs Debian's postgresql package, or set LEDGER_TEST_PG_URL"
        )
    folder = tempfile.mkdtemp(prefix="ledger-pg-")
    data = os.path.join(folder, "data")
    as_root = os.geteuid() == 0
    run_as: dict[str, object] = {}
    if as_root:
        pw = pwd.getpwnam("postgres")
        os.chown(folder, pw.pw_uid, pw.pw_gid)
        run_as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
    env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "LANG": "C"}
    subprocess.run(
        [
            os.path.join(bindir, "initdb"),
            "-D",
            data,
            "-U",
            USER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        env=env,
        cwd=folder,
        **run_as,  # type: ignore[arg-type]
    )
    port = _free_port()
    with open(os.path.join(folder, "server.log"), "wb") as log:  # the child keeps its own fd
        proc = subprocess.Popen(
            [
                os.path.join(bindir, "postgres"),
                "-D",
                data,
                "-p",
                str(port),
                "-k",
                folder,
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=100",
                "-c",
                "shared_buffers=128MB",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=folder,
            start_new_session=True,
            **run_as,  # type: ignore[arg-type]
        )
    url = f"postgresql+psycopg://{USER}@127.0.0.1:{port}/postgres"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                pass
            ready = subprocess.run(
                [
                    os.path.join(bindir, "pg_isready"),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "-U",
                    USER,
                ],
                capture_output=True,
            )
            if ready.returncode == 0:
                return Server(url, proc.pid, folder, proc)
        except OSError:
            pass
        time.sleep(0.1)
    with open(os.path.join(folder, "server.log"), "rb") as f:
        tail = f.read()[-2000:].decode("utf-8", "replace")
    stop(Server(url, proc.pid, folder, proc))
    raise RuntimeError(f"PostgreSQL did not start: {tail}")


def stop(server: Server) -> None:
    """Stop the server by its process id (fast shutdown) and remove its folder."""
    if server.pid is not None:
        try:
            os.kill(server.pid, signal.SIGINT)  # PostgreSQL's fast shutdown
        except ProcessLookupError:
            pass
        if server.proc is not None:
            try:
                server.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(server.pid, signal.SIGKILL)
                server.proc.wait()
    if server.folder:
        shutil.rmtree(server.folder, ignore_errors=True)


def create_database(server: Server, name: str, template: str | None = None) -> str:
    """CREATE DATABASE name (a copy of `template` if given); return its SQLAlchemy URL.

    On PostgreSQL 15 and later the copy is made file by file (STRATEGY FILE_COPY):
    for the small databases of the tests that is several times faster than the
    default WAL_LOG strategy."""
    import psycopg

    base = server.url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(base, autocommit=True) as conn:
        options = f' TEMPLATE "{template}"' if template else ""
        if conn.info.server_version >= 150000:
            options += " STRATEGY FILE_COPY"
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"{options}')
    return server.database_url(name)
