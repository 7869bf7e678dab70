"""The words of a decision, written once: sections, reason codes, their detail
keys, the dates they use, and the sentences that explain them to a person.

Everything that names a section or a reason (the selector, the store, the
command line, the reports) takes it from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from types import MappingProxyType
from typing import Any

from ledger.core.errors import InputError

# Output order of the admitted (SPEC "Selection").
SECTIONS = ("policy", "state", "evidence", "current-input")

# Eviction reasons in gate order (SPEC "Selection: gates in this order").
REASONS = (
    "permission_denied",
    "trust_denied",
    "not_yet_effective",
    "expired",
    "retracted",
    "superseded",
    "duplicate",
    "budget",
)

# The keys of each reason's `detail` object.
DETAIL_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "permission_denied": ("required_permission",),
        "trust_denied": ("trust",),
        "not_yet_effective": ("effective_from",),
        "expired": ("expires_on",),
        "retracted": ("from", "entry"),
        "superseded": ("by",),
        "duplicate": ("kept",),
        "budget": ("needed", "remaining"),
    }
)

# The stored status of a decision row: 0 admitted, else the reason's code. Codes
# are stored, so they never change meaning; a new reason takes the next number.
ADMITTED = 0
REASON_CODES: Mapping[str, int] = MappingProxyType(
    {
        "permission_denied": 1,
        "trust_denied": 2,
        "not_yet_effective": 3,
        "expired": 4,
        "superseded": 5,
        "duplicate": 6,
        "budget": 7,
        # Gate 5, added later: the next free code. Its row's `remaining` holds the
        # retract entry; the date is that entry's.
        "retracted": 8,
    }
)
REASON_NAMES: Mapping[int, str] = MappingProxyType({c: n for n, c in REASON_CODES.items()})


def is_date(text: Any) -> bool:
    """True for a `YYYY-MM-DD` string that round-trips through `date.fromisoformat`."""
    try:
        return isinstance(text, str) and date.fromisoformat(text).isoformat() == text
    except ValueError:
        return False


def check_date(value: str, where: str = "--as-of") -> str:
    """`value` if it is a real `YYYY-MM-DD` date, else an `InputError` naming `where`."""
    if not is_date(value):
        raise InputError(f"{where}: {value!r} must use YYYY-MM-DD and be a real date")
    return value


def short_detail(reason: str | None, detail: Mapping[str, Any] | None) -> str:
    """A short reading of an eviction's detail: `needed 40, remaining 8`."""
    if reason is None or detail is None:
        return ""
    if reason == "budget":
        return f"needed {detail['needed']}, remaining {detail['remaining']}"
    if reason in ("superseded", "duplicate"):
        ref = detail.get("by") or detail.get("kept") or {}
        word = "by" if reason == "superseded" else "kept"
        return f"{word} {ref.get('id')}@{ref.get('source_version')}"
    return ", ".join(f"{k} {v}" for k, v in detail.items())


# Each reason as a clause, filled from its detail (`str.format_map`: `{by[id]}` is
# detail["by"]["id"]).
_REASON_WORDS: Mapping[str, str] = MappingProxyType(
    {
        "permission_denied": "the subject lacks permission '{required_permission}'",
        "trust_denied": "the policy does not allow trust '{trust}'",
        "not_yet_effective": "it takes effect only on {effective_from}",
        "expired": "it expired on {expires_on}",
        "retracted": "ledger entry {entry} retracted it from {from} on",
        "superseded": "version {by[source_version]} supersedes it",
        "duplicate": "{kept[id]} was kept from the same dedupe group",
        "budget": "it needed {needed} tokens but only {remaining} remained",
    }
)


def reason_words(reason: str, detail: Mapping[str, Any]) -> str:
    """The reason as a clause of a sentence: `the policy does not allow trust 'x'`."""
    words = _REASON_WORDS.get(reason)
    return short_detail(reason, detail) if words is None else words.format_map(detail)


def describe_hint(hint: Mapping[str, Any]) -> str:
    """A person's reading of an admission hint's steps."""
    parts = []
    for s in hint["steps"]:
        k = s["kind"]
        if k == "grant":
            parts.append(f"grant '{s['permission']}'")
        elif k == "allow_trust":
            parts.append(f"allow trust '{s['trust']}'")
        elif k == "as_of":
            parts.append(f"build as of {s['as_of']}")
        elif k == "budget":
            shown = ", ".join(
                f"{r['id']}@{r['source_version']}" for r in s.get("displaced_by", [])[:5]
            )
            more = f" (displaced by {shown})" if shown else ""
            parts.append(f"raise the budget by {s['extra']} to {s['budget']}{more}")
        elif k == "superseded_by":
            by = s["by"]
            alt = f", or build as of {s['as_of']}" if s.get("as_of") else ""
            parts.append(f"superseded by {by['id']}@{by['source_version']}{alt}")
        elif k == "retrieve":  # `ledger why`: a retrieval build that offers it
            parts.append(f'retrieve with --query "{s["query"]}" --top {s["top"]}')
        elif k == "rebuild":  # `ledger why`: it was ingested after the pack
            parts.append(f"build again (the ledger is now at entry {s['mark']})")
        elif k == "retracted":
            alt = f"; build as of {s['as_of']} to see it" if s.get("as_of") else ""
            parts.append(f"retracted from {s['from']} by entry {s['entry']}{alt}")
        elif k == "outranked_by":
            kept = s["kept"]
            parts.append(f"out-ranked by {kept['id']}@{kept['source_version']} in its dedupe group")
        else:
            parts.append(json.dumps(s, sort_keys=True))
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
        words = reason_words(d["reason"], d["detail"])
        retraction = d.get("retraction")
        if retraction and retraction.get("reason"):  # who withdrew it, in their words
            words += f" ({retraction['reason']})"
        return (
            f"{name} was left out of pack {d['pack']} (as of {d['as_of']}, subject "
            f"{d['subject']}) by {d['reason']}: {words}."
        )
    v = result["versions"][0]
    return f"{v['id']}@{v['source_version']} was never considered: {v['not_considered']}."
