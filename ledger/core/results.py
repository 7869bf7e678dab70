"""What the `Ledger` methods return: typed, immutable values over the JSON the
matching command prints with `--json`.

Each result keeps that JSON and exposes its parts as typed attributes;
`to_json()` returns a fresh copy of it, equal to the command's `--json` output
for the same call (a test checks every one), so a program and a shell script
read the same thing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Generic, TypeVar, overload


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


_T = TypeVar("_T")


class JSONPart(Generic[_T]):
    """A typed, read-only part of a result's JSON: `convert(data[key])`."""

    def __init__(self, key: str, convert: Callable[[Any], _T], doc: str | None = None) -> None:
        self._key = key
        self._convert = convert
        self.__doc__ = doc

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> JSONPart[_T]: ...

    @overload
    def __get__(self, obj: JSONResult, owner: type | None = None) -> _T: ...

    def __get__(self, obj: JSONResult | None, owner: type | None = None) -> JSONPart[_T] | _T:
        if obj is None:
            return self
        return self._convert(obj.data[self._key])


def _records(value: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(value)


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(value)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class Pack(JSONResult):
    """A recorded pack (`build --json`, `show PACK --json`)."""

    number = JSONPart("pack", int)
    entry = JSONPart("entry", int)
    digest = JSONPart("pack_digest", str)
    input_digest = JSONPart("input_digest", str)
    as_of = JSONPart("as_of", str)
    subject = JSONPart("subject", str)
    budget = JSONPart("budget", int)
    used = JSONPart("used", int)
    remaining = JSONPart("remaining", int)

    @property
    def admitted(self) -> tuple[Admission, ...]:
        return tuple(Admission(**_fields(Admission, a)) for a in self.data["admitted"])

    @property
    def evicted(self) -> tuple[Withheld, ...]:
        return tuple(Withheld(**_fields(Withheld, e)) for e in self.data["evicted"])


@dataclass(frozen=True)
class PackList(JSONResult):
    """Every recorded pack, oldest first (`packs --json`)."""

    packs = JSONPart("packs", _records)


@dataclass(frozen=True)
class ChunkList(JSONResult):
    """Stored chunk versions with their digests, never their bodies (`chunks --json`)."""

    chunks = JSONPart("chunks", _records)


@dataclass(frozen=True)
class GrantChange(JSONResult):
    """A grant or revoke: its entry (None when nothing changed) and what changed."""

    entry = JSONPart("entry", _int_or_none)
    changed = JSONPart("changed", _strings)


@dataclass(frozen=True)
class SubjectGrants(JSONResult):
    """A subject's permissions now, and every change (`subject show --json`)."""

    subject = JSONPart("subject", str)
    permissions = JSONPart("permissions", _strings)


@dataclass(frozen=True)
class PolicyChange(JSONResult):
    """A policy change: its entry (None when nothing changed) and the policy after it."""

    entry = JSONPart("entry", _int_or_none)

    @property
    def allowed_trust(self) -> tuple[str, ...]:
        return tuple(self.data["policy"]["allowed_trust"])

    @property
    def budget(self) -> int | None:
        return _int_or_none(self.data["policy"]["budget"])


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

    ref = JSONPart("ref", str)
    versions = JSONPart("versions", _records)


@dataclass(frozen=True)
class Diff(JSONResult):
    """What changed between two packs, each change with its cause (`diff --json`)."""

    changes = JSONPart("changes", _records)


@dataclass(frozen=True)
class BatchBuild(JSONResult):
    """The packs of a `build --batch` and the lines that failed (`build --batch --json`)."""

    packs = JSONPart("packs", _records)
    failed = JSONPart("failed", _records)


@dataclass(frozen=True)
class Export(JSONResult):
    """A pack's JSON export with the provenance of every admitted chunk (`export --format json`)."""


@dataclass(frozen=True)
class HeadResult(JSONResult):
    """The newest entry as a checkpoint `SEQ:HASH` (`head --json`)."""

    seq = JSONPart("seq", int)
    hash = JSONPart("hash", str)
    checkpoint = JSONPart("checkpoint", str)


@dataclass(frozen=True)
class InitResult(JSONResult):
    """What `init` did: the schema revision before (None: new) and after, and any backup."""

    database = JSONPart("database", _str_or_none, "The SQLite file (None for a server database).")
    before = JSONPart("before", _str_or_none)
    after = JSONPart("after", str)
    backup = JSONPart("backup", _str_or_none)


@dataclass(frozen=True)
class EraseResult(JSONResult):
    """`ledger erase --json`: the `erase` entry (None when nothing new was erased),
    the reason, the date an `--ended-before`/`--retention` run used, the versions
    erased now and those erased before (with their entry and reason)."""

    entry = JSONPart("entry", _int_or_none)
    reason = JSONPart("reason", str)
    ended_before = JSONPart("ended_before", _str_or_none)
    erased = JSONPart("erased", _records)
    already_erased = JSONPart("already_erased", _records)
