"""The verdict of `ledger why`, decided over values."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.core.why import Decided, Found, PackView, Retrieval, answer, classify

PACK = PackView(number=3, as_of="2026-07-21", subject="default", mark=10)
RETRIEVAL_PACK = PackView(3, "2026-07-21", "default", 10, retrieval=Retrieval("refund", 2, 1.5))


def found(**kw: Any) -> Found:
    values: dict[str, Any] = {
        "id": "faq",
        "source_version": "v1",
        "title": None,
        "score": 2.0,
        "batch": 4,
        "section": "evidence",
        "scope": "documents",
        "effective_from": "2026-01-01",
    }
    values.update(kw)
    return Found(**values)


def test_admitted() -> None:
    a = answer("refund", PACK, [found(decided=Decided(None, None))], 5)
    assert (a.verdict, a.matches[0].reason, a.matches[0].hint) == ("admitted", None, None)
    assert a.sentence == "faq@v1 was admitted to pack 3 (as of 2026-07-21, subject default)."


def test_evicted_carries_reason_detail_and_hint_words() -> None:
    hint = {"target": {}, "steps": [{"kind": "budget", "budget": 50, "extra": 8}], "admits": True}
    f = found(decided=Decided("budget", {"needed": 10, "remaining": 2}, hint))
    a = answer("refund", PACK, [f], 5)
    assert a.verdict == "evicted"
    assert a.matches[0].detail == {"needed": 10, "remaining": 2}
    assert "by budget: it needed 10 tokens but only 2 remained" in a.sentence
    assert "to admit it: raise the budget by 8 to 50 (admits it" in a.sentence


@pytest.mark.parametrize(
    ("kw", "pack", "reason", "detail"),
    [
        ({"batch": 11}, PACK, "ingested_later", {"batch": 11, "mark": 10}),
        ({"scope": "transcript:abc"}, PACK, "other_scope", {"scope": "transcript:abc"}),
        (
            {"query_score": 0.5},
            RETRIEVAL_PACK,
            "not_retrieved",
            {"query": "refund", "top": 2, "score": 0.5, "lowest_retrieved": 1.5},
        ),
    ],
)
def test_not_candidate_reasons(
    kw: dict[str, Any], pack: PackView, reason: str, detail: dict[str, Any]
) -> None:
    m = classify(found(**kw), pack)
    assert (m.status, m.reason, m.detail) == ("not_candidate", reason, detail)


def test_not_retrieved_sentence_compares_the_scores() -> None:
    a = answer("refund", RETRIEVAL_PACK, [found(query_score=0.5)], 5)
    assert (
        "did not offer it" in a.sentence and "0.5 is below the lowest retrieved, 1.5" in a.sentence
    )


def test_never_ingested_names_the_closest_terms() -> None:
    a = answer("refnd", PACK, [], 5, ["refund", "refunds"])
    assert a.verdict == "never_ingested" and a.matches == ()
    assert a.sentence.endswith("The closest terms the index knows: refund, refunds.")
    assert answer("zzz", None, [], 5).sentence.endswith("The index knows no similar terms.")


def test_the_current_version_heads_its_id_and_superseded_follow() -> None:
    by = {"id": "faq", "source_version": "v2", "record_digest": "d" * 64}
    old = found(source_version="v1", score=3.0, decided=Decided("superseded", {"by": by}))
    new = found(
        source_version="v2",
        score=1.0,
        effective_from="2026-05-01",
        decided=Decided("budget", {"needed": 9, "remaining": 1}),
    )
    other = found(id="aaa", score=2.5, decided=Decided(None, None))
    a = answer("refund", PACK, [old, other, new], 5)
    assert [(m.id, m.source_version) for m in a.matches] == [
        ("faq", "v2"),
        ("faq", "v1"),
        ("aaa", "v1"),
    ]
    assert a.verdict == "evicted" and a.sentence.startswith("faq@v2")
    # --limit counts ids: a superseded version never takes a place of its own.
    assert len(answer("refund", PACK, [old, other, new], 2).matches) == 3
    assert [m.source_version for m in answer("refund", PACK, [old, other, new], 1).matches] == [
        "v2",
        "v1",
    ]


def test_an_id_leads_as_the_pack_saw_it_when_the_words_are_only_in_an_old_version() -> None:
    old = found(
        source_version="v1",
        decided=Decided("superseded", {"by": {"id": "faq", "source_version": "v2"}}),
    )
    seen = found(source_version="v2", score=0.0, decided=Decided(None, None), matched=False)
    a = answer("old words", PACK, [old, seen], 5)
    assert [(m.source_version, m.status) for m in a.matches] == [
        ("v2", "admitted"),
        ("v1", "evicted"),
    ]
    assert a.verdict == "admitted"
    assert a.sentence.startswith("faq@v2 was admitted to pack 3")
    assert (
        "The words asked are in its version v1, left out by superseded: version v2 supersedes"
        in (a.sentence)
    )


def test_a_retrieve_step_quotes_the_query_as_a_shell_takes_it() -> None:
    import shlex

    from ledger.core.reasons import describe_step

    text = describe_step({"kind": "retrieve", "query": '"making `request.text`"', "top": 7})
    assert text == "retrieve with --query '\"making `request.text`\"' --top 7"
    assert shlex.split(text)[3] == '"making `request.text`"'


def test_a_phrase_asked_is_quoted_once_in_the_never_ingested_sentence() -> None:
    a = answer('"brass sextant"', PACK, [], 5)
    assert a.sentence.startswith('Nothing in the ledger matches "brass sextant": it was never')
    b = answer("brass sextant", PACK, [], 5)
    assert b.sentence.startswith('Nothing in the ledger matches "brass sextant": it was never')


def test_but_names_an_id_the_agent_was_not_given() -> None:
    """An admitted lead's sentence names another id left out, never an older
    version of an id the pack admitted (the agent was given that id)."""
    lead = found(id="cors", source_version="B", score=3.0, decided=Decided(None, None))
    old = found(
        id="cors-guide", source_version="A", score=2.5,
        decided=Decided("superseded", {"by": {"id": "cors-guide", "source_version": "B",
                                              "record_digest": "d" * 64}}),
    )  # fmt: skip
    current = found(id="cors-guide", source_version="B", score=0.0, decided=Decided(None, None))
    a = answer("cors", PACK, [lead, old, current], 5)
    assert a.verdict == "admitted" and " But " not in a.sentence
    left_out = found(
        id="cors-note", score=1.0, decided=Decided("budget", {"needed": 5, "remaining": 1})
    )
    a = answer("cors", PACK, [lead, old, current, left_out], 5)
    assert a.sentence.endswith(
        "But cors-note@v1 was left out of pack 3 (as of 2026-07-21, subject default) by budget: "
        "it needed 5 tokens but only 1 remained."
    )


def test_a_left_out_lead_says_when_the_words_reached_the_agent_in_another_chunk() -> None:
    lead = found(id="aiofiles", source_version="A", score=3.0,
                 decided=Decided("retracted", {"from": "2025-01-01", "entry": 9}))  # fmt: skip
    mirror = found(id="mirror-aiofiles", score=3.0, decided=Decided(None, None))
    a = answer('"install aiofiles"', PACK, [lead, mirror], 5)
    assert a.verdict == "evicted"
    assert a.sentence.endswith(
        "The words asked reached the agent in another chunk: mirror-aiofiles@v1 was admitted "
        "to pack 3 (as of 2026-07-21, subject default)."
    )
    # Not when the other chunk holds them only in another version of its own.
    elsewhere = found(id="mirror-aiofiles", score=3.0, decided=Decided(None, None), matched=False)
    assert "reached the agent" not in answer("x", PACK, [lead, elsewhere], 5).sentence


def test_never_ingested_is_not_claimed_when_bodies_were_erased() -> None:
    a = answer('"carrier delays"', PACK, [], 5, (), erased_bodies=2)
    assert a.verdict == "never_ingested"
    assert a.sentence.startswith(
        'Nothing in the ledger matches "carrier delays": it was never ingested, or it was '
        "in one of the 2 chunk bodies the ledger erased (an erased body's text is no longer "
        "searched; "
    )
    one = answer("x", PACK, [], 5, (), erased_bodies=1).sentence
    assert "or it was in the chunk body the ledger erased" in one
    assert answer("x", PACK, [], 5).sentence.startswith(
        'Nothing in the ledger matches "x": it was never ingested. '
    )


def test_a_pack_the_ledger_has_moved_past_says_what_its_hints_hold_for() -> None:
    hint = {"target": {}, "steps": [{"kind": "grant", "permission": "x"}], "admits": True}
    f = found(decided=Decided("permission_denied", {"required_permission": "x"}, hint))
    moved = PackView(3, "2026-07-21", "default", 10, changed_to=14)
    said = answer("refund", moved, [f], 5).sentence
    assert "The ledger has changed since pack 3 was built: it saw entries up to 10" in said
    assert "(a build with --ledger-at 10)" in said
    assert "changed since" not in answer("refund", PACK, [f], 5).sentence
    admitted = found(decided=Decided(None, None))
    assert "changed since" not in answer("refund", moved, [admitted], 5).sentence
