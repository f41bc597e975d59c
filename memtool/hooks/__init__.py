"""Install memtool into a coding agent's own hook configuration, and run those hooks.

The three supported agents (SPECS, below: their config file, the groups memtool adds to it, their
warnings) have session hooks that receive a JSON payload on stdin (`session_id`, `transcript_path`,
`cwd`, `hook_event_name`, ...). Each installed hook runs `<memory> hooks run session-start|session-end
--agent NAME` (memtool.hooks.session), `<memory>` being the absolute path of the installing `memory`
program, so that the hook runs whatever PATH the agent has; `memory hooks doctor`
(memtool.hooks.doctor) runs them as the agent would. Install and uninstall go through the
byte-preserving merge of memtool.hooks.common.
"""

from __future__ import annotations

import copy
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

from memtool import constants as C
from memtool.errors import BadInput, ConfigError
from memtool.hooks.common import Group, HookPlan, apply, left_empty, load_created, load_record, merge_in, missing_folders, read_config, take_out
from memtool.jsonc import Document

# ours -> what each runs: the session-start context, the session end's compress, recall for a prompt,
# and (before the agent compacts its context) the catch-up of earlier sessions no entry holds yet
OUR_EVENTS = ("session-start", "session-end", "prompt", "pre-compact")
ENTRY_POINT = "memory"  # the console script in pyproject.toml
Scope = Literal["project", "user"]


@dataclass(frozen=True)
class AgentSpec:
    """One agent: where its hook config lives, its format, its event names, the groups memtool adds,
    and the most context it takes from one hook."""

    name: str
    label: str
    config: str  # the config file, in the project folder and (user scope) in the home directory
    comments: bool  # the format allows // and /* */ comments
    events: dict[str, str]  # ours (OUR_EVENTS) -> the agent's event name
    groups: dict[str, Group]  # ours -> the group added to that event, with one handler whose "command" install fills
    notes: tuple[str, ...]
    warnings: Callable[[Path, str], list[str]] = lambda path, new_text: []  # (config file, its new text): settings that keep the hooks from running
    folder_env: str | None = None  # an environment variable naming the user-scope folder of the config file instead
    timeout_units_per_s: int = 1  # what the handlers' "timeout" counts: seconds, or (1000) milliseconds
    cap_chars: int | None = None  # the most additionalContext the agent passes on whole, in characters
    cap_tokens: int | None = None  # ... in tokens
    tag: bool = True  # wrap what is injected in <memtool-context> (Gemini CLI: its own <hook_context>, and it escapes `<`)
    stderr_shown: bool = False  # the agent shows a hook's stderr to the user when its stdout is empty: say nothing on success


