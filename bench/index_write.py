"""What writing index.json costs, from the day files as read against from the cache's entry lines (issue 39).

    python bench/index_write.py [--sizes 10000,100000] [--runs 5] [--keep DIR]

For each size a synthetic store (bench/sync.py's `generate`: entries over a year of day files) gets
its cache built by `sync` with a hashing stand-in embedder (no model: embedding is not what is
measured). Then, interleaved, `--runs` times each:
- write_cache_ms: `write_index` as memtool writes it (memtool/index_json.py: the cache's entry lines
  brought up to date, then joined by SQLite), index.json removed first so it is written;
- write_days_ms: option (a) of issue 39, the baseline (`write_from_day_files` below): index.json from
  every day file as read, the same write;
- compress_cache_ms / compress_days_ms: `Memory.compress` of one short session on the newest day,
  in process, with index.json written by each of the two (the baseline patched in for the latter);
- unchanged_ms: `write_index` once more with nothing changed (index.json left alone).
Prints one JSON line per size (medians; compress_ratio = days / cache), then a Markdown table.
Run against another checkout (PYTHONPATH=that checkout) to time that memtool's write_index.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sync import generate  # noqa: E402

import memtool.index_json as index_json  # noqa: E402
from memtool import confine  # noqa: E402
from memtool.app import open_memory  # noqa: E402
from memtool.dayfile import read_day  # noqa: E402
from memtool.fsutil import atomic_write_bytes  # noqa: E402
from memtool.index_json import IndexWrite, index_document  # noqa: E402
from memtool.models import Entry  # noqa: E402
from memtool.sync import sync  # noqa: E402


class HashEmbedder:
    """A stand-in embedder: a unit vector from each text's hash (no model, a few microseconds a text)."""

    name = "bench-hash"
    model = "bench-hash-32"
    dim = 32
    semantic_weight = 0.0
    reason = None

    @classmethod
    def from_settings(cls, settings, root) -> "HashEmbedder":
        return cls()

    def _vec(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)


def write_from_day_files(layout, provider: str, explain: bool = False, parsed=None, full: bool = False) -> IndexWrite:
    """Option (a) of issue 39, the baseline: index.json from every day file as read (an id in two day
    files once, the later file's copy), as memtool/index_json.py wrote it when the cache was not in step."""
    kept: dict[str, Entry] = {}
    for path in layout.day_files():
        kept.update((e.id, e) for e in read_day(path))
    doc = index_document(provider, kept.values())
    try:
        same = os.lstat(layout.index_file).st_size == len(doc) and confine.read_bytes(layout.index_file) == doc
    except FileNotFoundError:
        same = False
    if not same:
        atomic_write_bytes(layout.index_file, [doc])
    return IndexWrite("" if same else "stale")


def median_ms(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 1)


def run(root: Path, size: int, runs: int) -> dict:
    t = time.perf_counter()
    generate(root, size, 0)
    mem = open_memory(root, embedder=HashEmbedder())
    sync(mem)
    setup_s = time.perf_counter() - t
    layout, provider = mem.layout, mem.settings.compressor
    newest = datetime.fromisoformat(layout.day_files()[-1].stem).replace(tzinfo=timezone.utc)
    memory_mod = sys.modules["memtool.memory"]
    ours, baseline = index_json.write_index, write_from_day_files
    cache_w, days_w, cache_c, days_c = [], [], [], []
    same = True
    for r in range(runs):
        layout.index_file.unlink()
        t = time.perf_counter()
        ours(layout, provider)
        cache_w.append(time.perf_counter() - t)
        written = layout.index_file.read_bytes()
        layout.index_file.unlink()
        t = time.perf_counter()
        baseline(layout, provider)
        days_w.append(time.perf_counter() - t)
        same = same and layout.index_file.read_bytes() == written
        for label, out in (("cache", cache_c), ("days", days_c)):
            memory_mod.write_index = ours if label == "cache" else baseline  # type: ignore[attr-defined]
            try:
                when = newest + timedelta(hours=1, minutes=r * 2 + (label == "days"))
                text = f"Dana: run {r} {label}, the billing migration moved the invoice cron behind the Kafka consumer {r}."
                t = time.perf_counter()
                mem.compress(text, when=when, session=f"bench-{label}-{r}")
                out.append(time.perf_counter() - t)
            finally:
                memory_mod.write_index = ours  # type: ignore[attr-defined]
    t = time.perf_counter()
    unchanged = ours(layout, provider).why
    unchanged_ms = round((time.perf_counter() - t) * 1000, 1)
    assert unchanged == "", unchanged
    entries = len(json.loads(layout.index_file.read_text(encoding="utf-8"))["entries"])
    row = {
        "entries": entries,
        "day_files": len(layout.day_files()),
        "index_json_mb": round(layout.index_file.stat().st_size / 1e6, 1),
        "setup_s": round(setup_s, 1),
        "write_days_ms": median_ms(days_w),
        "write_cache_ms": median_ms(cache_w),
        "compress_days_ms": median_ms(days_c),
        "compress_cache_ms": median_ms(cache_c),
        "unchanged_ms": unchanged_ms,
        "same_bytes": same,
    }
    row["compress_ratio"] = round(row["compress_days_ms"] / row["compress_cache_ms"], 2)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="build the stores under this folder and keep them")
    args = ap.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        root = (args.keep / str(size)) if args.keep else Path(tempfile.mkdtemp(prefix="memtool-index-"))
        try:
            rows.append(run(root, size, args.runs))
            print(json.dumps(rows[-1]), flush=True)
        finally:
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
