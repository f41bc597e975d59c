"""Install memtool into a coding agent's own hook configuration, and run those hooks.

All three supported agents have session hooks that receive a JSON payload on stdin
(`session_id`, `transcript_path`, `cwd`, `hook_event_name`, ...):

  agent        file (project / user scope)                        events
  claude-code  .claude/settings.json / ~/.claude/settings.json     SessionStart, SessionEnd
  codex        .codex/hooks.json / $CODEX_HOME/hooks.json          SessionStart, SessionEnd
  gemini       .gemini/settings.json / ~/.gemini/settings.json     SessionStart, SessionEnd

Each installed hook runs `<memory> hooks run session-start|session-end --agent NAME`.
session-start prints the `memory context` bundle as the agents' common JSON output
`{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ...}}`.
session-end returns at once (Claude Code gives SessionEnd 1.5 s unless a timeout is set,
Codex caps it at 3 s, Gemini CLI does not wait) and hands the transcript to a detached
worker that converts it to Markdown and runs `memory compress`.

Config files are edited as text: only the spans we add or remove change, so every other
byte (key order, formatting, and the comments Gemini CLI's JSONC allows) is kept. Each edit
is checked against the same change made on the parsed document before anything is written.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from memtool.errors import BadInput, ConfigError, StorageError
from memtool.jsonc import Document, JsoncError
from memtool.transcripts import read_transcript

AGENTS = ("claude-code", "codex", "gemini")
SCOPES = ("project", "user")
HOOK_EVENTS = ("session-start", "session-end")
Scope = Literal["project", "user"]

SESSION_START_TIMEOUT_S = 30  # the agent's limit for the session-start hook
CONTEXT_TIMEOUT_S = 25.0  # our limit for `memory context`, inside the hook's
SESSION_END_TIMEOUT_S = 10  # Claude Code / Gemini: the hook itself returns in well under a second
CODEX_SESSION_END_TIMEOUT_S = 3  # Codex caps SessionEnd hooks at 3 s
COMPRESS_TIMEOUT_S = 900.0  # the detached worker's limit for `memory compress`
MAX_PAYLOAD_BYTES = 1024 * 1024
LOG_MAX_BYTES = 1024 * 1024

_OURS = re.compile(r"(?:^|\s)hooks\s+run\s+session-(?:start|end)\b")


class HookConfigError(ConfigError):
    """An agent's config file cannot be parsed or has an unexpected shape; names file and line."""


# --- agents -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentSpec:
    name: str
    label: str
    project_file: str  # relative to the project directory
    user_file: str  # relative to the home directory (codex: to $CODEX_HOME)
    comments: bool  # the format allows // and /* */ comments
    start_event: str
    end_event: str
    notes: tuple[str, ...]


SPECS: dict[str, AgentSpec] = {
    "claude-code": AgentSpec(
        name="claude-code",
        label="Claude Code",
        project_file=".claude/settings.json",
        user_file=".claude/settings.json",
        comments=False,
        start_event="SessionStart",
        end_event="SessionEnd",
        notes=("Claude Code reads hooks at start-up: restart it, then check them with /hooks.",),
    ),
    "codex": AgentSpec(
        name="codex",
        label="Codex CLI",
        project_file=".codex/hooks.json",
        user_file="hooks.json",
        comments=False,
        start_event="SessionStart",
        end_event="SessionEnd",
        notes=(
            "Codex runs new hooks only after you review and trust them: open /hooks in Codex.",
            "SessionEnd hooks need a recent Codex (0.146 or later); project hooks load only in trusted projects.",
        ),
    ),
    "gemini": AgentSpec(
        name="gemini",
        label="Gemini CLI",
        project_file=".gemini/settings.json",
        user_file=".gemini/settings.json",
        comments=True,
        start_event="SessionStart",
        end_event="SessionEnd",
        notes=("Check the hooks with /hooks panel in Gemini CLI (older versions need hooks enabled in /settings).",),
    ),
}


def spec(agent: str) -> AgentSpec:
    try:
        return SPECS[agent]
    except KeyError:
        raise BadInput(f"unknown agent {agent!r}: choose one of {', '.join(AGENTS)}") from None


