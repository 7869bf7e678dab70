"""`ledger why TEXT`: what happened, in one pack, to the chunk versions matching TEXT.

Pure: values in, values out. The store finds the matches (full-text search),
reads the pack's decision for each and computes hints; this module decides each
match's status and reason, orders the matches (per id its current version
first, superseded versions after it), and writes the one sentence that answers
the question.

Statuses (docs/reference/gates.md, "Why"):

- `admitted`; `evicted` with the stored reason, detail and a hint;
- `not_candidate` with `ingested_later {batch, mark}` (its ingest entry came
  after the pack's ledger mark), `other_scope {scope}` (a transcript exchange
  and a document pack, or the reverse, or another transcript), or
  `not_retrieved {query, top, score, lowest_retrieved}` (an evidence chunk a
  retrieval build did not take as a candidate);
- the verdict `never_ingested` when nothing matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.core.reasons import (
    GATE,
    INGESTED_LATER,
    NOT_RETRIEVED,
    OTHER_SCOPE,
    SUPERSEDED,
    describe_hint,
    reason_words,
)
from ledger.core.results import WhyAnswer
from ledger.core.transcript import budget_unit

__all__ = [
    "DOCUMENTS",
    "Decided",
    "Found",
    "PackView",
    "Retrieval",
    "WhyAnswer",
    "WhyMatch",
    "answer",
    "classify",
    "order_found",
]

DOCUMENTS = "documents"
TRANSCRIPT_SCOPE = "transcript:"
# The reasons `why` evaluates for a version a pack never considered: gates 1-6.
GATE_REASONS = frozenset(name for name, gate in GATE.items() if gate <= 6)


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What a retrieval build recorded: its query (None for a candidates file),
    K (None for a file), and the lowest score it retrieved (None if unscored)."""

    query: str | None
    top: int | None
    lowest_retrieved: float | None


@dataclass(frozen=True, slots=True)
class PackView:
    """The pack a `why` answers about."""

    number: int
    as_of: str
    subject: str
    mark: int  # the last ledger entry the build saw
    scope: str = DOCUMENTS
    retrieval: Retrieval | None = None
    label: str | None = None  # how sentences name it; default "pack N"
    # The entry a build now would see, when entries after `mark` changed what a
    # build with the pack's options decides from (None: nothing did).
    changed_to: int | None = None


@dataclass(frozen=True, slots=True)
class Decided:
    """The pack's decision row for a version: reason None when admitted."""

    reason: str | None
    detail: Mapping[str, Any] | None
    hint: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """One chunk version that matches the text, with what the store knows of it.

    `scope` is the pack scope it can belong to (`documents` or
    `transcript:<source_version>`); `query_score` its score under the pack's
    retrieval query (None when it does not match it); `hint` the store's
    computed hint for a version the pack did not retrieve.
    """

    # The version, as the store holds it (`erased`: {"entry", "reason"} of an
    # erased body; `batch`: the ingest that stored it).
    id: str
    source_version: str
    section: str
    title: str | None
    erased: Mapping[str, Any] | None = None
    scope: str
    effective_from: str
    batch: int
    # The search: the version's score for the text, the store's hint, its score
    # under the pack's query; then the pack's decision row, None if not a candidate.
    score: float
    hint: Mapping[str, Any] | None = None
    query_score: float | None = None
    decided: Decided | None = None
    # For a version the pack never considered: the first of gates 1-6 that
    # keeps it out at the pack's own inputs (None: it passes them all).
    gate: Decided | None = None
    # False for the version the pack weighed of an id whose text matched only
    # in other versions: shown so the id leads as the pack saw it.
    matched: bool = True


@dataclass(frozen=True, slots=True)
class WhyMatch:
    """One line of the answer: a `matches[]` item (docs/reference/json.md)."""

    id: str
    source_version: str
    title: str | None
    score: float
    status: str  # admitted | evicted | not_candidate
    reason: str | None
    detail: Mapping[str, Any] | None
    hint: Mapping[str, Any] | None
    erased: Mapping[str, Any] | None = None
    matched: bool = True  # False: the words asked are not in this version's text

    def to_json(self) -> dict[str, Any]:
        """The shape of docs/reference/json.md: `{"id", "source_version", "title",
        "score", "status", "reason", "detail", "hint"}`, and `erased {entry,
        reason}` for a version whose body was erased."""
        out = {
            "id": self.id,
            "source_version": self.source_version,
            "title": self.title,
            "score": self.score,
            "status": self.status,
            "reason": self.reason,
            "detail": _plain(self.detail),
            "hint": _plain(self.hint),
        }
        if self.erased is not None:
            out["erased"] = dict(self.erased)
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def classify(found: Found, pack: PackView) -> WhyMatch:
    """The status, reason, detail and hint of one matching version in `pack`."""
    if found.decided is not None:
        d = found.decided
        status = "admitted" if d.reason is None else "evicted"
        return WhyMatch(
            found.id, found.source_version, found.title, found.score, status,
            d.reason, d.detail, d.hint if d.reason is not None else None, found.erased,
            found.matched,
        )  # fmt: skip
    reason: str
    detail: dict[str, Any]
    hint = found.hint
    if found.batch > pack.mark:
        reason, detail = INGESTED_LATER, {"batch": found.batch, "mark": pack.mark}
    elif found.scope != pack.scope:
        reason, detail = OTHER_SCOPE, {"scope": found.scope}
        hint = None
    elif found.gate is not None:
        reason, detail = str(found.gate.reason), dict(found.gate.detail or {})
    elif pack.retrieval is not None and found.section == "evidence":
        r = pack.retrieval
        reason = NOT_RETRIEVED
        detail = {
            "query": r.query,
            "top": r.top,
            "score": found.query_score,
            "lowest_retrieved": r.lowest_retrieved,
        }
    else:
        # In scope, at the mark, not retrieved away, yet not decided: only an
        # altered database gets here (`ledger verify` names it).
        reason, detail = "not_considered", {"scope": found.scope}
        hint = None
    return WhyMatch(
        found.id, found.source_version, found.title, found.score, "not_candidate",
        reason, detail, hint, found.erased, found.matched,
    )  # fmt: skip


