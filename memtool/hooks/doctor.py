"""`memory hooks doctor`: run each installed memtool hook as its agent would, and say what fails.

For every agent and scope whose config file holds memtool's hooks, each hook's command runs the way
the agents run it: through the shell (`sh -c` on POSIX), with a sample payload on stdin, the project
folder as its working directory, the hook's own timeout, and the environment of an agent started
from another shell (the active virtual environment taken off PATH). session-start must exit 0 and
print nothing or the agents' JSON without a memtool failure note; session-end gets no
transcript_path, so it only proves the command starts (it compresses nothing); prompt gets a sample
prompt and must print nothing or the agents' JSON; no hook starts background work under the doctor
(C.ENV_HOOKS_NO_SPAWN).

Codex runs a hook only once the user trusted it in `/hooks`, and records that in the user's
config.toml (`$CODEX_HOME/config.toml`) as `[hooks.state."<hooks.json path>:<event>:<group>:<handler>"]`
with a `trusted_hash` (its hash of the hook's definition, codex_hook_hash) and `enabled`. A handler of
ours with no such record is reported as installed but not trusted, one whose trusted hash is not its
hash now as changed since it was trusted, one with `enabled = false` as disabled: Codex skips all three
without a word.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memtool import constants as C
from memtool.errors import HookConfigError
from memtool.hooks import AGENTS, Scope, config_path, spec
from memtool.hooks.common import open_config, ours_in, read_config

NOT_FOUND_EXIT = 127  # what a POSIX shell exits with when the command is not found
NOT_EXECUTABLE_EXIT = 126


@dataclass(frozen=True)
class HookCheck:
    """One installed hook, run once."""

    agent: str
    scope: str
    event: str  # session-start | session-end | prompt | pre-compact
    config: str  # the agent's config file holding the hook
    command: str
    ok: bool
    detail: str  # what happened (exit code, the hook's message)
    fix: str  # what to do when not ok; empty when ok


@dataclass
class HooksReport:
    project: Path
    checks: list[HookCheck]
    not_installed: list[str]  # "<agent> (<scope>): <config file>" with no memtool hooks

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"project": str(self.project), "ok": self.ok, "checks": [asdict(c) for c in self.checks], "not_installed": self.not_installed}


def agent_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of an agent started from another shell: this one without the active virtual
    environment (its bin folder off PATH, VIRTUAL_ENV unset)."""
    env = dict(os.environ if environ is None else environ)
    venv = env.pop("VIRTUAL_ENV", None)
    if venv:
        bins = {os.path.join(venv, "bin"), os.path.join(venv, "Scripts")}
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p.rstrip("/\\") not in bins)
    return env


SAMPLE_EXTRA = {
    "session-start": {"source": "startup"},
    "session-end": {"reason": "other"},
    "prompt": {"prompt": "memtool hooks doctor check"},
    "pre-compact": {"trigger": "manual"},
}


def sample_payload(agent: str, event: str, project: Path) -> str:
    """What the agent writes on the hook's stdin; session-end without a transcript (nothing is compressed)."""
    return json.dumps({"session_id": "memtool-hooks-doctor", "cwd": str(project), "hook_event_name": spec(agent).events[event]} | SAMPLE_EXTRA[event])


def installed(agent: str, scope: Scope, project: Path) -> tuple[Path, list[tuple[str, dict[str, Any], str, Any]]]:
    """The agent's config file for `scope`, and memtool's handlers in it as (event, handler, where:
    "<agent event>:<group index>:<handler index>", the group's matcher or None)."""
    path = config_path(agent, scope, project)
    text = read_config(path)
    try:
        hooks = open_config(path, text, spec(agent).comments).data().get("hooks", {}) if text and text.strip() else {}
    except HookConfigError:
        hooks = {}  # `memory hooks install` names the line; nothing of ours can run from it
    events = spec(agent).events
    groups: dict[str, Any] = {event: hooks.get(agent_event) for event, agent_event in events.items()}
    return path, [
        (event, groups[event][gi]["hooks"][hi], f"{events[event]}:{gi}:{hi}", groups[event][gi].get("matcher"))
        for event in groups
        for gi, ours in ours_in(groups[event]).items()
        for hi in ours
    ]


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


_CONTEXT_LIMIT_EVENTS = {"pre_tool_use", "post_tool_use", "session_start", "user_prompt_submit", "subagent_start"}


