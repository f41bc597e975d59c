"""`memory compress` time against the transcript's size: a dialogue-heavy Markdown session (user and
assistant turns, no tool output) at 25 KB, 100 KB, 1 MB and 5 MB.

    python bench/compress_size.py [--sizes 25k,100k,1m,5m] [--embedder e5] [--timeout 600] [--src DIR] [--fill-wait 3600]

For each size: a new memory root (`memory init`; MEMTOOL_EMBEDDER set to --embedder), one seeded
synthetic session of that size written to a file, then `memory compress FILE` as a new process (as
the session-end hook runs it), timed wall. compress_s is that time (None when it passed --timeout:
the process is killed); cpu_s its own CPU time (user + system: what it costs whatever the load, which
`load` gives as the 1-minute load average before it). After it: fill_s, seconds from the compress's end until the store has every
document indexed and with a vector (the background fill started by the compress; None when the
store still misses some after --fill-wait seconds: the fill is then stopped, and
vectors_missing_at_end says how many it had left), and passages, the kept transcript's chunks.

`--src DIR`: run another checkout's code (the `memtool` package under DIR, e.g. main's, put first on
PYTHONPATH) to measure before and after in one run. Turns say "decided", "keep ... at N" and the
like often, as long coding sessions do. Prints one JSON line per size, then a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = {"k": 1024, "m": 1024 * 1024}
NAMES = "timeout limit retries replicas batch_size pool_size ttl workers threshold max_connections window budget".split()
UNITS = ("s", "ms", "Mi", "", "%", "k")
THINGS = (
    "the export job",
    "the billing worker",
    "the retry queue",
    "the auth middleware",
    "the invoice rounding",
    "the cache layer",
    "the nightly backup",
    "the webhook handler",
    "the search index",
    "the CSV importer",
    "the rate limiter",
    "the payments API",
)
PEOPLE = "Dana Alice Bob Carol Erin Frank Grace Heidi Ivan Judy".split()
USER_LINES = (
    "Can you look at why {thing} is slow again? {person} saw it stall on Tuesday.",
    "Let's keep the {name} at {value} for now and revisit after the release.",
    "I decided we go with {thing} as it is; raise the {name} to {value}.",
    "What happens to {thing} when the {name} is {value}? I worry about the edge case {person} raised.",
    "Agreed. Set the {name} to {value} and leave the rest alone.",
    "No, don't touch {thing}; we keep it stable until {person} is back.",
    "Ok, going with your second option. {person} owns the follow-up on {thing}.",
)
ASSISTANT_LINES = (
    "I looked at {thing}: the {name} is {value}, which explains the stalls under load. "
    "We could raise it, or split the work into smaller batches so each call finishes sooner.",
    "Decided then: we keep the {name} at {value} and I'll add a test that fails if {thing} regresses.",
    "Here is what I found in {thing}. The loop re-reads the whole table on every pass, so the time grows with the rows; "
    "reading it once and indexing by id makes it linear.",
    "I changed {thing} so the {name} comes from the settings (default {value}) instead of a constant in the code.",
    "Two options: 1. keep the {name} at {value} and accept the latency; 2. lower it and retry on timeout. I'd take the second.",
    "Done: {thing} now logs each retry with its reason, and the {name} stays at {value}. {person} asked for the dashboard too.",
    "The tests pass locally. The flaky one in {thing} was a race between the writer and the reader; it holds the lock now.",
)


def parse_size(text: str) -> int:
    text = text.strip().lower()
    return int(float(text[:-1]) * SIZES[text[-1]]) if text[-1] in SIZES else int(text)


def dialogue(size: int, seed: int = 36) -> str:
    """A seeded Markdown dialogue of about `size` bytes (UTF-8): alternating user and assistant turns."""
    rng = random.Random(seed)
    out, total, turn = ["# Session: a long pairing session\n"], 0, 0
    while total < size:
        lines = USER_LINES if turn % 2 == 0 else ASSISTANT_LINES
        said = " ".join(
            rng.choice(lines).format(
                thing=rng.choice(THINGS), person=rng.choice(PEOPLE), name=rng.choice(NAMES), value=f"{rng.randint(1, 999)}{rng.choice(UNITS)}"
            )
            for _ in range(rng.randint(1, 3))
        )
        block = f"\n**{'User' if turn % 2 == 0 else 'Assistant'}:** {said}\n"
        out.append(block)
        total += len(block.encode("utf-8"))
        turn += 1
    return "".join(out)


def env_for(src: Path | None, embedder: str) -> dict[str, str]:
    env = dict(os.environ, MEMTOOL_BACKGROUND_EMBED="true", MEMTOOL_EMBEDDER=embedder)  # the background fill inherits them
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def gaps(root: Path) -> dict[str, str]:
    path = root / "memory" / ".cache" / "memtool.sqlite"
    if not path.is_file():
        return {}
    conn = sqlite3.connect(path, timeout=30)
    try:
        return dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('vectors_missing', 'vectors_total', 'words_missing')").fetchall())
    finally:
        conn.close()


def fill_running(root: Path) -> bool:
    from filelock import FileLock, Timeout

    try:
        with FileLock(str(root / "memory" / ".cache" / "embed.lock"), timeout=0):
            return False
    except Timeout:
        return True


def passages(root: Path) -> int:
    conn = sqlite3.connect(root / "memory" / ".cache" / "memtool.sqlite", timeout=30)
    try:
        return conn.execute("SELECT count(*) FROM docs WHERE kind = 'transcript'").fetchone()[0]
    finally:
        conn.close()


def run_one(size: int, embedder: str, timeout: float, src: Path | None, fill_wait: float, work: Path) -> dict:
    root = work / f"root-{size}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    env = env_for(src, embedder)
    py = [sys.executable, "-m", "memtool", "--root", str(root)]
    subprocess.run([*py, "init"], check=True, capture_output=True, env=env, cwd=work)  # cwd: not a checkout, whose memtool/ would come first
    session = work / f"session-{size}.md"
    session.write_text(dialogue(size), encoding="utf-8")
    load, before = os.getloadavg()[0], resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    try:
        out = subprocess.run([*py, "compress", str(session), "--date", "2026-11-30"], capture_output=True, text=True, env=env, timeout=timeout, cwd=work)
    except subprocess.TimeoutExpired:
        return {"size": size, "bytes": session.stat().st_size, "compress_s": None, "timeout_s": timeout, "load": round(load, 1)}
    compress_s = time.perf_counter() - t
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the compress's own CPU (the detached fill is not waited for: not in it)
    cpu_s = used.ru_utime + used.ru_stime - before.ru_utime - before.ru_stime
    if out.returncode != 0:
        raise SystemExit(f"compress failed: {out.stderr}")
    t = time.perf_counter()
    fill_s = None
    while time.perf_counter() - t < fill_wait:
        g = gaps(root)
        if g.get("vectors_missing", "0") == "0" and g.get("words_missing", "0") == "0":
            fill_s = time.perf_counter() - t
            break
        if not fill_running(root) and time.perf_counter() - t > 60:
            break  # nothing fills what is missing
        time.sleep(0.5)
    if fill_s is None:  # not done within --fill-wait: the fill this compress started is stopped (its pid is in its log)
        log = root / "memory" / ".cache" / "embed.log"
        for pid in re.findall(r"\bpid (\d+): filling", log.read_text() if log.is_file() else ""):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGTERM)
    while fill_running(root):  # the fill's last commit is in: let it exit before the root goes
        time.sleep(0.2)
    return {
        "size": size,
        "bytes": session.stat().st_size,
        "compress_s": round(compress_s, 2),
        "cpu_s": round(cpu_s, 2),
        "load": round(load, 1),
        "fill_s": None if fill_s is None else round(fill_s, 1),
        "passages": passages(root),
        "vectors_missing_at_end": int(gaps(root).get("vectors_missing", "0")),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="25k,100k,1m,5m")
    p.add_argument("--embedder", default="e5")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a compress may take before it is killed")
    p.add_argument("--fill-wait", type=float, default=3600.0, help="seconds to wait for the background fill")
    p.add_argument("--src", type=Path, help="a checkout whose memtool package to run (before/after in one run)")
    p.add_argument("--workdir", type=Path)
    args = p.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="memtool-compress-size-"))
    rows = []
    for size in map(parse_size, args.sizes.split(",")):
        row = {
            "code": str(args.src or "this checkout"),
            "embedder": args.embedder,
            **run_one(size, args.embedder, args.timeout, args.src, args.fill_wait, work),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    print("\n| size | compress wall (s) | its CPU (s) | load (1 min) | background fill after it (s) | passages |\n|---|---|---|---|---|---|")
    for r in rows:
        took = f"{r['compress_s']}" if r["compress_s"] is not None else f"> {r['timeout_s']:.0f} (killed)"
        print(f"| {r['bytes'] / 1024:,.0f} KB | {took} | {r.get('cpu_s', '—')} | {r['load']} | {r.get('fill_s', '—')} | {r.get('passages', '—')} |")


if __name__ == "__main__":
    main()
