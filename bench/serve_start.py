"""How long `memory serve` takes to answer an MCP client that has just started it.

    python bench/serve_start.py [--root ROOT] [--runs 7] [--python PY] [--pythonpath DIR] [--vs PY]

Each run starts `python -m memtool --root ROOT serve` as a new process (bytecode cached), sends the
client's `initialize`, then (after its answer) `notifications/initialized` and `tools/list`, as
Claude Code does, and times from the start to each answer. Prints the median and the spread of
each, in milliseconds, as JSON, with two references timed in the same run, interleaved with the
server's runs, each timed to the line it prints when done: `python -c pass` (the interpreter) and
`python -c 'import mcp'` (the SDK's floor: every
`mcp.*` module runs the package's `__init__`, which loads its client, pydantic models, httpx and
starlette). ROOT defaults to a new `memory init` store in a temp folder.
`--pythonpath` puts another checkout first (old code against new, alternated by the caller); `--vs PY`
times another install's server (e.g. main's venv) in the same loop, run for run (`vs_*` figures).
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


def _send(proc: subprocess.Popen, message: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def _answer(proc: subprocess.Popen, want_id: int) -> dict:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server closed its output before answering")
        message = json.loads(line)
        if message.get("id") == want_id:
            return message


def one_run(python: str, root: Path, env: dict[str, str]) -> tuple[float, float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [python, "-m", "memtool", "--root", str(root), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        _answer(proc, 1)
        t_init = time.perf_counter() - start
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = _answer(proc, 2)["result"]["tools"]
        t_tools = time.perf_counter() - start
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    return t_init * 1000, t_tools * 1000, len(tools)


def reference_ms(python: str, code: str, env: dict[str, str]) -> float:
    """From the start of `python -c code` to the line it prints when done (as the server's answer is
    timed: the interpreter's exit is not counted)."""
    start = time.perf_counter()
    proc = subprocess.Popen([python, "-c", f"{code}; print('ready', flush=True)"], stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    proc.stdout.readline()
    took = time.perf_counter() - start
    proc.wait(timeout=30)
    return took * 1000


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--root", type=Path, default=None)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--pythonpath", default="")
    p.add_argument("--vs", default="", help="Another Python whose `memtool` to time in the same loop (old code against new).")
    args = p.parse_args()
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    with tempfile.TemporaryDirectory() as tmp:
        root = args.root
        if root is None:
            root = Path(tmp) / "store"
            root.mkdir()
            subprocess.run([args.python, "-m", "memtool", "--root", str(root), "init"], check=True, capture_output=True, env=env)
        one_run(args.python, root, env)  # warm the bytecode and the page cache
        if args.vs:
            one_run(args.vs, root, env)
        runs, vs, bare, sdk = [], [], [], []
        for _ in range(args.runs):
            runs.append(one_run(args.python, root, env))
            if args.vs:
                vs.append(one_run(args.vs, root, env)[1])
            bare.append(reference_ms(args.python, "pass", env))
            sdk.append(reference_ms(args.python, "import mcp", env))
    inits, lists = [r[0] for r in runs], [r[1] for r in runs]
    against = {"vs_tools_list_ms": round(statistics.median(vs)), "vs_tools_list_min_max_ms": [round(min(vs)), round(max(vs))]} if vs else {}
    print(
        json.dumps(
            against
            | {
                "runs": args.runs,
                "initialize_ms": round(statistics.median(inits)),
                "initialize_min_max_ms": [round(min(inits)), round(max(inits))],
                "tools_list_ms": round(statistics.median(lists)),
                "tools_list_min_max_ms": [round(min(lists)), round(max(lists))],
                "tools": runs[0][2],
                "python_pass_ms": round(statistics.median(bare)),
                "import_mcp_ms": round(statistics.median(sdk)),
                "tools_list_over_import_mcp": round(statistics.median(lists) / statistics.median(sdk), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