def config_path(agent: str, scope: Scope, project_dir: Path | None = None, home: Path | None = None) -> Path:
    """The file `install` edits for this agent and scope."""
    s = spec(agent)
    if scope == "project":
        return (project_dir or Path.cwd()) / s.project_file
    if scope != "user":
        raise BadInput(f"unknown scope {scope!r}: choose project or user")
    home = home or Path.home()
    if agent == "codex":
        codex_home = os.environ.get("CODEX_HOME")
        return (Path(codex_home) if codex_home else home / ".codex") / s.user_file
    return home / s.user_file


def default_runner() -> str:
    """How installed hooks call memtool.

    `memory` when the `memory` found on PATH belongs to this installation (portable: a project
    file can be shared), otherwise this interpreter with `-m memtool` (always the same install).
    """
    found = shutil.which("memory")
    if found and Path(found).resolve().parent == Path(sys.executable).resolve().parent:
        return "memory"
    return f"{shlex.quote(sys.executable)} -m memtool"


def hook_command(runner: str, event: str, agent: str) -> str:
    if event not in HOOK_EVENTS:
        raise BadInput(f"unknown hook event {event!r}: choose {' or '.join(HOOK_EVENTS)}")
    return f"{runner} hooks run {event} --agent {spec(agent).name}"


def desired_groups(agent: str, runner: str) -> dict[str, dict[str, Any]]:
    """The matcher groups we add, keyed by the agent's event name."""
    s = spec(agent)
    start = hook_command(runner, "session-start", agent)
    end = hook_command(runner, "session-end", agent)
    if agent == "claude-code":
        return {
            s.start_event: {
                "matcher": "startup|clear|compact",
                "hooks": [{"type": "command", "command": start, "timeout": SESSION_START_TIMEOUT_S}],
            },
            s.end_event: {"hooks": [{"type": "command", "command": end, "timeout": SESSION_END_TIMEOUT_S}]},
        }
    if agent == "codex":
        return {
            s.start_event: {
                "matcher": "startup|clear|compact",
                "hooks": [
                    {
                        "type": "command",
                        "command": start,
                        "timeout": SESSION_START_TIMEOUT_S,
                        "statusMessage": "Loading memtool memory",
                    }
                ],
            },
            s.end_event: {
                "hooks": [
                    {
                        "type": "command",
                        "command": end,
                        "timeout": CODEX_SESSION_END_TIMEOUT_S,
                        "statusMessage": "Saving session to memtool",
                    }
                ]
            },
        }
    # gemini: timeouts in milliseconds; lifecycle matchers are exact strings, so none (= all)
    return {
        s.start_event: {
            "hooks": [
                {
                    "name": "memtool-session-start",
                    "type": "command",
                    "command": start,
                    "description": "Load the memtool memory context",
                    "timeout": SESSION_START_TIMEOUT_S * 1000,
                }
            ]
        },
        s.end_event: {
            "hooks": [
                {
                    "name": "memtool-session-end",
                    "type": "command",
                    "command": end,
                    "description": "Compress this session into memtool memory",
                    "timeout": SESSION_END_TIMEOUT_S * 1000,
                }
            ]
        },
    }


def is_ours(handler: Any) -> bool:
    """A hook handler that memtool installed (recognised by its command line)."""
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return (
        isinstance(command, str)
        and bool(_OURS.search(command))
        and ("memory" in command or "memtool" in command)
    )


# --- semantic transforms (the reference each text edit is checked against) -------------------


def _strip_ours_from_groups(groups: list[Any]) -> bool:
    """Remove our handlers from a list of matcher groups (and groups left empty by that)."""
    changed = False
    for i in range(len(groups) - 1, -1, -1):
        group = groups[i]
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        handlers = group["hooks"]
        kept = [h for h in handlers if not is_ours(h)]
        if len(kept) == len(handlers):
            continue
        changed = True
        if kept:
            group["hooks"] = kept
        else:
            del groups[i]
    return changed


def _ours_in(groups: list[Any]) -> list[tuple[int, int]]:
    return [
        (gi, hi)
        for gi, group in enumerate(groups)
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hi, handler in enumerate(group["hooks"])
        if is_ours(handler)
    ]


