"""The public Python API: `import ledger` does the whole `make demo` flow, and every
result's `to_json()` equals the command line's `--json` for the same call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ledger
from tests.conftest import ROOT, chunk, ledger_json, run_ledger
from tests.seeded import seed_open_ledger

SEED = ROOT / "fixtures" / "support-chunks.json"
UPDATE = ROOT / "fixtures" / "demo-update.jsonl"
TRUST = ["application-policy", "confirmed-state", "approved-source", "user-input"]


def test_the_public_names_are_exported() -> None:
    for name in ledger.__all__:
        assert getattr(ledger, name) is not None, name
    assert ledger.InputError.exit_code == 1
    assert ledger.RefusedError.exit_code == 1
    assert ledger.NotFoundError.exit_code == 3
    assert ledger.IntegrityError.exit_code == 4
    assert all(issubclass(e, ledger.LedgerError) for e in (ledger.InputError, ledger.NotFoundError))


def test_the_demo_flow_through_the_api_matches_the_cli(db_url: str) -> None:
    with ledger.open(db_url, create=True) as lg:
        first = lg.ingest_paths([SEED])
        assert (first.batch, first.read, first.new, first.unchanged) == (1, 11, 11, 0)
        grant = lg.grant("default", "policy-read", "state-read", "user-input", "public-read")
        assert grant.entry == 2
        assert grant.changed == ("policy-read", "public-read", "state-read", "user-input")
        policy = lg.set_policy(allow_trust=TRUST, budget=170)
        assert policy.entry == 3 and policy.budget == 170

        pack = lg.build(as_of="2026-07-21")
        assert (pack.number, pack.entry, pack.budget, pack.used, pack.remaining) == (
            1,
            4,
            170,
            162,
            8,
        )
        assert [a.id for a in pack.admitted] == [
            "policy",
            "task-state",
            "current-refund-policy",
            "refund-faq",
            "current-input",
        ]
        assert {e.id: e.reason for e in pack.evicted}["shipping-note"] == "budget"
        assert pack.to_json() == ledger_json("show", "1", db=db_url)

        why = lg.why_evicted("shipping-note")
        assert why.versions[0]["decisions"][0]["reason"] == "budget"
        assert why.to_json() == ledger_json("why-evicted", "shipping-note", db=db_url)

        lg.ingest_paths([UPDATE])
        revoked = lg.revoke("default", "public-read")
        assert revoked.changed == ("public-read",)
        assert lg.set_policy(budget=200).allowed_trust == tuple(sorted(TRUST))
        second = lg.build(as_of="2026-09-02")
        assert second.number == 2 and second.budget == 200

        diff = lg.diff(1, 2)
        assert diff.changes and diff.to_json() == ledger_json("diff", "1", "2", db=db_url)
        assert lg.why_evicted("refund-faq").to_json() == ledger_json(
            "why-evicted", "refund-faq", db=db_url
        )
        verify = lg.verify()
        assert verify.ok and verify.entries == 8
        assert verify.to_json() == ledger_json("verify", db=db_url)
        replay = lg.replay(1)
        assert replay.identical
        assert replay.to_json() == ledger_json("replay", "1", db=db_url)
        assert lg.packs().to_json() == ledger_json("packs", db=db_url)
        assert lg.chunks().to_json() == ledger_json("chunks", db=db_url)
        assert lg.chunks("refund-faq").to_json() == ledger_json(
            "chunks", "--id", "refund-faq", db=db_url
        )
        assert lg.subject("default").to_json() == ledger_json(
            "subject", "show", "default", db=db_url
        )
        assert lg.policy().to_json() == ledger_json("policy", "show", db=db_url)
        assert lg.head().to_json() == ledger_json("head", db=db_url)
        assert lg.show(second.digest[:8]).to_json() == second.to_json()

        exported = lg.export(1, "json", with_content=True)
        cli_export = run_ledger("export", "1", "--format", "json", "--with-content", db=db_url)
        assert exported.to_json() == json.loads(cli_export.stdout)
        markdown = lg.export(1, "markdown", with_content=True)
        assert isinstance(markdown, str) and markdown.startswith("# Context pack 1")
        cli_md = run_ledger("export", "1", "--format", "markdown", "--with-content", db=db_url)
        assert markdown == cli_md.stdout


def test_records_in_memory_are_ingested_all_or_nothing(db_url: str) -> None:
    with ledger.open(db_url) as lg:
        summary = lg.ingest_records([chunk(id="alpha"), chunk(id="beta", dedupe_key="beta")])
        assert (summary.read, summary.new) == (2, 2)
        assert summary.to_json() == {"batch": 1, "read": 2, "new": 2, "unchanged": 0}
        again = lg.ingest_records([chunk(id="alpha")])
        assert (again.new, again.unchanged) == (0, 1)
        with pytest.raises(ledger.InputError, match=r"records\[1\]: field 'trust'"):
            lg.ingest_records([chunk(id="gamma", dedupe_key="gamma"), chunk(trust="nope")])
        assert [c["id"] for c in lg.chunks().chunks] == ["alpha", "beta"]
        assert lg.verify().ok


def test_batch_builds_and_transcript_free_errors(db_url: str, tmp_path: Path) -> None:
    with ledger.open(db_url) as lg:
        seed_open_ledger(lg)
        lines = tmp_path / "nightly.jsonl"
        lines.write_text(
            '{"subject": "default", "as_of": "2026-07-21"}\n'
            '{"subject": "default", "as_of": "2026-07-22", "budget": 400}\n'
        )
        result = lg.build_batch(lines)
        assert [p["pack"] for p in result.packs] == [1, 2] and result.failed == ()
        assert lg.show(2).budget == 400
        with pytest.raises(ledger.NotFoundError) as missing:
            lg.show(99)
        assert missing.value.exit_code == 3
        with pytest.raises(ledger.InputError, match="YYYY-MM-DD"):
            lg.build(as_of="21 July")
        with pytest.raises(ledger.InputError, match="counter"):
            lg.build(as_of="2026-07-21", counter="words")
        with pytest.raises(ledger.RefusedError, match="required chunk"):
            lg.build(as_of="2026-07-21", subject="stranger")
        assert len(lg.packs().packs) == 2


def test_open_refuses_a_missing_ledger_without_creating_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(ledger.LedgerError, match="ledger init"):
        ledger.open(str(path))
    assert not path.exists()
    created = ledger.init(str(path))
    assert created.before is None and created.after and created.database == str(path)
    assert ledger.init(str(path)).before == created.after


def test_the_core_selects_without_a_database() -> None:
    from ledger.core import Candidate, Request, select

    def cand(cid: str, tokens: int, priority: int) -> Any:
        return Candidate(
            cid,
            "v1",
            "evidence",
            "2026-01-01",
            None,
            "read",
            "approved-source",
            cid,
            tokens,
            priority,
            False,
            cid[0] * 64,
            cid[0] * 64,
        )

    ctx = select(
        [cand("aa", 5, 10), cand("bb", 5, 90)],
        Request(
            as_of="2026-07-21",
            budget=6,
            granted=frozenset({"read"}),
            allowed_trust=frozenset({"approved-source"}),
        ),
    )
    assert [c.id for c in ctx.items] == ["bb"]
    assert [(e.candidate.id, e.reason) for e in ctx.evicted] == [("aa", "budget")]
    assert ledger.select is select


def test_a_value_of_the_wrong_type_is_the_librarys_input_error(tmp_path: Path) -> None:
    """The bad-input audit: build(budget="170") and build(subject=None) raised a
    bare TypeError from inside the store; each is an InputError naming its
    parameter, as a value of the right type out of range is."""
    with ledger.open(str(tmp_path / "l.db"), create=True) as lg:
        seed_open_ledger(lg)
        for kwargs, param in (
            ({"budget": "170"}, "budget"),
            ({"budget": 1.5}, "budget"),
            ({"budget": 0}, "budget"),
            ({"subject": None}, "subject"),
            ({"subject": 7}, "subject"),
        ):
            with pytest.raises(ledger.InputError) as raised:
                lg.build("2026-07-21", **kwargs)
            assert raised.value.param == param, kwargs
        assert lg.build("2026-07-21", budget=170).used > 0


def test_report_hint_seconds_must_be_a_number_of_seconds(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    with ledger.open(str(db), create=True) as lg:
        seed_open_ledger(lg)
        lg.build("2026-07-21")
    for value in ("nan", "inf"):
        proc = run_ledger("report", "1", "--hint-seconds", value, "-o",
                          str(tmp_path / "r.html"), db=str(db))  # fmt: skip
        assert proc.returncode == 2 and "is not a number of seconds" in proc.stderr, proc.stderr
        assert not (tmp_path / "r.html").exists()
    ok = run_ledger("report", "1", "--hint-seconds", "0.5", "-o", str(tmp_path / "r.html"),
                    db=str(db))  # fmt: skip
    assert ok.returncode == 0, ok.stderr


def test_one_id_or_path_given_as_a_string_is_a_list_of_one(tmp_path: Path) -> None:
    """retract("refund-faq") read each character as an id ("'r': not a chunk
    id") and ingest_paths("file.jsonl") each character as a path ("/: is a
    directory"): one string is a list of one, as erase already took it."""
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps(chunk(id="refund-faq")) + "\n", encoding="utf-8")
    with ledger.open(str(tmp_path / "l.db"), create=True) as lg:
        assert lg.ingest_paths(str(source)).new == 1
        assert lg.ingest_paths(source).unchanged == 1
        retracted = lg.retract("refund-faq", from_date="2026-01-01")
        assert list(retracted.to_json()["ids"]) == ["refund-faq"]
        reinstated = lg.reinstate("refund-faq", from_date="2026-02-01")
        assert list(reinstated.to_json()["ids"]) == ["refund-faq"]
