"""Speed of `memory import` on agent sessions in a throwaway HOME, against `memory compress` of the
same transcript files (the reference, measured in the same run).

    python bench/import_sessions.py                      # 500 sessions of 20 exchanges, a third per agent
    python bench/import_sessions.py --sessions 100 --turns 5 --embedder wordllama --keep /tmp/import-bench

Writes N sessions of this project (Claude Code JSONL, Codex rollouts, Gemini CLI chats, in the shapes
tests/agent_sessions.py writes) and 30 of another project, then times, as `memory` processes with the
default providers (local compressor, embedder `auto`): `memory import --dry-run`; `memory import --yes`
into a fresh memory; the same again (everything held: nothing to do); and `memory compress FILE...` of
the same N files into another fresh memory. One JSON line goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.agent_sessions import seed  # noqa: E402 (after the sys.path line)

AGENTS = ("claude-code", "codex", "gemini")


def memory(env: dict, cwd: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memtool", *args], cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"memory {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr}")
    return took, done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--turns", type=int, default=20, help="exchanges (a prompt and an answer) per session")
    ap.add_argument("--embedder", help="MEMTOOL_EMBEDDER for every run (default: the configured one, `auto`)")
    ap.add_argument("--keep", type=Path, help="build everything here and keep it (default: a temp folder, removed)")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="memtool-import-bench-"))
    home, project, reference = base / "home", base / "project", base / "reference"
    for folder in (home, project, reference):
        folder.mkdir(parents=True, exist_ok=True)
    drop = ("MEMTOOL_", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)} | {"HOME": str(home), "MEMTOOL_BACKGROUND_EMBED": "false"}
    if args.embedder:
        env["MEMTOOL_EMBEDDER"] = args.embedder
    if "XDG_CACHE_HOME" not in os.environ:  # the model cache of the user running the bench, not the empty HOME's
        env["XDG_CACHE_HOME"] = str(Path.home() / ".cache")
    start = datetime(2025, 6, 1, 9, 0, tzinfo=timezone.utc)
    ours = seed(home, project, [(AGENTS[i % 3], start + timedelta(hours=7 * i)) for i in range(args.sessions)], turns=args.turns)
    other = base / "other-project"
    other.mkdir(exist_ok=True)
    seed(home, other, [(AGENTS[i % 3], start + timedelta(hours=5 * i)) for i in range(30)], first=args.sessions, turns=args.turns)
    size = sum(s["path"].stat().st_size for s in ours.values())
    for folder in (project, reference):
        memory(env, folder, "init")

    dry, _ = memory(env, project, "import", "--dry-run")
    first, done = memory(env, project, "import", "--yes", "--json")
    stored = len(json.loads(done.stdout)["result"]["stored"])
    again, done = memory(env, project, "import", "--yes", "--json")
    held = json.loads(done.stdout)["held"]
    compress, _ = memory(env, reference, "compress", *(str(s["path"]) for s in sorted(ours.values(), key=lambda s: s["start"])), "--json")
    out = {
        "sessions": args.sessions,
        "turns": args.turns,
        "bytes": size,
        "dry_run_s": round(dry, 2),
        "import_s": round(first, 2),
        "stored": stored,
        "sessions_per_s": round(args.sessions / first, 1),
        "mib_per_s": round(size / 2**20 / first, 2),
        "again_s": round(again, 2),
        "again_held": held,
        "compress_same_files_s": round(compress, 2),
        "import_over_compress": round(first / compress, 2),
        "embedder": args.embedder or "auto",
        "load_avg": round(os.getloadavg()[0], 1),
    }
    print(json.dumps(out))
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
