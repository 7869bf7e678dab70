"""Right answers on a corpus that changes: the httpx docs a year apart, asked with `ledger why`.

`fixtures/docs/httpx-a/` and `httpx-b/` hold 14 real Markdown pages of the
httpx documentation (encode/httpx, BSD-3-Clause) at two commits a year apart
(fixtures/docs/SOURCES.md): A of 2024-05-05 and B of 2025-05-02. Between them
`environment_variables.md` lost its `SSLKEYLOGFILE`, `SSL_CERT_FILE` and
`SSL_CERT_DIR` sections, `advanced/ssl.md` was rewritten (an `SSLContext` and
`truststore` guide), and seven other pages changed. The rules
(`fixtures/docs/httpx-rules.toml`) put `advanced/**` behind the permission
`advanced-read`, give `third_party_packages.md` the trust `unverified` (which
the policy here does not allow) and split sections at 120 tokens.

The story, through the CLI on a SQLite ledger: two subjects (`support` may read
the docs, `engineer` also the advanced guides), A ingested as of 2024-05-06, a
pack, B ingested as a snapshot as of 2025-05-02 (what B no longer has is
retracted from that date), then plain and retrieval packs. Each question of
QUESTIONS is asked with `ledger why TEXT --pack N --json`; its truth was decided
by reading the two folders and the rules (the comment beside it says why), not
by running the code. `test_admitting_hints_admit` applies, on a copy of the
ledger, every hint an answer marks `"admits": true`, literally (the command or
option each step names), and rebuilds the pack as it was built: the chunk must
then be admitted. docs/httpx-acceptance.md has the table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import dbtools
from tests.conftest import ROOT, ledger_json, run_ledger

DOCS = ROOT / "fixtures" / "docs"
A, B = DOCS / "httpx-a", DOCS / "httpx-b"
RULES = DOCS / "httpx-rules.toml"
A_DATE, B_DATE = "2024-05-06", "2025-05-02"  # valid time of A and of B (B's commit date)
BEFORE_B, AFTER_B = "2024-06-01", "2025-06-01"  # the packs' as-of dates
BIG = 100_000  # the policy's budget: every pack without --budget holds all it may
SUPPORT, ENGINEER = "support", "engineer"
ALLOWED = ("approved-source",)

ADMITTED, EVICTED, NOT_CANDIDATE = "admitted", "evicted", "not_candidate"

# The packs, by name: (subject, as_of, budget, query, top). "eng-before-b" is
# built before B is ingested, every other one after it.
PACKS: dict[str, tuple[str, str, int | None, str | None, int | None]] = {
    "eng-before-b": (ENGINEER, BEFORE_B, None, None, None),
    "eng-2025": (ENGINEER, AFTER_B, None, None, None),
    "sup-2025": (SUPPORT, AFTER_B, None, None, None),
    "sup-proxies": (SUPPORT, AFTER_B, None, "proxy environment variables", 5),
    "eng-timeouts": (ENGINEER, AFTER_B, None, "timeouts", 5),
    # As of a date before B's, at a ledger mark after B's ingest.
    "eng-2024-late": (ENGINEER, BEFORE_B, None, None, None),
    "sup-budget": (SUPPORT, AFTER_B, 300, None, None),
}


@dataclass(frozen=True)
class Truth:
    """What the answer must say about one chunk id: its title (the heading path),
    the version shown, its status, reason and a subset of its detail."""

    title: str
    version: str | None
    status: str
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    pack: str
    # The lead match (matches[0]) must be one of these chunks, as its truth says.
    lead: tuple[Truth, ...]
    # Other versions of the lead's id that must be listed under it:
    # (source_version, status, reason).
    under: tuple[tuple[str, str, str], ...] = ()
    # The hint of the lead: a step of this kind must be in it (with these fields),
    # and no step of the kinds in `hint_not` may come before it.
    hint: tuple[str, dict[str, Any]] | None = None
    hint_not: tuple[str, ...] = ()
    verdict: str | None = None  # only for never_ingested


def T(
    title: str, version: str | None, status: str, reason: str | None = None, **detail: Any
) -> Truth:
    return Truth(title, version, status, reason, detail)


RETRACTED_B = {"from": B_DATE}  # the snapshot ingest of B retracts from B's date
SSLKEYLOG = "Environment Variables > SSLKEYLOGFILE"
CERT_FILE = "Environment Variables > SSL_CERT_FILE"
CERT_DIR = "Environment Variables > SSL_CERT_DIR"
NO_TOP = ("retrieve", "budget")  # before the reinstate step, these cannot admit it
CLIENT_INSTANCES = "Configuring client instances"

QUESTIONS: tuple[Question, ...] = (
    # -- removed sections, asked of a pack built for another question --------
    # environment_variables.md: A has `## SSLKEYLOGFILE` (lines 11-43), B has no
    # such section and mentions SSLKEYLOGFILE nowhere. B's snapshot ingest
    # retracts both pieces from 2025-05-02; support may read the page
    # (docs-read, approved-source), so the first gate that keeps it out of a
    # pack as of 2025-06-01 is `retracted` (gate 5), whatever the query was.
    Question(
        "removed-sslkeylogfile",
        "SSLKEYLOGFILE",
        "sup-proxies",
        (T(SSLKEYLOG, "A", NOT_CANDIDATE, "retracted", **RETRACTED_B),),
        hint=("reinstate", {}),
        hint_not=NO_TOP,
    ),
    # A's `## SSL_CERT_FILE` holds the only `SSL_CERT_FILE=/path/to/ca-certs/
    # ca-bundle.crt` example; B dropped the section: retracted from 2025-05-02.
    Question(
        "removed-ssl-cert-file",
        '"SSL_CERT_FILE=/path/to/ca-certs/ca-bundle.crt"',
        "sup-proxies",
        (T(CERT_FILE, "A", NOT_CANDIDATE, "retracted", **RETRACTED_B),),
        hint=("reinstate", {}),
        hint_not=NO_TOP,
    ),
    # A's `## SSL_CERT_DIR` example (line 68), gone in B: retracted.
    Question(
        "removed-ssl-cert-dir",
        '"SSL_CERT_DIR=/path/to/ca-certs/"',
        "sup-proxies",
        (T(CERT_DIR, "A", NOT_CANDIDATE, "retracted", **RETRACTED_B),),
        hint=("reinstate", {}),
        hint_not=NO_TOP,
    ),
    # `c_rehash` is only in A's SSL_CERT_DIR section (line 63): retracted.
    Question(
        "removed-rehash",
        "rehash",
        "sup-proxies",
        (T(CERT_DIR, "A", NOT_CANDIDATE, "retracted", **RETRACTED_B),),
        hint=("reinstate", {}),
        hint_not=NO_TOP,
    ),
    # advanced/ssl.md A, "## Changing the verification defaults" (lines 3-49)
    # shows `httpx.create_ssl_context()`; B rewrote the page without that
    # heading or function. Engineer may read advanced pages: retracted, and not
    # "not retrieved" although the pack was built for "timeouts".
    Question(
        "removed-create-ssl-context",
        '"create_ssl_context"',
        "eng-timeouts",
        (T("Changing the verification defaults", "A", NOT_CANDIDATE, "retracted", **RETRACTED_B),),
        hint=("reinstate", {}),
        hint_not=NO_TOP,
    ),
    # advanced/ssl.md A, "## SSL configuration on client instances": "an isolated
    # connection pool" (line 59); B has no such heading or words. In a plain pack
    # the A version is a candidate, evicted by gate 5.
    Question(
        "removed-isolated-pool",
        '"isolated connection pool"',
        "eng-2025",
        (T("SSL configuration on client instances", "A", EVICTED, "retracted", **RETRACTED_B),),
        hint=("reinstate", {}),
        hint_not=NO_TOP,
    ),
    # The words SSL, CERT, FILE (the index splits at `_`): the live text about
    # them is B's advanced/ssl.md "Working with SSL_CERT_FILE and SSL_CERT_DIR",
    # which support may not read (gate 1, advanced-read); the old env-var
    # section is retracted. Either leads, each with its own truth.
    Question(
        "ssl-cert-file-words",
        "SSL_CERT_FILE",
        "sup-proxies",
        (
            T(
                "Working with SSL_CERT_FILE and SSL_CERT_DIR",
                "B",
                NOT_CANDIDATE,
                "permission_denied",
                required_permission="advanced-read",
            ),
            T(CERT_FILE, "A", NOT_CANDIDATE, "retracted", **RETRACTED_B),
        ),
    ),
    # -- changed sections: the pack shows B, A is superseded under it ---------
    # advanced/proxies.md "## SOCKS": A `pip install httpx[socks]`, B
    # `$ pip install httpx[socks]`; both match the phrase. Engineer, 2025-06-01:
    # B admitted, A superseded by B (gate 6).
    Question(
        "changed-socks",
        '"pip install httpx[socks]"',
        "eng-2025",
        (T("SOCKS", "B", ADMITTED),),
        under=(("A", EVICTED, "superseded"),),
    ),
    # http2.md "## Enabling HTTP/2": the same `$ ` change; a docs-read page.
    Question(
        "changed-http2-install",
        '"pip install httpx[http2]"',
        "sup-2025",
        (T("HTTP/2 > Enabling HTTP/2", "B", ADMITTED),),
        under=(("A", EVICTED, "superseded"),),
    ),
    # compatibility.md "## Streaming responses": A says "making `request.text`
    # and `response.content` available", B corrected it to `response.text`. The
    # words are only in A; the pack has this id as B: shown as B (admitted),
    # with A superseded under it.
    Question(
        "superseded-old-wording",
        '"making `request.text`"',
        "sup-2025",
        (T("Requests Compatibility Guide > Streaming responses", "B", ADMITTED),),
        under=(("A", EVICTED, "superseded"),),
    ),
    # advanced/ssl.md "Client side certificates": B's text names
    # `.load_cert_chain()`, A's ("Client Side Certificates") does not: B admitted.
    Question(
        "changed-load-cert-chain",
        '"load_cert_chain"',
        "eng-2025",
        (T("Client side certificates", "B", ADMITTED),),
    ),
    # -- a pack as of 2024-06-01 at a mark after B's ingest --------------------
    # `truststore` is only in B's "Configuring client instances" (effective
    # 2025-05-02): not yet effective as of 2024-06-01; the earliest as-of date
    # that admits it is B's date.
    Question(
        "not-yet-effective-truststore",
        "truststore",
        "eng-2024-late",
        (T(CLIENT_INSTANCES, "B", EVICTED, "not_yet_effective", effective_from=B_DATE),),
        hint=("as_of", {"as_of": B_DATE}),
    ),
    # SOCKS again: as of 2024-06-01 the pack holds A; B is not yet effective.
    Question(
        "changed-socks-before-b-date",
        '"pip install httpx[socks]"',
        "eng-2024-late",
        (T("SOCKS", "A", ADMITTED),),
        under=(("B", EVICTED, "not_yet_effective"),),
    ),
    # The retraction is from 2025-05-02: as of 2024-06-01 the section is live.
    Question(
        "removed-but-live-then",
        "SSLKEYLOGFILE",
        "eng-2024-late",
        (T(SSLKEYLOG, "A", ADMITTED),),
    ),
    # -- ingested later: a pack built before B is ingested ---------------------
    Question(
        "ingested-later-truststore",
        "truststore",
        "eng-before-b",
        (T(CLIENT_INSTANCES, "B", NOT_CANDIDATE, "ingested_later"),),
    ),
    # -- permission ------------------------------------------------------------
    # advanced/transports.md "## HTTP Transport" (lines 24-26): "a Unix Domain
    # Socket"; advanced/** needs advanced-read, support has docs-read only.
    Question(
        "permission-uds",
        '"Unix Domain Socket"',
        "sup-2025",
        (
            T(
                "HTTP Transport",
                "A",
                EVICTED,
                "permission_denied",
                required_permission="advanced-read",
            ),
        ),
        hint=("grant", {"permission": "advanced-read"}),
    ),
    # advanced/proxies.md "FORWARD vs TUNNEL": "**Tunnelling**" (line 62); a
    # retrieval pack for support never considered it: gate 1 is the first cause.
    Question(
        "permission-never-considered",
        "Tunnelling",
        "sup-proxies",
        (
            T(
                "Proxy mechanisms > FORWARD vs TUNNEL",
                "A",
                NOT_CANDIDATE,
                "permission_denied",
                required_permission="advanced-read",
            ),
        ),
    ),
    # advanced/ssl.md "Making HTTPS requests to a local server" names
    # `--ssl-keyfile` (and B's "Client side certificates" says "keyfile"): both
    # advanced; support may not read them. Asked with `--` before the text.
    Question(
        "permission-dash-text",
        "--ssl-keyfile",
        "sup-2025",
        (
            T(
                "Making HTTPS requests to a local server",
                None,
                EVICTED,
                "permission_denied",
                required_permission="advanced-read",
            ),
            T(
                "Client side certificates",
                "B",
                EVICTED,
                "permission_denied",
                required_permission="advanced-read",
            ),
        ),
        hint=("grant", {"permission": "advanced-read"}),
    ),
    # -- trust -----------------------------------------------------------------
    # third_party_packages.md B, "### httpdbg" (new in B): trust `unverified`,
    # not allowed by the policy (approved-source only).
    Question(
        "trust-httpdbg",
        "httpdbg",
        "sup-2025",
        (
            T(
                "Third Party Packages > Libraries with HTTPX support > httpdbg",
                "B",
                EVICTED,
                "trust_denied",
                trust="unverified",
            ),
        ),
        hint=("allow_trust", {"trust": "unverified"}),
    ),
    # third_party_packages.md A, "### robox", dropped in B: retracted (gate 5),
    # but the first gate it fails is trust (gate 2).
    Question(
        "trust-before-retraction",
        "robox",
        "sup-2025",
        (
            T(
                "Third Party Packages > Plugins > robox",
                "A",
                EVICTED,
                "trust_denied",
                trust="unverified",
            ),
        ),
    ),
    # -- budget ----------------------------------------------------------------
    # logging.md "# Logging": the debug-output fence (lines 22-42, 21 long lines,
    # far over 300 tokens) stays whole; both versions hold `start_tls.started`.
    # A plain pack with --budget 300 cannot hold it: B evicted by budget, A
    # superseded by B; the hint is a budget that was checked to admit it.
    Question(
        "budget-logging",
        '"start_tls.started"',
        "sup-budget",
        (T("Logging", "B", EVICTED, "budget"),),
        under=(("A", EVICTED, "superseded"),),
        hint=("budget", {}),
    ),
    # -- not retrieved ---------------------------------------------------------
    # http2.md "# HTTP/2" (lines 8-15, unchanged): "multiplexing"; it passes
    # every gate for engineer but a retrieval build for "timeouts" with K 5 did
    # not take it.
    Question(
        "not-retrieved-http2",
        "multiplexing",
        "eng-timeouts",
        (T("HTTP/2", "A", NOT_CANDIDATE, "not_retrieved", query="timeouts", top=5),),
    ),
    # -- never ingested --------------------------------------------------------
    # "brotli" is in neither folder.
    Question("never-ingested", "brotli", "sup-2025", (), verdict="never_ingested"),
    # -- admitted --------------------------------------------------------------
    # B's truststore section, engineer, as of 2025-06-01, budget 100000.
    Question(
        "admitted-truststore",
        "truststore",
        "eng-2025",
        (T(CLIENT_INSTANCES, "B", ADMITTED),),
    ),
    # exceptions.md (unchanged, docs-read): CookieConflict in the hierarchy and
    # the classes list; support, 2025-06-01.
    Question(
        "admitted-cookieconflict",
        "CookieConflict",
        "sup-2025",
        (
            T("Exceptions > The exception hierarchy", "A", ADMITTED),
            T("Exceptions > Exception classes", "A", ADMITTED),
        ),
    ),
)


def ingest(db: str, folder: Path, version: str, date: str) -> dict[str, Any]:
    return dict(
        ledger_json(
            "ingest",
            str(folder),
            "--rules",
            str(RULES),
            "--source-version",
            version,
            "--effective-from",
            date,
            db=db,
        )
    )


def build_args(
    subject: str, as_of: str, budget: int | None, query: str | None, top: int | None
) -> list[str]:
    args = ["build", "--as-of", as_of, "--subject", subject]
    if budget is not None:
        args += ["--budget", str(budget)]
    if query is not None:
        args += ["--query", query]
    if top is not None:
        args += ["--top", str(top)]
    return args


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("httpx")
    db = dbtools.new_ledger(tmp / "ledger", "sqlite")
    run_ledger("subject", "grant", SUPPORT, "docs-read", db=db, check=True)
    run_ledger("subject", "grant", ENGINEER, "docs-read", "advanced-read", db=db, check=True)
    allow = [arg for label in ALLOWED for arg in ("--allow-trust", label)]
    run_ledger("policy", "set", *allow, "--budget", str(BIG), db=db, check=True)
    out: dict[str, Any] = {"db": db, "tmp": tmp, "packs": {}}
    out["a"] = ingest(db, A, "A", A_DATE)
    for name in ("eng-before-b",):
        out["packs"][name] = ledger_json(*build_args(*PACKS[name]), db=db)["pack"]
    out["b"] = ingest(db, B, "B", B_DATE)
    for name, spec in PACKS.items():
        if name not in out["packs"]:
            out["packs"][name] = ledger_json(*build_args(*spec), db=db)["pack"]
    return out


def ask(db: str, text: str, pack: int) -> dict[str, Any]:
    args = ["why", "--pack", str(pack), "--json"]
    args += ["--", text] if text.startswith("-") else [text]
    proc = run_ledger(*args, db=db)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def test_story_ingests_both_snapshots(story: dict[str, Any]) -> None:
    # 14 pages each; B changed 8 of them and left 6 as they were.
    assert story["a"]["files"] == story["b"]["files"] == 14
    assert story["b"]["parsed"] == 8
    assert len(story["b"]["retracted"]["ids"]) >= 5  # the removed sections, at least 5 chunks
    assert len(story["packs"]) == len(PACKS)


def agrees(match: dict[str, Any], truth: Truth) -> bool:
    return (
        match["title"] == truth.title
        and (truth.version is None or match["source_version"] == truth.version)
        and match["status"] == truth.status
        and match["reason"] == truth.reason
        and all((match["detail"] or {}).get(k) == v for k, v in truth.detail.items())
    )


def steps_of(hint: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list((hint or {}).get("steps") or [])


@pytest.mark.parametrize("q", QUESTIONS, ids=[q.key for q in QUESTIONS])
def test_answer(story: dict[str, Any], q: Question) -> None:
    got = ask(story["db"], q.text, story["packs"][q.pack])
    if q.verdict is not None:
        assert got["verdict"] == q.verdict, got["sentence"]
        assert got["matches"] == []
        return
    assert got["matches"], got["sentence"]
    lead = got["matches"][0]
    shown = {k: lead[k] for k in ("id", "source_version", "title", "status", "reason", "detail")}
    assert any(agrees(lead, t) for t in q.lead), (shown, got["sentence"])
    assert got["verdict"] == lead["status"]
    # Every other listed version of a chunk named by the truth agrees with it too.
    for m in got["matches"][1:]:
        for t in q.lead:
            if m["title"] == t.title and m["source_version"] == (t.version or m["source_version"]):
                if m["id"] != lead["id"] or m["source_version"] != lead["source_version"]:
                    assert agrees(m, t), (m["id"], m["source_version"], m["status"], m["reason"])
    same_id = [m for m in got["matches"] if m["id"] == lead["id"]]
    for version, status, reason in q.under:
        listed = [m for m in same_id if m["source_version"] == version]
        assert listed, (lead["id"], version, [m["source_version"] for m in same_id])
        assert (listed[0]["status"], listed[0]["reason"]) == (status, reason)
        if reason == "superseded":  # by the version the pack shows
            assert listed[0]["detail"]["by"]["source_version"] == lead["source_version"]
        assert same_id.index(listed[0]) > 0  # under the version the pack shows
    if lead["status"] != ADMITTED:
        assert lead["hint"], got["sentence"]  # every match not admitted has its hint
    if q.hint is not None:
        kind, fields = q.hint
        steps = steps_of(lead["hint"])
        kinds = [s["kind"] for s in steps]
        assert kind in kinds, (kinds, got["sentence"])
        step = steps[kinds.index(kind)]
        assert all(step.get(k) == v for k, v in fields.items()), step
        assert not set(kinds[: kinds.index(kind)]) & set(q.hint_not), kinds
        if kind == "reinstate":  # the text names the command that undoes it
            assert f"ledger reinstate {lead['id']}" in got["sentence"], got["sentence"]


# -- every hint marked as admitting, applied literally, admits ---------------


def apply_hint(db: str, pack: dict[str, Any], hint: dict[str, Any]) -> list[str]:
    """Apply the hint's steps to the ledger `db` (a copy) as a user would, and
    return the build command that rebuilds the pack with them."""
    subject, as_of, budget = pack["subject"], pack["as_of"], pack["budget"]
    retrieval = pack.get("retrieval") or {}
    query, top = retrieval.get("query"), retrieval.get("top")
    allowed = list(ALLOWED)
    for step in hint["steps"]:
        kind = step["kind"]
        if kind == "grant":
            run_ledger("subject", "grant", subject, step["permission"], db=db, check=True)
        elif kind == "allow_trust":
            allowed.append(step["trust"])
            flags = [arg for label in allowed for arg in ("--allow-trust", label)]
            run_ledger("policy", "set", *flags, db=db, check=True)
        elif kind == "reinstate":
            run_ledger("reinstate", step["id"], "--from", step["from"], db=db, check=True)
        elif kind == "as_of" or (kind in ("superseded_by", "retracted") and step.get("as_of")):
            as_of = step["as_of"]
        elif kind == "budget":
            budget = step["budget"]
        elif kind == "retrieve":
            query, top = step["query"], step["top"]
        elif kind == "rebuild":
            pass  # build again, as the pack was built
        else:
            raise AssertionError(f"a hint that admits names a step no user can apply: {step}")
    return build_args(subject, as_of, budget, query, top)


@pytest.mark.parametrize("q", QUESTIONS, ids=[q.key for q in QUESTIONS])
def test_admitting_hints_admit(story: dict[str, Any], q: Question) -> None:
    number = story["packs"][q.pack]
    got = ask(story["db"], q.text, number)
    pack = ledger_json("show", str(number), db=story["db"])
    admitting = [m for m in got["matches"] if m["hint"] and m["hint"].get("admits")]
    for i, m in enumerate(admitting):
        copy = dbtools.copy_ledger(story["db"], story["tmp"] / f"{q.key}-{i}.db")
        args = apply_hint(copy, pack, m["hint"])
        rebuilt = ledger_json(*args, db=copy)
        admitted = {(a["id"], a["source_version"]) for a in rebuilt["admitted"]}
        assert (m["id"], m["source_version"]) in admitted, (m["hint"], args)
