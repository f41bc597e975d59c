"""Agent sessions on disk as the agents write them (the shapes of tests/fixtures/hooks/*): Claude Code
JSONL under ~/.claude/projects/<encoded cwd>/, Codex rollouts under ~/.codex/sessions/YYYY/MM/DD/
(session_meta names the cwd), Gemini CLI chats under ~/.gemini/tmp/<SHA-256 of the path>/chats/."""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

TOPICS = [
    ("login form crash", "the submit handler read user.id of a null user; added a guard and a test"),
    ("payment client retries", "exponential back-off with three tries around PaymentClient.charge"),
    ("slow CI", "pip downloads are cached now; the install step took six of the eight minutes"),
    ("dark mode toggle", "the React dashboard reads the theme from localStorage; Maria checked contrast"),
    ("billing migration", "billing moves to Postgres; Bob writes the migration before the audit"),
    ("search latency", "the BM25 index is loaded once per process instead of per query"),
    ("flaky upload test", "the upload test waited on a fixed sleep; it polls the bucket instead"),
    ("docker image size", "a multi-stage build drops the compiler; the image went from 1.2 GB to 310 MB"),
    ("rate limiter", "a token bucket per API key in Redis, 100 requests a minute"),
    ("email templates", "MJML templates compiled at build time; the welcome mail renders in Outlook"),
    ("logging format", "JSON logs with a request id field, shipped to Loki"),
    ("feature flags", "flags read from LaunchDarkly at start-up and cached for five minutes"),
]


def _iso(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _talk(n: int) -> tuple[str, str]:
    topic, answer = TOPICS[n % len(TOPICS)]
    return f"Session {n}: please look at the {topic} (ticket T-{1000 + n}).", f"Done for T-{1000 + n}: {answer}."


def claude_session(home: Path, cwd: Path, n: int, start: datetime) -> tuple[str, Path]:
    """A Claude Code session `n` that ran in `cwd` from `start`: (session id, file)."""
    sid = str(uuid.UUID(int=n + 1))
    folder = home / ".claude" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))
    folder.mkdir(parents=True, exist_ok=True)
    asked, said = _talk(n)
    base = {"isSidechain": False, "userType": "external", "cwd": str(cwd), "sessionId": sid, "version": "2.1.332", "gitBranch": "main"}
    records = [
        {"type": "summary", "summary": asked[:40], "leafUuid": "u2"},
        base | {"parentUuid": None, "type": "user", "message": {"role": "user", "content": asked}, "uuid": "u1", "timestamp": _iso(start)},
        base
        | {
            "parentUuid": "u1",
            "type": "assistant",
            "message": {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": said}]},
            "uuid": "u2",
            "timestamp": _iso(start + timedelta(minutes=3)),
        },
    ]
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return sid, path


def codex_session(home: Path, cwd: Path, n: int, start: datetime) -> tuple[str, Path]:
    """A Codex CLI rollout `n` that ran in `cwd` from `start`: (session id, file)."""
    sid = f"0199a0b1-2c3d-7e4f-8a9b-{n:012x}"
    folder = home / ".codex" / "sessions" / f"{start:%Y/%m/%d}"
    folder.mkdir(parents=True, exist_ok=True)
    asked, said = _talk(n)
    t = lambda minutes: _iso(start + timedelta(minutes=minutes))  # noqa: E731
    records = [
        {
            "timestamp": t(0),
            "type": "session_meta",
            "payload": {"id": sid, "timestamp": t(0), "cwd": str(cwd), "originator": "codex_cli_rs", "cli_version": "0.171.0"},
        },
        {"timestamp": t(0), "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": asked}]}},
        {"timestamp": t(0), "type": "event_msg", "payload": {"type": "user_message", "message": asked, "kind": "plain"}},
        {"timestamp": t(2), "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": said}]}},
    ]
    path = folder / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return sid, path


def gemini_session(home: Path, cwd: Path, n: int, start: datetime) -> tuple[str, Path]:
    """A Gemini CLI chat `n` that ran in `cwd` from `start`: (session id, file)."""
    sid = str(uuid.UUID(int=(n + 1) << 64))
    project_hash = hashlib.sha256(str(cwd).encode()).hexdigest()
    folder = home / ".gemini" / "tmp" / project_hash / "chats"
    folder.mkdir(parents=True, exist_ok=True)
    asked, said = _talk(n)
    chat = {
        "sessionId": sid,
        "projectHash": project_hash,
        "startTime": _iso(start),
        "lastUpdated": _iso(start + timedelta(minutes=4)),
        "messages": [
            {"id": "m1", "timestamp": _iso(start), "type": "user", "content": asked},
            {"id": "m2", "timestamp": _iso(start + timedelta(minutes=4)), "type": "gemini", "content": said, "model": "gemini-2.5-pro"},
        ],
    }
    path = folder / f"session-{start:%Y-%m-%dT%H-%M}-{sid[:8]}.json"
    path.write_text(json.dumps(chat, indent=2), encoding="utf-8")
    return sid, path


WRITERS = {"claude-code": claude_session, "codex": codex_session, "gemini": gemini_session}


def seed(home: Path, cwd: Path, plan: list[tuple[str, datetime]], first: int = 0) -> dict[str, dict]:
    """Write one session per (agent, start) of `plan` that ran in `cwd`, numbered from `first`; each
    file's modification time is now (not its start). Returns session id -> {agent, start, path}."""
    out = {}
    for i, (agent, start) in enumerate(plan, start=first):
        sid, path = WRITERS[agent](home, cwd, i, start)
        os.utime(path)
        out[sid] = {"agent": agent, "start": start, "path": path}
    return out
