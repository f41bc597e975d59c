"""The packages in plugins/ as the real clients see them (node_modules/.bin, pinned in package.json):
each client's own validator, then an install as a user would do it, from a copy of the repository's
plugin files in a throwaway HOME. Nothing reaches the network: every source is a local folder.

  Claude Code  `claude plugin validate` (plugin and marketplace), `--plugin-dir` (its inventory), and
               `claude plugin marketplace add` + `claude plugin install memtool@memtool`
  Codex CLI    `codex plugin marketplace add` + `codex plugin add memtool@memtool`, then its
               app-server's `hooks/list`: the plugin's hooks as Codex will run them
  Gemini CLI   `gemini extensions validate`, `gemini extensions link`, `gemini extensions list`
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from memtool.hooks import SPECS

HERE = Path(__file__).parent
BIN = HERE / "node_modules" / ".bin"
REPO = HERE.parent.parent
TIMEOUT_S = 180
# variables of the machine's own agents and of memtool that must not reach the sandbox
_DROP = re.compile(r"^(MEMTOOL_|ANTHROPIC_|CLAUDE|OPENAI_|CODEX_|GEMINI_|GOOGLE_|XDG_|MCP_)")

pytestmark = [pytest.mark.real_clients, pytest.mark.usefixtures("clients_available")]  # skipped without `npm ci`, a failure under CI


@pytest.fixture
def sandbox(tmp_path):
    """A throwaway HOME, and a copy of the repository's plugin files (the marketplaces and plugins/)."""
    home, repo = tmp_path / "client-home", tmp_path / "memtool"
    home.mkdir()
    for part in (".claude-plugin", ".agents", "plugins"):
        shutil.copytree(REPO / part, repo / part, symlinks=True)
    shutil.copyfile(REPO / "README.md", repo / "README.md")
    env = {k: v for k, v in os.environ.items() if not _DROP.match(k)} | {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "NO_COLOR": "1", "CI": "true"}
    (home / ".codex").mkdir()
    return home, repo, env


def client(name: str, *args: str, env: dict, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(BIN / name), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{name} {' '.join(args)} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def json_of(text: str):
    """The JSON document in a client's output (Codex prints warnings before it)."""
    return json.loads(text[min(i for i in (text.find("{"), text.find("[")) if i >= 0) :])


def test_claude_code_validates_loads_and_installs_the_plugin(sandbox):
    home, repo, env = sandbox
    plugin = repo / "plugins" / "claude-code"
    assert "Validation passed" in client("claude", "plugin", "validate", str(plugin), env=env, cwd=home).stdout
    assert "Validation passed" in client("claude", "plugin", "validate", str(repo), env=env, cwd=home).stdout  # the marketplace
    details = client("claude", "--plugin-dir", str(plugin), "plugin", "details", "memtool@inline", env=env, cwd=home).stdout
    assert re.search(r"Hooks \(4\)\s+SessionStart, SessionEnd, UserPromptSubmit, PreCompact", details), details
    assert re.search(r"MCP servers \(1\)\s+memtool", details) and re.search(r"Skills \(1\)\s+memtool", details), details
    client("claude", "plugin", "marketplace", "add", str(repo), env=env, cwd=home)
    client("claude", "plugin", "install", "memtool@memtool", env=env, cwd=home)
    [installed] = [p for p in json_of(client("claude", "plugin", "list", "--json", env=env, cwd=home).stdout) if p["id"] == "memtool@memtool"]
    assert installed["enabled"] and os.access(Path(installed["installPath"]) / "bin" / "memtool", os.X_OK)
    assert installed["mcpServers"]["memtool"]["args"] == ["serve"]


def codex_hooks(env: dict, cwd: Path) -> list[dict]:
    """Codex's own view of the hooks it would run in `cwd`: `codex app-server`, JSON-RPC `hooks/list`."""
    proc = subprocess.Popen(
        [str(BIN / "codex"), "app-server"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in (
            {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "memtool-tests", "version": "0"}}},
            {"method": "initialized"},
            {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
        ):
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, "codex app-server closed its output before answering hooks/list"
            answer = json.loads(line)
            if answer.get("id") == 2:
                assert "result" in answer, f"hooks/list failed: {answer}"
                return [hook for entry in answer["result"]["data"] for hook in entry["hooks"]]
        raise AssertionError("codex app-server did not answer hooks/list within 60 s")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_codex_installs_the_plugin_from_the_repository_marketplace_with_its_hooks(sandbox, tmp_path):
    home, repo, env = sandbox
    added = json_of(client("codex", "plugin", "marketplace", "add", str(repo), "--json", env=env, cwd=home).stdout)
    assert added["marketplaceName"] == "memtool"
    installed = json_of(client("codex", "plugin", "add", "memtool@memtool", "--json", env=env, cwd=home).stdout)
    root = Path(installed["installedPath"])
    listed = json_of(client("codex", "plugin", "list", "--json", env=env, cwd=home).stdout)["installed"]
    assert [(p["pluginId"], p["enabled"]) for p in listed] == [("memtool@memtool", True)]
    project = tmp_path / "project"
    project.mkdir()
    hooks = [h for h in codex_hooks(env, project) if h.get("pluginId") == "memtool@memtool"]
    spec = SPECS["codex"]
    camel = {name: name[0].lower() + name[1:] for name in spec.events.values()}  # SessionStart -> sessionStart
    assert {h["eventName"]: h["command"] for h in hooks} == {
        camel[spec.events[ours]]: f'"{root}/bin/memtool" hooks run {ours} --agent codex' for ours in spec.events
    }  # ${PLUGIN_ROOT} replaced by the installed copy, whose wrapper is there to run
    assert os.access(root / "bin" / "memtool", os.X_OK)
    assert {h["eventName"]: h["timeoutSec"] for h in hooks} == {camel[spec.events[o]]: g["hooks"][0]["timeout"] for o, g in spec.groups.items()}


def test_gemini_validates_links_and_lists_the_extension(sandbox):
    home, repo, env = sandbox
    extension = repo / "plugins" / "gemini"
    validated = client("gemini", "extensions", "validate", str(extension), env=env, cwd=home)
    assert "successfully validated" in validated.stdout + validated.stderr
    client("gemini", "extensions", "link", str(extension), "--consent", env=env, cwd=home)
    listed = client("gemini", "extensions", "list", env=env, cwd=home)
    text = listed.stdout + listed.stderr
    assert re.search(r"memtool \(\d+\.\d+\.\d+\)", text), text
    assert re.search(r"MCP servers:\s+memtool", text) and re.search(r"Agent skills:\s+memtool:", text), text
