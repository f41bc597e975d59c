"""How long the prompt-recall hook takes, cold, as an agent runs it (`UserPromptSubmit`).

    python bench/hook_recall.py ROOT [--runs 7] [--prompt TEXT]

ROOT: a store, e.g. one bench/scale.py built (`--workdir DIR` keeps them). Each run is a new
`python -m memtool hooks run prompt --agent claude-code` process (bytecode cached) with a new session
id, the payload on stdin, the store's folder as its working folder; beside it, interleaved and timed
the same way, a cold `memory search` of the prompt (the reference) and `python -c "import typer"`
(the floor). Prints the medians of wall time and of CPU time (user + system: on a loaded machine the
wall time mostly measures the wait for a core), how many runs injected context and the characters
injected, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

PROMPT = "How do we retry the kafka consumer when the billing postgres deploy fails?"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], stdin: str, cwd: Path) -> tuple[float, float, str]:
    """(wall ms, CPU ms: user + system of the process, stdout)."""
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=cwd, timeout=120)
    wall, cpu = (time.perf_counter() - start) * 1000, (_children_cpu() - cpu) * 1000
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return wall, cpu, done.stdout


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--prompt", default=PROMPT)
    args = p.parse_args()
    hook = [sys.executable, "-m", "memtool", "hooks", "run", "prompt", "--agent", "claude-code"]
    search = [sys.executable, "-m", "memtool", "--root", str(args.root), "search", args.prompt, "--json"]
    floor = [sys.executable, "-c", "import typer"]

    def payload() -> str:
        return json.dumps({"session_id": f"bench-{uuid.uuid4()}", "cwd": str(args.root), "hook_event_name": "UserPromptSubmit", "prompt": args.prompt})

    timed(hook, payload(), args.root)  # bytecode and page cache warm
    runs: dict[str, list[tuple[float, float]]] = {"recall": [], "search": [], "floor": []}
    chars = []
    for _ in range(args.runs):  # interleaved: the machine's load changes alike for all three
        wall, cpu, out = timed(hook, payload(), args.root)
        runs["recall"].append((wall, cpu))
        chars.append(len(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out.strip() else 0)
        runs["search"].append(timed(search, "", args.root)[:2])
        runs["floor"].append(timed(floor, "", args.root)[:2])
    out = {"runs": args.runs, "load_avg_1m": round(os.getloadavg()[0], 1), "injected_runs": sum(1 for c in chars if c), "chars": statistics.median(chars)}
    for name, pairs in runs.items():
        out[f"{name}_wall_ms"] = round(statistics.median(w for w, _ in pairs))
        out[f"{name}_cpu_ms"] = round(statistics.median(c for _, c in pairs))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