def installed_semantics(doc: dict[str, Any], groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    hooks = out.setdefault("hooks", {})
    for event, group in groups.items():
        arr = hooks.setdefault(event, [])
        if _already_installed(arr, group):
            continue
        _strip_ours_from_groups(arr)
        arr.append(copy.deepcopy(group))
    return out


def uninstalled_semantics(
    doc: dict[str, Any], keep_events: frozenset[str] = frozenset(), keep_hooks: bool = False
) -> dict[str, Any]:
    """`doc` without our handlers; lists and the hooks object we empty go too, unless kept
    (a text edit keeps an emptied container that still holds a comment)."""
    out = copy.deepcopy(doc)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    touched = False
    for event in list(hooks):
        arr = hooks[event]
        if isinstance(arr, list) and _strip_ours_from_groups(arr):
            touched = True
            if not arr and event not in keep_events:
                del hooks[event]
    if touched and not hooks and not keep_hooks:
        del out["hooks"]
    return out


def _already_installed(arr: list[Any], group: dict[str, Any]) -> bool:
    ours = _ours_in(arr)
    if len(ours) != 1:
        return False
    gi, _ = ours[0]
    return arr[gi] == group


# --- install / uninstall plans ----------------------------------------------------------------


@dataclass
class HookPlan:
    agent: str
    action: Literal["install", "uninstall"]
    path: Path
    old_text: str | None  # None: the file does not exist
    new_text: str | None  # None: leave the file absent
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    commands: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text

    def diff(self) -> str:
        old = (self.old_text or "").splitlines(keepends=True)
        new = (self.new_text or "").splitlines(keepends=True)
        label = str(self.path)
        lines = difflib.unified_diff(old, new, fromfile=label if self.old_text is not None else "/dev/null", tofile=label)
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def to_json(self, dry_run: bool, written: bool) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "action": self.action,
            "path": str(self.path),
            "changed": self.changed,
            "dry_run": dry_run,
            "written": written,
            "commands": self.commands,
            "warnings": self.warnings,
            "notes": self.notes,
            "diff": self.diff(),
        }


def _open(agent: str, path: Path, text: str) -> Document:
    try:
        doc = Document(text, comments=spec(agent).comments)
    except JsoncError as err:
        kind = "JSON (comments allowed)" if spec(agent).comments else "JSON"
        raise HookConfigError(
            f"{path}: line {err.line}, column {err.column}: invalid {kind}: {err.message}. "
            "Fix the file (or move it away) and run again; nothing was changed."
        ) from None
    if doc.root.kind != "object":
        raise HookConfigError(f"{path}: line 1: the top-level value must be a JSON object; nothing was changed.")
    found = doc.lookup("hooks")
    if found is not None and found[1].kind != "object":
        raise HookConfigError(f"{path}: line {doc.line_of(found[1])}: \"hooks\" must be an object; nothing was changed.")
    return doc


def _verify(doc: Document, expected: dict[str, Any], path: Path) -> None:
    if doc.data() != expected:
        raise AssertionError(f"{path}: the text edit does not match the intended change (memtool bug)")


