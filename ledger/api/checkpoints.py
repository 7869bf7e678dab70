"""A tree checkpoint given to `Ledger.verify`: a `Checkpoint`, or the path of a
checkpoint file (checked against a verifier key when one is given)."""

from __future__ import annotations

import os
from pathlib import Path

from ledger.core.checkpoint import Checkpoint, VerifierKey
from ledger.core.errors import InputError
from ledger.signing import read_checkpoint


def tree_checkpoint(
    value: str | os.PathLike[str] | Checkpoint | None, key: VerifierKey | None
) -> Checkpoint | None:
    """A tree checkpoint given as a `Checkpoint` or as a checkpoint file's path."""
    if value is None or isinstance(value, Checkpoint):
        return value
    if not os.path.isfile(value):
        raise InputError(
            f"checkpoint {os.fspath(value)!r}: neither SEQ:HASH as `head` gives it "
            "nor a checkpoint file as `checkpoint` writes it",
            param="checkpoint",
        )
    return read_checkpoint(Path(value), key)
