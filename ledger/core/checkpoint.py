"""Checkpoints as C2SP notes: pure text in, values out (no I/O, no cryptography).

- tlog-checkpoint (c2sp.org/tlog-checkpoint): the note text is the origin line,
  the tree size in decimal, the root hash in standard base64, each ending in a
  newline, optionally followed by extension lines.
- signed-note (c2sp.org/signed-note): the text, a blank line, then one line per
  signature `— NAME BASE64` where BASE64 is the 4-byte key id followed by the
  signature; the signature covers the text (every byte up to and including the
  newline before the blank line).
- Verifier keys `NAME+<key id hex8>+<base64(0x01 || public key)>`, and private keys
  in the form the Go implementation (golang.org/x/mod/sumdb/note) reads and writes,
  `PRIVATE+KEY+NAME+<key id hex8>+<base64(0x01 || seed)>`, so a key made here works
  with that tooling and back. Key id: the first 4 bytes of SHA-256(NAME || 0x0A ||
  0x01 || public key); 0x01 names Ed25519.

Signing and checking signatures need Ed25519 and live in `ledger.signing`; this
module only parses, formats and checks the text.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

from ledger.core.errors import InputError

ED25519 = 0x01
ORIGIN_PREFIX = "ledger/"
SIG_DASH = "\u2014 "  # an em dash and a space, as signed-note writes it
MAX_NOTE_BYTES = 1 << 20
MAX_SIGNATURES = 100
_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_HEX8 = re.compile(r"[0-9a-f]{8}")
_SIZE = re.compile(r"0|[1-9][0-9]{0,19}")
# `SEQ:HASH` as `ledger head` prints it (docs/reference/proofs.md); white space
# around it is allowed.
_SEQ_HASH = re.compile(r"\s*(\d+):([0-9a-f]{64})\s*")


def b64encode(data: bytes) -> str:
    """Standard base64 with padding, as the notes use."""
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str, what: str) -> bytes:
    """Strict standard base64; InputError naming `what` otherwise."""
    if not _B64.fullmatch(text) or len(text) % 4:
        raise InputError(f"{what} is not standard base64")
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:  # binascii.Error is a ValueError
        raise InputError(f"{what} is not standard base64") from None


def check_name(name: str) -> str:
    """A key name: non-empty, no white space, no '+' (signed-note's rule)."""
    if not name or "+" in name or any(c.isspace() for c in name) or not name.isprintable():
        raise InputError(
            f"key name {name!r} is not valid: it must be non-empty, without spaces or '+'"
        )
    return name


def key_id(name: str, public_key: bytes) -> bytes:
    """The 4-byte key id of an Ed25519 key: SHA-256(name || 0x0A || 0x01 || key)[:4]."""
    return hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([ED25519]) + public_key).digest()[:4]


@dataclass(frozen=True, slots=True)
class KeyName:
    """Who a key or a signature belongs to: the key name and the 4-byte key id."""

    name: str
    key_id: bytes


@dataclass(frozen=True, slots=True)
class VerifierKey(KeyName):
    """A parsed verifier key: who signs, the key id and the Ed25519 public key."""

    public_key: bytes

    def text(self) -> str:
        """The key as `NAME+<hex8>+<base64(0x01 || key)>`."""
        return format_vkey(self.name, self.public_key)


def _key_text(name: str, public_key: bytes, key: bytes) -> str:
    """`NAME+<hex8>+<base64(0x01 || key)>`, the key id that of `public_key` (both
    key texts end so; `key` is the public key or the private seed)."""
    check_name(name)
    kid = key_id(name, public_key).hex()
    return f"{name}+{kid}+{b64encode(bytes([ED25519]) + key)}"


def _key_parts(fields: list[str], what: str, not_ed25519: str) -> tuple[str, bytes, bytes]:
    """Check a key text's `NAME`, `<hex8>` and `<base64(0x01 || 32 bytes)>`: the
    name, the key id and the 32 bytes; InputError naming `what` otherwise."""
    name, kid_hex, key_b64 = fields
    check_name(name)
    if not _HEX8.fullmatch(kid_hex):
        raise InputError(f"{what}'s id is not 8 lower-case hex digits")
    raw = b64decode(key_b64, what)
    if len(raw) != 33 or raw[0] != ED25519:
        raise InputError(f"{what} is not an Ed25519 key{not_ed25519}")
    return name, bytes.fromhex(kid_hex), raw[1:]


def format_vkey(name: str, public_key: bytes) -> str:
    """The verifier key text of an Ed25519 public key."""
    return _key_text(name, public_key, public_key)


def parse_vkey(text: str) -> VerifierKey:
    """Parse and check a verifier key; InputError when it is malformed."""
    # The base64 key may itself hold '+': split off the first two fields only.
    parts = text.strip().split("+", 2)
    if len(parts) != 3:
        raise InputError("a verifier key has the form NAME+KEYID+KEY (three parts joined by '+')")
    name, kid, public_key = _key_parts(parts, "the verifier key", " (0x01 and 32 bytes)")
    if key_id(name, public_key) != kid:
        raise InputError("the verifier key's id does not match its name and key")
    return VerifierKey(name, kid, public_key)


def format_skey(name: str, seed: bytes, public_key: bytes) -> str:
    """The private key text: `PRIVATE+KEY+NAME+<hex8>+<base64(0x01 || seed)>`."""
    return "PRIVATE+KEY+" + _key_text(name, public_key, seed)