def _headline_rank(m: WhyMatch) -> int:
    """Within one id: the version the pack chose or weighed first; then the one
    it would have been given (not retrieved, ingested later, another scope);
    then versions a gate keeps out; superseded ones last."""
    if m.status == "admitted":
        return 0
    if m.reason == SUPERSEDED:
        return 4
    if m.status == "evicted":
        return 1
    if m.reason in GATE_REASONS:
        return 3
    return 2


def order_matches(found: Sequence[Found], matches: Sequence[WhyMatch]) -> list[WhyMatch]:
    """Ids by their best score (then id); per id the current version first.

    `found[i]` and `matches[i]` describe the same version.
    """
    return [m for _f, m in _in_answer_order(found, matches)]


def order_found(found: Sequence[Found], pack: PackView) -> list[Found]:
    """`found` in the order of the answer (see `order_matches`)."""
    matches = [classify(f, pack) for f in found]
    return [f for f, _m in _in_answer_order(found, matches)]


def _in_answer_order(
    found: Sequence[Found], matches: Sequence[WhyMatch]
) -> list[tuple[Found, WhyMatch]]:
    """The (found, match) pairs sorted as `order_matches` says."""
    best: dict[str, float] = {}
    for f in found:
        best[f.id] = max(best.get(f.id, f.score), f.score)
    return sorted(
        zip(found, matches, strict=True),
        key=lambda fm: (
            -best[fm[0].id],
            fm[0].id,
            _headline_rank(fm[1]),
            _newest_first(fm[0].effective_from),
            -fm[0].batch,
            fm[0].source_version,
        ),
    )


def _newest_first(day: str) -> tuple[int, ...]:
    return tuple(-int(part) for part in day.split("-"))


def answer(
    text: str,
    pack: PackView | None,
    found: Iterable[Found],
    limit: int,
    closest_terms: Sequence[str] = (),
    erased_bodies: int = 0,
) -> WhyAnswer:
    """The whole answer: every match classified and ordered, at most `limit`
    versions, the verdict (the headline's status, or `never_ingested`) and the
    sentence. `erased_bodies`: how many chunk bodies the ledger erased (their
    text is no longer searched, so "never ingested" is not certain)."""
    found = list(found)
    if not found:
        return WhyAnswer(
            text, pack.number if pack else None, "never_ingested",
            never_sentence(text, closest_terms, erased_bodies), (), tuple(closest_terms),
        )  # fmt: skip
    if pack is None:
        raise ValueError("matches need a pack to be judged against")
    matches = _first_ids(order_matches(found, [classify(f, pack) for f in found]), limit)
    head = matches[0]
    said = sentence(head, pack)
    if not head.matched:
        said = f"{said} {_words_elsewhere(head, matches, budget_unit(pack.scope))}"
    given = {m.id for m in matches if m.status == "admitted"}  # ids the agent was given
    if head.status == "admitted":
        # What stands between the agent and the fact: another id the pack left
        # out or never considered (not an older version of an id it admitted).
        other = next((m for m in matches if m.id not in given), None)
        if other is not None:
            said = f"{said} But {sentence(other, pack)}"
    else:
        # The words asked may have reached the agent all the same, in another id.
        other = next((m for m in matches if m.id in given and m.matched), None)
        if other is not None:
            said = f"{said} The words asked reached the agent in another chunk: " + sentence(
                other, pack
            )
        if pack.changed_to is not None:
            said = f"{said} {_moved_on(pack)}"
    return WhyAnswer(text, pack.number, head.status, said, tuple(matches))


