"""One exception family; the command line maps each class to an exit code.

Every message is one line: what is wrong, where (file, line, field), and how to fix
it. A bug is any other exception and keeps its traceback.
"""

from __future__ import annotations

# Exit codes (docs/reference/exit-codes.md).
EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_INTEGRITY = 4


class LedgerError(Exception):
    """A user-facing error: one clear line, no traceback.

    The message speaks the Python API's words: a message about an argument starts
    with its parameter name (`as_of: ...`) and passes `param="as_of"`, so the
    command line can name its own option instead (`--as-of: ...`).
    """

    exit_code = EXIT_INVALID

    def __init__(self, message: str = "", *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class InputError(LedgerError):
    """Invalid input: a file, a record, a value on the command line."""


class RefusedError(LedgerError):
    """A valid request that the ledger refuses (immutability, fail-closed gates)."""


class NotFoundError(LedgerError):
    """A pack, chunk or entry that does not exist."""

    exit_code = EXIT_NOT_FOUND


class IntegrityError(LedgerError):
    """A digest or the hash chain does not match what is stored."""

    exit_code = EXIT_INTEGRITY


class SchemaError(LedgerError):
    """The database schema is missing or behind the code."""


class ContextError(LedgerError):
    """Another LedgerError's message with more context, keeping its exit code."""

    def __init__(self, message: str, exit_code: int, *, param: str | None = None) -> None:
        super().__init__(message, param=param)
        self.exit_code = exit_code
