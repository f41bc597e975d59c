"""Where one compress's time goes, per thread: `compress_many` of one seeded dialogue session
(bench/compress_size.py's) in process, the main thread (redaction, dedupe, the compressor, chunking,
the change set, the files) against the worker thread that embeds the passages the entry's vector
averages (memtool.session_vectors.Prefetch).

    python bench/compress_threads.py [--sizes 25k,1m] [--embedder e5]

Prints one JSON line per size: the load before it, main_cpu_s and worker_cpu_s (`time.thread_time`),
worker_wall_s, and the process's cpu_s and wall_s. Start-up (imports, about 0.4 s) is not in it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import memtool.session_vectors as sv  # noqa: E402 (after the sys.path line)
from bench.compress_size import dialogue, parse_size  # noqa: E402
from memtool.app import open_memory  # noqa: E402
from memtool.memory import Session  # noqa: E402
from memtool.scaffold import init  # noqa: E402


def measure(size: int, embedder: str, work: Path) -> dict:
    root = work / f"root-{size}"
    shutil.rmtree(root, ignore_errors=True)
    init(root)
    worker: dict[str, float] = {}
    embed = sv.Prefetch._embed

    def timed(self, session: str):
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            return embed(self, session)
        finally:
            worker["cpu"], worker["wall"] = time.thread_time() - cpu, time.perf_counter() - wall

    sv.Prefetch._embed = timed
    try:
        mem = open_memory(root, embedder=embedder, compressor="local", background_embed=False)
        text = dialogue(size)
        load = os.getloadavg()[0]
        cpu, pcpu, wall = time.thread_time(), time.process_time(), time.perf_counter()
        mem.compress_many([Session(text=text, when=datetime(2026, 11, 30, tzinfo=timezone.utc))])
        row = {"main_cpu_s": time.thread_time() - cpu, "cpu_s": time.process_time() - pcpu, "wall_s": time.perf_counter() - wall}
    finally:
        sv.Prefetch._embed = embed
    row |= {"worker_cpu_s": worker.get("cpu", 0.0), "worker_wall_s": worker.get("wall", 0.0)}
    return {"size": size, "embedder": embedder, "load": round(load, 1), **{k: round(v, 2) for k, v in row.items()}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="25k,1m")
    p.add_argument("--embedder", default="e5")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memtool-compress-threads-"))
    try:
        for size in map(parse_size, args.sizes.split(",")):
            print(json.dumps(measure(size, args.embedder, work)), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
