"""`ledger keygen`, `checkpoint`, `checkpoint verify`, `prove`, `proof verify`.

Proofs an auditor checks without trusting the database: a signed checkpoint
(C2SP tlog-checkpoint in a signed note) names the size and root of the RFC 9162
tree over the entries; an inclusion proof ties one pack to that root; a
consistency proof ties an older checkpoint to a newer one. `proof verify` and
`checkpoint verify` need no database at all.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ledger.core.errors import EXIT_INTEGRITY
from ledger_cli.common import INTEGER, echo_json, json_option, pass_ledger
from ledger_cli.main import Settings, command, group, protected_database_files

if TYPE_CHECKING:
    from ledger.api import Ledger


@command("keygen")
@click.argument("name")
@click.option(
    "-o", "--output", "output", required=True, metavar="KEYFILE", help="The new private key file."
)
def keygen_command(name: str, output: str) -> None:
    """Make an Ed25519 signing key; print its verifier key (give that to auditors).

    The private key file is written owner-only (0600) and never over an existing
    file; its contents are never printed. The verifier key is
    NAME+KEYID+KEY (C2SP signed-note).

    \b
    ledger keygen example.com/ledger -o ledger.key > ledger.vkey
    """
    from ledger import safeio
    from ledger.signing import generate_key

    # A key written as the database's -wal or -journal (absent while the ledger
    # is at rest) would be taken by SQLite for its own file and deleted.
    safeio.check_output(Path(output), protected=protected_database_files())
    signer = generate_key(name, Path(output))
    click.echo(signer.vkey)
    click.echo(f"wrote {os.path.abspath(output)} (owner-only; keep it secret)", err=True)


@group("checkpoint", invoke_without_command=True)
@click.option("--key", "key", metavar="KEYFILE", help="Sign the checkpoint with this key.")
@click.option("-o", "--output", "output", metavar="FILE", help="Write the checkpoint to FILE.")
@json_option
@click.pass_context
def checkpoint_group(
    ctx: click.Context, key: str | None, output: str | None, as_json: bool
) -> None:
    """Print the tree's checkpoint: origin, size and root (C2SP tlog-checkpoint).

    Keep it outside the database (git, a ticket, a witness); `ledger verify
    --checkpoint FILE` later proves the ledger still holds that history.

    \b
    ledger checkpoint --key ledger.key -o checkpoints/$(date +%F).txt
    ledger checkpoint verify checkpoints/2026-12-01.txt --vkey ledger.vkey
    """
    if ctx.invoked_subcommand is not None:
        if key or output or as_json:
            raise click.UsageError("--key, -o and --json go after `checkpoint verify`, not before")
        return
    settings = ctx.find_object(Settings)
    assert settings is not None
    result = settings.ledger(ctx).checkpoint(key=key)
    if output is not None:
        from ledger_cli.packs_cmd import write_private

        # Never over the signing key it read (`--key k -o k` lost the key).
        write_private(output, result.note, settings.ledger(ctx), inputs=[key] if key else [])
        click.echo(f"wrote {os.path.abspath(output)}", err=True)
    if as_json:
        echo_json(result.to_json())
    elif output is None:
        click.echo(result.note, nl=False)


@checkpoint_group.command("verify")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--vkey", required=True, metavar="VKEY", help="Verifier key (text or a file).")
@json_option
def checkpoint_verify_command(file: Path, vkey: str, as_json: bool) -> None:
    """Check a checkpoint's signature: exit 0 when it holds, 4 when not (no database).

    \b
    ledger checkpoint verify cp.txt --vkey "$(cat ledger.vkey)"
    """
    from ledger.core.checkpoint import parse_checkpoint
    from ledger.core.errors import InputError
    from ledger.signing import read_note, read_vkey, signature_holds

    key = read_vkey(vkey)
    note = read_note(file)
    try:
        cp = parse_checkpoint(note.text)
    except InputError as exc:
        raise InputError(f"{file}: {exc}") from None
    ok = signature_holds(note, key)
    if as_json:
        echo_json(
            {
                "ok": ok,
                "origin": cp.origin,
                "size": cp.size,
                "root": cp.root.hex(),
                "signer": key.name,
                "key_id": key.key_id.hex(),
            }
        )
    elif ok:
        click.echo(f"ok: {cp.origin} size {cp.size} signed by {key.name} ({key.key_id.hex()})")
    else:
        click.echo(
            f"FAILED: no valid signature by {key.name} ({key.key_id.hex()}) on {file}: "
            "the checkpoint was changed, or signed by another key"
        )
    if not ok:
        sys.exit(EXIT_INTEGRITY)


def _count(value: str, what: str) -> int:
    from ledger.core.errors import InputError
    from ledger.core.numbers import ascii_int

    n = ascii_int(value)  # `isdigit()` is true for '²', which int() refuses
    if n is None:
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise InputError(f"{what} {shown!r}: give a number of entries (0, 1, 2, ...)")
    return n


@command("prove")
@click.argument("args", nargs=-1, metavar="PACK | --consistency OLD [NEW]")
@click.option(
    "--size", type=INTEGER, metavar="N", help="Prove in the tree of N entries (default: now)."
)
@click.option(
    "--consistency", is_flag=True, help="Prove the tree of NEW entries extends the tree of OLD."
)
@json_option
@pass_ledger
def prove_command(
    lg: Ledger, args: tuple[str, ...], size: int | None, consistency: bool, as_json: bool
) -> None:
    """Print an inclusion proof of a pack, or a consistency proof of two tree sizes.

    An auditor checks either with `ledger proof verify FILE`, without the
    database; against a checkpoint it holds with `--checkpoint CP --vkey VKEY`.

    \b
    ledger prove 3 --json > pack-3.proof.json
    ledger prove --consistency 120 --json > since-120.proof.json
    """
    from ledger.core.proofs import ConsistencyProof, InclusionProof

    if consistency:
        if size is not None:
            raise click.UsageError("--size is for an inclusion proof; give OLD [NEW] instead")
        if not 1 <= len(args) <= 2:
            raise click.UsageError("prove --consistency takes OLD and an optional NEW")
        old = _count(args[0], "OLD")
        new = _count(args[1], "NEW") if len(args) == 2 else None
    elif len(args) != 1:
        raise click.UsageError("prove takes one PACK (or --consistency OLD [NEW])")
    proof: InclusionProof | ConsistencyProof
    if consistency:
        proof = lg.prove_consistency(old, new)
    else:
        proof = lg.prove(args[0], size)
    doc = proof.to_json()
    if as_json:
        echo_json(doc)
        return
    if consistency:
        click.echo(
            f"the tree of {doc['new_size']} entries extends the tree of {doc['old_size']}\n"
            f"old root {doc['old_root']}\nnew root {doc['new_root']}"
        )
    else:
        click.echo(
            f"pack {doc['pack']} is entry {doc['entry']}, leaf {doc['leaf_index']} of the tree of "
            f"{doc['tree_size']} entries\nroot {doc['root']}"
        )
    click.echo(f"path ({len(doc['path'])} hashes):")
    for h in doc["path"]:
        click.echo(f"  {h}")


@group("proof")
def proof_group() -> None:
    """Check proofs made by `ledger prove`: no database needed.

    \b
    ledger proof verify pack-3.proof.json --checkpoint cp.txt --vkey ledger.vkey
    """


@proof_group.command("verify")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--checkpoint",
    "checkpoints",
    multiple=True,
    metavar="CP",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also bind the proof to this checkpoint file (its tree must be the proof's).",
)
@click.option("--vkey", metavar="VKEY", help="The checkpoints must be signed by this key.")
@json_option
def proof_verify_command(
    file: Path, checkpoints: tuple[Path, ...], vkey: str | None, as_json: bool
) -> None:
    """Check an inclusion or consistency proof by RFC 9162: exit 0 valid, 4 invalid,
    1 malformed.

    An inclusion proof of a pack is checked from the pack's digests up: the pack
    payload gives the entry's payload digest, the entry fields its hash, that
    hash the leaf, and the path the root. A proof alone shows its root holds the
    pack; only a checkpoint you hold (`--checkpoint`, signed: `--vkey`) makes
    that root and tree size the ledger's.

    \b
    ledger proof verify pack-3.proof.json
    ledger proof verify pack-3.proof.json --checkpoint cp.txt --vkey ledger.vkey
    """
    from ledger.core.errors import InputError, IntegrityError
    from ledger.core.proofs import ConsistencyProof, check_against, parse_proof
    from ledger.core.strictjson import loads_strict
    from ledger.safeio import read_input
    from ledger.signing import read_checkpoint, read_vkey

    if vkey is not None and not checkpoints:
        raise click.UsageError("--vkey checks checkpoints: give --checkpoint CP too")
    key = read_vkey(vkey) if vkey is not None else None
    try:
        doc = loads_strict(read_input(file, what="proof file"))
        proof = parse_proof(doc)
    except InputError as exc:
        raise InputError(f"{file}: {exc}") from None
    held = [read_checkpoint(cp, key) for cp in checkpoints]
    why = None
    try:
        proof.verify()
        for cp in held:
            check_against(proof, cp)
    except IntegrityError as exc:
        why = str(exc)
    kind = "consistency" if isinstance(proof, ConsistencyProof) else "inclusion"
    if as_json:
        echo_json({"ok": why is None, "kind": kind, "why": why, "checkpoints": len(held)})
    elif why is None:
        if isinstance(proof, ConsistencyProof):
            what = f"the tree of {proof.new_size} entries extends the tree of {proof.old_size}"
        elif proof.bare:  # an RFC 9162 proof: it proves a leaf hash, nothing about a pack
            what = (
                f"leaf hash {proof.leaf_hash.hex()} is leaf {proof.leaf_index} of the tree of "
                f"{proof.tree_size} entries with root {proof.root.hex()} (a bare proof: no entry "
                "or pack is claimed)"
            )
        else:
            subject = (
                f"pack {proof.pack} (entry {proof.entry})" if proof.pack else f"entry {proof.entry}"
            )
            what = f"{subject} is in the tree of {proof.tree_size} entries"
        bound = f", bound to {len(held)} checkpoint(s)" if held else " (no checkpoint given)"
        click.echo(f"ok: {what}{bound}")
    else:
        click.echo(f"INVALID {kind} proof: {why}")
    if why is not None:
        sys.exit(EXIT_INTEGRITY)


def check_verify_options(checkpoint: str | None, since: str | None, vkey: str | None) -> None:
    """`verify`'s --checkpoint, --since and --vkey go together only in some ways."""
    if since is not None and checkpoint is not None:
        raise click.UsageError("--since already checks against its checkpoint; drop --checkpoint")
    if vkey is not None and since is None and (checkpoint is None or _is_seq_hash(checkpoint)):
        raise click.UsageError(
            "--vkey checks a checkpoint file: give --checkpoint FILE or --since FILE"
        )


def _is_seq_hash(text: str) -> bool:
    import re

    return re.fullmatch(r"\s*\d+:[0-9a-f]{64}\s*", text) is not None
