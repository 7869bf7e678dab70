"""`phoenix serve` with every listener on loopback, for the end-to-end tests.

Phoenix takes the host of its web and OTLP/HTTP server from PHOENIX_HOST, but
binds its OTLP/gRPC receiver on every interface (`[::]`, Phoenix 20.26) with no
setting to change it. The tests send over HTTP only; this moves that gRPC
listener to 127.0.0.1 before Phoenix starts, then runs Phoenix's own entry point.
"""

from __future__ import annotations

import sys
from typing import Any

from grpc.aio import _server

_add_insecure_port = _server.Server.add_insecure_port


def _on_loopback(self: Any, address: str) -> int:
    port = address.rsplit(":", 1)[1]
    return _add_insecure_port(self, f"127.0.0.1:{port}")


_server.Server.add_insecure_port = _on_loopback  # type: ignore[method-assign]

if __name__ == "__main__":
    from phoenix.server.main import main

    sys.argv = ["phoenix", "serve"]
    main()
