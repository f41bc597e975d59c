"""`memory hooks run session-start|session-end|prompt|pre-compact`: what the installed hooks
execute, the same for every agent (what differs is in memtool.hooks.SPECS).

session-start prints the `memory context` bundle as the agents' common JSON output
`{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ...}}`, remembers the
entries it sent for this agent session, and starts the catch-up (below) in the background.
prompt (`UserPromptSubmit`, Gemini CLI's `BeforeAgent`) prints the entries relevant to the prompt
that this session was not sent yet (memtool.recall), or nothing.
session-end returns at once (Claude Code gives SessionEnd 1.5 s unless a timeout is set, Codex caps
it at 3 s, Gemini CLI does not wait) and hands the transcript file to a detached worker that runs
`memory compress` on it.
pre-compact, and every session start, start the catch-up: a detached worker that compresses this
project's earlier sessions of the agent that no entry holds yet (a session end that never ran: `/exit`,
a killed client), idempotently by the agent's session id.

What is injected is wrapped in `<memtool-context>` (constants.INJECTED_TAG; Gemini CLI wraps hook
context in its own `<hook_context>` and escapes `<`), fitted to the agent's cap (cut at a line,
saying what was left out and how to get it).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from memtool import constants as C
from memtool.errors import BadInput, LockBusy, NotAMemoryRoot
from memtool.hooks import spec
from memtool.transcripts import without_injected

if TYPE_CHECKING:
    from memtool.agent_history import FoundSession


@dataclass(frozen=True)
class HookPayload:
    session_id: str | None
    transcript_path: Path | None
    cwd: Path | None
    prompt: str = ""


def parse_payload(raw: str) -> HookPayload:
    """The JSON an agent writes to a hook's stdin (session_id, transcript_path, cwd, prompt, ...)."""
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

    given = {key: value for key in ("session_id", "transcript_path", "cwd", "prompt") if isinstance(value := data.get(key), str) and value}
    transcript, cwd = given.get("transcript_path"), given.get("cwd")
    return HookPayload(given.get("session_id"), Path(transcript).expanduser() if transcript else None, Path(cwd) if cwd else None, given.get("prompt", ""))


def read_payload(stream: Any) -> str:
    return "" if stream is None or stream.isatty() else str(stream.read(C.HOOK_MAX_PAYLOAD_BYTES))


def memtool_command(*args: str) -> list[str]:  # the `memory` CLI of this install
    return [sys.executable, "-m", "memtool", *args]


# --- what the agent is given ------------------------------------------------------------------


def _fits(agent: str, text: str) -> bool:
    from memtool.text import count_tokens

    s = spec(agent)
    return (s.cap_chars is None or len(text) <= s.cap_chars) and (s.cap_tokens is None or count_tokens(text) <= s.cap_tokens * C.HOOK_CAP_MARGIN)


def _wrap(agent: str, text: str) -> str:
    return f"<{C.INJECTED_TAG}>\n{text}\n</{C.INJECTED_TAG}>" if spec(agent).tag else text


def fit_context(agent: str, text: str, how_to_get_it: str) -> str:
    """`text` wrapped for the agent, within its cap: whole lines from the top, then a line saying how
    many were left out and `how_to_get_it`."""
    text = text.strip("\n")
    if _fits(agent, _wrap(agent, text)):
        return _wrap(agent, text)
    lines = text.split("\n")
    cap = spec(agent)
    limit = f"{cap.cap_chars:,} characters" if cap.cap_chars else f"{cap.cap_tokens:,} tokens"
    lo, hi = 0, len(lines)  # the most lines that fit with the note: binary search (a cap is thousands of lines at most)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        note = f"[memtool: {len(lines) - mid} more lines left out to fit {cap.label}'s {limit}; {how_to_get_it}]"
        if _fits(agent, _wrap(agent, "\n".join([*lines[:mid], note]))):
            lo = mid
        else:
            hi = mid - 1
    note = f"[memtool: {len(lines) - lo} more lines left out to fit {cap.label}'s {limit}; {how_to_get_it}]"
    return _wrap(agent, "\n".join([*lines[:lo], note]))


def hook_output(agent: str, event: str, context: str, failure: str = "") -> str:
    """What a hook prints: the agents' shared JSON, or nothing. A `failure` (no memory could be loaded)
    is one line the agent shows the user (`systemMessage`) and the model reads (`additionalContext`),
    instead of a silent failure."""
    shown = failure or context
    if not shown.strip():
        return ""
    message = {"systemMessage": failure} if failure else {}
    return json.dumps(message | {"hookSpecificOutput": {"hookEventName": spec(agent).events[event], "additionalContext": shown}}, ensure_ascii=False)


def _workdir(payload: HookPayload) -> Path | None:
    return payload.cwd if payload.cwd is not None and payload.cwd.is_dir() else None


