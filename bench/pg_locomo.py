"""LoCoMo's hits on the PostgreSQL search cache against the SQLite one: the same roots, the same questions.

    python bench/pg_locomo.py --data ../shared/bench/locomo-dev [--conversations 26,30] [--embedder wordllama]

Each conversation is stored as bench/locomo.py stores it (a fresh root, one `compress_many` per
session, the vector fill run), then its PostgreSQL cache is built from the root's files in a
database of its own (pgserver's server, a Unix socket in a temp folder), and every question of
categories 1-4 is searched on both, in both of bench/locomo.py's modes (`entries`: kinds entry;
`full`: entry and transcript; limit 10). Prints one JSON line: questions searched, how many gave
the same hit ids in the same order, and the first differences (none expected up to
memtool.search.pg.EXACT_DENSE_DOCS documents a root: the same numbers through the same ranking).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.locomo import MODES, fresh_memory, load_conversations  # noqa: E402
from bench.pg_scale import database, start_server  # noqa: E402
from memtool.app import open_memory  # noqa: E402
from memtool.memory import Session  # noqa: E402
from memtool.search import pg  # noqa: E402
from memtool.search.engine import Query  # noqa: E402
from memtool.search.fill import fill_vectors  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--conversations", default=None, help="comma-separated ids (default: all in --data)")
    p.add_argument("--embedder", default="wordllama")
    args = p.parse_args(argv)
    wanted = set(args.conversations.split(",")) if args.conversations else None
    work = Path(tempfile.mkdtemp(prefix="memtool-pglocomo-"))
    (work / "pg").mkdir()
    server = start_server(work / "pg")
    out = {"conversations": 0, "searches": 0, "same": 0, "docs_max": 0, "differences": []}
    try:
        for conv in load_conversations(args.data, wanted):
            root = work / conv.cid
            mem = fresh_memory(root, {"embedder": args.embedder})
            for n, when, lines in conv.sessions:
                mem.compress_many([Session(text="\n".join(lines), when=when, session=str(n), name=f"session_{n}")])
            fill_vectors(mem.layout, mem.embedder)
            url = database(server, f"c{conv.cid.replace('-', '_')}")
            pg.refresh(url, mem.layout, mem.embedder, full=True)
            shared = open_memory(root, embedder=mem.embedder, cache=url)
            out["conversations"] += 1
            out["docs_max"] = max(out["docs_max"], mem.view().n)
            for q in conv.questions:
                for mode, kinds in MODES.items():
                    a = [h.id for h in mem.search(Query(text=q.text, limit=10, kinds=kinds)).hits]
                    b = [h.id for h in shared.search(Query(text=q.text, limit=10, kinds=kinds)).hits]
                    out["searches"] += 1
                    out["same"] += a == b
                    if a != b and len(out["differences"]) < 5:
                        out["differences"].append({"conversation": conv.cid, "mode": mode, "question": q.text, "sqlite": a, "postgresql": b})
            print(f"{conv.cid}: {out['same']}/{out['searches']} the same so far", file=sys.stderr)
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
