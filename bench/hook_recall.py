"""How long the prompt-recall hook takes, cold, as an agent runs it (`UserPromptSubmit`).

    python bench/hook_recall.py ROOT [--runs 7] [--prompt TEXT]

ROOT: a store, e.g. one bench/scale.py built (`--workdir DIR` keeps them). Each run is a new
`python -m memtool hooks run prompt --agent claude-code` process (bytecode cached) with a new session
id, the payload on stdin, the store's folder as its working folder; the floor is `python -c "import
typer"` timed the same way, interleaved. Prints medians in ms, how many runs injected context, and
the characters injected, as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

PROMPT = "How do we retry the kafka consumer when the billing postgres deploy fails?"


def timed(command: list[str], stdin: str, cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=cwd, timeout=120)
    wall = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return wall, done.stdout


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--prompt", default=PROMPT)
    args = p.parse_args()
    hook = [sys.executable, "-m", "memtool", "hooks", "run", "prompt", "--agent", "claude-code"]
    floor = [sys.executable, "-c", "import typer"]

    def payload() -> str:
        return json.dumps({"session_id": f"bench-{uuid.uuid4()}", "cwd": str(args.root), "hook_event_name": "UserPromptSubmit", "prompt": args.prompt})

    timed(hook, payload(), args.root)  # bytecode and page cache warm
    walls, floors, chars = [], [], []
    for _ in range(args.runs):
        wall, out = timed(hook, payload(), args.root)
        walls.append(wall)
        chars.append(len(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out.strip() else 0)
        floors.append(timed(floor, "", args.root)[0])
    print(
        json.dumps(
            {
                "runs": args.runs,
                "recall_ms": round(statistics.median(walls)),
                "recall_min_max_ms": [round(min(walls)), round(max(walls))],
                "floor_ms": round(statistics.median(floors)),
                "injected_runs": sum(1 for c in chars if c),
                "chars": statistics.median(chars),
            }
        )
    )


if __name__ == "__main__":
    main()
