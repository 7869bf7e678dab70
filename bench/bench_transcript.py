"""Benchmark `ledger transcript export` on a large generated transcript.

Generates a transcript of 100,000 exchanges (about 200 MB; `--quick`: 10,000,
about 20 MB) mixing plain and message-wrapped records, tool calls, CRLF lines,
backticks and non-ASCII text; annotates it (pinned, normal, aside); then runs the
real command line in subprocesses and measures wall time and peak memory (the
child's ru_maxrss from os.wait4). The baseline, in the same run, is a Python
process that reads the same file, hashes it, writes the same bytes to a file and
fsyncs it: the floor any export has to pay.

    .venv/bin/python bench/bench_transcript.py            # full size
    .venv/bin/python bench/bench_transcript.py --quick    # smaller

Targets: export under 20 s and under 1 GB peak memory at full size.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS = 20.0
TARGET_BYTES = 1 << 30

BASELINE = r"""
import hashlib, os, sys
data = open(sys.argv[1], "rb").read()
digest = hashlib.sha256(data).hexdigest()
with open(sys.argv[2], "wb") as out:
    out.write(data)
    out.flush()
    os.fsync(out.fileno())
print(digest)
"""

WORDS = (
    "ledger",
    "context",
    "budget",
    "exchange",
    "pinned",
    "refund",
    "policy",
    "über",
    "café",
    "日本語",
    "naïve",
    "`code`",
    "```",
    "tool",
    "result",
    "assistant",
    "👍",
)


def generate(path: Path, exchanges: int, target_bytes: int, seed: int = 7) -> int:
    """Write a transcript; return its size. Deterministic for a seed."""
    rng = random.Random(seed)
    per_exchange = max(200, target_bytes // exchanges)
    vocabulary = [rng.choice(WORDS) for _ in range(4096)]

    def text(size: int) -> str:
        start = rng.randrange(len(vocabulary) - 400)
        words: list[str] = []
        length = 0
        i = start
        while length < size:
            word = vocabulary[i % len(vocabulary)]
            words.append(word)
            length += len(word) + 1
            i += 1
        return " ".join(words)

    with open(path, "wb") as out:
        for n in range(1, exchanges + 1):
            eol = "\r\n" if n % 5 == 0 else "\n"
            body = per_exchange // 3
            call = f"call_{n}"
            if n % 2:
                records = [
                    {"role": "user", "content": text(body // 2)},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call,
                                "type": "function",
                                "function": {"name": "read", "arguments": "{}"},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": call, "content": text(body)},
                    {"role": "assistant", "content": text(body // 2)},
                ]
            else:
                records = [
                    {"type": "user", "message": {"role": "user", "content": text(body // 2)}},
                    {
                        "type": "assistant",
                        "message": {
                            "role": "assistant",
                            "content": [
                                {"type": "text", "text": text(40)},
                                {"type": "tool_use", "id": call, "name": "Bash", "input": {}},
                            ],
                        },
                    },
                    {
                        "type": "user",
                        "message": {
                            "role": "user",
                            "content": [
                                {"type": "tool_result", "tool_use_id": call, "content": text(body)}
                            ],
                        },
                    },
                    {
                        "type": "assistant",
                        "message": {"role": "assistant", "content": text(body // 2)},
                    },
                ]
            out.write(
                "".join(json.dumps(r, ensure_ascii=False) + eol for r in records).encode("utf-8")
            )
    return path.stat().st_size


def measure(args: list[str]) -> tuple[float, int, int, bytes, bytes]:
    """Run a subprocess; return (wall seconds, peak RSS bytes, exit code, out, err)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        # ru_maxrss is in KiB on Linux, bytes on macOS.
        scale = 1 if sys.platform == "darwin" else 1024
        return wall, usage.ru_maxrss * scale, proc.returncode, out.read(), err.read()


