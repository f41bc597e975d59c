"""CPU time of the offline compressor on one session of about 50 KB, against a reference tree.

The session: the transcripts of ../shared/bench/coding-real (or --bench DIR), rendered as `memory
compress` reads them, joined in name order and cut at the last line break before --kb KB. Each
measurement is a fresh Python process (`--child`) that imports memtool from a source tree, compresses
the session once (cold: imports, the sentence model and the embedder's first load) and then --repeat
times (warm), and prints the CPU seconds (time.process_time) of the cold call and the median warm
one. With --vs DIR (another checkout, e.g. the commit before a change) the two trees are measured in
alternation, --rounds times each, in the same run, and the ratio of the medians is printed.

    python bench/compress_speed.py [--vs ../reference-tree] [--kb 50] [--rounds 3] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from sentence_labels import DEFAULT_BENCH  # noqa: E402


def session_text(bench: Path, kb: int) -> str:
    from memtool.transcripts import read_transcript

    files = sorted(p for p in (bench / "coding-real").iterdir() if Path(str(p) + ".gold.json").is_file())
    text = "\n\n".join(read_transcript(p) for p in files)
    cut = text[: kb * 1000]
    return cut[: cut.rfind("\n") + 1]


def child(path: Path, repeat: int) -> dict:
    from memtool.providers.local import LocalCompressor

    text = path.read_text(encoding="utf-8")
    compressor = LocalCompressor()
    t = time.process_time()
    compressor.compress(text)
    cold = time.process_time() - t
    warm = []
    for _ in range(repeat):
        t = time.process_time()
        compressor.compress(text)
        warm.append(time.process_time() - t)
    return {"bytes": len(text.encode()), "cold_s": round(cold, 4), "warm_s": round(statistics.median(warm), 4)}


def measure(tree: Path, path: Path, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, __file__, "--child", str(path), "--repeat", str(repeat)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--kb", type=int, default=50)
    ap.add_argument("--vs", type=Path, help="a reference source tree, measured in alternation")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.repeat)))
        return 0
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"memtool-compress-speed-{os.getpid()}.md"
    path.write_text(session_text(args.bench, args.kb), encoding="utf-8")
    try:
        trees = {"this": ROOT, **({"vs": args.vs.resolve()} if args.vs else {})}
        runs: dict[str, list[dict]] = {k: [] for k in trees}
        for _ in range(args.rounds):
            for k, tree in trees.items():
                runs[k].append(measure(tree, path, args.repeat))
                print(k, runs[k][-1], file=sys.stderr, flush=True)
    finally:
        path.unlink()
    result = {
        k: {"bytes": v[0]["bytes"], "cold_s": statistics.median(r["cold_s"] for r in v), "warm_s": statistics.median(r["warm_s"] for r in v)}
        for k, v in runs.items()
    }
    if args.vs:
        result["warm_ratio"] = round(result["this"]["warm_s"] / result["vs"]["warm_s"], 2)
        result["cold_ratio"] = round(result["this"]["cold_s"] / result["vs"]["cold_s"], 2)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