def _codex_warnings(path: Path, new_text: str) -> list[str]:
    """The config.toml beside hooks.json turning hooks off, or unreadable."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: no stdlib TOML reader; skip the check
        return []
    config = path.parent / "config.toml"
    try:
        raw = config.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as err:
        return [f"{config}: cannot read it to check [features].hooks: {err}"]
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as err:
        return [f"{config}: invalid TOML ({err}); Codex will not start until it is fixed."]
    features = data.get("features")
    off = [key for key in ("hooks", "codex_hooks") if isinstance(features, dict) and features.get(key) is False]
    return [f"{config}: [features] {off[0]} = false turns Codex hooks off."] if off else []


def _gemini_warnings(path: Path, new_text: str) -> list[str]:
    """Hooks turned off, or ours listed as disabled, in the same settings file."""
    data = Document(new_text, comments=True).data()
    holders = {label: data[label] for label in ("hooksConfig", "hooks") if isinstance(data.get(label), dict)}
    out = [f"{path}: {label}.enabled is false, so Gemini CLI runs no hooks." for label, holder in holders.items() if holder.get("enabled") is False]
    disabled = [name for holder in holders.values() if isinstance(holder.get("disabled"), list) for name in holder["disabled"]]
    ours = [group["hooks"][0]["name"] for group in SPECS["gemini"].groups.values()]
    return out + [f"{path}: hook {name!r} is listed as disabled." for name in ours if name in disabled]


def _handler(timeout_s: int, **fields: Any) -> dict[str, Any]:
    return {"type": "command", "command": "", "timeout": timeout_s} | fields


def _named(name: str, description: str, timeout_s: int) -> dict[str, Any]:
    return {"name": name, "type": "command", "command": "", "description": description, "timeout": timeout_s * 1000}


# Context on start-up, /clear and compaction; SessionEnd gets a timeout (Claude Code's default is 1.5 s,
# Codex caps it at 3 s). Gemini CLI: named handlers with timeouts in milliseconds; lifecycle matchers
# are exact strings there, so none (= all). Claude Code replaces an additionalContext over 10,000
# characters with a 2 KB preview; Codex caps hook context at 2,500 tokens by default.
_MATCHER = "startup|clear|compact"
_CLAUDE_EVENTS = {"session-start": "SessionStart", "session-end": "SessionEnd", "prompt": "UserPromptSubmit", "pre-compact": "PreCompact"}
SPECS: dict[str, AgentSpec] = {
    s.name: s
    for s in (
        AgentSpec(
            "claude-code",
            "Claude Code",
            ".claude/settings.json",
            comments=False,
            events=_CLAUDE_EVENTS,
            groups={
                "session-start": {"matcher": _MATCHER, "hooks": [_handler(C.HOOK_START_TIMEOUT_S)]},
                "session-end": {"hooks": [_handler(C.HOOK_END_TIMEOUT_S)]},
                "prompt": {"hooks": [_handler(C.HOOK_PROMPT_TIMEOUT_S)]},
                "pre-compact": {"hooks": [_handler(C.HOOK_END_TIMEOUT_S)]},
            },
            notes=("Claude Code reads hooks at start-up: restart it, then check them with /hooks.",),
            cap_chars=C.HOOK_CLAUDE_CAP_CHARS,
        ),
        AgentSpec(
            "codex",
            "Codex CLI",
            ".codex/hooks.json",
            comments=False,
            events=_CLAUDE_EVENTS,
            groups={
                "session-start": {"matcher": _MATCHER, "hooks": [_handler(C.HOOK_START_TIMEOUT_S, statusMessage="Loading memtool memory")]},
                "session-end": {"hooks": [_handler(C.HOOK_CODEX_END_TIMEOUT_S, statusMessage="Saving session to memtool")]},
                "prompt": {"hooks": [_handler(C.HOOK_PROMPT_TIMEOUT_S, statusMessage="Recalling memtool memory")]},
                "pre-compact": {"hooks": [_handler(C.HOOK_CODEX_END_TIMEOUT_S)]},
            },
            notes=(
                "Codex runs new hooks only after you review and trust them: open /hooks in Codex.",
                "SessionEnd hooks need a recent Codex (0.146 or later); project hooks load only in trusted projects.",
            ),
            warnings=_codex_warnings,  # hooks also need `[features] hooks` left on in the config.toml beside hooks.json
            folder_env="CODEX_HOME",
            cap_tokens=C.HOOK_CODEX_CAP_TOKENS,
        ),
        AgentSpec(
            "gemini",
            "Gemini CLI",
            ".gemini/settings.json",
            comments=True,
            events={"session-start": "SessionStart", "session-end": "SessionEnd", "prompt": "BeforeAgent", "pre-compact": "PreCompress"},
            groups={
                "session-start": {"hooks": [_named("memtool-session-start", "Load the memtool memory context", C.HOOK_START_TIMEOUT_S)]},
                "session-end": {"hooks": [_named("memtool-session-end", "Compress this session into memtool memory", C.HOOK_END_TIMEOUT_S)]},
                "prompt": {"hooks": [_named("memtool-prompt", "Recall what memtool memory knows about the prompt", C.HOOK_PROMPT_TIMEOUT_S)]},
                "pre-compact": {"hooks": [_named("memtool-pre-compress", "Save earlier sessions no memtool entry holds yet", C.HOOK_END_TIMEOUT_S)]},
            },
            notes=("Check the hooks with /hooks panel in Gemini CLI (older versions need hooks enabled in /settings).",),
            warnings=_gemini_warnings,
            timeout_units_per_s=1000,
            tag=False,
            stderr_shown=True,
        ),
    )
}
AGENTS = tuple(SPECS)


def spec(agent: str) -> AgentSpec:
    if agent not in SPECS:
        raise BadInput(f"unknown agent {agent!r}: choose one of {', '.join(AGENTS)}")
    return SPECS[agent]


def config_path(agent: str, scope: Scope, project_dir: Path | None = None) -> Path:
    s = spec(agent)
    if scope == "project":
        return (project_dir or Path.cwd()) / s.config
    if scope != "user":
        raise BadInput(f"unknown scope {scope!r}: choose project or user")
    named = os.environ.get(s.folder_env) if s.folder_env else None
    return Path(named) / Path(s.config).name if named else Path.home() / s.config


def entry_point() -> Path | None:
    """The `memory` entry point of the install running now, as an absolute path: the one this process
    was started as (a venv's `bin/memory`, a pipx or `uv tool install` link in ~/.local/bin), else the
    one beside this interpreter (`python -m memtool` in a venv or tool environment). None: no such file."""
    argv0 = sys.argv[0] if sys.argv else ""
    candidates = [shutil.which(ENTRY_POINT, path=str(Path(sys.executable).parent))]
    if Path(argv0).stem == ENTRY_POINT:  # memory, or memory.exe on Windows
        candidates.insert(0, argv0 if os.sep in argv0 or (os.altsep and os.altsep in argv0) else shutil.which(argv0))
    runnable = (found for found in candidates if found and Path(found).is_file() and os.access(found, os.X_OK))
    return next((Path(os.path.abspath(found)) for found in runnable), None)  # links kept: a pipx link survives a reinstall of its venv


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
    if not (path.is_file() and os.access(path, os.X_OK)):
        why = "does not exist" if not path.exists() else "is not an executable file"
        raise ConfigError(f"hook command {path} {why}; {hint}")
    return shlex.join([str(path), *shlex.split(runner)[1:]])


def hook_command(runner: str, event: str, agent: str) -> str:
    return f"{runner} hooks run {event} --agent {agent}"


def desired_groups(agent: str, runner: str) -> dict[str, Group]:
    """The matcher groups we add, keyed by the agent's event name."""
    s, out = spec(agent), {}
    for event in OUR_EVENTS:
        out[s.events[event]] = group = copy.deepcopy(s.groups[event])
        group["hooks"][0]["command"] = hook_command(runner, event, agent)
    return out


def install(
    agent: str, scope: Scope = "project", *, dry_run: bool = False, project_dir: Path | None = None, runner: str | None = None
) -> tuple[HookPlan, bool]:
    """Merge memtool's hooks into the agent's config file (written unless `dry_run`): (the plan, written)."""
    runner = checked_runner(runner or default_runner())
    path, s = config_path(agent, scope, project_dir), spec(agent)
    old = read_config(path)
    before = load_record(path)  # and after: the empty containers this install fills (see memtool.hooks.common)
    new, after = merge_in(path, old, desired_groups(agent, runner), s.comments, before)
    commands = {event: hook_command(runner, event, agent) for event in OUR_EVENTS}
    created = missing_folders(path) if old is None else None
    plan = HookPlan(agent, "install", path, old, new, s.warnings(path, new), list(s.notes), commands, after if after != before else None, created)
    return plan, not dry_run and apply(plan)


def uninstall(agent: str, scope: Scope = "project", *, dry_run: bool = False, project_dir: Path | None = None) -> tuple[HookPlan, bool]:
    """Take exactly memtool's hooks out of the agent's config file (written unless `dry_run`): (the plan, written)."""
    path, comments = config_path(agent, scope, project_dir), spec(agent).comments
    old = read_config(path)
    before, created = load_record(path), load_created(path)
    new = None if old is None else take_out(path, old, comments, before)
    if new is not None and new != old and created is not None and left_empty(new, comments):
        new = None  # install created the file: it goes, and the folders it made once empty
    plan = HookPlan(agent, "uninstall", path, old, new, record={} if before else None, created=created)
    return plan, not dry_run and apply(plan)