@dataclass(frozen=True, slots=True)
class SignerKey(KeyName):
    """A parsed private key; `seed` is secret and never appears in a message."""

    seed: bytes

    def __repr__(self) -> str:
        return f"SignerKey(name={self.name!r}, key_id={self.key_id.hex()!r})"


def parse_skey(text: str) -> SignerKey:
    """Parse a private key text. The caller checks the key id against the public key
    derived from the seed (that needs Ed25519)."""
    parts = text.strip().split("+", 4)
    if len(parts) != 5 or parts[0] != "PRIVATE" or parts[1] != "KEY":
        raise InputError("not a ledger private key file (expected PRIVATE+KEY+NAME+KEYID+KEY)")
    return SignerKey(*_key_parts(parts[2:], "the private key", ""))


# --------------------------------------------------------------------------
# Signed notes
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NoteSignature(KeyName):
    """One signature line: the signer's name, key id and the signature bytes."""

    signature: bytes

    def line(self) -> str:
        """The line `— NAME base64(keyid || signature)` with its newline."""
        return f"{SIG_DASH}{self.name} {b64encode(self.key_id + self.signature)}\n"


@dataclass(frozen=True, slots=True)
class Note:
    """A note's text (what is signed) and its signatures (maybe none)."""

    text: str
    signatures: tuple[NoteSignature, ...] = ()

    def render(self) -> str:
        """The note as a file holds it."""
        if not self.signatures:
            return self.text
        return self.text + "\n" + "".join(s.line() for s in self.signatures)


def _check_text(text: str) -> None:
    if not text.endswith("\n"):
        raise InputError("the note text must end with a newline")
    if "\n\n" in text:
        raise InputError("the note text may not contain a blank line")
    for c in text:
        if (ord(c) < 0x20 and c != "\n") or ord(c) == 0x7F:
            raise InputError("the note text holds a control character")


def parse_note(data: bytes) -> Note:
    """Split a note into its text and signature lines (signed-note's grammar).

    A note without a blank line is unsigned text. Signature lines must each be
    well formed; the text must end in a newline and hold no control characters.
    """
    if len(data) > MAX_NOTE_BYTES:
        raise InputError(f"the note is larger than {MAX_NOTE_BYTES} bytes")
    try:
        whole = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("the note is not valid UTF-8") from None
    split = whole.rfind("\n\n")
    if split < 0:
        _check_text(whole)
        return Note(whole)
    text, sig_block = whole[: split + 1], whole[split + 2 :]
    _check_text(text)
    if not sig_block.endswith("\n"):
        raise InputError("the note's last signature line has no newline")
    sigs: list[NoteSignature] = []
    for n, line in enumerate(sig_block[:-1].split("\n"), start=1):
        if not line.startswith(SIG_DASH):
            raise InputError(f"signature line {n} does not start with '— '")
        fields = line[len(SIG_DASH) :].split(" ")
        if len(fields) != 2:
            raise InputError(f"signature line {n} is not '— NAME SIGNATURE'")
        name = check_name(fields[0])
        raw = b64decode(fields[1], f"signature line {n}")
        if len(raw) < 5:
            raise InputError(f"signature line {n} is too short for a key id and a signature")
        sigs.append(NoteSignature(name, raw[:4], raw[4:]))
    if len(sigs) > MAX_SIGNATURES:
        raise InputError(f"the note has more than {MAX_SIGNATURES} signatures")
    return Note(text, tuple(sigs))


# --------------------------------------------------------------------------
# tlog-checkpoint
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint: which log (origin), how many entries, and the tree's root."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        """The checkpoint note's text (what a signature covers)."""
        lines = [self.origin, str(self.size), b64encode(self.root), *self.extensions]
        return "".join(f"{line}\n" for line in lines)

    @property
    def ledger_id(self) -> str | None:
        """The ledger id in the origin, or None when the origin is not a ledger's."""
        if self.origin.startswith(ORIGIN_PREFIX):
            return self.origin[len(ORIGIN_PREFIX) :]
        return None


def origin_of(ledger_id: str) -> str:
    """A ledger's checkpoint origin line."""
    return ORIGIN_PREFIX + ledger_id


def parse_checkpoint(text: str) -> Checkpoint:
    """Parse a checkpoint note's text (tlog-checkpoint); InputError when malformed."""
    lines = text.split("\n")
    if len(lines) < 4 or lines[-1] != "":
        raise InputError("a checkpoint has an origin, a size and a root line, each ending in \\n")
    origin, size_text, root_text, *ext = lines[:-1]
    if not origin or origin != origin.strip():
        raise InputError("the checkpoint's origin line is empty or has spaces around it")
    if not _SIZE.fullmatch(size_text):
        raise InputError("the checkpoint's second line is not a tree size in decimal")
    root = b64decode(root_text, "the checkpoint's root line")
    if len(root) != 32:
        raise InputError("the checkpoint's root is not a 32-byte hash")
    return Checkpoint(origin, int(size_text), root, tuple(ext))


# --------------------------------------------------------------------------
# Entry checkpoints: SEQ:HASH
# --------------------------------------------------------------------------


def parse_seq_hash(text: str) -> tuple[int, str] | None:
    """An entry checkpoint `SEQ:HASH` (as `ledger head` prints it) as (seq, entry
    hash), or None when `text` is not of that form (then: a checkpoint file).

    >>> parse_seq_hash("3:" + "ab" * 32)[0]
    3
    >>> parse_seq_hash("checkpoint.txt") is None
    True
    """
    m = _SEQ_HASH.fullmatch(text)
    return None if m is None else (int(m.group(1)), m.group(2))
