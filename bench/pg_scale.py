"""The search cache on PostgreSQL against the SQLite one, same store, same queries, same run.

    python bench/pg_scale.py [--entries 10000] [--queries 200] [--cold-runs 5] [--workdir DIR [--reuse]] [--bulk] [--pg-only]

With --reuse, what the workdir holds is measured as it is: the store's files, its SQLite cache and
the PostgreSQL database (build_s then NaN for each one already built).

A synthetic store of `--entries` sessions is built through the product (bench/scale.py's
build_store: `compress_many`, local compressor, kept transcripts, real WordLlama vectors), or with
`--bulk` written straight into day files (bulk_store: `Store.write_entries` in batches of synthetic
entries, no transcripts, no vector files: the cache's build embeds every entry with WordLlama),
which is what makes 1M entries buildable here. `--pg-only` skips the SQLite side (build, search). A
PostgreSQL server with pgvector (pgserver's, in a temp folder, Unix socket only, default settings:
fsync on) holds the shared cache. Then:
- build_s: the cache built from the files alone: SQLite, memory/.cache removed, `refresh_index`
  then `fill_vectors` (as bench/scale.py's build_s, what `memory reindex` on a fresh clone does);
  PostgreSQL, an empty database, `pg.refresh(full=True)` (`memory reindex` with `cache:` set).
  Both embed the transcripts' passages again (the entries' vectors come from their files);
- search_p50/p95_ms: in-process `Memory.search` (limit 5, query vector given), the two caches
  interleaved query by query; the PostgreSQL one searched from a copy of the files without
  memory/.cache (a second clone: nothing built locally);
- search_cpu_mean_ms: CPU per search, the mean over the same searches: this process's (both), plus
  (PostgreSQL) its backend's, from /proc (clock ticks, summed over all the searches): a figure the
  machine's load moves less than the wall time (the mean holds the reads a view searched again makes
  once: pg.HOLD_ALL_DOCS); sqlite_search_cpu_p50_ms / pg_search_client_cpu_p50_ms: the median of
  this process's share alone;
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

from bench.scale import PEOPLE, START, TOPICS, VERBS, build_store, cold_search, percentile, rebuild  # noqa: E402
from memtool import constants as C  # noqa: E402
from memtool.app import open_memory  # noqa: E402
from memtool.models import Entities, Entry, make_id  # noqa: E402
from memtool.scaffold import init  # noqa: E402
from memtool.search import pg  # noqa: E402
from memtool.search.engine import Query  # noqa: E402
from memtool.search.store import store_path  # noqa: E402
from memtool.store import Layout, Store  # noqa: E402
from memtool.sync import persist_embedder  # noqa: E402

BULK_BATCH = 20_000  # entries written per Store.write_entries call
BULK_SPAN_MIN = 3 * 365 * 24 * 60  # a bulk store's sessions spread over three years (or 37 minutes apart, if fewer)


def bulk_entry(rng: random.Random, i: int, when) -> Entry:
    """One synthetic entry, shaped as the local compressor's (a summary, keywords, topics, a decision, people)."""
    a, b, c, d = rng.sample(TOPICS, 4)
    who = rng.sample(PEOPLE, 2)
    summary = f"{who[0]} {rng.choice(VERBS)} the {a} {b} because the {c} was slow; next the {d} {rng.randint(1, 999)}."
    decision = f"Keep the {a} {rng.choice(TOPICS)} path; {who[1]} checks the {c} {rng.choice(TOPICS)}."
    return Entry(
        id=make_id(when, f"{i}\n{summary}"),
        timestamp=when.isoformat(),
        summary=summary,
        keywords=[a, b, c],
        topics=[a, d],
        decisions=[decision],
        entities=Entities(people=who),
        source_session=f"s{i}",
    )


def bulk_store(root: Path, n: int, seed: int) -> float:
    """`n` synthetic entries written into day files in batches; seconds."""
    from datetime import timedelta

    init(root)
    persist_embedder(Layout(root), "wordllama")
    store = Store(Layout(root))
    rng = random.Random(seed)
    step = min(37.0, BULK_SPAN_MIN / n)
    t = time.perf_counter()
    with store.lock():
        for at in range(0, n, BULK_BATCH):
            store.write_entries([bulk_entry(rng, i, START + timedelta(minutes=step * i)) for i in range(at, min(n, at + BULK_BATCH))])
    return time.perf_counter() - t


