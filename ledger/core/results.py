"""What the `Ledger` methods return: typed, immutable values over the JSON the
matching command prints with `--json`.

Each result keeps that JSON and exposes its parts as typed attributes;
`to_json()` returns a fresh copy of it, equal to the command's `--json` output
for the same call (a test checks every one), so a program and a shell script
read the same thing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class JSONResult:
    """A result whose JSON is kept whole; subclasses name its parts."""

    data: Mapping[str, Any] = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        """The command's `--json` output for the same call (a fresh copy)."""
        return copy.deepcopy(dict(self.data))


@dataclass(frozen=True)
class Admission:
    """One admitted chunk version of a pack, in output order."""

    id: str
    source_version: str
    section: str
    tokens: int
    required: bool
    record_digest: str
    content_digest: str


@dataclass(frozen=True)
class Withheld:
    """One evicted candidate of a pack: its reason code and SPEC detail object."""

    id: str
    source_version: str
    reason: str
    detail: Mapping[str, Any]
    tokens: int
    record_digest: str
    content_digest: str


def _fields(cls: type, item: Mapping[str, Any]) -> dict[str, Any]:
    return {f.name: item[f.name] for f in fields(cls)}


@dataclass(frozen=True)
class Pack(JSONResult):
    """A recorded pack (`build --json`, `show PACK --json`)."""

    @property
    def number(self) -> int:
        return int(self.data["pack"])

    @property
    def entry(self) -> int:
        return int(self.data["entry"])

    @property
    def digest(self) -> str:
        return str(self.data["pack_digest"])

    @property
    def input_digest(self) -> str:
        return str(self.data["input_digest"])

    @property
    def as_of(self) -> str:
        return str(self.data["as_of"])

    @property
    def subject(self) -> str:
        return str(self.data["subject"])

    @property
    def budget(self) -> int:
        return int(self.data["budget"])

    @property
    def used(self) -> int:
        return int(self.data["used"])

    @property
    def remaining(self) -> int:
        return int(self.data["remaining"])

    @property
    def admitted(self) -> tuple[Admission, ...]:
        return tuple(Admission(**_fields(Admission, a)) for a in self.data["admitted"])

    @property
    def evicted(self) -> tuple[Withheld, ...]:
        return tuple(Withheld(**_fields(Withheld, e)) for e in self.data["evicted"])


@dataclass(frozen=True)
class PackList(JSONResult):
    """Every recorded pack, oldest first (`packs --json`)."""

    @property
    def packs(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.data["packs"])


@dataclass(frozen=True)
class ChunkList(JSONResult):
    """Stored chunk versions with their digests, never their bodies (`chunks --json`)."""

    @property
    def chunks(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.data["chunks"])


@dataclass(frozen=True)
class GrantChange(JSONResult):
    """A grant or revoke: its entry (None when nothing changed) and what changed."""

    @property
    def entry(self) -> int | None:
        entry = self.data["entry"]
        return None if entry is None else int(entry)

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(self.data["changed"])


@dataclass(frozen=True)
class SubjectGrants(JSONResult):
    """A subject's permissions now, and every change (`subject show --json`)."""

    @property
    def subject(self) -> str:
        return str(self.data["subject"])

    @property
    def permissions(self) -> tuple[str, ...]:
        return tuple(self.data["permissions"])


@dataclass(frozen=True)
class PolicyChange(JSONResult):
    """A policy change: its entry (None when nothing changed) and the policy after it."""

    @property
    def entry(self) -> int | None:
        entry = self.data["entry"]
        return None if entry is None else int(entry)

    @property
    def allowed_trust(self) -> tuple[str, ...]:
        return tuple(self.data["policy"]["allowed_trust"])

    @property
    def budget(self) -> int | None:
        budget = self.data["policy"]["budget"]
        return None if budget is None else int(budget)


@dataclass(frozen=True)
class PolicyState(JSONResult):
    """The policy in force (None if never set) and every change (`policy show --json`)."""

    @property
    def policy(self) -> Mapping[str, Any] | None:
        policy = self.data["policy"]
        return None if policy is None else dict(policy)


@dataclass(frozen=True)
class WhyEvicted(JSONResult):
    """Every pack that considered a chunk, newest first (`why-evicted --json`)."""

    @property
    def ref(self) -> str:
        return str(self.data["ref"])

    @property
    def versions(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.data["versions"])


@dataclass(frozen=True)
class Diff(JSONResult):
    """What changed between two packs, each change with its cause (`diff --json`)."""

    @property
    def changes(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.data["changes"])


@dataclass(frozen=True)
class BatchBuild(JSONResult):
    """The packs of a `build --batch` and the lines that failed (`build --batch --json`)."""

    @property
    def packs(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.data["packs"])

    @property
    def failed(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.data["failed"])


@dataclass(frozen=True)
class Export(JSONResult):
    """A pack's JSON export with the provenance of every admitted chunk (`export --format json`)."""


@dataclass(frozen=True)
class HeadResult(JSONResult):
    """The newest entry as a checkpoint `SEQ:HASH` (`head --json`)."""

    @property
    def seq(self) -> int:
        return int(self.data["seq"])

    @property
    def hash(self) -> str:
        return str(self.data["hash"])

    @property
    def checkpoint(self) -> str:
        return str(self.data["checkpoint"])


@dataclass(frozen=True)
class InitResult(JSONResult):
    """What `init` did: the schema revision before (None: new) and after, and any backup."""

    @property
    def database(self) -> str | None:
        """The SQLite file (None for a server database)."""
        path = self.data["database"]
        return None if path is None else str(path)

    @property
    def before(self) -> str | None:
        before = self.data["before"]
        return None if before is None else str(before)

    @property
    def after(self) -> str:
        return str(self.data["after"])

    @property
    def backup(self) -> str | None:
        backup = self.data["backup"]
        return None if backup is None else str(backup)
