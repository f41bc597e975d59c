"""Install memtool into a coding agent's own hook configuration, and run those hooks.

All three supported agents have session hooks that receive a JSON payload on stdin
(`session_id`, `transcript_path`, `cwd`, `hook_event_name`, ...):

  agent        file (project / user scope)                        events
  claude-code  .claude/settings.json / ~/.claude/settings.json     SessionStart, SessionEnd
  codex        .codex/hooks.json / $CODEX_HOME/hooks.json          SessionStart, SessionEnd
  gemini       .gemini/settings.json / ~/.gemini/settings.json     SessionStart, SessionEnd

Each installed hook runs `<memory> hooks run session-start|session-end --agent NAME`
(memtool.hooks.session), `<memory>` being the absolute path of the installing `memory` program, so
that the hook runs whatever PATH the agent has; `memory hooks doctor` (memtool.hooks.doctor) runs
them as the agent would. This module is the registry of the agents (one module each: their
file, the groups memtool adds, their warnings) and installs or uninstalls through the
byte-preserving merge of memtool.hooks.common.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any, Literal

from memtool.errors import BadInput, ConfigError
from memtool.hooks import claude_code, codex, gemini, record
from memtool.hooks.common import AgentSpec, Group, HookPlan, apply, filled_record, merge_in, read_config, survey, take_out

SPECS: dict[str, AgentSpec] = {s.name: s for s in (claude_code.SPEC, codex.SPEC, gemini.SPEC)}
AGENTS = tuple(SPECS)
HOOK_EVENTS = ("session-start", "session-end")
ENTRY_POINT = "memory"  # the console script in pyproject.toml
Scope = Literal["project", "user"]


def spec(agent: str) -> AgentSpec:
    if agent not in SPECS:
        raise BadInput(f"unknown agent {agent!r}: choose one of {', '.join(AGENTS)}")
    return SPECS[agent]


def config_path(agent: str, scope: Scope, project_dir: Path | None = None, home: Path | None = None) -> Path:
    """The file `install` edits for this agent and scope."""
    s = spec(agent)
    if scope == "project":
        return (project_dir or Path.cwd()) / s.folder / s.file
    if scope != "user":
        raise BadInput(f"unknown scope {scope!r}: choose project or user")
    named = os.environ.get(s.folder_env) if s.folder_env else None
    return (Path(named) if named else (home or Path.home()) / s.folder) / s.file


def entry_point() -> Path | None:
    """The `memory` entry point of the install running now, as an absolute path: the one this process
    was started as (a venv's `bin/memory`, a pipx or `uv tool install` link in ~/.local/bin), else the
    one beside this interpreter (`python -m memtool` in a venv or tool environment). None: no such file."""
    argv0 = sys.argv[0] if sys.argv else ""
    candidates: list[str | None] = []
    if Path(argv0).stem == ENTRY_POINT:  # memory, or memory.exe on Windows
        candidates.append(argv0 if os.sep in argv0 or (os.altsep and os.altsep in argv0) else shutil.which(argv0))
    candidates.append(shutil.which(ENTRY_POINT, path=str(Path(sys.executable).parent)))
    for found in candidates:
        if found and _runnable(Path(found)):
            return Path(os.path.abspath(found))  # links kept: a pipx link survives a reinstall of its venv
    return None


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def default_runner() -> str:
    """How installed hooks call memtool: the absolute path of this install's `memory` entry point, so
    the hook runs whatever PATH the agent was started with; else this interpreter (absolute) with
    `-m memtool`, the same install. Never a bare `memory` or `python3`."""
    found = entry_point()
    return shlex.quote(str(found)) if found else f"{shlex.quote(sys.executable)} -m memtool"


def checked_runner(runner: str) -> str:
    """`runner` (a command line) if its program is an absolute path to an executable file; else a
    ConfigError saying what to give instead. A hook that cannot start fails at every session."""
    try:
        program = shlex.split(runner)[0] if runner.strip() else ""
    except ValueError as err:
        raise ConfigError(f"hook command {runner!r} is not a valid command line: {err}") from None
    path = Path(program).expanduser()
    hint = (
        "give the `memory` of the install the agent should run, e.g. --memory ~/.local/bin/memory "
        "(pipx or `uv tool install`) or --memory /path/to/venv/bin/memory"
    )
    if not path.is_absolute():
        raise ConfigError(f"hook command {program!r} is not an absolute path: an agent started from another shell may not find it; {hint}")
    if not _runnable(path):
        why = "does not exist" if not path.exists() else "is not an executable file"
        raise ConfigError(f"hook command {path} {why}; {hint}")
    return shlex.join([str(path), *shlex.split(runner)[1:]])


def hook_command(runner: str, event: str, agent: str) -> str:
    if event not in HOOK_EVENTS:
        raise BadInput(f"unknown hook event {event!r}: choose {' or '.join(HOOK_EVENTS)}")
    return f"{runner} hooks run {event} --agent {spec(agent).name}"


def desired_groups(agent: str, runner: str) -> dict[str, Group]:
    """The matcher groups we add, keyed by the agent's event name."""
    s = spec(agent)
    start, end = s.groups(hook_command(runner, "session-start", agent), hook_command(runner, "session-end", agent))
    return {s.start_event: start, s.end_event: end}


def plan_install(
    agent: str,
    scope: Scope = "project",
    *,
    project_dir: Path | None = None,
    home: Path | None = None,
    runner: str | None = None,
) -> HookPlan:
    runner = checked_runner(runner or default_runner())
    path = config_path(agent, scope, project_dir, home)
    old = read_config(path)
    s = spec(agent)
    new = merge_in(path, old, desired_groups(agent, runner), s.comments)
    before = record.load(path)  # and after: the empty containers this install fills (see record)
    after = filled_record(survey(path, old, (s.start_event, s.end_event), s.comments), before)
    plan = HookPlan(agent, "install", path, old, new, notes=list(s.notes), record_before=before, record_after=after)
    plan.commands = {event: hook_command(runner, event, agent) for event in HOOK_EVENTS}
    plan.warnings = s.warnings(path, new)
    return plan


def plan_uninstall(agent: str, scope: Scope = "project", *, project_dir: Path | None = None, home: Path | None = None) -> HookPlan:
    path = config_path(agent, scope, project_dir, home)
    old = read_config(path)
    before = record.load(path)
    new = None if old is None else take_out(path, old, spec(agent).comments, before)
    return HookPlan(agent, "uninstall", path, old, new, record_before=before)


def install(agent: str, scope: Scope = "project", *, dry_run: bool = False, **kwargs: Any) -> tuple[HookPlan, bool]:
    plan = plan_install(agent, scope, **kwargs)
    return plan, not dry_run and apply(plan)


def uninstall(agent: str, scope: Scope = "project", *, dry_run: bool = False, **kwargs: Any) -> tuple[HookPlan, bool]:
    plan = plan_uninstall(agent, scope, **kwargs)
    return plan, not dry_run and apply(plan)
