"""`memory hooks run session-start|session-end`: what the installed hooks execute, the same for
every agent.

session-start prints the `memory context` bundle as the agents' common JSON output
`{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ...}}`.
session-end returns at once (Claude Code gives SessionEnd 1.5 s unless a timeout is set,
Codex caps it at 3 s, Gemini CLI does not wait) and hands the transcript to a detached
worker that converts it to Markdown and runs `memory compress`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from memtool import constants as C
from memtool.errors import BadInput, NotAMemoryRoot, StorageError
from memtool.hooks import spec
from memtool.transcripts import load_transcript


@dataclass(frozen=True)
class HookPayload:
    session_id: str | None
    transcript_path: Path | None
    cwd: Path | None


def parse_payload(raw: str) -> HookPayload:
    """The JSON an agent writes to a hook's stdin (session_id, transcript_path, cwd, ...)."""
    if not raw.strip():
        raise BadInput("no hook payload on stdin (expected the agent's JSON)")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise BadInput(f"hook payload is not JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    except RecursionError:
        raise BadInput("hook payload is JSON nested too deeply to read") from None
    if not isinstance(data, dict):
        raise BadInput("hook payload must be a JSON object")

    given = {key: value for key in ("session_id", "transcript_path", "cwd") if isinstance(value := data.get(key), str) and value}
    transcript, cwd = given.get("transcript_path"), given.get("cwd")
    return HookPayload(given.get("session_id"), Path(transcript).expanduser() if transcript else None, Path(cwd) if cwd else None)


def read_payload(stream: Any) -> str:
    return "" if stream is None or stream.isatty() else str(stream.read(C.HOOK_MAX_PAYLOAD_BYTES))


def memtool_command(*args: str) -> list[str]:  # the `memory` CLI of this install
    return [sys.executable, "-m", "memtool", *args]


def session_start_output(context: str, failure: str = "") -> str:
    """What the session-start hook prints: the agents' shared SessionStart JSON, or nothing. A
    `failure` (no memory could be loaded) is one line the agent shows the user (`systemMessage`) and
    the model reads (`additionalContext`), instead of a silent failure."""
    shown = failure or context.strip()
    if not shown:
        return ""
    message = {"systemMessage": failure} if failure else {}
    return json.dumps(message | {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": shown}}, ensure_ascii=False)


def _workdir(payload: HookPayload) -> Path | None:
    return payload.cwd if payload.cwd is not None and payload.cwd.is_dir() else None


def memory_root_for(payload: HookPayload) -> Path | None:
    """The memory root `memory compress` will use for this session (as memtool.app.resolve_root finds
    it from the session's folder), or None when there is none to write to."""
    named = os.environ.get(C.ENV_ROOT)
    if named:
        return Path(named).expanduser() if (Path(named).expanduser() / C.MEMORY_DIR).is_dir() else None
    here = (_workdir(payload) or Path.cwd()).resolve()
    return next((folder for folder in (here, *here.parents) if (folder / C.MEMORY_DIR / C.INDEX_DIR).is_dir()), None)


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def _call(run: Runner | None, command: list[str], payload: HookPayload, timeout: float) -> "subprocess.CompletedProcess[str]":
    """Run a memtool command for a hook: in the session's folder, output captured, no stdin, bounded."""
    return (run or subprocess.run)(command, cwd=_workdir(payload), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def run_session_start(payload: HookPayload) -> tuple[str, str]:
    """Run `memory context` for the session's folder. Returns (stdout for the agent, message for stderr).

    When memtool fails, or the folder has no memory, the agent still gets one line saying so."""
    check = "`memory hooks doctor` in the project shows the hook's whole error"
    try:
        done = _call(None, memtool_command("context"), payload, C.HOOK_CONTEXT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        note = f"memtool: `memory context` took longer than {C.HOOK_CONTEXT_TIMEOUT_S:.0f} s; no memory loaded ({check})."
    except OSError as err:
        note = f"memtool: cannot run `memory context`: {err}; no memory loaded ({check})."
    else:
        if done.returncode == 0:
            return session_start_output(done.stdout), ""
        if done.returncode == NotAMemoryRoot.exit_code:
            note = f"memtool: no memory/ in {_workdir(payload) or Path.cwd()} or above; run `memory init` there to keep memory for this project."
        else:
            detail = (done.stderr or "").strip().splitlines()
            reason = f": {detail[-1]}" if detail else ""
            note = f"memtool: `memory context` failed (exit {done.returncode}){reason}; no memory loaded ({check})."
    return session_start_output("", note), note


def log_path() -> Path:
    from memtool.config import user_cache_dir

    return user_cache_dir() / "hooks" / "hooks.log"


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600): a temp file made by mkstemp
    (0600 from the start), renamed over ``path`` (a link at ``path`` is replaced, not followed)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise StorageError(f"{path.parent}: cannot write the transcript copy: {err.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as err:
        raise StorageError(f"{path}: cannot write the transcript copy: {err.strerror}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)  # left only when the write or the rename failed


def prepare_transcript(payload: HookPayload, agent: str) -> Path:
    """Convert the session's transcript to Markdown, redact it, and write it to the cache folder,
    readable by its owner only. Returns the file.

    Redacted with the built-in rules before it is written: no copy of a secret reaches the disk
    here (`memory compress` applies the memory's own `redact_patterns` to what it stores)."""
    from memtool.redact import redact  # here: session-start never pays for compiling the rules

    if payload.transcript_path is None:
        raise BadInput(f"{spec(agent).label} sent no transcript_path; nothing to compress")
    try:
        text = load_transcript(payload.transcript_path).render()
    except FileNotFoundError:
        raise BadInput(f"transcript not found: {payload.transcript_path}") from None
    except OSError as err:
        raise StorageError(f"{payload.transcript_path}: cannot read: {err.strerror}") from None
    if not text.strip():
        raise BadInput(f"{payload.transcript_path}: no conversation text in the transcript; nothing to compress")
    stem = f"{spec(agent).name}-{payload.session_id or payload.transcript_path.stem}"
    name = (re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-.")[:120] or "session") + ".md"  # a safe file name
    target = log_path().parent / name
    _write_private(target, redact(text)[0])
    return target


def run_session_end(payload: HookPayload, agent: str, *, run: Runner | None = None) -> int:
    """Convert the transcript and run `memory compress` on it, waiting for it. Returns its exit code.

    The converted copy is deleted whatever happens (success, failure, timeout, an exception): the
    agent's own transcript stays where it was, and a failure message names it for a retry.
    """
    markdown = prepare_transcript(payload, agent)
    try:
        session = ["--session", payload.session_id] if payload.session_id else []
        command = memtool_command("compress", str(markdown), *session, "--agent", spec(agent).name)
        retry = f"the transcript is still at {payload.transcript_path}"
        try:
            done = _call(run, command, payload, C.HOOK_COMPRESS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            print(f"memtool: compress timed out after {C.HOOK_COMPRESS_TIMEOUT_S:.0f} s; {retry}", file=sys.stderr)
            return 1
        sys.stderr.write((done.stdout or "") + (done.stderr or ""))
        if done.returncode != 0:
            print(f"memtool: compress failed (exit {done.returncode}); {retry}", file=sys.stderr)
        return done.returncode
    finally:
        markdown.unlink(missing_ok=True)


def spawn_session_end(raw_payload: str, payload: HookPayload, agent: str) -> Path:
    """Start the detached worker (`hooks run session-end --foreground`) and return at once.

    The worker gets the payload on stdin, runs in its own session (it outlives the agent),
    and appends its output to the hooks log, whose path is returned.
    """
    log = log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists() and log.stat().st_size > C.HOOK_LOG_MAX_BYTES:
        os.replace(log, log.with_suffix(".log.1"))
    with open(log, "ab") as out:
        flags = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        detach: dict[str, Any] = {"start_new_session": True} if os.name == "posix" else {"creationflags": flags}
        proc = subprocess.Popen(
            memtool_command("hooks", "run", "session-end", "--agent", spec(agent).name, "--foreground"),
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=out,
            cwd=_workdir(payload),
            close_fds=True,
            **detach,
        )
    assert proc.stdin is not None
    try:
        proc.stdin.write(raw_payload.encode("utf-8"))
    finally:
        proc.stdin.close()
    return log
