"""The search cache on PostgreSQL against the SQLite one, same store, same queries, same run.

    python bench/pg_scale.py [--entries 10000] [--queries 200] [--cold-runs 5] [--workdir DIR [--reuse]]

A synthetic store of `--entries` sessions is built through the product (bench/scale.py's
build_store: `compress_many`, local compressor, kept transcripts, real WordLlama vectors). A
PostgreSQL server with pgvector (pgserver's, in a temp folder, Unix socket only, default settings:
fsync on) holds the shared cache. Then:
- build_s: the cache built from the files alone: SQLite, memory/.cache removed, `refresh_index`
  then `fill_vectors` (as bench/scale.py's build_s, what `memory reindex` on a fresh clone does);
  PostgreSQL, an empty database, `pg.refresh(full=True)` (`memory reindex` with `cache:` set).
  Both embed the transcripts' passages again (the entries' vectors come from their files);
- search_p50/p95_ms: in-process `Memory.search` (limit 5, query vector given), the two caches
  interleaved query by query; the PostgreSQL one searched from a copy of the files without
  memory/.cache (a second clone: nothing built locally);
- same_top5: the share of queries whose five hit ids (in order) are the same on both;
- cold_search_ms: `memory search --json` as a new process, median of --cold-runs, interleaved;
- disk_mb: memory/.cache/memtool.sqlite (with its WAL) against pg_database_size.
Prints one JSON line, then a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scale import PEOPLE, TOPICS, build_store, cold_search, percentile, rebuild  # noqa: E402
from memtool import constants as C  # noqa: E402
from memtool.app import open_memory  # noqa: E402
from memtool.search import pg  # noqa: E402
from memtool.search.engine import Query  # noqa: E402
from memtool.search.store import store_path  # noqa: E402
from memtool.store import Layout  # noqa: E402


def start_server(folder: Path):
    import pgserver

    return pgserver.get_server(folder / "data", cleanup_mode="stop")


def database(server, name: str) -> str:
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return server.get_uri().replace("postgres:@/postgres?", f"postgres@/{name}?")


def searched(mem, q: str, vec) -> tuple[float, list[str]]:
    mem.embedder.embed_query = lambda _q: vec
    t = time.perf_counter()
    hits = mem.search(Query(text=q, limit=5)).hits
    return (time.perf_counter() - t) * 1000, [h.id for h in hits]


def run(workdir: Path, n: int, queries: int, cold_runs: int, reuse: bool) -> dict:
    root = workdir / f"store-{n}"
    import_s = float("nan") if reuse and (root / "memory").is_dir() else build_store(root, n, seed=n, embedder="wordllama")
    folder = Path(tempfile.mkdtemp(prefix="memtool-pg-bench-"))
    server = start_server(folder)
    try:
        url = database(server, "bench")
        sqlite_build_s = rebuild(root, "wordllama")
        mem = open_memory(root, embedder="wordllama")
        t = time.perf_counter()
        pg.refresh(url, mem.layout, mem.embedder, full=True)
        pg_build_s = time.perf_counter() - t
        clone = workdir / f"store-{n}-clone"
        shutil.rmtree(clone, ignore_errors=True)
        shutil.copytree(root, clone, ignore=shutil.ignore_patterns(C.CACHE_DIR))
        shared = open_memory(clone, embedder="wordllama", cache=url)
        rng = random.Random(1)
        texts = [" ".join(rng.sample(TOPICS, rng.randint(2, 4))) + f" {rng.choice(PEOPLE)}" for _ in range(queries)]
        vectors = {q: mem.embedder.embed_query(q) for q in texts}
        searched(mem, texts[0], vectors[texts[0]]), searched(shared, texts[0], vectors[texts[0]])  # warm: the first read of each
        lite_ms, pg_ms, same = [], [], 0
        for q in texts:
            a, ids_a = searched(mem, q, vectors[q])
            b, ids_b = searched(shared, q, vectors[q])
            lite_ms.append(a)
            pg_ms.append(b)
            same += ids_a == ids_b
        assert not store_path(Layout(clone)).exists(), "the second clone built a local cache"
        cold_lite, cold_pg = [], []
        cold_search(root, texts[0]), cold_search(clone, texts[0], MEMTOOL_CACHE=url)  # warm-up: bytecode compiled once
        for q in texts[:cold_runs]:
            cold_lite.append(cold_search(root, q)[0])
            cold_pg.append(cold_search(clone, q, MEMTOOL_CACHE=url)[0])
        import psycopg

        with psycopg.connect(url) as conn:
            pg_bytes = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
            docs = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
        lite_bytes = sum(os.path.getsize(p) for p in (f"{store_path(Layout(root))}{s}" for s in ("", "-wal")) if os.path.exists(p))
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    result = {
        "entries": n,
        "docs": docs,
        "import_s": round(import_s, 1),
        "sqlite_build_s": round(sqlite_build_s, 2),
        "pg_build_s": round(pg_build_s, 2),
        "sqlite_search_p50_ms": round(percentile(lite_ms, 50), 2),
        "pg_search_p50_ms": round(percentile(pg_ms, 50), 2),
        "sqlite_search_p95_ms": round(percentile(lite_ms, 95), 2),
        "pg_search_p95_ms": round(percentile(pg_ms, 95), 2),
        "same_top5": round(same / len(texts), 3),
        "sqlite_cold_search_ms": round(statistics.median(cold_lite), 1),
        "pg_cold_search_ms": round(statistics.median(cold_pg), 1),
        "sqlite_disk_mb": round(lite_bytes / 2**20, 1),
        "pg_disk_mb": round(pg_bytes / 2**20, 1),
    }
    result["search_p50_ratio"] = round(result["pg_search_p50_ms"] / result["sqlite_search_p50_ms"], 2)
    result["build_ratio"] = round(result["pg_build_s"] / result["sqlite_build_s"], 2)
    result["cold_search_ratio"] = round(result["pg_cold_search_ms"] / result["sqlite_cold_search_ms"], 2)
    return result


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--entries", type=int, default=10_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--cold-runs", type=int, default=5)
    p.add_argument("--workdir", type=Path, default=None, help="keep the store here (default: a temp folder, removed)")
    p.add_argument("--reuse", action="store_true", help="measure the store already in --workdir instead of importing it again")
    args = p.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memtool-pgbench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = run(workdir, args.entries, args.queries, args.cold_runs, args.reuse)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result))
    print("\n| | SQLite | PostgreSQL | ratio |\n|---|---|---|---|")
    for name in ("build_s", "search_p50_ms", "search_p95_ms", "cold_search_ms", "disk_mb"):
        a, b = result[f"sqlite_{name}"], result[f"pg_{name}"]
        print(f"| {name} | {a} | {b} | {b / a:.2f} |")
    return result


if __name__ == "__main__":
    main()