def _as_lists(groups: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {event: [group] for event, group in groups.items()}


def install_text(agent: str, path: Path, old_text: str | None, runner: str) -> str:
    """New content of the agent's config file with memtool's hooks merged in (pure)."""
    groups = desired_groups(agent, runner)
    if old_text is None or not old_text.strip():
        return json.dumps({"hooks": _as_lists(groups)}, ensure_ascii=False, indent=2) + "\n"
    doc = _open(agent, path, old_text)
    for event in groups:
        found = doc.lookup("hooks", event)
        if found is not None and found[1].kind != "array":
            raise HookConfigError(f"{path}: line {doc.line_of(found[1])}: \"hooks.{event}\" must be a list; nothing was changed.")
    expected = installed_semantics(doc.data(), groups)
    if doc.lookup("hooks") is None:
        doc.append(doc.root, _as_lists(groups), key="hooks")
    for event, group in groups.items():
        found = doc.lookup("hooks", event)
        if found is None:
            doc.append(doc.node("hooks"), [group], key=event)
            continue
        if _already_installed(found[1].plain(), group):
            continue
        _remove_ours(doc, ("hooks", event))
        doc.append(doc.node("hooks", event), group)
    _verify(doc, expected, path)
    return doc.full_text()


def uninstall_text(agent: str, path: Path, old_text: str) -> str:
    """Content of the agent's config file with exactly memtool's hooks removed (pure)."""
    if not old_text.strip():
        return old_text
    doc = _open(agent, path, old_text)
    original = doc.data()
    found = doc.lookup("hooks")
    if found is None:
        return old_text
    touched = False
    kept: set[str] = set()
    for event in dict.fromkeys(found[1].keys):
        if not _remove_ours(doc, ("hooks", event)):
            continue
        touched = True
        emptied = doc.lookup("hooks", event)
        if emptied is None or emptied[1].children:
            continue
        if doc.is_bare_empty(emptied[1]):
            doc.remove(doc.node("hooks"), emptied[0])
        else:
            kept.add(event)  # it holds a comment: keep the (empty) list and the comment
    hooks = doc.lookup("hooks")
    keep_hooks = hooks is not None and not hooks[1].children and not doc.is_bare_empty(hooks[1])
    if touched and hooks is not None and not hooks[1].children and not keep_hooks:
        doc.remove(doc.root, hooks[0])
    _verify(doc, uninstalled_semantics(original, frozenset(kept), keep_hooks), path)
    return doc.full_text()


def _remove_ours(doc: Document, path: tuple[str, ...]) -> bool:
    """Remove our handlers, and the groups they leave empty, from the groups list at `path`."""
    found = doc.lookup(*path)
    if found is None or found[1].kind != "array":
        return False
    removed = False
    for gi in range(len(found[1].children) - 1, -1, -1):
        group = doc.node(*path).children[gi]
        handlers = group.member("hooks") if group.kind == "object" else None
        if handlers is None or handlers[1].kind != "array":
            continue
        ours = [hi for hi, h in enumerate(handlers[1].children) if is_ours(h.plain())]
        if not ours:
            continue
        removed = True
        if len(ours) == len(handlers[1].children):
            doc.remove(doc.node(*path), gi)
            continue
        for hi in reversed(ours):
            member = doc.node(*path).children[gi].member("hooks")
            assert member is not None
            doc.remove(member[1], hi)
    return removed


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as err:
        raise HookConfigError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}); nothing was changed.") from None
    except OSError as err:
        raise StorageError(f"{path}: cannot read: {err.strerror}") from None


def plan_install(
    agent: str,
    scope: Scope = "project",
    *,
    project_dir: Path | None = None,
    home: Path | None = None,
    runner: str | None = None,
) -> HookPlan:
    runner = runner or default_runner()
    path = config_path(agent, scope, project_dir, home)
    old = _read(path)
    new = install_text(agent, path, old, runner)
    plan = HookPlan(agent, "install", path, old, new, notes=list(spec(agent).notes))
    plan.commands = {event: hook_command(runner, event, agent) for event in HOOK_EVENTS}
    plan.warnings = _warnings(agent, path, new)
    return plan


def plan_uninstall(
    agent: str, scope: Scope = "project", *, project_dir: Path | None = None, home: Path | None = None
) -> HookPlan:
    path = config_path(agent, scope, project_dir, home)
    old = _read(path)
    new = None if old is None else uninstall_text(agent, path, old)
    return HookPlan(agent, "uninstall", path, old, new)


def apply(plan: HookPlan) -> bool:
    """Write the plan's new content (atomically) when it differs; True when written."""
    if not plan.changed or plan.new_text is None:
        return False
    atomic_write(plan.path, plan.new_text)
    return True


def install(agent: str, scope: Scope = "project", *, dry_run: bool = False, **kwargs: Any) -> tuple[HookPlan, bool]:
    plan = plan_install(agent, scope, **kwargs)
    return plan, (False if dry_run else apply(plan))


def uninstall(agent: str, scope: Scope = "project", *, dry_run: bool = False, **kwargs: Any) -> tuple[HookPlan, bool]:
    plan = plan_uninstall(agent, scope, **kwargs)
    return plan, (False if dry_run else apply(plan))


