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
from typing import TYPE_CHECKING, Any

from ledger.core.reasons import RETRACTED, why_evicted_sentence

if TYPE_CHECKING:
    from ledger.core.why import WhyMatch


@dataclass(frozen=True)
class JSONResult:
    """A result whose JSON is kept whole; subclasses name its parts.

    A subclass declares each part as an annotation, `ref: str`, read from the
    JSON key of the same name (`keys=` maps the others) with lists given as
    tuples. It adds no field, so it is a plain class that inherits the frozen
    `__init__`, `__eq__` and `__repr__` from here.
    """

    data: Mapping[str, Any] = field(repr=False)

    def __init_subclass__(cls, keys: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in cls.__annotations__:  # its own, never a base's (3.10+)
            setattr(cls, name, _JSONPart((keys or {}).get(name, name)))

    def to_json(self) -> dict[str, Any]:
        """The command's `--json` output for the same call (a fresh copy)."""
        copied: dict[str, Any] = _fresh(dict(self.data))
        return copied


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _fresh(value: Any) -> Any:
    """`copy.deepcopy` of JSON data at half its cost (a why-evicted hint can hold
    thousands of objects): new dicts, lists and tuples all the way down, the
    scalars shared; anything else goes to `deepcopy`."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _SCALARS else _fresh(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        items = [v if type(v) in _SCALARS else _fresh(v) for v in value]
        return items if kind is list else tuple(items)
    return value if kind in _SCALARS else copy.deepcopy(value)


class _JSONPart:
    """A read-only part of a result's JSON: `data[key]`, a list as a tuple."""

    def __init__(self, key: str) -> None:
        self._key = key

    def __get__(self, obj: JSONResult | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.data[self._key]
        return tuple(value) if isinstance(value, list) else value


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
    """One evicted candidate of a pack: its reason code and detail object
    (docs/reference/json.md)."""

    id: str
    source_version: str
    reason: str
    detail: Mapping[str, Any]
    tokens: int
    record_digest: str
    content_digest: str


def _fields(cls: type, item: Mapping[str, Any]) -> dict[str, Any]:
    return {f.name: item[f.name] for f in fields(cls)}


class Pack(JSONResult, keys={"number": "pack", "digest": "pack_digest"}):
    """A recorded pack (`build --json`, `show PACK --json`)."""

    number: int
    entry: int
    digest: str
    input_digest: str
    as_of: str
    subject: str
    budget: int
    used: int
    remaining: int

    @property
    def admitted(self) -> tuple[Admission, ...]:
        return tuple(Admission(**_fields(Admission, a)) for a in self.data["admitted"])

    @property
    def evicted(self) -> tuple[Withheld, ...]:
        return tuple(Withheld(**_fields(Withheld, e)) for e in self.data["evicted"])


class PackList(JSONResult):
    """Every recorded pack, oldest first (`packs --json`)."""

    packs: tuple[Mapping[str, Any], ...]


class BatchBuild(JSONResult):
    """The packs of a `build --batch` and the lines that failed (`build --batch --json`)."""

    packs: tuple[Mapping[str, Any], ...]
    failed: tuple[Mapping[str, Any], ...]


class WhyEvicted(JSONResult):
    """Every pack that considered a chunk, newest first (`why-evicted --json`);
    `sentence`: the one-sentence answer the command leads with."""

    ref: str
    versions: tuple[Mapping[str, Any], ...]

    @property
    def sentence(self) -> str:
        return why_evicted_sentence(self.data)

    def __repr__(self) -> str:
        return f"WhyEvicted(ref={self.ref!r}, sentence={self.sentence!r})"


class Diff(JSONResult):
    """What changed between two packs, each change with its cause (`diff --json`)."""

    changes: tuple[Mapping[str, Any], ...]


class Export(JSONResult):
    """A pack's JSON export with the provenance of every admitted chunk (`export --format json`)."""


class InitResult(JSONResult):
    """What `init` did: the SQLite file (None for a server database), the schema
    revision before (None: new) and after, and any backup."""

    database: str | None
    before: str | None
    after: str
    backup: str | None


class ChunkList(JSONResult):
    """Stored chunk versions with their digests, never their bodies (`chunks --json`)."""

    chunks: tuple[Mapping[str, Any], ...]


class HeadResult(JSONResult):
    """The newest entry as a checkpoint `SEQ:HASH` (`head --json`)."""

    seq: int
    hash: str
    checkpoint: str


class Change(JSONResult):
    """A change to the ledger: the entry it appended, None when nothing changed."""

    entry: int | None


class GrantChange(Change):
    """A grant or revoke: its entry and what changed."""

    changed: tuple[str, ...]


class PolicyChange(Change):
    """A policy change: its entry and the policy after it."""

    @property
    def allowed_trust(self) -> tuple[str, ...]:
        return tuple(self.data["policy"]["allowed_trust"])

    @property
    def budget(self) -> int | None:
        budget: int | None = self.data["policy"]["budget"]
        return budget


class SubjectGrants(JSONResult):
    """A subject's permissions now, and every change (`subject show --json`)."""

    subject: str
    permissions: tuple[str, ...]


class PolicyState(JSONResult):
    """The policy in force (None if never set) and every change (`policy show --json`)."""

    @property
    def policy(self) -> Mapping[str, Any] | None:
        policy = self.data["policy"]
        return None if policy is None else dict(policy)


class EraseResult(Change):
    """`ledger erase --json`: the `erase` entry (None when nothing new was erased),
    the reason, the date an `--ended-before`/`--retention` run used, the versions
    erased now and those erased before (with their entry and reason)."""

    reason: str
    ended_before: str | None
    erased: tuple[Mapping[str, Any], ...]
    already_erased: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class IngestSummary:
    """`ledger ingest --json`'s summary (docs/reference/json.md): the batch's
    entry (None when the run stored nothing new and so wrote no entry) and the
    counts."""

    batch: int | None
    read: int
    new: int
    unchanged: int
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in SUMMARY_KEYS}


# `ingest --json`'s keys, for records and documents alike.
SUMMARY_KEYS = ("batch", "read", "new", "unchanged")


@dataclass(frozen=True, slots=True)
class DocumentIngestSummary:
    """`ledger ingest --json` for documents (docs/reference/json.md), plus the
    retract entry of a snapshot."""

    batch: int | None
    read: int
    new: int
    unchanged: int
    files: int
    retracted: tuple[str, ...] = ()  # the ids a snapshot withdrew (absent from it)
    retract_entry: int | None = None
    reinstated: tuple[str, ...] = ()  # the withdrawn ids a snapshot holds again
    reinstate_entry: int | None = None
    moved: int = 0
    parsed_files: int = 0
    # Markup the readers did not know and rendered as its text, by name
    # (`role:ref`, `directive:versionadded`), with counts, over the parsed files.
    unknown_markup: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """`ingest --json`'s keys: `batch` is null when the run stored nothing new;
        `unknown_markup` only when some markup was rendered as text."""
        out: dict[str, Any] = {
            **{key: getattr(self, key) for key in SUMMARY_KEYS},
            "files": self.files,
            RETRACTED: {"entry": self.retract_entry, "ids": list(self.retracted)},
            "reinstated": {"entry": self.reinstate_entry, "ids": list(self.reinstated)},
            "parsed": self.parsed_files,  # files read and chunked; the rest were unchanged
        }
        if self.unknown_markup:
            out["unknown_markup"] = dict(self.unknown_markup)
        return out


@dataclass(frozen=True, slots=True)
class RetractResult:
    """`ledger retract`: the entry, the ids and the date they are withdrawn from."""

    entry: int
    ids: tuple[str, ...]
    from_date: str
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        """`{"entry", "ids", "from", "reason"}`."""
        return {
            "entry": self.entry,
            "ids": list(self.ids),
            "from": self.from_date,
            "reason": self.reason,
        }


@dataclass
class VerifyResult:
    ok: bool
    entries: int
    head: str
    first_bad: dict[str, Any] | None
    decisions: int = 0
    # Proofs and checkpoints: the tree checkpoint verified against, and for
    # `since` the size it started from and the number of entries checked.
    checkpoint: dict[str, Any] | None = None
    since: int | None = None
    checked: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "ok": self.ok,
            "entries": self.entries,
            "head": self.head,
            "first_bad": self.first_bad,
        }
        if self.checkpoint is not None:
            out["checkpoint"] = self.checkpoint
        if self.since is not None:
            out["since"] = self.since
            out["checked"] = self.checked
        return out


