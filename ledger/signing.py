"""Ed25519 for checkpoints: key files, signing, checking signatures.

The note formats are pure text (`ledger.core.checkpoint`); this module adds the
cryptography (the `cryptography` package, kept out of the pure core) and the key
file: written owner-only (0600), never over an existing file, its secret never
printed or put in a message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ledger.core.checkpoint import (
    Checkpoint,
    Note,
    NoteSignature,
    SignerKey,
    VerifierKey,
    format_skey,
    format_vkey,
    key_id,
    parse_checkpoint,
    parse_note,
    parse_skey,
    parse_vkey,
)
from ledger.core.errors import InputError, IntegrityError, RefusedError

# _write_private: the project's one owner-only (0600), never-overwrite file writer.
from ledger.safeio import _write_private, read_input

_In = TypeVar("_In")
_Out = TypeVar("_Out")


def _public_bytes(private: Ed25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


@dataclass(frozen=True, slots=True)
class Signer:
    """A private key ready to sign notes, and its verifier key."""

    name: str
    private: Ed25519PrivateKey

    @property
    def public_key(self) -> bytes:
        return _public_bytes(self.private)

    @property
    def vkey(self) -> str:
        """The verifier key text to hand to auditors."""
        return format_vkey(self.name, self.public_key)

    def sign(self, note: Note) -> Note:
        """The note with this key's signature added (an older one of this key replaced)."""
        kid = key_id(self.name, self.public_key)
        sig = NoteSignature(self.name, kid, self.private.sign(note.text.encode("utf-8")))
        others = tuple(s for s in note.signatures if (s.name, s.key_id) != (self.name, kid))
        return Note(note.text, (*others, sig))


def signer_from_skey(text: str) -> Signer:
    """A signer from the private key text; refuses a key whose id does not match."""
    parsed: SignerKey = parse_skey(text)
    private = Ed25519PrivateKey.from_private_bytes(parsed.seed)
    if key_id(parsed.name, _public_bytes(private)) != parsed.key_id:
        raise InputError("the private key's id does not match its key; the file is damaged")
    return Signer(parsed.name, private)


def generate_key(name: str, path: Path) -> Signer:
    """Make a new Ed25519 key named `name` and write it to `path` (0600, new file only).

    Returns the signer; print its `vkey`, never the file's contents.
    """
    private = Ed25519PrivateKey.generate()
    signer = Signer(name, private)
    seed = private.private_bytes_raw()
    text = format_skey(name, seed, signer.public_key) + "\n"
    try:
        _write_private(path, [text.encode("utf-8")])
    except FileExistsError:
        raise RefusedError(
            f"{path}: already exists; a key file is never overwritten, choose a new name"
        ) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot write the key file ({exc.strerror})") from None
    return signer


def _parse_at(where: object, parse: Callable[[_In], _Out], value: _In) -> _Out:
    """`parse(value)`, its one-line InputError prefixed by `where` (a file, an option)."""
    try:
        return parse(value)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def load_signer(path: Path) -> Signer:
    """Read a private key file written by `ledger keygen` (or Go's note.GenerateKey)."""
    data = read_input(path, what="key file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a ledger private key file") from None
    return _parse_at(path, signer_from_skey, text)


def signature_holds(note: Note, vkey: VerifierKey) -> bool:
    """True when a signature line of `vkey` (same name and key id) verifies over the
    note's text. As Go's note.Open, the first line of that key decides."""
    public = Ed25519PublicKey.from_public_bytes(vkey.public_key)
    for sig in note.signatures:
        if (sig.name, sig.key_id) == (vkey.name, vkey.key_id):
            try:
                public.verify(sig.signature, note.text.encode("utf-8"))
            except InvalidSignature:
                return False
            return True
    return False


def read_vkey(value: str) -> VerifierKey:
    """A verifier key given as its text or as a file holding it."""
    path = Path(value)
    text = value
    if "\n" not in value and path.is_file():
        try:
            text = read_input(path, what="verifier key file").decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{value}: not a verifier key file") from None
    try:
        return parse_vkey(text)
    except InputError as exc:
        raise InputError(f"vkey: {value}: {exc}", param="vkey") from None


def read_note(path: Path) -> Note:
    """A note file (a checkpoint); InputError naming the file when malformed."""
    return _parse_at(path, parse_note, read_input(path, what="checkpoint file"))


def read_checkpoint(path: Path, vkey: VerifierKey | None = None) -> Checkpoint:
    """A checkpoint file; with `vkey`, its signature must hold (IntegrityError if not)."""
    note = read_note(path)
    cp = _parse_at(path, parse_checkpoint, note.text)
    if vkey is not None and not signature_holds(note, vkey):
        raise IntegrityError(
            f"{path}: no valid signature by {vkey.name} ({vkey.key_id.hex()}): "
            "the checkpoint was changed, or signed by another key"
        )
    return cp