def start_server(folder: Path):
    import pgserver

    folder.mkdir(parents=True, exist_ok=True)
    return pgserver.get_server(folder / "data", cleanup_mode="stop")


def database(server, name: str, keep: bool = False) -> str:
    """The URL of database `name` on `server`, made empty (or, `keep`, as it is when it exists)."""
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        there = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not (keep and there):
            conn.execute(f"DROP DATABASE IF EXISTS {name}")
            conn.execute(f"CREATE DATABASE {name}")
    return server.get_uri().replace("postgres:@/postgres?", f"postgres@/{name}?")


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used (clock ticks): the PostgreSQL backend serving the searches."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def searched(mem, q: str, vec, cpu: list[float] | None = None) -> tuple[float, list[str]]:
    """(wall ms, hit ids) of one search; this process's CPU ms for it appended to `cpu`."""
    mem.embedder.embed_query = lambda _q: vec
    c = time.process_time()
    t = time.perf_counter()
    hits = mem.search(Query(text=q, limit=5)).hits
    wall = (time.perf_counter() - t) * 1000
    if cpu is not None:
        cpu.append((time.process_time() - c) * 1000)
    return wall, [h.id for h in hits]


T0 = time.perf_counter()


def stage(what: str) -> None:
    """A line on stderr as each step starts, with the seconds since the run began: how far a run stopped early got."""
    print(f"[{time.perf_counter() - T0:8.1f} s, load {os.getloadavg()[0]:.1f}] {what}", file=sys.stderr, flush=True)