@dataclass
class ReplayResult:
    pack: int
    identical: bool
    recorded: str
    replayed: str
    difference: str | None
    # Candidates whose bodies were erased, so that the pack's counter could not
    # recount them: their recorded counts were used (only a real counter's pack).
    not_recounted: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pack": self.pack,
            "identical": self.identical,
            "recorded_pack_digest": self.recorded,
            "replayed_pack_digest": self.replayed,
            "first_difference": self.difference,
        }
        if self.not_recounted:
            out["not_recounted"] = {
                "count": len(self.not_recounted),
                "versions": self.not_recounted,
                "why": "their bodies were erased; the pack's recorded token counts were used",
            }
        return out


@dataclass(frozen=True, slots=True)
class SearchResult:
    """`ledger search --json`: `{"query", "results": [{"id", "source_version",
    "title", "path", "score", "record_digest", "content_digest", "snippet"?}]}`,
    best first."""

    query: str
    results: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON, as `ledger search --json` prints it."""
        return {"query": self.query, "results": [dict(r) for r in self.results]}


@dataclass(frozen=True, slots=True)
class WhyAnswer:
    """`ledger why --json`: `{"text", "pack", "verdict", "sentence", "matches"}`,
    plus `closest_terms` (the index's words nearest the text, when nothing matched)."""

    text: str
    pack: int | None
    verdict: str
    sentence: str
    matches: tuple[WhyMatch, ...]
    closest_terms: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON, the keys of docs/reference/json.md first."""
        return {
            "text": self.text,
            "pack": self.pack,
            "verdict": self.verdict,
            "sentence": self.sentence,
            "matches": [m.to_json() for m in self.matches],
            "closest_terms": list(self.closest_terms),
        }


class CheckResult(JSONResult):
    """`ledger check --json`: `{"cases": [{"name", "passed", "pack_digest",
    "failures"}], "passed", "failed"}`; `ok` when every case passed."""

    cases: tuple[Mapping[str, Any], ...]
    passed: int
    failed: int

    @property
    def ok(self) -> bool:
        return self.failed == 0