def ledger(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "ledger_cli", "transcript", *map(str, args)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 exchanges, ~20 MB")
    parser.add_argument("--exchanges", type=int, help="override the exchange count")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    options = parser.parse_args()
    exchanges = options.exchanges or (10_000 if options.quick else 100_000)
    target = exchanges * 2_150  # ~200 MB at 100,000 exchanges

    with tempfile.TemporaryDirectory(prefix="bench-transcript-") as tmp:
        work = options.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        source = work / "transcript.jsonl"
        sidecar = work / "priorities.json"
        outdir = work / "out"
        started = time.perf_counter()
        size = generate(source, exchanges, target)
        print(
            f"generated {exchanges:,} exchanges, {size / 1e6:.1f} MB "
            f"in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )

        # Every 1000th exchange pinned, every 10th an aside, the rest normal.
        assignments = [f"e{n:03d}=pinned" for n in range(1, exchanges + 1, 1000)]
        assignments += [f"e{n:03d}=aside" for n in range(10, exchanges + 1, 10)]
        before = (source.read_bytes(), source.stat().st_mtime_ns)

        rows = []
        wall, rss, code, _, err = measure(
            [sys.executable, "-c", BASELINE, str(source), str(work / "copy.jsonl")]
        )
        if code:
            sys.exit(f"baseline failed: {err.decode()}")
        rows.append(("baseline: read + sha256 + write", wall, rss))
        baseline_wall, baseline_rss = wall, rss

        wall, rss, code, _, err = measure(ledger("annotate", source, sidecar, *assignments))
        if code:
            sys.exit(f"annotate failed: {err.decode()}")
        rows.append(("ledger transcript annotate", wall, rss))

        budget = size // 2
        wall, rss, code, out, err = measure(ledger("export", source, sidecar, budget, outdir))
        if code:
            sys.exit(f"export failed: {err.decode()}")
        rows.append(("ledger transcript export", wall, rss))
        export_wall, export_rss = wall, rss

        written = (outdir / "continuation.md").stat().st_size
        manifest = json.loads((outdir / "omissions.json").read_text(encoding="utf-8"))
        assert written <= budget, (written, budget)
        assert len(manifest["exchanges"]) == exchanges
        assert (source.read_bytes(), source.stat().st_mtime_ns) == before

        print()
        print(
            f"transcript: {exchanges:,} exchanges, {size:,} bytes; budget {budget:,} bytes; "
            f"continuation.md {written:,} bytes, {manifest['selectedCount']:,} selected"
        )
        print()
        print(f"| {'step':<32} | {'wall s':>7} | {'ratio':>6} | {'peak MB':>8} | {'ratio':>6} |")
        print(f"|{'-' * 34}|{'-' * 9}|{'-' * 8}|{'-' * 10}|{'-' * 8}|")
        for name, wall, rss in rows:
            print(
                f"| {name:<32} | {wall:7.2f} | {wall / baseline_wall:6.1f} | "
                f"{rss / 1e6:8.0f} | {rss / baseline_rss:6.1f} |"
            )
        print()
        ok = export_wall < TARGET_SECONDS and export_rss < TARGET_BYTES
        scale = "" if exchanges >= 100_000 else " (targets are for the full size)"
        print(
            f"export target (< {TARGET_SECONDS:.0f} s, < 1 GB): {'met' if ok else 'NOT met'}{scale}"
        )
        # Peak memory of this driver, for completeness (it holds one copy of the source).
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        own *= 1 if sys.platform == "darwin" else 1024
        print(f"(bench driver peak: {own / 1e6:.0f} MB)", file=sys.stderr)
        return 0 if ok or exchanges < 100_000 else 1


if __name__ == "__main__":
    raise SystemExit(main())


def rows(quick: bool) -> list[dict[str, object]]:
    """bench/run.py's rows: export of a generated transcript against reading,
    hashing and writing the same bytes, with each child's own peak memory."""
    exchanges = 10_000 if quick else 100_000
    with tempfile.TemporaryDirectory(prefix="bench-transcript-") as tmp:
        work = Path(tmp)
        source, sidecar, outdir = work / "transcript.jsonl", work / "priorities.json", work / "out"
        size = generate(source, exchanges, exchanges * 2_150)
        assignments = [f"e{n:03d}=pinned" for n in range(1, exchanges + 1, 1000)]
        assignments += [f"e{n:03d}=aside" for n in range(10, exchanges + 1, 10)]
        base_wall, base_rss, code, _, err = measure(
            [sys.executable, "-c", BASELINE, str(source), str(work / "copy.jsonl")]
        )
        if code:
            raise RuntimeError(f"baseline failed: {err.decode()}")
        _, _, code, _, err = measure(ledger("annotate", source, sidecar, *assignments))
        if code:
            raise RuntimeError(f"annotate failed: {err.decode()}")
        wall, rss, code, _, err = measure(ledger("export", source, sidecar, size // 2, outdir))
        if code:
            raise RuntimeError(f"export failed: {err.decode()}")
        written = (outdir / "continuation.md").stat().st_size
        if written > size // 2:
            raise RuntimeError("continuation.md over budget")
        note = f"{exchanges:,} exchanges, {size / 1e6:.0f} MB; baseline: read+sha256+write"
        return [
            {
                "bench": f"transcript export ({size / 1e6:.0f} MB)",
                "ours": wall,
                "baseline": base_wall,
                "unit": "s",
                "target": "< 20 s",
                "ok": wall < TARGET_SECONDS,
                "note": note,
                "peak_mb": rss / 1e6,
            },
            {
                "bench": "transcript export: peak memory",
                "ours": rss / 1e6,
                "baseline": base_rss / 1e6,
                "unit": "MB",
                "target": "< 1 GB",
                "ok": rss < TARGET_BYTES,
                "note": "the export process alone",
                "peak_mb": rss / 1e6,
            },
        ]
