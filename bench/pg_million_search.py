"""Searches on a PostgreSQL cache bench/pg_scale.py built and kept (the 1M run, whose own search step failed).

    python bench/pg_million_search.py N   # N queries (the first timed alone) on /work/pgscale-bench's 1M store

In-process `Memory.search` from the store's own root (its files recorded: nothing pushed), limit 5,
query vector given, as bench/pg_scale.py's search step; prints the cache's size and the times.
"""

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, "/work/wt/pgscale")
from bench.pg_scale import database, searched, start_server
from bench.scale import PEOPLE, TOPICS, percentile
from memtool.app import open_memory

root = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("/work/pgscale-bench/store-1000000-bulk")
server = start_server(root.parent / f"pg-{root.name}")
try:
    url = database(server, "bench", keep=True)
    import psycopg

    with psycopg.connect(url) as c:
        print(
            "docs",
            c.execute("SELECT count(*) FROM docs").fetchone()[0],
            "db_mb",
            round(c.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 2**20, 1),
            flush=True,
        )
    shared = open_memory(root, embedder="wordllama", cache=url)
    rng = random.Random(1)
    texts = [" ".join(rng.sample(TOPICS, rng.randint(2, 4))) + f" {rng.choice(PEOPLE)}" for _ in range(int(sys.argv[1]))]
    vecs = {q: shared.embedder.embed_query(q) for q in texts}
    t = time.perf_counter()
    searched(shared, texts[0], vecs[texts[0]])
    print("first_ms", round((time.perf_counter() - t) * 1000, 1), flush=True)
    ms, cpu = [], []
    for q in texts[1:]:
        ms.append(searched(shared, q, vecs[q], cpu)[0])
    print(
        "n",
        len(ms),
        "p50_ms",
        round(percentile(ms, 50), 1),
        "p95_ms",
        round(percentile(ms, 95), 1),
        "client_cpu_p50_ms",
        round(percentile(cpu, 50), 1),
        flush=True,
    )
finally:
    server.cleanup()
