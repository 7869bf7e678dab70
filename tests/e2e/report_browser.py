"""Headless Chromium driven over the DevTools protocol with the standard library only.

Why `--remote-debugging-pipe`: Chromium then reads protocol commands from file
descriptor 3 and writes replies and events to descriptor 4, each message one JSON
text followed by a NUL byte. That needs no port, no HTTP handshake and no
websocket framing (the `--remote-debugging-port` route needs all three), and the
browser cannot be reached by anything else on the machine. The pipes are given
to the child as descriptors 3 and 4 with `os.dup2` between fork and exec.

The browser starts with no network: `--proxy-server=127.0.0.1:9` (the discard
port, nothing listens) and `--host-resolver-rules="MAP * ~NOTFOUND"` make any
request fail, and background networking, component updates, sync and QUIC are
off. Every request the page makes is still *seen*: `Network.requestWillBeSent`
reports it before it fails, so a test can assert that the only request was the
file itself. Console errors, uncaught exceptions and Content-Security-Policy
violations arrive as `Runtime.consoleAPICalled`, `Runtime.exceptionThrown` and
`Log.entryAdded` events.

Also a tiny command line, for the README screenshot:

    .venv/bin/python -m tests.e2e.report_browser shot REPORT.html OUT.png [--width 1200]
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--no-first-run",
    "--no-default-browser-check",
    "--no-pings",
    "--mute-audio",
    "--hide-scrollbars",
    "--disable-dev-shm-usage",
    "--proxy-server=127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-pipe",
]


def find_chromium() -> str:
    """The Chromium binary (Debian's `chromium` package); a clear error if missing.

    Debian's /usr/bin/chromium is a shell launcher that adds flags of its own
    (extensions, API keys); the binary behind it is started directly, so that
    the flags here are the whole command line."""
    if os.access("/usr/lib/chromium/chromium", os.X_OK):
        return "/usr/lib/chromium/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError(
        "Chromium is not installed: `apt-get install -y chromium` (Debian's package; `make test` "
        "installs it)"
    )


class ProtocolError(RuntimeError):
    pass


@dataclass
class PageLoad:
    """What happened while one page loaded."""

    url: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, CSP violations
    wall_seconds: float = 0.0


class Chromium:
    """One headless Chromium process; use as a context manager."""

    def __init__(self, binary: str | None = None, timeout: float = 60.0) -> None:
        self.binary = binary or find_chromium()
        self.timeout = timeout
        self._next_id = 0
        self._buffer = b""
        self.events: list[dict[str, Any]] = []
        self.proc: subprocess.Popen[bytes] | None = None

    # -- process ---------------------------------------------------------

    def __enter__(self) -> Chromium:
        self.profile = tempfile.mkdtemp(prefix="ledger-chromium-")
        cmd_r, cmd_w = os.pipe()  # we write commands, Chromium reads fd 3
        evt_r, evt_w = os.pipe()  # Chromium writes fd 4, we read
        # Move the child's ends above 9 so that dup2 onto 3 and 4 cannot clobber them.
        child_r = fcntl.fcntl(cmd_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_w = fcntl.fcntl(evt_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(cmd_r)
        os.close(evt_w)

        def wire() -> None:  # runs in the child between fork and exec
            os.dup2(child_r, 3)  # dup2 clears close-on-exec on the copy
            os.dup2(child_w, 4)

        self.stderr_path = Path(self.profile) / "stderr.log"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [self.binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                # Not close_fds: it would run after `wire` and close 3 and 4. Python's
                # own descriptors are close-on-exec anyway; only 0-4 reach Chromium.
                preexec_fn=wire,
                close_fds=False,
            )
        os.close(child_r)
        os.close(child_w)
        self._out = cmd_w
        self._in = evt_r
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                self.call("Browser.close", timeout=10)
        except (ProtocolError, OSError, TimeoutError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)  # our own child, by its pid
            self.proc.wait(timeout=10)
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass
        self.proc = None
        shutil.rmtree(self.profile, ignore_errors=True)

    # -- protocol --------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode("utf-8") + b"\0"
        while data:
            n = os.write(self._out, data)
            data = data[n:]

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from Chromium in time")
            ready, _, _ = select.select([self._in], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                log = self.stderr_path.read_text(errors="replace")[-2000:]
                raise ProtocolError(
                    f"Chromium closed the pipe (exit {self.proc and self.proc.poll()}): {log}"
                )
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send one command and wait for its reply; events meanwhile are kept."""
        self._next_id += 1
        mid = self._next_id
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._send(msg)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == mid:
                if "error" in reply:
                    raise ProtocolError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self.events.append(reply)

    def wait_event(
        self, method: str, session: str | None, timeout: float | None = None
    ) -> dict[str, Any]:
        """The first (kept or new) event `method` of `session`, removed from the kept list."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, ev in enumerate(self.events):
                if ev["method"] == method and ev.get("sessionId") == session:
                    return self.events.pop(i)
            msg = self._read_message(deadline)
            if "method" in msg:
                self.events.append(msg)

    # -- pages -----------------------------------------------------------

    def new_page(
        self,
        width: int = 1200,
        height: int = 900,
        *,
        dark: bool = False,
        print_media: bool = False,
        javascript: bool = True,
    ) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=session)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 700},
            session=session,
        )
        features = [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]
        self.call(
            "Emulation.setEmulatedMedia",
            {"media": "print" if print_media else "", "features": features},
            session=session,
        )
        if not javascript:
            self.call("Emulation.setScriptExecutionDisabled", {"value": True}, session=session)
        return Page(self, target, session)


class Page:
    """One tab attached with a flat session."""

    def __init__(self, browser: Chromium, target: str, session: str) -> None:
        self.browser = browser
        self.target = target
        self.session = session

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.call(method, params, session=self.session)

    def load(self, path_or_url: str | Path, settle: float = 0.3) -> PageLoad:
        """Navigate, wait for the load event, then `settle` seconds more for late
        events; return every request, console error, exception and CSP report."""
        url = (
            path_or_url
            if isinstance(path_or_url, str) and ":" in path_or_url
            else Path(path_or_url).resolve().as_uri()
        )
        b = self.browser
        b.events = [e for e in b.events if e.get("sessionId") != self.session]
        started = time.monotonic()
        nav = self.call("Page.navigate", {"url": url})
        if nav.get("errorText"):
            raise ProtocolError(f"navigation to {url} failed: {nav['errorText']}")
        b.wait_event("Page.loadEventFired", self.session)
        wall = time.monotonic() - started
        end = time.monotonic() + settle
        while time.monotonic() < end:
            try:
                msg = b._read_message(end)
            except TimeoutError:
                break
            if "method" in msg:
                b.events.append(msg)
        result = PageLoad(url=url, wall_seconds=wall)
        mine = [e for e in b.events if e.get("sessionId") == self.session]
        b.events = [e for e in b.events if e.get("sessionId") != self.session]
        for ev in mine:
            m, p = ev["method"], ev.get("params", {})
            if m == "Network.requestWillBeSent":
                result.requests.append(p["request"]["url"])
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                result.errors.append(
                    f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}"
                )
            elif m == "Runtime.consoleAPICalled" and p.get("type") in (
                "error",
                "assert",
                "warning",
            ):
                args = " ".join(
                    str(a.get("value", a.get("description", ""))) for a in p.get("args", [])
                )
                result.errors.append(f"console.{p['type']}: {args}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                entry = p["entry"]
                result.errors.append(
                    f"log {entry.get('source')}/{entry['level']}: {entry.get('text')}"
                )
        return result

    def evaluate(self, expression: str, await_promise: bool = False) -> Any:
        """The value of a JavaScript expression (runs even with page scripts off)."""
        reply = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": await_promise},
        )
        if "exceptionDetails" in reply:
            raise ProtocolError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def timing(self) -> dict[str, float]:
        """The Navigation Timing entry of the loaded document (milliseconds)."""
        entry: dict[str, float] = json.loads(
            self.evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0])")
        )
        return entry

    def shown_at(self) -> float:
        """Milliseconds from navigation start to the second animation frame after
        the call: style, layout and the first paint of the loaded page are done
        (the load event alone can fire before the page is laid out)."""
        return float(
            self.evaluate(
                "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => "
                "r(performance.now()))))",
                await_promise=True,
            )
        )

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1},
            )
        data = self.call("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(
        description="Screenshot a report in headless Chromium (no network)."
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    shot = sub.add_parser("shot")
    shot.add_argument("html")
    shot.add_argument("png")
    shot.add_argument("--width", type=int, default=1200)
    shot.add_argument("--height", type=int, default=900)
    shot.add_argument("--dark", action="store_true")
    shot.add_argument("--viewport-only", action="store_true")
    args = parser.parse_args(argv)
    with Chromium() as browser:
        page = browser.new_page(args.width, args.height, dark=args.dark)
        load = page.load(args.html)
        if load.errors or set(load.requests) != {load.url}:
            raise SystemExit(
                f"the page did not load cleanly: errors {load.errors}, requests {load.requests}"
            )
        page.screenshot(Path(args.png), full_page=not args.viewport_only)
    print(f"wrote {Path(args.png).resolve()}")


if __name__ == "__main__":
    main()
