"""`memory hooks doctor`: each installed hook run for real, as the agent would run it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memtool import hooks as core
from memtool.hooks.doctor import agent_environment, check_hooks, codex_hook_hash
from memtool.scaffold import init
from tests.hooks.conftest import RUNNER, cli

pytestmark = pytest.mark.skipif(not Path(RUNNER).is_absolute(), reason="no `memory` script beside this interpreter")


def agent_env(env: dict[str, str]) -> dict[str, str]:
    """An agent started from a plain shell: no venv on PATH, the memory found from the project folder."""
    return {k: v for k, v in env.items() if k != "MEMTOOL_ROOT"} | {"PATH": "/usr/bin:/bin"}


EVENTS = ("session-start", "session-end", "prompt", "pre-compact")


def trust_in_codex(home: Path, hooks_file: Path, enabled: bool = True, stale: bool = False) -> None:
    """What Codex's /hooks writes to the user's config.toml once each of memtool's hooks is trusted
    (`stale`: trusted before the hook changed)."""
    data = json.loads(hooks_file.read_text())
    snake = {"SessionStart": "session_start", "SessionEnd": "session_end", "UserPromptSubmit": "user_prompt_submit", "PreCompact": "pre_compact"}
    lines = []
    for event, groups in data["hooks"].items():
        for gi, group in enumerate(groups):
            for hi, handler in enumerate(group["hooks"]):
                trusted = codex_hook_hash(event, group.get("matcher"), handler | ({"statusMessage": "an older memtool"} if stale else {}))
                lines += [f'[hooks.state."{hooks_file}:{snake[event]}:{gi}:{hi}"]', f'trusted_hash = "{trusted}"', f"enabled = {str(enabled).lower()}", ""]
    (home / ".codex").mkdir(exist_ok=True)
    (home / ".codex" / "config.toml").write_text("\n".join(lines))


def test_installed_hooks_of_every_agent_run_and_load_memory(root, env):
    init(root)
    with open(root / "MEMORY.md", "a", encoding="utf-8") as fh:
        fh.write("\n## Key decisions\n- Use pnpm, not npm.\n")
    for agent in core.AGENTS:
        core.install(agent, project_dir=root)
    trust_in_codex(Path(env["HOME"]), root / ".codex" / "hooks.json")
    report = check_hooks(root, env=agent_env(env))
    assert [(c.agent, c.scope, c.event, c.ok) for c in report.checks] == [(agent, "project", event, True) for agent in core.AGENTS for event in EVENTS], [
        c.detail for c in report.checks
    ]
    start = [c for c in report.checks if c.event == "session-start"]
    assert all(c.detail.startswith("exit 0; loads") for c in start)  # the note in MEMORY.md
    assert len(report.not_installed) == 3  # no user-scope hooks


@pytest.mark.skipif(sys.version_info < (3, 11), reason="no tomllib: the trust check is skipped on Python 3.10")
def test_codex_hooks_nobody_trusted_are_not_ok(root, env):
    """Codex skips hooks nobody trusted in /hooks, silently: the doctor says so instead of ok."""
    init(root)
    core.install("codex", project_dir=root)
    report = check_hooks(root, ("codex",), env=agent_env(env))
    assert [(c.event, c.ok) for c in report.checks] == [(event, False) for event in EVENTS]
    assert all(c.detail.startswith("installed but not trusted") and c.fix == "open /hooks in Codex and trust memtool's hooks" for c in report.checks)
    trust_in_codex(Path(env["HOME"]), root / ".codex" / "hooks.json", enabled=False)
    report = check_hooks(root, ("codex",), env=agent_env(env))
    assert all(not c.ok and c.detail.startswith("disabled in Codex's /hooks") for c in report.checks)
    trust_in_codex(Path(env["HOME"]), root / ".codex" / "hooks.json", stale=True)
    report = check_hooks(root, ("codex",), env=agent_env(env))
    assert all(not c.ok and c.detail.startswith("changed since it was trusted") for c in report.checks)
    trust_in_codex(Path(env["HOME"]), root / ".codex" / "hooks.json")
    assert check_hooks(root, ("codex",), env=agent_env(env)).ok


def test_codex_hook_hash_is_the_one_codex_trusts():
    """The `currentHash` Codex 0.171.0's app-server listed (`hooks/list`) for hooks memtool installed
    (`codex app-server` run on a CODEX_HOME holding them)."""
    memory = "/work/wt/hooks/.venv/bin/memory"
    start = {"type": "command", "command": f"{memory} hooks run session-start --agent codex", "timeout": 30, "statusMessage": "Loading memtool memory"}
    end = {"type": "command", "command": f"{memory} hooks run session-end --agent codex", "timeout": 3, "statusMessage": "Saving session to memtool"}
    compact = {"type": "command", "command": f"{memory} hooks run pre-compact --agent codex", "timeout": 3}
    assert codex_hook_hash("SessionStart", "startup|clear|compact", start) == "sha256:7d7b10b63781d4346e7e16b0a27f346e56f2ff5e721842ce488346f1e1aafbae"
    assert codex_hook_hash("SessionEnd", None, end) == "sha256:6773e970a4c4cc6872d54506e5a59e5083be2a711f20db6f7580330ae6600590"
    assert codex_hook_hash("PreCompact", None, compact) == "sha256:cb0cb730f605317ad93af0235bcb4d78c81b5f63a60afbc3099503e08ba28919"


def test_a_bare_memory_command_fails_with_the_fix(root, env):
    init(root)
    core.install("claude-code", project_dir=root)
    config = root / ".claude" / "settings.json"
    config.write_text(config.read_text().replace(f"{RUNNER} hooks run session-start", "memory hooks run session-start"))
    report = check_hooks(root, ("claude-code",), env=agent_env(env))
    [start, end, prompt, compact] = report.checks
    assert not report.ok and end.ok and prompt.ok and compact.ok
    assert not start.ok and start.detail.startswith("exit 127: the command is not found")
    assert start.command == "memory hooks run session-start --agent claude-code" and start.config == str(config)
    assert "memory hooks install --agent claude-code" in start.fix


def test_user_scope_hooks_in_a_project_without_memory_report_it(tmp_path, env, monkeypatch):
    project = tmp_path / "elsewhere"
    project.mkdir()
    core.install("codex", "user")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("MEMTOOL_ROOT")
    for var in ("MEMTOOL_EMBEDDER", "MEMTOOL_COMPRESSOR", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, env[var])
    result = cli("doctor", "--agent", "codex", "--project-dir", str(project), "--json")
    assert result.exit_code == 1
    [start, end, *_] = json.loads(result.stdout)["checks"]
    assert (start["scope"], start["ok"], start["fix"]) == ("user", False, "run `memory init` in the project")
    assert f"no memory/ in {project.resolve()}" in start["detail"]
    assert end["detail"].startswith("installed but not trusted") or sys.version_info < (3, 11)  # it starts, but nobody trusted it in /hooks


def test_agent_environment_takes_the_active_venv_off_path():
    env = agent_environment({"VIRTUAL_ENV": "/v", "PATH": "/v/bin:/usr/bin:/bin", "HOME": "/h"})
    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/h"}
