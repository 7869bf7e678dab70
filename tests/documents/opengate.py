"""Act between two steps of a real run: a Linux fanotify permission gate.

`OpenGate(paths, action)` marks files for FAN_OPEN_PERM: any process opening one
of them is held by the kernel until this gate answers, and the gate runs
`action` (once, on the first open) before it lets the open go on. So a test can
change the file system at the exact moment the code under test opens a file,
with nothing in that code replaced or mocked. fanotify permission events need
CAP_SYS_ADMIN (the test machine runs the suite as root); without it the gate
raises, naming what is missing.
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import threading
from collections.abc import Callable, Sequence
from types import TracebackType

_FAN_CLASS_CONTENT = 0x04
_FAN_CLOEXEC = 0x01
_FAN_OPEN_PERM = 0x00010000
_FAN_MARK_ADD = 0x01
_FAN_ALLOW = 0x01
_AT_FDCWD = -100
_EVENT = struct.Struct("IBBHQii")  # fanotify_event_metadata
_RESPONSE = struct.Struct("iI")  # fanotify_response


class OpenGate:
    """Hold the first open of any of `paths`, run `action`, then allow every open."""

    def __init__(self, paths: Sequence[os.PathLike[str] | str], action: Callable[[], None]):
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
        self._libc.fanotify_mark.argtypes = [
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint64,
            ctypes.c_int,
            ctypes.c_char_p,
        ]
        self._paths = [os.fsencode(p) for p in paths]
        self._action = action
        self._fd = -1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.opens = 0
        self.error: BaseException | None = None

    def __enter__(self) -> OpenGate:
        fd = self._libc.fanotify_init(_FAN_CLASS_CONTENT | _FAN_CLOEXEC, os.O_RDONLY)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"fanotify_init needs CAP_SYS_ADMIN: {os.strerror(err)}")
        self._fd = fd
        for path in self._paths:
            if self._libc.fanotify_mark(fd, _FAN_MARK_ADD, _FAN_OPEN_PERM, _AT_FDCWD, path) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"fanotify_mark {path!r}: {os.strerror(err)}")
        self._thread.start()
        return self

    def _serve(self) -> None:
        done = False
        while not self._stop.is_set():
            ready, _, _ = select.select([self._fd], [], [], 0.05)
            if not ready:
                continue
            buf = os.read(self._fd, 4096)
            at = 0
            while at + _EVENT.size <= len(buf):
                length, _ver, _res, _mlen, _mask, efd, _pid = _EVENT.unpack_from(buf, at)
                at += length
                try:
                    if not done:
                        done = True
                        self._action()
                except BaseException as exc:  # reported by __exit__, the open still allowed
                    self.error = exc
                finally:
                    self.opens += 1
                    os.write(self._fd, _RESPONSE.pack(efd, _FAN_ALLOW))
                    os.close(efd)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        os.close(self._fd)
        if self.error is not None and exc is None:
            raise self.error
