"""Speed of `memory reindex` / `memory watch` on a synthetic store.

    python bench/sync.py                     # 10,000 entries, 1,000 Markdown files, default embedder
    python bench/sync.py --entries 2000 --markdown 200 --keep /tmp/store

Measures: a full rebuild (`reindex --full`, every entry embedded with the default embedder), a
no-change `reindex` (in process and as the `memory` command), one hand-edited summary (--rounds
times, each in another day file; its phases are a mean per sync), and how long an edit to a daily
log takes to become visible to `memory search` under `memory watch`.
Everything is offline; the store lives in a temporary folder unless --keep is given.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date, timedelta
from pathlib import Path

from memtool import constants as C
from memtool.app import open_memory
from memtool.dayfile import day_document
from memtool.models import Entities, Entry
from memtool.scaffold import init
from memtool.store import Layout
from memtool.sync import sync

WORDS = [
    "auth",
    "token",
    "refresh",
    "deploy",
    "kubernetes",
    "postgres",
    "migration",
    "index",
    "cache",
    "latency",
    "react",
    "router",
    "bundle",
    "webpack",
    "vite",
    "docker",
    "compose",
    "nginx",
    "timeout",
    "retry",
    "queue",
    "kafka",
    "consumer",
    "schema",
    "graphql",
    "resolver",
    "test",
    "fixture",
    "flaky",
    "ci",
    "pipeline",
    "lint",
    "typescript",
    "python",
    "rust",
    "memory",
    "leak",
    "profile",
    "flamegraph",
    "thread",
    "async",
    "await",
    "session",
    "cookie",
    "cors",
    "header",
    "payment",
    "stripe",
    "webhook",
    "invoice",
    "email",
    "template",
    "search",
    "ranking",
    "bm25",
    "vector",
    "embedding",
    "model",
    "prompt",
    "agent",
    "tool",
    "release",
    "tag",
]
PEOPLE = ["alice", "bob", "carol", "dave", "erin", "frank"]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def generate(root: Path, entries: int, markdown: int, seed: int = 7) -> None:
    """A store with `entries` entries over ~a year of day files and `markdown` Markdown files."""
    rng = random.Random(seed)
    init(root)
    layout = Layout(root)
    start = date(2025, 1, 1)
    by_day: dict[str, list[Entry]] = {}
    for i in range(entries):
        day = start + timedelta(days=i * 365 // max(entries, 1))
        ts = f"{day.isoformat()}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}.000Z"
        e = Entry(
            id=f"{C.ENTRY_ID_PREFIX}-{day:%Y%m%d}-{i:08x}",
            timestamp=ts,
            summary=_text(rng, 30),
            keywords=rng.sample(WORDS, 6),
            topics=rng.sample(WORDS, 2),
            decisions=[_text(rng, 10)],
            action_items=[_text(rng, 8)],
            entities=Entities(people=rng.sample(PEOPLE, 2), systems=rng.sample(WORDS, 2)),
        )
        by_day.setdefault(day.isoformat(), []).append(e)
    for day, items in by_day.items():
        layout.day_file(day).write_text(day_document(day, items), encoding="utf-8")
    logs = max(markdown - len(C.LAYER3_FILES), 0)
    for i in range(logs):
        day = start - timedelta(days=i + 1)
        lines = [f"# {day}"] + [f"- {rng.randrange(24):02d}:{rng.randrange(60):02d} {_text(rng, 14)}" for _ in range(10)]
        layout.daily_log(day.isoformat()).write_text("\n".join(lines) + "\n", encoding="utf-8")


PHASES: dict[str, float] = {}


def instrument(embedder) -> None:
    """Time the big steps of a sync (wrapping functions of this process only) to show where time goes."""
    import memtool.store as store_mod
    import memtool.sync as sync_mod
    from memtool.search import build

    def wrap(owner, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def timed_call(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                PHASES[label] = PHASES.get(label, 0.0) + time.perf_counter() - t

        setattr(owner, name, timed_call)

    wrap(embedder, "embed_documents", "embedder.embed_documents (entries + chunks)")
    wrap(store_mod.Store, "write_embeddings", "Store.write_embeddings (embedding files; a thread, overlaps embedding)")
    wrap(sync_mod, "write_index", "index.json written whole (from the cache)")
    wrap(sync_mod, "refresh_cache", "cache: refresh_cache (one transaction)")
    wrap(build, "collect_docs", "  collect_docs (day files as the scan parsed them, Markdown chunked)")
    wrap(store_mod.Store, "vector_for", "  Store.vector_for x entries (reads embedding JSON)")
    wrap(build, "words", "  split docs into words")
    wrap(build, "terms", "  BM25 terms (stopwords out, stemmed)")
    wrap(build, "doc_cues", "  answer cues (memtool.search.cues)")
    wrap(build, "_append_postings", "  postings written")


def show_phases(runs: int = 1) -> None:
    """The time of each phase, per run (a mean when the phases of several runs were summed)."""
    for label, secs in PHASES.items():
        print(f"    {label:66s} {secs / runs:6.2f}s")
    PHASES.clear()


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def watch_latency(root: Path, rounds: int) -> tuple[list[float], list[float]]:
    """Append a unique line to a daily log under a running watcher. Returns, per round, the time until
    the watcher's sync is done, and until a `memory search` (a fresh Memory, as a new process would
    open it) returns the line from an up-to-date cache."""
    from memtool.watch import Watcher

    mem = open_memory(root)
    log = sorted(mem.layout.memory_dir.glob("*.md"))[-1]
    rel = log.relative_to(root).as_posix()
    synced: list[float] = []
    watcher = Watcher(mem, on_sync=lambda r: synced.append(time.perf_counter()) if rel in r.markdown.changed else None)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, kwargs={"stop": stop}, daemon=True)
    thread.start()
    watcher.ready.wait(300)
    to_sync, to_search = [], []
    try:
        for r in range(rounds):
            token = f"zebracorn{r}x{random.randrange(10**6)}"
            synced.clear()
            t = time.perf_counter()
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"- 12:00 watched edit {token}\n")
            while not synced:
                time.sleep(0.005)
            to_sync.append(synced[0] - t)
            reader = open_memory(root)
            from memtool.search.build import refresh_cache

            assert not refresh_cache(reader.layout, reader.embedder), "the searcher would change the store"  # the watcher did
            assert any(token in h.text for h in reader.search(token, limit=3).hits), "not found"
            to_search.append(time.perf_counter() - t)
    finally:
        stop.set()
        thread.join(30)
    return to_sync, to_search


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--markdown", type=int, default=1_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="build the store here and keep it")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="memtool-bench-"))
    try:
        t = timed(lambda: generate(root, args.entries, args.markdown))
        print(f"store: {args.entries} entries, {args.markdown} Markdown files at {root} (generated in {t:.1f}s)")
        mem = open_memory(root)
        mem.embedder.embed_documents(["warm up"])  # model load is a one-off, not rebuild time
        report = None

        def full() -> None:
            nonlocal report
            report = sync(mem, full=True)

        instrument(mem.embedder)
        t = timed(full)
        print(f"full rebuild, no embedding files yet ({mem.embedder.model}): {t:.2f}s  [{report.line()}]")
        show_phases()
        t = timed(full)
        print(f"full rebuild of the same store (`memory reindex --full`): {t:.2f}s  [{report.line()}]")
        show_phases()
        times = [timed(lambda: sync(open_memory(root))) for _ in range(args.rounds)]
        print(f"no-change reindex, in process: median {statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f})")
        cli = [sys.executable, "-m", "memtool.cli.main", "--root", str(root), "reindex"]
        times, cpu = [], []
        for _ in range(args.rounds):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            times.append(timed(lambda: subprocess.run(cli, check=True, capture_output=True)))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        print(
            f"no-change `memory reindex` command: wall median {statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f}), "
            f"CPU median {statistics.median(cpu) * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
        days = mem.layout.day_files()
        report = None

        def one_edit() -> None:
            nonlocal report
            report = sync(mem)

        PHASES.clear()
        times = []
        for r in range(args.rounds):  # each round edits one summary in another day file
            day = days[len(days) // 2 + r]
            text = day.read_text(encoding="utf-8")
            day.write_text(text.replace('"summary": "', '"summary": "Corrected: ', 1), encoding="utf-8")
            times.append(timed(one_edit))
        print(
            f"one hand-edited summary: median {statistics.median(times):.2f}s (min {min(times):.2f}s), {report.embedded} entry re-embedded  [{report.line()}]"
        )
        show_phases(args.rounds)
        to_sync, to_search = watch_latency(root, args.rounds)
        print(
            f"daily-log edit under `memory watch` (debounce {C.WATCH_DEBOUNCE_S}s): synced after median {statistics.median(to_sync):.2f}s "
            f"(max {max(to_sync):.2f}s); found by a fresh search after median {statistics.median(to_search):.2f}s (max {max(to_search):.2f}s)"
        )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
