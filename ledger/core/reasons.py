"""The gates and reasons of a decision, written once (docs/reference/gates.md).

Every rule about what a reason *means* lives in `TABLE` below: its gate number,
the code stored in a decision row, the keys of its `detail` object, the decision
row fields that detail is read back from, the clause that explains it to a
person, the cause `ledger diff` gives when the gate decided two packs apart, and
the kind of change that could admit the chunk. The selector, the hints, `diff`,
`why`, `verify`, the store's decoding and the reports read this table; no other
module spells a reason's code.

How a gate *decides* stays in the gate's own code (`ledger.core.select`): adding
an eviction reason is one row here plus that gate's code.

    >>> REASON["budget"].gate, REASON["budget"].status
    (8, 7)
    >>> reason_words("budget", {"needed": 40, "remaining": 8})
    'it needed 40 tokens but only 8 remained'
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from types import MappingProxyType
from typing import Any

from ledger.core.errors import InputError

# Output order of the admitted (docs/reference/gates.md, "Output order").
SECTIONS = ("policy", "state", "evidence", "current-input")

# A detail's reference to another version (`superseded {by}`, `duplicate {kept}`):
# these keys, read from the decision row's `ref_id`, `ref_version`, `ref_digest`.
REF = "ref"
REF_KEYS = ("id", "source_version", "record_digest")
REF_ROW_FIELDS = ("ref_id", "ref_version", "ref_digest")


@dataclass(frozen=True, slots=True)
class Reason:
    """One row of the table: everything that says what a reason means."""

    name: str  # the code in JSON and text output
    gate: int | None  # 1-8 in gate order; None: an answer of `why`, never a decision
    status: int | None  # stored in a decision row (0 is admitted); None: never stored
    detail: tuple[tuple[str, str], ...]  # (detail key, decision row field or REF)
    words: str  # a clause, `str.format_map` over the detail (`{by[id]}`)
    cause: str | None  # `ledger diff`'s cause when this gate tells two packs apart
    change: str | None  # the hint step kind that can get a chunk past this gate
    seed: bool = False  # one of the six reasons of the pack-fixture contract

    @property
    def detail_keys(self) -> tuple[str, ...]:
        return tuple(key for key, _field in self.detail)

    @property
    def remaining_key(self) -> str | None:
        """The detail key kept in the decision row's `remaining` column, if any."""
        return next((key for key, field in self.detail if field == "remaining"), None)

    @property
    def ref_key(self) -> str | None:
        """The detail key that names another version (`by`, `kept`), if any."""
        return next((key for key, field in self.detail if field == REF), None)


# Gates 1-8 in order, then the reasons that only `ledger why` gives (a chunk that
# was not a candidate of the pack). Stored statuses never change meaning: a new
# reason takes the next free number (retracted, gate 5, came later: status 8).
TABLE: tuple[Reason, ...] = (
    Reason(
        "permission_denied", 1, 1,
        (("required_permission", "required_permission"),),
        "the subject lacks permission '{required_permission}'",
        "grant change", "grant", seed=True,
    ),
    Reason(
        "trust_denied", 2, 2,
        (("trust", "trust"),),
        "the policy does not allow trust '{trust}'",
        "policy change", "allow_trust", seed=True,
    ),
    Reason(
        "not_yet_effective", 3, 3,
        (("effective_from", "effective_from"),),
        "it takes effect only on {effective_from}",
        "validity date", "as_of", seed=True,
    ),
    Reason(
        "expired", 4, 4,
        (("expires_on", "expires_on"),),
        "it expired on {expires_on}",
        "validity date", "as_of", seed=True,
    ),
    Reason(
        "retracted", 5, 8,
        (("from", "retracted_from"), ("entry", "remaining")),
        "ledger entry {entry} retracted it from {from} on",
        "retracted", "retracted",
    ),
    Reason(
        "superseded", 6, 5,
        (("by", REF),),
        "version {by[source_version]} supersedes it",
        "new version", "superseded_by",
    ),
    Reason(
        "duplicate", 7, 6,
        (("kept", REF),),
        "{kept[id]} was kept from the same dedupe group",
        "displaced by another chunk", "outranked_by", seed=True,
    ),
    Reason(
        "budget", 8, 7,
        (("needed", "tokens"), ("remaining", "remaining")),
        "it needed {needed} {unit} but only {remaining} remained",
        "budget change", "budget", seed=True,
    ),
    Reason(
        "not_retrieved", None, None,
        (("query", ""), ("top", ""), ("score", ""), ("lowest_retrieved", "")),
        "the retriever did not offer it",
        "not retrieved by this query", "retrieve",
    ),
    Reason(
        "ingested_later", None, None,
        (("batch", ""), ("mark", "")),
        "it was ingested at entry {batch}, after the pack's ledger mark {mark}",
        None, "rebuild",
    ),
    Reason(
        "other_scope", None, None,
        (("scope", ""),),
        "it belongs to another scope ({scope})",
        None, None,
    ),
)  # fmt: skip