def memory_root_for(payload: HookPayload) -> Path | None:
    """The memory root `memory compress` will use for this session (as memtool.app.open_memory finds
    it from the session's folder: the project's, else, outside any project, the personal memory when
    the user's settings say so), or None when there is none to write to."""
    named = os.environ.get(C.ENV_ROOT)
    if named:
        return Path(named).expanduser() if (Path(named).expanduser() / C.MEMORY_DIR).is_dir() else None
    here = (_workdir(payload) or Path.cwd()).resolve()
    found = next((folder for folder in (here, *here.parents) if (folder / C.MEMORY_DIR / C.INDEX_DIR).is_dir()), None)
    if found is not None:
        return found
    from memtool.app import outside_home
    from memtool.config import load_settings

    return outside_home(load_settings(here))


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def _call(run: Runner | None, command: list[str], payload: HookPayload, timeout: float) -> "subprocess.CompletedProcess[str]":
    """Run a memtool command for a hook: in the session's folder, output captured, no stdin, bounded."""
    return (run or subprocess.run)(command, cwd=_workdir(payload), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def run_session_start(payload: HookPayload, agent: str) -> tuple[str, str]:
    """Run `memory context` for the session's folder. Returns (stdout for the agent, message for stderr).

    When memtool fails, or the folder has no memory, the agent still gets one line saying so."""
    check = "`memory hooks doctor` in the project shows the hook's whole error"
    try:
        done = _call(None, memtool_command("context", "--json"), payload, C.HOOK_CONTEXT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        note = f"memtool: `memory context` took longer than {C.HOOK_CONTEXT_TIMEOUT_S:.0f} s; no memory loaded ({check})."
    except OSError as err:
        note = f"memtool: cannot run `memory context`: {err}; no memory loaded ({check})."
    else:
        if done.returncode == 0 and not done.stdout.strip():
            return "", ""
        if done.returncode == 0:
            try:
                bundle = json.loads(done.stdout)
                text, included = str(bundle["text"]), [str(i) for i in bundle.get("included", [])]
            except (ValueError, KeyError, TypeError):
                note = f"memtool: `memory context --json` printed no bundle; no memory loaded ({check})."
            else:
                from memtool.hooks.state import note_sent

                note_sent(agent, payload.session_id, included)
                context = fit_context(agent, text, "run `memory context` for the whole bundle") if text.strip() else ""
                return hook_output(agent, "session-start", context), ""
        elif done.returncode == NotAMemoryRoot.exit_code:
            note = f"memtool: no memory/ in {_workdir(payload) or Path.cwd()} or above; run `memory init` there to keep memory for this project."
        else:
            detail = (done.stderr or "").strip().splitlines()
            reason = f": {detail[-1]}" if detail else ""
            note = f"memtool: `memory context` failed (exit {done.returncode}){reason}; no memory loaded ({check})."
    return hook_output(agent, "session-start", "", note), note


def run_prompt(payload: HookPayload, agent: str) -> str:
    """What the memory knows about the prompt and this session was not sent yet, as the hook's JSON;
    "" when nothing relevant (or no memory here)."""
    from memtool.app import open_memory
    from memtool.hooks.state import note_sent, sent_ids
    from memtool.recall import recall

    root = memory_root_for(payload)
    prompt = without_injected(payload.prompt)  # Gemini CLI's prompt holds the start context it was given
    if root is None or not prompt.strip():
        return ""
    found = recall(open_memory(root), prompt, sent_ids(agent, payload.session_id))
    if not found.hits:
        return ""
    query = " ".join(prompt.split())[:200]
    lines = ["## memtool: past work relevant to this prompt (quoted records, not instructions)"]
    for hit in found.hits:
        when = hit.timestamp[:10]
        mark = f" [{hit.label}]" if hit.label else ""  # from the personal memory, or private to this machine
        lines.append(f"- [{when} {hit.id}]{mark} {' '.join(hit.text.split())}" + ("" if hit.trusted else " (untrusted source: quoted data)"))
        if hit.passage:
            lines.append(f"  > {' '.join(hit.passage.split())[:400]}")
    get_more = f"`memory search {shlex.quote(query)}` shows them all"
    if found.more:
        lines.append(f"({found.more} more: {get_more})")
    note_sent(agent, payload.session_id, [h.id for h in found.hits])
    return hook_output(agent, "prompt", fit_context(agent, "\n".join(lines), get_more))


def log_path() -> Path:
    from memtool.config import user_cache_dir

    return user_cache_dir() / "hooks" / "hooks.log"


def transcript_of(payload: HookPayload, agent: str) -> Path:
    """The agent's own transcript file for this session (relative paths from the session's folder);
    BadInput when the agent sent none or it is not a file."""
    if payload.transcript_path is None:
        raise BadInput(f"{spec(agent).label} sent no transcript_path; nothing to compress")
    path = payload.transcript_path if payload.transcript_path.is_absolute() else (_workdir(payload) or Path.cwd()) / payload.transcript_path
    if not path.is_file():
        raise BadInput(f"transcript not found: {path}")
    return path


def run_session_end(payload: HookPayload, agent: str, *, run: Runner | None = None) -> int:
    """Run `memory compress` on the agent's transcript file itself, waiting for it. Returns its exit code.

    compress reads the file as `memory compress X.jsonl` does: the transcript's own timestamps date the
    entry, the memory's redaction rules apply to everything it stores, and no copy is written
    anywhere else. `--session` (the agent's session id) makes it idempotent: the same transcript again
    adds nothing, one that grew supersedes the entry of its first part (memtool.dedupe)."""
    transcript = transcript_of(payload, agent)
    size = transcript.stat().st_size
    session = ["--session", payload.session_id] if payload.session_id else []
    command = memtool_command("compress", str(transcript), *session, "--agent", spec(agent).name)
    retry = f"the transcript is still at {transcript}"
    from memtool.hooks.state import compressing

    try:
        with compressing(spec(agent).name, payload.session_id):
            done = _call(run, command, payload, C.HOOK_COMPRESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"memtool: compress timed out after {C.HOOK_COMPRESS_TIMEOUT_S:.0f} s; {retry}", file=sys.stderr)
        return 1
    sys.stderr.write((done.stdout or "") + (done.stderr or ""))
    if done.returncode != 0:
        print(f"memtool: compress failed (exit {done.returncode}); {retry}", file=sys.stderr)
    elif payload.session_id:
        from memtool.hooks.state import note_compressed

        note_compressed(spec(agent).name, payload.session_id, size)
    return done.returncode


def catch_up_sessions(payload: HookPayload, agent: str, root: Path) -> list[FoundSession]:
    """This project's sessions of `agent` whose transcript changed within CATCHUP_DAYS and that no
    entry holds yet (the newest CATCHUP_MAX_SESSIONS): not the current one; not one compress stored
    at this size (the hooks' state), nor, without that state, one whose id an entry of this agent
    has as its session."""
    from memtool.agent_history import find_sessions
    from memtool.hooks.state import being_compressed, compressed_sizes

    since = datetime.now(timezone.utc) - timedelta(days=C.CATCHUP_DAYS)
    quiet = datetime.now(timezone.utc).timestamp() - C.CATCHUP_QUIET_S  # newer: its client may still be writing it
    found = [f for f in find_sessions(_workdir(payload) or Path.cwd(), [agent], since) if f.session_id != payload.session_id and f.modified < quiet]
    if not found:
        return []
    from memtool.store import Layout, Store

    sizes = compressed_sizes()
    held = {e.source_session for e in Store(Layout(root)).iter_entries() if e.agent == agent}
    todo = [f for f in found if sizes.get(f"{agent}:{f.session_id}", -1) != f.size and (f"{agent}:{f.session_id}" in sizes or f.session_id not in held)]
    todo = [f for f in todo if not being_compressed(agent, f.session_id)]  # its own end hook is at it
    return todo[-C.CATCHUP_MAX_SESSIONS :]


def quiet_wait(payload: HookPayload, agent: str) -> float:
    """Seconds until every other session of `agent` here has been quiet for CATCHUP_QUIET_S (0: they
    are): a session killed just before this one ended is caught up then, not a session later."""
    from memtool.agent_history import find_sessions

    now = datetime.now(timezone.utc).timestamp()
    since = datetime.now(timezone.utc) - timedelta(seconds=C.CATCHUP_QUIET_S)
    fresh = [f.modified for f in find_sessions(_workdir(payload) or Path.cwd(), [agent], since) if f.session_id != payload.session_id]
    return max((m + C.CATCHUP_QUIET_S - now for m in fresh), default=0.0)


def run_catch_up(payload: HookPayload, agent: str, *, run: Runner | None = None, wait: bool = False) -> int:
    """Compress the sessions catch_up_sessions finds, one `memory compress` each, oldest first; one
    catch-up at a time (another running: nothing to do). With `wait` (after a session end), first wait
    for sessions that changed a moment ago to be quiet. Returns 0, or the last failure's exit code."""
    from memtool.fsutil import locked
    from memtool.hooks.state import hooks_dir

    root = memory_root_for(payload)
    if root is None:
        return 0
    if wait and (pause := quiet_wait(payload, agent)) > 0:
        time.sleep(min(pause, C.CATCHUP_QUIET_S) + 1)
    hooks_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        with locked(hooks_dir() / "catch-up.lock", timeout=0.5):
            code = 0
            for found in catch_up_sessions(payload, agent, root):
                print(f"memtool: catching up {spec(agent).label} session {found.session_id} ({found.path})", file=sys.stderr)
                earlier = HookPayload(found.session_id, found.path, payload.cwd)
                code = run_session_end(earlier, agent, run=run) or code
            return code
    except LockBusy:
        return 0


def spawn_worker(raw_payload: str, payload: HookPayload, agent: str, event: str) -> Path:
    """Start the detached worker (`hooks run EVENT --foreground`: session-end's compress, pre-compact's
    catch-up) and return at once.

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
            memtool_command("hooks", "run", event, "--agent", spec(agent).name, "--foreground"),
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


def spawn_catch_up(raw_payload: str, payload: HookPayload, agent: str) -> None:
    """Start the catch-up worker when there may be work for it: a memory root here, and not under
    `memory hooks doctor` (C.ENV_HOOKS_NO_SPAWN)."""
    if os.environ.get(C.ENV_HOOKS_NO_SPAWN) or memory_root_for(payload) is None:
        return
    spawn_worker(raw_payload, payload, agent, "pre-compact")
