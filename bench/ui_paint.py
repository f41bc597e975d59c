"""`memory ui`'s first paint in a real headless Chromium, on a synthetic store of N entries.

    python bench/ui_paint.py [--entries 10000] [--runs 7] [--workdir DIR [--reuse]]

The store is built through the product (bench/scale.py's `build_store`: `compress_many` of synthetic
sessions, local compressor, WordLlama); `--reuse` measures a store an earlier run left in --workdir.
The viewer is served as `memory ui` serves it (memtool.ui.server.Server, on 127.0.0.1), and Chromium
(tests/browser/cdp.py, headless, no network) loads the token URL --runs times, interleaved with the
reference, each load in a fresh tab state (the cookie kept):
- paint_ms: from the navigation's start to the first page of the timeline drawn (the page's
  `memtool-timeline` performance mark: the page, its script, /api/status and /api/timeline answered
  and rendered);
- start_s: from `Server(mem)` called to the URL known (it reads the day files once, before);
- first_ms: the same as paint_ms for the first load, the token URL (it redirects to `/`);
- ref_ms: the same browser loading the viewer's smallest answer (/api/status), the floor of a load.
Prints one JSON line: min / median / max of each, and their ratio of medians.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scale import build_store  # noqa: E402
from memtool.app import open_memory  # noqa: E402
from memtool.ui.server import Server  # noqa: E402
from tests.browser.cdp import Browser, chromium  # noqa: E402


def load(b: Browser, url: str, done: str) -> None:
    b.goto(url)
    b.wait(done, timeout=120)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--entries", type=int, default=10000)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--reuse", action="store_true")
    args = p.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="ui-paint-"))
    root = work / f"store-{args.entries}"
    built_s = None
    if not (args.reuse and root.is_dir()):
        shutil.rmtree(root, ignore_errors=True)
        built_s = build_store(root, args.entries, seed=1)
    mem = open_memory(root)
    t = time.perf_counter()
    server = Server(mem)
    start_s = time.perf_counter() - t
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.uvicorn.started:
        time.sleep(0.02)
    b = Browser(chromium(), work / "profile")
    base = f"http://127.0.0.1:{server.port}"
    paint, ref = [], []
    try:
        load(b, server.url, "performance.getEntriesByName('memtool-timeline').length > 0")  # signs in
        first = b.eval("performance.getEntriesByName('memtool-timeline')[0].startTime")
        for _ in range(args.runs):
            load(b, base + "/", "performance.getEntriesByName('memtool-timeline').length > 0")
            paint.append(b.eval("performance.getEntriesByName('memtool-timeline')[0].startTime"))
            load(b, base + "/api/status", "document.readyState === 'complete' && document.body.innerText.includes('rebuilding')")
            ref.append(b.eval("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        b.goto(base + "/")
        b.wait("document.querySelectorAll('#timeline .item').length > 0", timeout=120)
        items = b.eval("document.getElementById('timeline-count').textContent")
    finally:
        b.close()
        server.stop()
        thread.join(10)
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    stat = lambda xs: [round(min(xs)), round(statistics.median(xs)), round(max(xs))]  # noqa: E731
    out = {
        "entries": args.entries,
        "timeline": items,
        "runs": args.runs,
        "start_s": round(start_s, 2),
        "first_ms": round(first),
        "paint_ms": stat(paint),
        "ref_ms": stat(ref),
        "paint_vs_ref": round(statistics.median(paint) / max(statistics.median(ref), 1e-9), 1),
        "build_s": round(built_s, 1) if built_s is not None else None,
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
