"""A fresh clone of real-size sessions made fully searchable, every vector real: how long until the
background fill has indexed and embedded everything.

    python bench/clone_fill.py [--sessions 500] [--kb 10] [--embedder e5] [--wait 3600] [--workdir DIR]

A store of --sessions seeded dialogue sessions (bench/compress_size.py's, --kb each: 10 KB gives 42
passages, the mean of the 31 real coding sessions under shared/bench) is built through the
product (`compress_many`, the local compressor, the embedder named: real vectors, no stand-ins;
build_s), then copied without memory/.cache (what `git clone` gives). On the copy: the first
`memory search` as a new process (clone_search_ms; it answers from words and starts the background
fill), then clone_fill_s: seconds from that search's start until every document is indexed and has
a vector (None when not within --wait), with the passages it embedded and their rate.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.compress_size import dialogue  # noqa: E402 (after the sys.path line)
from bench.scale import fresh_clone  # noqa: E402
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=500)
    p.add_argument("--kb", type=float, default=10.0)
    p.add_argument("--embedder", default="e5")
    p.add_argument("--wait", type=float, default=3600.0, help="seconds to wait for the clone's background fill")
    p.add_argument("--workdir", type=Path)
    args = p.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="memtool-clone-fill-"))
    root = work / "origin"
    shutil.rmtree(root, ignore_errors=True)
    build_s = build(root, args.sessions, args.kb, args.embedder)
    passages = count(root, "SELECT count(*) FROM docs WHERE kind = 'transcript'")
    ms, filled = fresh_clone(root, "why is the billing worker slow", args.wait)
    row = {
        "sessions": args.sessions,
        "kb": args.kb,
        "embedder": args.embedder,
        "build_s": round(build_s, 1),
        "passages": passages,
        "clone_search_ms": round(ms),
        "clone_fill_s": None if filled is None else round(filled, 1),
        "passages_per_s": None if not filled else round(passages / filled, 1),
    }
    print(json.dumps(row), flush=True)
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