def codex_hook_hash(event: str, matcher: Any, handler: dict[str, Any]) -> str:
    """The hash Codex trusts a hook by: SHA-256 of the compact, key-sorted JSON of the event's snake_case
    name, the group's matcher (when set) and the handler as Codex normalises it (type, command, timeout
    (SessionEnd's within 1-3 s), async, statusMessage, additionalContextLimit when not the default 2,500).
    Checked against the `currentHash` that Codex 0.171.0's app-server lists (`hooks/list`) for each of
    memtool's four hooks."""
    label = _snake(event)
    raw = handler.get("timeout")
    timeout = raw if isinstance(raw, int) and not isinstance(raw, bool) else (1 if label == "session_end" else 600)
    timeout = min(3, max(1, timeout)) if label == "session_end" else max(1, timeout)
    normal: dict[str, Any] = {"type": "command", "command": handler.get("command"), "timeout": timeout, "async": bool(handler.get("async"))}
    if handler.get("statusMessage"):
        normal["statusMessage"] = handler["statusMessage"]
    limit = handler.get("additionalContextLimit")
    if label in _CONTEXT_LIMIT_EVENTS and isinstance(limit, int) and limit != C.HOOK_CODEX_CAP_TOKENS:
        normal["additionalContextLimit"] = limit
    identity: dict[str, Any] = {"event_name": label, "hooks": [normal]} | ({"matcher": matcher} if matcher is not None else {})
    return "sha256:" + hashlib.sha256(json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")).hexdigest()


def codex_trust(hooks_file: Path, where: str, expected_hash: str = "", environ: dict[str, str] | None = None) -> str:
    """Returns "trusted", "modified" (trusted before the hook changed), "untrusted" or "disabled": what the
    user's Codex config.toml says of the handler at `where` ("<Event>:<group>:<handler>") of
    `hooks_file`, whose hash now is `expected_hash`. "" when it cannot be read (no tomllib, or the
    file is broken: the install warnings say so)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return ""
    env = os.environ if environ is None else environ
    config = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex") / "config.toml"
    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ""
    hooks = data.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    event, gi, hi = where.split(":")
    wanted = (os.path.realpath(hooks_file), f"{_snake(event)}:{gi}:{hi}")
    for key, state in states.items() if isinstance(states, dict) else ():
        parts = key.rsplit(":", 3)
        if len(parts) == 4 and isinstance(state, dict) and (os.path.realpath(parts[0]), ":".join(parts[1:])) == wanted:
            if state.get("enabled") is False:
                return "disabled"
            trusted = state.get("trusted_hash")
            if not isinstance(trusted, str) or not trusted:
                return "untrusted"
            return "modified" if expected_hash and trusted != expected_hash else "trusted"
    return "untrusted"


def _timeout_s(agent: str, handler: dict[str, Any]) -> float:
    value = handler.get("timeout")
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        return float(C.HOOK_START_TIMEOUT_S)
    return value / spec(agent).timeout_units_per_s


def _last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


def _outcome(agent: str, scope: str, event: str, command: str, timeout: float, project: Path, env: dict[str, str] | None) -> tuple[bool, str, str]:
    """(ok, detail, fix) of running a handler's command once, as the agent would."""
    reinstall = f"memory hooks install --agent {agent}" + (" --scope user" if scope == "user" else "")
    environment = agent_environment(env) | {C.ENV_HOOKS_NO_SPAWN: "1"}
    try:
        done = subprocess.run(
            command, shell=True, cwd=project, input=sample_payload(agent, event, project), capture_output=True, text=True, timeout=timeout, env=environment
        )
    except subprocess.TimeoutExpired:
        fix = "check how long `memory context` takes in this project (a slow first embedding?) or raise the hook's timeout"
        return False, f"no answer within the hook's timeout ({timeout:g} s)", fix
    if done.returncode in (NOT_FOUND_EXIT, NOT_EXECUTABLE_EXIT):
        what = "not found" if done.returncode == NOT_FOUND_EXIT else "not executable"
        fix = f"run `{reinstall}` with the `memory` you want the agent to use: it writes that program's absolute path"
        return False, f"exit {done.returncode}: the command is {what} ({_last_line(done.stderr)})", fix
    if done.returncode != 0:
        fix = f"run the command above by hand to see the whole error; `{reinstall}` rewrites it"
        return False, f"exit {done.returncode}: {_last_line(done.stderr) or 'no message'}", fix
    if event in ("session-end", "pre-compact"):
        return True, _last_line(done.stderr) or "exit 0", ""
    if not done.stdout.strip():
        return True, "exit 0; nothing to load yet (empty memory)" if event == "session-start" else "exit 0; nothing relevant to the sample prompt", ""
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError:
        fix = "something in the shell start-up or the command prints to stdout; run the command by hand"
        return False, f"exit 0, but stdout is not the JSON the agent reads: {_last_line(done.stdout)[:120]}", fix
    note = data.get("systemMessage") if isinstance(data, dict) else None
    if note:  # memtool's own failure note, shown to the user at session start
        fix = "run `memory init` in the project" if "no memory/" in note else "run `memory context` in the project to see the whole error"
        return False, str(note), fix
    context = data.get("hookSpecificOutput", {}).get("additionalContext", "") if isinstance(data, dict) else ""
    return True, f"exit 0; loads {len(context)} characters of memory", ""


def check_hooks(project: Path, agents: tuple[str, ...] = AGENTS, env: dict[str, str] | None = None) -> HooksReport:
    """Every memtool hook installed for `agents`, in the project and for the user, run once."""
    project = project.resolve()
    checks: list[HookCheck] = []
    missing: list[str] = []
    for agent in agents:
        for scope in ("project", "user"):
            path, handlers = installed(agent, scope, project)
            if not handlers:
                missing.append(f"{agent} ({scope}): {path}")
            for event, handler, where, matcher in handlers:
                command = str(handler.get("command", ""))
                ok, detail, fix = _outcome(agent, scope, event, command, _timeout_s(agent, handler), project, env)
                trust = codex_trust(path, where, codex_hook_hash(where.split(":")[0], matcher, handler), env) if agent == "codex" else ""
                if ok and trust == "modified":
                    ok, detail, fix = False, f"changed since it was trusted: Codex skips it ({detail})", "open /hooks in Codex and trust memtool's hooks again"
                elif ok and trust == "untrusted":
                    ok, detail, fix = False, f"installed but not trusted: Codex skips it ({detail})", "open /hooks in Codex and trust memtool's hooks"
                elif ok and trust == "disabled":
                    ok, detail, fix = False, f"disabled in Codex's /hooks: Codex skips it ({detail})", "open /hooks in Codex and enable memtool's hooks"
                checks.append(HookCheck(agent, scope, event, str(path), command, ok, detail, fix))
    return HooksReport(project, checks, missing)