def _default_mode() -> int:
    """Mode a new file gets from open(): 0o666 less the umask (mkstemp would give 0o600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file in the same folder, fsync, os.replace; keeps the file's mode."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o7777 if path.exists() else _default_mode()
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        if hasattr(os, "O_DIRECTORY"):
            dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    except OSError as err:
        raise StorageError(f"{path}: cannot write: {err.strerror}; the file was not changed.") from None


def _warnings(agent: str, path: Path, new_text: str | None) -> list[str]:
    """Settings elsewhere that would keep the installed hooks from running."""
    out: list[str] = []
    if agent == "gemini" and new_text:
        data = Document(new_text, comments=True).data()
        hooks_config = data.get("hooksConfig")
        hooks = data.get("hooks")
        for label, holder in (("hooksConfig", hooks_config), ("hooks", hooks)):
            if isinstance(holder, dict) and holder.get("enabled") is False:
                out.append(f"{path}: {label}.enabled is false, so Gemini CLI runs no hooks.")
        disabled: list[Any] = []
        for holder in (hooks_config, hooks):
            if isinstance(holder, dict) and isinstance(holder.get("disabled"), list):
                disabled += holder["disabled"]
        for name in ("memtool-session-start", "memtool-session-end"):
            if name in disabled:
                out.append(f"{path}: hook {name!r} is listed as disabled.")
    if agent == "codex":
        config = path.parent / "config.toml"
        out += _codex_feature_warnings(config)
    return out


def _codex_feature_warnings(config: Path) -> list[str]:
    try:
        import tomllib
    except ImportError:  # Python 3.10: no stdlib TOML reader; skip the check
        return []
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
    if isinstance(features, dict):
        for key in ("hooks", "codex_hooks"):
            if features.get(key) is False:
                return [f"{config}: [features] {key} = false turns Codex hooks off."]
    return []


# --- running the hooks ------------------------------------------------------------------------


@dataclass(frozen=True)
class HookPayload:
    session_id: str | None
    transcript_path: Path | None
    cwd: Path | None
    event: str | None


def parse_payload(raw: str) -> HookPayload:
    """The JSON an agent writes to a hook's stdin (session_id, transcript_path, cwd, ...)."""
    if not raw.strip():
        raise BadInput("no hook payload on stdin (expected the agent's JSON)")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise BadInput(f"hook payload is not JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    if not isinstance(data, dict):
        raise BadInput("hook payload must be a JSON object")

    def text(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) and value else None

    transcript = text("transcript_path")
    cwd = text("cwd")
    return HookPayload(
        session_id=text("session_id"),
        transcript_path=Path(transcript).expanduser() if transcript else None,
        cwd=Path(cwd) if cwd else None,
        event=text("hook_event_name"),
    )


def read_payload(stream: Any) -> str:
    if stream is None or stream.isatty():
        return ""
    return str(stream.read(MAX_PAYLOAD_BYTES))


def memtool_command(*args: str, python: str | None = None) -> list[str]:
    """Command line running the `memory` CLI with this interpreter."""
    return [python or sys.executable, "-m", "memtool", *args]


def context_command(python: str | None = None) -> list[str]:
    return memtool_command("context", python=python)


def compress_command(transcript: Path, payload: HookPayload, agent: str, python: str | None = None) -> list[str]:
    args = ["compress", str(transcript)]
    if payload.session_id:
        args += ["--session", payload.session_id]
    args += ["--agent", spec(agent).name]
    return memtool_command(*args, python=python)


def session_start_output(context: str) -> str:
    """What the session-start hook prints: the agents' shared SessionStart JSON, or nothing."""
    if not context.strip():
        return ""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context.strip()}},
        ensure_ascii=False,
    )


