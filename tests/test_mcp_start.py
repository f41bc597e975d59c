"""`memory serve` lists its tools without loading memtool's core: a behaviour check of what the server
process imports (`python -X importtime` writes each import to its stderr), not a timing test."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

CORE = ("numpy", "memtool.app", "memtool.search", "memtool.memory", "memtool.cli.main")


def imported(stderr: str) -> set[str]:
    return {m[1] for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", stderr, re.M)}


def serve(root: Path, requests: list[dict], log: Path) -> tuple[list[dict], set[str]]:
    """The answers to `requests` (sent one by one, each after the answer before) and what the server imported."""
    with log.open("w") as err:  # a file, not a pipe: the import log alone would fill a pipe's buffer
        proc = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-m", "memtool", "--root", str(root), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    assert proc.stdin and proc.stdout
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}
    answers = []
    for n, request in enumerate([{"method": "initialize", "params": init}, *requests], 1):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, **request}) + "\n")
        proc.stdin.flush()
        answers.append(json.loads(proc.stdout.readline()))
        if n == 1:
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    proc.stdin.close()
    proc.wait(timeout=60)
    return answers, imported(log.read_text())


def test_tools_list_loads_neither_the_core_nor_numpy_nor_the_full_cli(tmp_path):
    root = tmp_path / "store"
    subprocess.run([sys.executable, "-m", "memtool", "--root", str(root), "init"], check=True, capture_output=True)
    answers, modules = serve(root, [{"method": "tools/list"}, {"method": "prompts/list"}, {"method": "resources/templates/list"}], tmp_path / "a.log")
    assert len(answers[1]["result"]["tools"]) == 10
    assert "mcp.server.mcpserver" in modules and "memtool.mcp_tools" in modules
    assert not modules & set(CORE), sorted(modules & set(CORE))
    assert not [m for m in modules if m.startswith(("memtool.search.", "memtool.providers."))]
    # the first call that needs the core loads it: the check above sees what it looks for
    answers, modules = serve(root, [{"method": "tools/call", "params": {"name": "memory_status", "arguments": {}}}], tmp_path / "b.log")
    assert "result" in answers[1] and {"memtool.app", "memtool.memory"} <= modules
