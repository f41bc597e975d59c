"""The agent packages in plugins/ (Claude Code plugin, Codex plugin, Gemini CLI extension) and their
marketplaces: valid JSON, the hooks `memory hooks install` writes (memtool.hooks.SPECS: same events,
matchers, timeouts and `hooks run` sub-commands), and the wrapper they all run. The real clients load
them in tests/real_clients/test_plugins.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memtool import __version__
from memtool.hooks import AGENTS, desired_groups

REPO = Path(__file__).resolve().parent.parent
PLUGINS = REPO / "plugins"
# agent -> (its package folder, its manifest, how its hooks name the package folder)
PACKAGES = {
    "claude-code": ("claude-code", ".claude-plugin/plugin.json", "${CLAUDE_PLUGIN_ROOT}"),
    "codex": ("codex", ".codex-plugin/plugin.json", "${PLUGIN_ROOT}"),
    "gemini": ("gemini", "gemini-extension.json", "${extensionPath}"),
}


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_agent_has_a_package_named_and_versioned_like_memtool():
    assert set(PACKAGES) == set(AGENTS)
    for agent, (folder, manifest, _) in PACKAGES.items():
        data = load(PLUGINS / folder / manifest)
        assert (data["name"], data["version"]) == ("memtool", __version__), agent
        assert data["description"]


@pytest.mark.parametrize("agent", AGENTS)
def test_package_hooks_are_the_ones_hooks_install_writes(agent):
    folder, _, root = PACKAGES[agent]
    hooks = load(PLUGINS / folder / "hooks" / "hooks.json")["hooks"]
    wanted = {event: [group] for event, group in desired_groups(agent, f'"{root}/bin/memtool"').items()}
    assert hooks == wanted


def test_marketplaces_point_at_the_packages():
    claude = load(REPO / ".claude-plugin" / "marketplace.json")
    [entry] = claude["plugins"]
    assert entry["name"] == "memtool" and entry["version"] == __version__
    assert (REPO / entry["source"] / ".claude-plugin" / "plugin.json").is_file()
    codex = load(REPO / ".agents" / "plugins" / "marketplace.json")
    [entry] = codex["plugins"]
    assert entry["name"] == "memtool" and entry["source"]["source"] == "local"
    assert (REPO / entry["source"]["path"] / ".codex-plugin" / "plugin.json").is_file()
    manifest = load(PLUGINS / "codex" / ".codex-plugin" / "plugin.json")
    for key in ("skills", "mcpServers", "hooks"):
        assert (PLUGINS / "codex" / manifest[key]).exists(), key


def test_each_package_serves_the_mcp_server_of_the_project():
    servers = {
        "claude-code": load(PLUGINS / "claude-code" / ".mcp.json")["mcpServers"],
        "codex": load(PLUGINS / "codex" / ".mcp.json")["mcpServers"],
        "gemini": load(PLUGINS / "gemini" / "gemini-extension.json")["mcpServers"],
    }
    for agent, found in servers.items():
        assert list(found) == ["memtool"] and found["memtool"]["args"][-1] == "serve", agent
    assert servers["claude-code"]["memtool"]["command"] == "${CLAUDE_PLUGIN_ROOT}/bin/memtool"
    assert servers["gemini"]["memtool"]["command"] == "${extensionPath}${/}bin${/}memtool"
    # Codex leaves ${PLUGIN_ROOT} in an MCP command as it is (openai/codex#35762): `memory` from PATH, in the project
    assert servers["codex"]["memtool"] == {"command": "memory", "args": ["--root", ".", "serve"]}


def test_the_skill_and_the_wrapper_are_the_same_file_in_every_package():
    for name in ("skills/memtool/SKILL.md", "bin/memtool"):
        copies = {folder: (PLUGINS / folder / name).read_bytes() for folder, _, _ in PACKAGES.values()}
        assert len(set(copies.values())) == 1, f"{name} differs between {', '.join(copies)}"
    for folder, _, _ in PACKAGES.values():
        assert (PLUGINS / folder / "bin" / "memtool").stat().st_mode & stat.S_IXUSR
    skill = (PLUGINS / "claude-code" / "skills" / "memtool" / "SKILL.md").read_text(encoding="utf-8")
    front = skill.split("---\n")[1]
    assert "name: memtool\n" in front and "description: " in front
    for tool in ("memory_search", "memory_log", "memory_promote"):
        assert tool in skill


def wrapper(*args: str, tmp_path: Path, memory: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """bin/memtool run as an agent runs it: no `memory` on PATH or in the (empty) HOME unless `memory` is given."""
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)} | ({"MEMTOOL_MEMORY": memory} if memory else {}) | env
    return subprocess.run(["sh", str(PLUGINS / "claude-code" / "bin" / "memtool"), *args], env=base, cwd=tmp_path, capture_output=True, text=True, timeout=30)


def test_without_memtool_a_hook_says_how_to_install_it_and_succeeds(tmp_path):
    start = wrapper("hooks", "run", "session-start", "--agent", "claude-code", tmp_path=tmp_path)
    assert start.returncode == 0
    answer = json.loads(start.stdout)
    assert "pipx install" in answer["systemMessage"] and "uv tool install" in answer["systemMessage"]
    assert answer["hookSpecificOutput"] == {"hookEventName": "SessionStart", "additionalContext": answer["systemMessage"]}
    end = wrapper("hooks", "run", "session-end", "--agent", "gemini", tmp_path=tmp_path)
    assert end.returncode == 0 and "memtool is not installed" in json.loads(end.stdout)["systemMessage"]
    prompt = wrapper("hooks", "run", "prompt", "--agent", "codex", tmp_path=tmp_path)
    assert prompt.returncode == 0 and prompt.stdout == ""  # said once, at session start
    serve = wrapper("serve", tmp_path=tmp_path)
    assert serve.returncode == 127 and "pipx install" in serve.stderr


def test_the_wrapper_runs_the_installed_memory_and_serves_the_agents_project(tmp_path):
    fake = tmp_path / ".local" / "bin" / "memory"  # where pipx and `uv tool install` put it
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\nprintf "%s|" "$@"\n')
    fake.chmod(0o755)
    assert wrapper("hooks", "run", "prompt", "--agent", "codex", tmp_path=tmp_path).stdout == "hooks|run|prompt|--agent|codex|"
    project = tmp_path / "my project"
    assert wrapper("serve", tmp_path=tmp_path, CLAUDE_PROJECT_DIR=str(project)).stdout == f"--root|{project}|serve|"
    assert wrapper("serve", tmp_path=tmp_path).stdout == f"--root|{tmp_path}|serve|"
    assert wrapper("serve", tmp_path=tmp_path, MEMTOOL_ROOT=str(project)).stdout == "serve|"  # memory serve reads $MEMTOOL_ROOT itself
    real = Path(sys.executable).parent / "memory"
    done = wrapper("--version", tmp_path=tmp_path, memory=str(real))
    assert done.returncode == 0 and done.stdout.startswith("memory (memtool) "), done.stderr
    assert os.access(real, os.X_OK)