def _workdir(payload: HookPayload) -> Path | None:
    return payload.cwd if payload.cwd is not None and payload.cwd.is_dir() else None


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def _call(run: Runner | None, command: list[str], payload: HookPayload, timeout: float) -> "subprocess.CompletedProcess[str]":
    """Run a memtool command for a hook: in the session's folder, output captured, no stdin, bounded."""
    return (run or subprocess.run)(command, cwd=_workdir(payload), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def run_session_start(payload: HookPayload, *, run: Runner | None = None, python: str | None = None) -> tuple[str, str]:
    """Run `memory context` for the session's folder. Returns (stdout for the agent, message for stderr)."""
    command = context_command(python)
    try:
        done = _call(run, command, payload, CONTEXT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "", f"memtool: `memory context` took longer than {CONTEXT_TIMEOUT_S:.0f} s; no memory loaded."
    except OSError as err:
        return "", f"memtool: cannot run `memory context`: {err}"
    if done.returncode != 0:
        detail = (done.stderr or "").strip().splitlines()
        reason = f": {detail[-1]}" if detail else ""
        return "", f"memtool: `memory context` failed (exit {done.returncode}){reason}; no memory loaded."
    return session_start_output(done.stdout), ""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "memtool" / "hooks"


def log_path() -> Path:
    return cache_dir() / "hooks.log"


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:120] or "session"


def prepare_transcript(payload: HookPayload, agent: str, out_dir: Path | None = None) -> Path:
    """Convert the session's transcript to Markdown in the cache folder; returns the file."""
    if payload.transcript_path is None:
        raise BadInput(f"{spec(agent).label} sent no transcript_path; nothing to compress")
    try:
        text = read_transcript(payload.transcript_path)
    except FileNotFoundError:
        raise BadInput(f"transcript not found: {payload.transcript_path}") from None
    except OSError as err:
        raise StorageError(f"{payload.transcript_path}: cannot read: {err.strerror}") from None
    if not text.strip():
        raise BadInput(f"{payload.transcript_path}: no conversation text in the transcript; nothing to compress")
    name = _safe_name(f"{spec(agent).name}-{payload.session_id or payload.transcript_path.stem}") + ".md"
    target = (out_dir or cache_dir()) / name
    atomic_write(target, text)
    return target


def run_session_end(payload: HookPayload, agent: str, *, run: Runner | None = None, python: str | None = None) -> int:
    """Convert the transcript and run `memory compress` on it, waiting for it. Returns its exit code.

    The converted file is deleted after a successful compress and kept (for a retry) otherwise.
    """
    markdown = prepare_transcript(payload, agent)
    command = compress_command(markdown, payload, agent, python)
    try:
        done = _call(run, command, payload, COMPRESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"memtool: compress timed out after {COMPRESS_TIMEOUT_S:.0f} s; kept {markdown}", file=sys.stderr)
        return 1
    if done.stdout:
        sys.stderr.write(done.stdout)
    if done.stderr:
        sys.stderr.write(done.stderr)
    if done.returncode == 0:
        markdown.unlink(missing_ok=True)
    else:
        print(f"memtool: compress failed (exit {done.returncode}); kept {markdown}", file=sys.stderr)
    return done.returncode


def worker_command(agent: str, python: str | None = None) -> list[str]:
    return memtool_command("hooks", "run", "session-end", "--agent", spec(agent).name, "--foreground", python=python)


def spawn_session_end(
    raw_payload: str,
    payload: HookPayload,
    agent: str,
    *,
    popen: Callable[..., "subprocess.Popen[bytes]"] | None = None,
    python: str | None = None,
) -> Path:
    """Start the detached worker (`hooks run session-end --foreground`) and return at once.

    The worker gets the payload on stdin, runs in its own session (it outlives the agent),
    and appends its output to the hooks log, whose path is returned.
    """
    log = log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists() and log.stat().st_size > LOG_MAX_BYTES:
        os.replace(log, log.with_suffix(".log.1"))
    with open(log, "ab") as out:
        kwargs: dict[str, Any] = {}
        if os.name == "posix":
            kwargs["start_new_session"] = True
        else:
            kwargs["creationflags"] = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
                subprocess, "CREATE_NEW_PROCESS_GROUP", 0
            )
        proc = (popen or subprocess.Popen)(
            worker_command(agent, python),
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=out,
            cwd=_workdir(payload),
            close_fds=True,
            **kwargs,
        )
    assert proc.stdin is not None
    try:
        proc.stdin.write(raw_payload.encode("utf-8"))
    finally:
        proc.stdin.close()
    return log


def describe_commands(commands: Sequence[str]) -> str:
    return " ".join(shlex.quote(c) for c in commands)