def _moved_on(pack: PackView) -> str:
    """For a pack whose inputs a build now would not share: what its hints hold for."""
    name = pack.label or f"pack {pack.number}"
    return (
        f"The ledger has changed since {name} was built: it saw entries up to "
        f"{pack.mark}, and a build now (up to entry {pack.changed_to}) decides from other "
        f"grants, policy, retractions or chunks. Its hints hold for it as built (a build "
        f"with --ledger-at {pack.mark}); build a new pack and ask again to see what admits "
        "the chunk now."
    )


def _first_ids(matches: Sequence[WhyMatch], limit: int) -> list[WhyMatch]:
    """The matches of the first `limit` ids: per id its leading version and the
    others under it (a superseded version never takes a place of its own)."""
    ids: list[str] = []
    for m in matches:
        if m.id not in ids:
            ids.append(m.id)
    kept = set(ids[:limit])
    return [m for m in matches if m.id in kept]


def _words_elsewhere(head: WhyMatch, matches: Sequence[WhyMatch], unit: str) -> str:
    """For a lead version whose own text lacks the words asked: the version of
    the same id that holds them, and what kept that one out."""
    holder = next(m for m in matches if m.id == head.id and m.matched)
    how = "left out" if holder.status == "evicted" else "kept out"
    reason = holder.reason or ""
    return (
        f"The words asked are in its version {holder.source_version}, {how} by "
        f"{reason}: {reason_words(reason, dict(holder.detail or {}), unit)}."
    )


def _name(m: WhyMatch) -> str:
    title = f' ("{m.title}")' if m.title else ""
    return f"{m.id}@{m.source_version}{title}"


def sentence(m: WhyMatch, pack: PackView) -> str:
    """The one sentence that answers "why did the agent (not) know this?"."""
    name_of_pack = pack.label or f"pack {pack.number}"
    where = f"{name_of_pack} (as of {pack.as_of}, subject {pack.subject})"
    name = _name(m)
    if m.status == "admitted":
        return f"{name} was admitted to {where}."
    detail = dict(m.detail or {})
    hint = f"; to admit it: {describe_hint(m.hint)}" if m.hint and m.hint["steps"] else ""
    if m.status == "evicted":
        reason = m.reason or ""
        words = reason_words(reason, detail, budget_unit(pack.scope))
        return f"{name} was left out of {where} by {reason}: {words}{hint}."
    if m.reason == NOT_RETRIEVED:
        return f"{name} was not a candidate of {where}: {_retrieval_words(detail)}{hint}."
    if m.reason in GATE_REASONS:
        reason = m.reason or ""
        return (
            f"{name} was not a candidate of {where}: kept out by {reason}: "
            f"{reason_words(reason, detail, budget_unit(pack.scope))}{hint}."
        )
    if m.reason == INGESTED_LATER:
        return (
            f"{name} was not a candidate of {where}: it was ingested at entry "
            f"{detail['batch']}, after the pack (which saw the ledger up to entry "
            f"{detail['mark']}); build again to consider it{hint}."
        )
    if m.reason == OTHER_SCOPE:
        return (
            f"{name} was not a candidate of {where}: {_scope_words(detail['scope'], pack.scope)}."
        )
    return (
        f"{name} was not a candidate of {where}, although it is in its scope and ledger "
        "time: run `ledger verify`."
    )


def _number(x: float | None) -> str:
    return "none" if x is None else f"{x:g}"


def _retrieval_words(detail: Mapping[str, Any]) -> str:
    if detail.get("query") is None:
        asked = "the retriever's candidates file did not offer it"
    else:
        asked = f'the retriever did not offer it (query "{detail["query"]}", top {detail["top"]})'
    score = detail.get("score")
    if score is None:
        if detail.get("query") is None:
            return asked
        return f"{asked}; it does not match that query"
    lowest = _number(detail.get("lowest_retrieved"))
    return f"{asked}; its score {_number(score)} is below the lowest retrieved, {lowest}"


def _scope_words(scope: str, pack_scope: str) -> str:
    if scope.startswith(TRANSCRIPT_SCOPE) and pack_scope == DOCUMENTS:
        return "it is a transcript exchange, and this is a document pack"
    if scope == DOCUMENTS:
        return "it is a document chunk, and this is a transcript continuation pack"
    return "it is an exchange of another transcript annotation than this pack's"


def never_sentence(text: str, closest: Sequence[str], erased_bodies: int = 0) -> str:
    """The answer when nothing matches (`erased_bodies`: as `answer` takes it)."""
    near = (
        f" The closest terms the index knows: {', '.join(closest)}."
        if closest
        else " The index knows no similar terms."
    )
    quoted = text if len(text) > 1 and text[0] == text[-1] == '"' else f'"{text}"'
    if erased_bodies:
        bodies = (
            "the chunk body" if erased_bodies == 1 else f"one of the {erased_bodies} chunk bodies"
        )
        return (
            f"Nothing in the ledger matches {quoted}: it was never ingested, or it was in "
            f"{bodies} the ledger erased (an erased body's text is no longer searched; "
            f"`ledger why-evicted ID` still answers for an erased chunk).{near}"
        )
    return f"Nothing in the ledger matches {quoted}: it was never ingested.{near}"
