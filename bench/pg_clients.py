"""Ten clients compressing and searching at once against one shared PostgreSQL search cache.

    python bench/pg_clients.py [--clients 10] [--sessions 20] [--seed 1]

One memory root is made (`memory init`) and copied once per client (a clone each: its own files,
its own memory/.cache, no local search cache built). A PostgreSQL server with pgvector (pgserver's,
in a temp folder, Unix socket only) holds the cache all of them use (`cache: postgresql://…`). Then
every client runs at once, each its own process (open_memory with WordLlama, the local
compressor): `--sessions` times, it compresses a new session (a marker word of its own; its
session dated on days of its own, so no two clones write the same day file: two clones that write
one file without pulling are git's case, docs/team.md), which pushes it to the shared cache, then
searches for that marker (its own write must be found at once) and for a marker another client
stored earlier (found when that one's push has committed: counted, not required).

Checked at the end: no client raised; every entry a client stored is in its clone's files and in
the shared cache (one row of kind `entry`, no more); a new clone (the files of none of them, no
local cache) finds every marker by searching; the cache holds no entry that nobody stored.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WORDS = "auth cache deploy schema migration queue retry timeout billing search index webhook token gateway metrics rollout".split()
START = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)


def marker(client: int, n: int) -> str:
    return f"zq{client:02d}x{n:03d}"


def client(k: int, clone: Path, url: str, sessions: int, clients: int, seed: int, out: Path) -> None:
    """One client's run (in its own process): its stored ids, what its searches found, its timings."""
    from memtool.app import open_memory

    mem = open_memory(clone, embedder="wordllama", compressor="local", cache=url)
    rng = random.Random(seed * 1000 + k)
    stored, own_missed, others_found, others_asked, compress_ms, search_ms = [], [], 0, 0, [], []
    for n in range(sessions):
        topic = rng.sample(WORDS, 3)
        when = START + timedelta(days=k * sessions + n, minutes=rng.randint(0, 600))  # days of this client's own
        text = (
            f"Session {marker(k, n)} of client {k}. We worked on the {topic[0]} {topic[1]} for the {topic[2]} service.\n"
            f"Decided to keep the {topic[0]} path and retry the {topic[2]} later; marker {marker(k, n)}."
        )
        t = time.perf_counter()
        entry = mem.compress(text, when=when, session=f"c{k}-{n}", agent=f"client{k}")
        compress_ms.append((time.perf_counter() - t) * 1000)
        stored.append(entry.id)
        t = time.perf_counter()
        if entry.id not in [h.id for h in mem.search(marker(k, n), limit=5).hits]:
            own_missed.append(entry.id)
        search_ms.append((time.perf_counter() - t) * 1000)
        other = rng.choice([c for c in range(clients) if c != k])
        if n:
            others_asked += 1
            asked = marker(other, rng.randrange(n))
            others_found += any(asked in h.text for h in mem.search(asked, limit=5).hits)
    out.write_text(
        json.dumps(
            {
                "stored": stored,
                "own_missed": own_missed,
                "others_found": others_found,
                "others_asked": others_asked,
                "compress_ms": compress_ms,
                "search_ms": search_ms,
            }
        )
    )


def run(clients: int, sessions: int, seed: int, workdir: Path) -> dict:
    import pgserver
    import psycopg

    from memtool.app import open_memory
    from memtool.scaffold import init
    from memtool.store import Layout, Store

    (workdir / "pg").mkdir()
    server = pgserver.get_server(workdir / "pg" / "data", cleanup_mode="stop")
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE team")
        url = server.get_uri().replace("postgres:@/postgres?", "postgres@/team?")
        first = workdir / "origin"
        init(first)
        clones = [workdir / f"c{k:02d}" for k in range(clients)]
        for c in clones:
            shutil.copytree(first, c)
        open_memory(clones[0], embedder="wordllama", cache=url).search("warm")  # the schema made and the cache built once, before the clients start
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        t = time.perf_counter()
        procs = []
        for k, c in enumerate(clones):
            with (workdir / f"c{k:02d}.log").open("w") as err:
                args = ["--client", str(k), "--clone", str(c), "--url", url, "--sessions", str(sessions), "--clients", str(clients), "--seed", str(seed)]
                procs.append(subprocess.Popen([sys.executable, __file__, *args], env=env, stderr=err))
        errors = [f"client {k}: {(workdir / f'c{k:02d}.log').read_text()[-2000:]}" for k, p in enumerate(procs) if p.wait() != 0]
        seconds = time.perf_counter() - t
        results = [json.loads((c / "result.json").read_text()) for c in clones if (c / "result.json").exists()]
        stored = {i for r in results for i in r["stored"]}
        in_files = [{e.id for e in Store(Layout(c)).iter_entries()} for c in clones]
        missing_files = sum(len(set(r["stored"]) - f) for r, f in zip(results, in_files))
        with psycopg.connect(url) as conn:
            rows = [i for (i,) in conn.execute("SELECT entry FROM docs WHERE kind = 'entry'")]
        held = set(rows)
        fresh = workdir / "fresh"
        shutil.copytree(first, fresh)
        mem = open_memory(fresh, embedder="wordllama", cache=url)
        found = 0
        for k in range(clients):
            for n in range(sessions):
                found += any(marker(k, n) in h.text for h in mem.search(marker(k, n), limit=5).hits)
    finally:
        server.cleanup()
    compress = sorted(ms for r in results for ms in r["compress_ms"])
    search = sorted(ms for r in results for ms in r["search_ms"])
    return {
        "clients": clients,
        "sessions_each": sessions,
        "client_errors": errors,
        "entries_stored": len(stored),
        "missing_from_clone_files": missing_files,
        "missing_from_shared_cache": len(stored - held),
        "duplicate_rows_in_cache": len(rows) - len(held),
        "in_cache_not_stored": len(held - stored),
        "own_write_not_found_at_once": sum(len(r["own_missed"]) for r in results),
        "others_markers_found": f"{sum(r['others_found'] for r in results)}/{sum(r['others_asked'] for r in results)}",
        "fresh_clone_finds": f"{found}/{clients * sessions}",
        "compress_p50_ms": round(compress[len(compress) // 2], 1) if compress else None,
        "search_p50_ms": round(search[len(search) // 2], 1) if search else None,
        "seconds": round(seconds, 1),
        "load": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--client", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--clone", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client is not None:
        client(args.client, args.clone, args.url, args.sessions, args.clients, args.seed, args.clone / "result.json")
        return
    workdir = Path(tempfile.mkdtemp(prefix="memtool-pgclients-"))
    try:
        result = run(args.clients, args.sessions, args.seed, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