REASON: Mapping[str, Reason] = MappingProxyType({r.name: r for r in TABLE})

# Each reason's code by name, for the modules that compare codes: a misspelt
# name is then an AttributeError at import, not a silently false comparison.
PERMISSION_DENIED, TRUST_DENIED, NOT_YET_EFFECTIVE, EXPIRED = (r.name for r in TABLE[:4])
RETRACTED, SUPERSEDED, DUPLICATE, BUDGET = (r.name for r in TABLE[4:8])
NOT_RETRIEVED, INGESTED_LATER, OTHER_SCOPE = (r.name for r in TABLE[8:])

# Eviction reasons in gate order.
REASONS: tuple[str, ...] = tuple(r.name for r in TABLE if r.gate is not None)
GATE: Mapping[str, int] = MappingProxyType({r.name: r.gate for r in TABLE if r.gate is not None})
# The six reasons of the pack-fixture contract (`ledger pack`), in gate order.
SEED_REASONS: tuple[str, ...] = tuple(r.name for r in TABLE if r.seed)

# The keys of each eviction reason's `detail` object.
DETAIL_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {r.name: r.detail_keys for r in TABLE if r.gate is not None}
)

# The stored status of a decision row: 0 admitted, else the reason's status.
ADMITTED = 0
REASON_CODES: Mapping[str, int] = MappingProxyType(
    {r.name: r.status for r in TABLE if r.status is not None}
)
REASON_NAMES: Mapping[int, str] = MappingProxyType({c: n for n, c in REASON_CODES.items()})


def detail_of_row(reason: str, row: Any) -> dict[str, Any]:
    """An eviction's `detail` object from its decision row (attributes named as in
    the table: the version's own fields, `tokens`, `remaining`, `retracted_from`,
    and `ref_id`, `ref_version`, `ref_digest` for the version it names)."""
    detail: dict[str, Any] = {}
    for key, field in REASON[reason].detail:
        if field == REF:
            pairs = zip(REF_KEYS, REF_ROW_FIELDS, strict=True)
            detail[key] = {k: getattr(row, f) for k, f in pairs}
        else:
            detail[key] = getattr(row, field)
    return detail


def row_of_detail(
    reason: str, detail: Mapping[str, Any], vid_of: Mapping[str, int]
) -> tuple[int, int | None, int | None]:
    """The inverse of `detail_of_row` for what a decision row stores of a detail:
    its status, its `remaining` column and the version id its reference names
    (`vid_of`: record digest -> version id). The other detail fields are the
    version's own (or, for a retraction's date, its retract entry's)."""
    r = REASON[reason]
    if r.status is None:
        raise ValueError(f"{reason} is an answer of `why`, never a stored decision")
    ref_key, remaining_key = r.ref_key, r.remaining_key
    return (
        r.status,
        detail[remaining_key] if remaining_key else None,
        vid_of[detail[ref_key]["record_digest"]] if ref_key else None,
    )


def is_date(text: Any) -> bool:
    """True for a `YYYY-MM-DD` string that round-trips through `date.fromisoformat`."""
    try:
        return isinstance(text, str) and date.fromisoformat(text).isoformat() == text
    except ValueError:
        return False


def check_date(value: str, where: str = "as_of") -> str:
    """`value` if it is a real `YYYY-MM-DD` date, else an `InputError` naming the
    parameter `where`."""
    if not is_date(value):
        raise InputError(f"{where}: {value!r} must use YYYY-MM-DD and be a real date", param=where)
    return value


