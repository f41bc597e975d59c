"""The official MCP Inspector CLI (`@modelcontextprotocol/inspector`, pinned in package.json) lists and
calls every tool of `memory serve`, lists its prompts and its resource template, over stdio.

Skipped without `npm ci`; with MEMTOOL_REAL_CLIENTS=require (as .ci/run sets it) a failure instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.real_clients.clients import BIN, HERE
from tests.real_clients.conftest import REQUIRE_ENV

pytestmark = pytest.mark.real_clients
INSPECTOR = BIN / "mcp-inspector"
TIMEOUT_S = 180.0
TOOLS = {"memory_search", "memory_context", "memory_compress", "memory_log", "memory_get", "memory_promote", "memory_status"}
TOOLS |= {"memory_forget", "memory_archive", "memory_reembed"}
SESSION = "user: Which queue for billing?\nassistant: Decided to use Postgres SKIP LOCKED for the billing job queue, not Redis.\n"


@pytest.fixture(scope="module")
def inspector_available() -> None:
    why = "node is not installed" if shutil.which("node") is None else "" if INSPECTOR.exists() else f"{INSPECTOR} missing: run `npm ci` in {HERE}"
    if why and os.environ.get(REQUIRE_ENV) == "require":
        pytest.fail(f"the MCP Inspector cannot run: {why} ({REQUIRE_ENV}=require)", pytrace=False)
    if why:
        pytest.skip(f"the MCP Inspector cannot run: {why}")


@pytest.fixture
def inspect(tmp_path: Path, inspector_available):
    root = tmp_path / "project"
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / ".cache"), "PATH": os.environ.get("PATH", ""), "NO_COLOR": "1", "CI": "true"}
    env |= {"MCP_CATALOG_PATH": str(tmp_path / "catalog.json")}
    subprocess.run([sys.executable, "-m", "memtool", "--root", str(root), "init"], check=True, capture_output=True, env=env)

    def run(method: str, *options: str) -> dict[str, Any]:
        argv = [str(INSPECTOR), "--cli", sys.executable, "-m", "memtool", "--root", str(root), "serve", "--method", method, *options]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=TIMEOUT_S, cwd=tmp_path)
        assert done.returncode == 0, f"{method} {options}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        return json.loads(done.stdout)

    def call(tool: str, **args: Any) -> dict[str, Any]:
        pairs = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in args.items()]
        answer = run("tools/call", "--tool-name", tool, *(["--tool-arg", *pairs] if pairs else []))
        assert answer["isError"] is False, answer
        return answer["structuredContent"]

    return run, call


def test_the_inspector_lists_and_calls_every_tool(inspect):
    run, call = inspect
    tools = {t["name"]: t for t in run("tools/list")["tools"]}
    assert set(tools) == TOOLS and all(t["title"] and t["annotations"]["title"] == t["title"] for t in tools.values())
    called = {"memory_status": call("memory_status")}
    stored = called["memory_compress"] = call("memory_compress", text=SESSION, session="billing", agent="inspector")
    called["memory_search"] = call("memory_search", query="billing job queue Postgres")
    assert called["memory_search"]["hits"][0]["id"] == stored["id"]
    assert called["memory_search"] != call("memory_search", query="billing job queue Postgres", exclude_ids=[stored["id"]])
    called["memory_context"] = call("memory_context", query="billing queue")
    assert stored["id"] in called["memory_context"]["included"]
    called["memory_get"] = call("memory_get", id=stored["id"])
    assert called["memory_get"]["entry"]["agent"] == "mcp:inspector"
    called["memory_log"] = call("memory_log", text="the inspector was here", agent="inspector")
    called["memory_promote"] = call("memory_promote", text="Billing jobs queue in Postgres.")
    called["memory_forget"] = call("memory_forget", ids=[stored["id"]])
    assert called["memory_forget"]["forgotten"] is False  # a preview: confirm=true removes
    called["memory_archive"] = call("memory_archive", dry_run=True)
    called["memory_reembed"] = call("memory_reembed")
    assert set(called) == TOOLS
    prompts = {p["name"] for p in run("prompts/list")["prompts"]}
    assert prompts == {"recall", "save_session", "promote_decision"}
    assert [t["uriTemplate"] for t in run("resources/templates/list")["resourceTemplates"]] == ["memory://entry/{id}"]
