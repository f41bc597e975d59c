"""The sessions coding agents keep on disk for a project: where each agent writes its transcripts,
and which of them ran in a given folder.

  Claude Code  ~/.claude/projects/<cwd, every character but A-Z a-z 0-9 as '-'>/<session id>.jsonl
               ($CLAUDE_CONFIG_DIR instead of ~/.claude; a name over 200 characters is cut there and
               given a hash suffix, so folders are matched on that prefix and each file's own `cwd`)
  Codex CLI    $CODEX_HOME (~/.codex)/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl, whose first
               record (`session_meta`) names the session id and the folder it ran in
  Gemini CLI   ~/.gemini/tmp/<project id>/chats/session-<time>-<id8>.json[l]: the project id is the
               short name ~/.gemini/projects.json gives the folder, or (older versions) the SHA-256 of
               its path; $GEMINI_CLI_HOME instead of the home folder

Only file names, a file's first records and its size are read here: nothing is parsed whole, and
nothing is written. A file that cannot be read, or says it ran elsewhere, is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator

AGENTS = ("claude-code", "codex", "gemini")
HEAD_BYTES = 64 * 1024  # of a transcript read for its session id, folder and start time
_CLAUDE_NAME_MAX = 200  # Claude Code cuts a project folder's name here (and adds a hash)


@dataclass(frozen=True)
class FoundSession:
    agent: str  # claude-code | codex | gemini
    session_id: str
    path: Path
    started: datetime | None  # the transcript's first timestamp (UTC), when it has one
    size: int  # bytes
    modified: float  # the file's modification time (POSIX seconds)


def find_sessions(project_dir: Path, agents: Iterable[str] = AGENTS, since: datetime | None = None, all_projects: bool = False) -> list[FoundSession]:
    """The sessions of `agents` that ran in `project_dir` (every project with `all_projects`), whose
    transcript changed at `since` or later; oldest first."""
    project = _norm(project_dir)
    cutoff = since.timestamp() if since is not None else None
    finders = {"claude-code": _claude, "codex": _codex, "gemini": _gemini}
    found = [s for agent in agents for s in finders[agent](project, all_projects) if cutoff is None or s.modified >= cutoff]
    return sorted(found, key=lambda s: (s.modified, s.agent, s.session_id))


def _norm(path: Path | str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(str(path))))


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _head_records(path: Path, limit: int = 50) -> Iterator[dict]:
    """The first JSON records of a JSONL file (of its first HEAD_BYTES), or the one object of a JSON file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return
    text = head.decode("utf-8", errors="replace")
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError:  # cut at HEAD_BYTES: read the keys that come first
            data = {key: value for key, value in re.findall(r'"(sessionId|startTime|projectHash)"\s*:\s*"([^"]*)"', text)}
        if isinstance(data, dict):
            yield data
        return
    lines = text.split("\n")
    if len(head) == HEAD_BYTES:
        lines = lines[:-1]  # the last one may be cut
    for line in lines[:limit]:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def _time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def _session(agent: str, session_id: str, path: Path, started: datetime | None, st: os.stat_result) -> FoundSession:
    return FoundSession(agent, session_id, path, started, st.st_size, st.st_mtime)


# --- Claude Code --------------------------------------------------------------------------------


def claude_folder_name(project: str) -> str:
    """The name Claude Code gives a project's folder under projects/ (up to its 200-character cut)."""
    return re.sub(r"[^a-zA-Z0-9]", "-", project)


def _claude(project: str, all_projects: bool) -> Iterator[FoundSession]:
    base = Path(os.environ.get("CLAUDE_CONFIG_DIR") or _home() / ".claude") / "projects"
    name = claude_folder_name(project)
    try:
        folders = [f for f in base.iterdir() if f.is_dir()]
    except OSError:
        return
    if not all_projects:
        folders = [f for f in folders if f.name == name or (len(name) > _CLAUDE_NAME_MAX and f.name.startswith(name[:_CLAUDE_NAME_MAX] + "-"))]
    for folder in folders:
        for path in sorted(folder.glob("*.jsonl")):
            st = _stat(path)
            if st is None or not st.st_size:
                continue
            records = list(_head_records(path))
            cwd = next((r["cwd"] for r in records if isinstance(r.get("cwd"), str)), None)
            if not all_projects and cwd is not None and _norm(cwd) != project:
                continue  # another folder whose name reads the same
            if not any(r.get("type") in ("user", "assistant") for r in records):
                continue  # a summary or snapshot file, no conversation (yet)
            started = next((t for r in records if (t := _time(r.get("timestamp")))), None)
            yield _session("claude-code", path.stem, path, started, st)


# --- Codex CLI ----------------------------------------------------------------------------------


def _codex(project: str, all_projects: bool) -> Iterator[FoundSession]:
    base = Path(os.environ.get("CODEX_HOME") or _home() / ".codex") / "sessions"
    for path in sorted(base.glob("[0-9][0-9][0-9][0-9]/[0-9][0-9]/[0-9][0-9]/rollout-*.jsonl")):
        st = _stat(path)
        if st is None or not st.st_size:
            continue
        meta = next((r.get("payload") for r in _head_records(path, limit=5) if r.get("type") == "session_meta"), None)
        if not isinstance(meta, dict) or not isinstance(meta.get("id"), str) or not isinstance(meta.get("cwd"), str):
            continue
        if not all_projects and _norm(meta["cwd"]) != project:
            continue
        yield _session("codex", meta["id"], path, _time(meta.get("timestamp")), st)


# --- Gemini CLI ---------------------------------------------------------------------------------


def gemini_project_ids(project: str, gemini_dir: Path) -> list[str]:
    """The names of the folders under tmp/ Gemini CLI may keep a project's chats in: its short id in
    projects.json (0.2x and later), and the SHA-256 of its path (older versions, before migration)."""
    ids = []
    try:
        registry = json.loads((gemini_dir / "projects.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        registry = None
    projects = registry.get("projects") if isinstance(registry, dict) else None
    if isinstance(projects, dict):
        ids += [short for path, short in projects.items() if isinstance(short, str) and isinstance(path, str) and _norm(path) == project]
    return [*ids, hashlib.sha256(project.encode("utf-8")).hexdigest()]


def _gemini(project: str, all_projects: bool) -> Iterator[FoundSession]:
    gemini_dir = Path(os.environ.get("GEMINI_CLI_HOME") or _home()) / ".gemini"
    tmp = gemini_dir / "tmp"
    if all_projects:
        try:
            folders = sorted(f for f in tmp.iterdir() if f.is_dir())
        except OSError:
            return
    else:
        folders = [tmp / name for name in gemini_project_ids(project, gemini_dir) if "/" not in name and name not in ("", ".", "..")]
    for folder in folders:
        for path in sorted([*folder.glob("chats/session-*.json"), *folder.glob("chats/session-*.jsonl")]):
            st = _stat(path)
            if st is None or not st.st_size:
                continue
            head = next(_head_records(path, limit=1), {})
            session_id = head.get("sessionId")
            if not isinstance(session_id, str) or not session_id:
                continue
            yield _session("gemini", session_id, path, _time(head.get("startTime")), st)