def short_detail(reason: str | None, detail: Mapping[str, Any] | None) -> str:
    """A short reading of an eviction's detail: `needed 40, remaining 8`."""
    if reason is None or detail is None:
        return ""
    row = REASON.get(reason)
    ref_key = row.ref_key if row else None
    if ref_key is not None:
        ref = detail.get(ref_key) or {}
        return f"{ref_key} {ref.get('id')}@{ref.get('source_version')}"
    return ", ".join(f"{k} {v}" for k, v in detail.items())


def reason_words(reason: str, detail: Mapping[str, Any], unit: str = "tokens") -> str:
    """The reason as a clause of a sentence: `the policy does not allow trust 'x'`.
    `unit` is what the pack's counts are in: "bytes" for a transcript pack."""
    row = REASON.get(reason)
    if row is None:
        return short_detail(reason, detail)
    try:
        return row.words.format_map({**detail, "unit": unit})
    except (KeyError, IndexError, TypeError):
        return short_detail(reason, detail)


def diff_cause(reason: str | None) -> str | None:
    """`ledger diff`'s cause for a gate that one pack failed and the other passed
    (budget: the caller tells a budget change from a displacement)."""
    row = REASON.get(reason) if reason is not None else None
    return row.cause if row is not None else None


# How each kind of hint step reads, filled from the step (`str.format_map`).
# `budget`, `superseded_by` and `retracted` add an optional tail (below).
_STEP_WORDS: Mapping[str, str] = MappingProxyType(
    {
        "grant": "grant '{permission}'",
        "allow_trust": "allow trust '{trust}'",
        "as_of": "build as of {as_of}",
        "budget": "raise the budget by {extra} to {budget}",
        "superseded_by": "superseded by {by[id]}@{by[source_version]}",
        "retrieve": "retrieve with --query {query} --top {top}",  # query shell-quoted
        "rebuild": "build again (the ledger is now at entry {mark})",
        "retracted": "retracted from {from} by entry {entry}",
        "reinstate": "run `ledger reinstate {id} --from {from}` (undoes the retraction of "
        "{retracted[from]}, entry {retracted[entry]})",
        "outranked_by": "out-ranked by {kept[id]}@{kept[source_version]} in its dedupe group",
    }
)


def _step_tail(step: Mapping[str, Any]) -> str:
    kind = step["kind"]
    if kind == "budget":
        shown = ", ".join(
            f"{r['id']}@{r['source_version']}" for r in step.get("displaced_by", [])[:5]
        )
        return f" (displaced by {shown})" if shown else ""
    if kind == "superseded_by" and step.get("as_of"):
        return f", or build as of {step['as_of']}"
    if kind == "retracted" and step.get("as_of"):
        return f"; build as of {step['as_of']} to see it"
    return ""


def describe_step(step: Mapping[str, Any]) -> str:
    """A person's reading of one hint step."""
    words = _STEP_WORDS.get(step["kind"])
    if words is None:
        return json.dumps(step, sort_keys=True)
    if step["kind"] == "retrieve":  # as a shell takes it: a phrase keeps its quotes
        step = {**step, "query": shlex.quote(str(step["query"]))}
    return words.format_map(step) + _step_tail(step)


def describe_hint(hint: Mapping[str, Any]) -> str:
    """A person's reading of an admission hint's steps."""
    parts = [describe_step(s) for s in hint["steps"]]
    verdict = "admits it" if hint["admits"] else "would not admit it by itself"
    return "; then ".join(parts) + f" ({verdict}, checked by re-running the selector)"


def why_evicted_sentence(result: Mapping[str, Any]) -> str:
    """The one-sentence answer that `why-evicted`'s human output leads with."""
    for v in result["versions"]:
        if not v["decisions"]:
            continue
        d = v["decisions"][0]
        name = f"{v['id']}@{v['source_version']}"
        if d["admitted"]:
            return (
                f"{name} was admitted to the newest pack that considered it "
                f"(pack {d['pack']}, as of {d['as_of']})."
            )
        words = reason_words(d["reason"], d["detail"], d.get("unit", "tokens"))
        retraction = d.get("retraction")
        if retraction and retraction.get("reason"):  # who withdrew it, in their words
            words += f" ({retraction['reason']})"
        return (
            f"{name} was left out of pack {d['pack']} (as of {d['as_of']}, subject "
            f"{d['subject']}) by {d['reason']}: {words}."
        )
    v = result["versions"][0]
    return f"{v['id']}@{v['source_version']} was never considered: {v['not_considered']}."
