"""A fresh clone of real-size sessions made fully searchable, every vector real: how long until the
background fill has indexed and embedded everything.

    python bench/clone_fill.py [--sessions 500] [--kb 10] [--embedder e5] [--wait 3600] [--workdir DIR]
                               [--reuse] [--every 60]

A store of --sessions seeded dialogue sessions (bench/compress_size.py's, --kb each: 10 KB gives 42
passages, the mean of the 31 real coding sessions under shared/bench) is built through the
product (`compress_many`, the local compressor, the embedder named: real vectors, no stand-ins;
build_s), then copied without memory/.cache (what `git clone` gives). On the copy: the first
`memory search` as a new process (clone_search_ms; it answers from words and starts the background
fill), then clone_fill_s: seconds from that search's start until every document is indexed and has
a vector (None when not within --wait), with the passages it gave a vector and their rate, and the
passages files the store holds (the vectors the clone reads instead of embedding) against its
kept transcripts, in MB.
With --every S, a progress line every S seconds of the fill: the documents still without a vector
and what a `memory search` says meanwhile (its warning on stderr, as a user sees it). --reuse keeps
the store already built in --workdir (the build is the slow part with e5) and clones it again.
Prints one JSON line at the end (and the progress lines before it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from bench.compress_size import dialogue  # noqa: E402 (after the sys.path line)
from bench.scale import cold_search, remove_clone  # noqa: E402
from memtool import constants as C  # noqa: E402
from memtool.app import open_memory  # noqa: E402
from memtool.cache import cache_path  # noqa: E402
from memtool.memory import Session  # noqa: E402
from memtool.scaffold import init  # noqa: E402
from memtool.store import Layout  # noqa: E402
from memtool.sync import persist_embedder  # noqa: E402

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def build(root: Path, n: int, kb: float, embedder: str) -> float:
    init(root)
    persist_embedder(Layout(root), embedder)  # the store's embedder, which the clone's `memory` commands use
    mem = open_memory(root, embedder=embedder, compressor="local", background_embed=False)
    rng = random.Random(500)
    sessions = [Session(text=dialogue(int(kb * 1024), seed=rng.randrange(2**31)), when=START + timedelta(hours=5 * i), session=f"s{i}") for i in range(n)]
    t = time.perf_counter()
    mem.compress_many(sessions)
    return time.perf_counter() - t


def count(root: Path, sql: str) -> int:
    conn = sqlite3.connect(cache_path(Layout(root)))
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def meta(root: Path) -> dict[str, str]:
    conn = sqlite3.connect(cache_path(Layout(root)), timeout=30)
    try:
        return dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('vectors_missing', 'vectors_total', 'words_missing')").fetchall())
    finally:
        conn.close()


def search_note(root: Path, query: str) -> str:
    """What `memory search` prints on stderr (its warning of what is still missing), as a fresh process."""
    env = dict(os.environ, MEMTOOL_BACKGROUND_EMBED="true")
    out = subprocess.run([sys.executable, "-m", "memtool", "--root", str(root), "search", query], capture_output=True, text=True, env=env)
    return " ".join(out.stderr.split())


def fresh_clone(root: Path, query: str, wait_s: float, every: float) -> tuple[float, float | None, list[dict]]:
    """On a copy without memory/.cache: the first search's wall time (ms), seconds from its start
    until every document is indexed and has a vector (None when not within wait_s), progress lines."""
    clone = root.parent / f"{root.name}-clone"
    shutil.rmtree(clone, ignore_errors=True)
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(C.CACHE_DIR))
    t = time.perf_counter()
    ms, _ = cold_search(clone, query, MEMTOOL_BACKGROUND_EMBED="true")
    filled, lines, next_line = None, [], every
    while filled is None and time.perf_counter() - t < wait_s:
        m = meta(clone)
        if m.get("vectors_missing") == "0" and m.get("words_missing", "0") == "0":
            filled = time.perf_counter() - t
        elif every and time.perf_counter() - t >= next_line:
            row = {"at_s": round(time.perf_counter() - t), **{k: int(v) for k, v in m.items()}, "load": round(os.getloadavg()[0], 1)}
            row["search_says"] = search_note(clone, query)
            print(json.dumps(row), flush=True)
            lines.append(row)
            next_line += every
        time.sleep(0.5)
    remove_clone(clone, filled is not None)
    return ms, filled, lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=500)
    p.add_argument("--kb", type=float, default=10.0)
    p.add_argument("--embedder", default="e5")
    p.add_argument("--wait", type=float, default=3600.0, help="seconds to wait for the clone's background fill")
    p.add_argument("--workdir", type=Path)
    p.add_argument("--reuse", action="store_true", help="clone the store already built in --workdir (origin/) instead of building one")
    p.add_argument("--every", type=float, default=0.0, help="a progress line every this many seconds of the fill (0: none)")
    args = p.parse_args()
    if args.reuse and not args.workdir:
        p.error("--reuse needs --workdir")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="memtool-clone-fill-"))
    root = work / "origin"
    build_s = None
    if not args.reuse:
        shutil.rmtree(root, ignore_errors=True)
        build_s = round(build(root, args.sessions, args.kb, args.embedder), 1)
        print(json.dumps({"built_s": build_s, "load": round(os.getloadavg()[0], 1)}), flush=True)
    passages = count(root, "SELECT count(*) FROM docs WHERE kind = 'transcript'")
    lay = Layout(root)
    files = [de.stat().st_size for de in lay.passages_files()]  # what git holds for the clone to read
    transcripts_mb = sum(de.stat().st_size for de in lay.transcript_files()) / 2**20
    documents = count(root, "SELECT count(*) FROM docs")
    ms, filled, _ = fresh_clone(root, "why is the billing worker slow", args.wait, args.every)
    row = {
        "sessions": args.sessions,
        "kb": args.kb,
        "embedder": args.embedder,
        "build_s": build_s,
        "documents": documents,
        "passages": passages,
        "passages_files": len(files),
        "passages_files_mb": round(sum(files) / 2**20, 1),
        "transcripts_mb": round(transcripts_mb, 1),
        "clone_search_ms": round(ms),
        "clone_fill_s": None if filled is None else round(filled, 1),
        "passages_per_s": None if not filled else round(passages / filled, 1),
        "load": round(os.getloadavg()[0], 1),
    }
    print(json.dumps(row), flush=True)
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