def run(workdir: Path, n: int, queries: int, cold_runs: int, reuse: bool, bulk: bool = False, pg_only: bool = False) -> dict:
    root = workdir / f"store-{n}{'-bulk' if bulk else ''}"
    if reuse and (root / "memory").is_dir():
        import_s = float("nan")
    else:
        stage(f"importing {n} sessions ({'bulk' if bulk else 'compress_many'})")
        import_s = bulk_store(root, n, seed=n) if bulk else build_store(root, n, seed=n, embedder="wordllama")
    folder = workdir / f"pg-{root.name}"  # the server's data: kept with the store (--reuse measures it again)
    server = start_server(folder)
    try:
        url = database(server, "bench", keep=reuse)
        with pg.connect(url) as conn:
            built = reuse and conn.execute("SELECT count(*) FROM docs").fetchone()[0] > 0
        kept = reuse and store_path(Layout(root)).exists()  # --reuse of a store whose SQLite cache was built: measured as it is
        stage(f"imported in {import_s:.0f} s; the SQLite cache built from the files")
        sqlite_build_s = float("nan") if pg_only or kept else rebuild(root, "wordllama")
        stage(f"SQLite built in {sqlite_build_s:.0f} s; the PostgreSQL cache built from the files")
        mem = open_memory(root, embedder="wordllama")
        t, c = time.perf_counter(), time.process_time()
        pg.refresh(url, mem.layout, mem.embedder, full=True)
        pg_build_s, pg_build_cpu_s = time.perf_counter() - t, time.process_time() - c
        if built:  # --reuse of a database already built: that was a push with nothing to do
            pg_build_s = pg_build_cpu_s = float("nan")
        stage(f"PostgreSQL built in {pg_build_s:.0f} s; searching")
        clone = workdir / f"{root.name}-clone"
        shutil.rmtree(clone, ignore_errors=True)
        shutil.copytree(root, clone, ignore=shutil.ignore_patterns(C.CACHE_DIR))
        shared = open_memory(clone, embedder="wordllama", cache=url)
        rng = random.Random(1)
        texts = [" ".join(rng.sample(TOPICS, rng.randint(2, 4))) + f" {rng.choice(PEOPLE)}" for _ in range(queries)]
        vectors = {q: mem.embedder.embed_query(q) for q in texts}
        t = time.perf_counter()
        searched(shared, texts[0], vectors[texts[0]])  # warm: the first read of the snapshot's columns
        pg_first_ms = (time.perf_counter() - t) * 1000
        if not pg_only:
            searched(mem, texts[0], vectors[texts[0]])
        lite_ms, pg_ms, same, lite_cpu, pg_cpu = [], [], 0, [], []
        backend = shared._index.conn.info.backend_pid  # the connection the searches read through
        backend_s = cpu_s(backend)
        for q in texts:
            b, ids_b = searched(shared, q, vectors[q], pg_cpu)
            pg_ms.append(b)
            if not pg_only:
                a, ids_a = searched(mem, q, vectors[q], lite_cpu)
                lite_ms.append(a)
                same += ids_a == ids_b
        backend_ms = (cpu_s(backend) - backend_s) * 1000
        assert shared._index.conn.info.backend_pid == backend, "the searches changed connection"
        assert not store_path(Layout(clone)).exists(), "the second clone built a local cache"
        stage(f"searched: p50 {percentile(pg_ms, 50):.2f} ms PostgreSQL, {percentile(lite_ms, 50) if lite_ms else float('nan'):.2f} ms SQLite; cold searches")
        cold_lite, cold_pg = [], []
        cold_search(clone, texts[0], MEMTOOL_CACHE=url)  # warm-up: bytecode compiled once
        if not pg_only:
            cold_search(root, texts[0])
        for q in texts[:cold_runs]:
            if not pg_only:
                cold_lite.append(cold_search(root, q)[0])
            cold_pg.append(cold_search(clone, q, MEMTOOL_CACHE=url)[0])
        import psycopg

        with psycopg.connect(url) as conn:
            pg_bytes = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
            docs = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
        lite_bytes = sum(os.path.getsize(p) for p in (f"{store_path(Layout(root))}{s}" for s in ("", "-wal")) if os.path.exists(p))
    finally:
        server.cleanup()
    nan = float("nan")
    result = {
        "entries": n,
        "bulk": bulk,
        "docs": docs,
        "import_s": round(import_s, 1),
        "sqlite_build_s": round(sqlite_build_s, 2),
        "pg_build_s": round(pg_build_s, 2),
        "pg_build_client_cpu_s": round(pg_build_cpu_s, 2),
        "pg_first_search_ms": round(pg_first_ms, 1),
        "sqlite_search_p50_ms": round(percentile(lite_ms, 50), 2) if lite_ms else nan,
        "pg_search_p50_ms": round(percentile(pg_ms, 50), 2),
        "sqlite_search_p95_ms": round(percentile(lite_ms, 95), 2) if lite_ms else nan,
        "sqlite_search_cpu_mean_ms": round(statistics.mean(lite_cpu), 2) if lite_cpu else nan,
        "pg_search_cpu_mean_ms": round((sum(pg_cpu) + backend_ms) / len(pg_cpu), 2),
        "pg_search_server_cpu_mean_ms": round(backend_ms / len(pg_cpu), 2),
        "sqlite_search_cpu_p50_ms": round(percentile(lite_cpu, 50), 2) if lite_cpu else nan,
        "pg_search_client_cpu_p50_ms": round(percentile(pg_cpu, 50), 2),
        "pg_search_p95_ms": round(percentile(pg_ms, 95), 2),
        "same_top5": round(same / len(texts), 3) if lite_ms else nan,
        "sqlite_cold_search_ms": round(statistics.median(cold_lite), 1) if cold_lite else nan,
        "pg_cold_search_ms": round(statistics.median(cold_pg), 1),
        "sqlite_disk_mb": round(lite_bytes / 2**20, 1) if not pg_only else nan,
        "pg_disk_mb": round(pg_bytes / 2**20, 1),
        "load": os.getloadavg()[0],
    }
    result["search_p50_ratio"] = round(result["pg_search_p50_ms"] / result["sqlite_search_p50_ms"], 2)
    result["search_cpu_ratio"] = round(result["pg_search_cpu_mean_ms"] / result["sqlite_search_cpu_mean_ms"], 2)
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
    p.add_argument("--bulk", action="store_true", help="write the store's entries straight into day files (bulk_store), not through compress_many")
    p.add_argument("--pg-only", action="store_true", help="measure PostgreSQL alone (no SQLite build or search)")
    args = p.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="memtool-pgbench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = run(workdir, args.entries, args.queries, args.cold_runs, args.reuse, args.bulk, args.pg_only)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result), flush=True)
    print("\n| | SQLite | PostgreSQL | ratio |\n|---|---|---|---|")
    for name in ("build_s", "search_p50_ms", "search_p95_ms", "search_cpu_mean_ms", "cold_search_ms", "disk_mb"):
        a, b = result[f"sqlite_{name}"], result[f"pg_{name}"]
        print(f"| {name} | {a} | {b} | {b / a:.2f} |")
    return result


if __name__ == "__main__":
    main()
