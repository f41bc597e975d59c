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


def _talk(n: int, turns: int = 1) -> list[tuple[str, str]]:
    """What was asked and answered in session `n`, turn by turn (later turns go through other topics)."""
    out = []
    for k in range(turns):
        topic, answer = TOPICS[(n + k) % len(TOPICS)]
        step = f" (step {k + 1})" if k else ""
        out.append((f"Session {n}{step}: please look at the {topic} (ticket T-{1000 + n}).", f"Done for T-{1000 + n}{step}: {answer}."))
    return out


def claude_session(home: Path, cwd: Path, n: int, start: datetime, turns: int = 1) -> tuple[str, Path]:
    """A Claude Code session `n` of `turns` exchanges that ran in `cwd` from `start`: (session id, file)."""
    sid = str(uuid.UUID(int=n + 1))
    folder = home / ".claude" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))
    folder.mkdir(parents=True, exist_ok=True)
    base = {"isSidechain": False, "userType": "external", "cwd": str(cwd), "sessionId": sid, "version": "2.1.332", "gitBranch": "main"}
    records: list[dict] = [{"type": "summary", "summary": _talk(n)[0][0][:40], "leafUuid": "a0"}]
    for k, (asked, said) in enumerate(_talk(n, turns)):
        at = start + timedelta(minutes=5 * k)
        parent = f"a{k - 1}" if k else None
        message = {"id": f"msg_{n}_{k}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": said}]}
        records += [
            base | {"parentUuid": parent, "type": "user", "message": {"role": "user", "content": asked}, "uuid": f"u{k}", "timestamp": _iso(at)},
            base | {"parentUuid": f"u{k}", "type": "assistant", "message": message, "uuid": f"a{k}", "timestamp": _iso(at + timedelta(minutes=3))},
        ]
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return sid, path


def codex_session(home: Path, cwd: Path, n: int, start: datetime, turns: int = 1) -> tuple[str, Path]:
    """A Codex CLI rollout `n` of `turns` exchanges that ran in `cwd` from `start`: (session id, file)."""
    sid = f"0199a0b1-2c3d-7e4f-8a9b-{n:012x}"
    folder = home / ".codex" / "sessions" / f"{start:%Y/%m/%d}"
    folder.mkdir(parents=True, exist_ok=True)
    t = lambda minutes: _iso(start + timedelta(minutes=minutes))  # noqa: E731
    meta = {"id": sid, "timestamp": t(0), "cwd": str(cwd), "originator": "codex_cli_rs", "cli_version": "0.171.0"}
    records: list[dict] = [{"timestamp": t(0), "type": "session_meta", "payload": meta}]
    for k, (asked, said) in enumerate(_talk(n, turns)):
        records += [
            {
                "timestamp": t(5 * k),
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": asked}]},
            },
            {"timestamp": t(5 * k), "type": "event_msg", "payload": {"type": "user_message", "message": asked, "kind": "plain"}},
            {
                "timestamp": t(5 * k + 2),
                "type": "response_item",
                "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": said}]},
            },
        ]
    path = folder / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return sid, path


def gemini_session(home: Path, cwd: Path, n: int, start: datetime, turns: int = 1) -> tuple[str, Path]:
    """A Gemini CLI chat `n` of `turns` exchanges that ran in `cwd` from `start`: (session id, file)."""
    sid = str(uuid.UUID(int=(n + 1) << 64))
    project_hash = hashlib.sha256(str(cwd).encode()).hexdigest()
    folder = home / ".gemini" / "tmp" / project_hash / "chats"
    folder.mkdir(parents=True, exist_ok=True)
    messages = []
    for k, (asked, said) in enumerate(_talk(n, turns)):
        at = start + timedelta(minutes=5 * k)
        messages += [
            {"id": f"u{k}", "timestamp": _iso(at), "type": "user", "content": asked},
            {"id": f"g{k}", "timestamp": _iso(at + timedelta(minutes=4)), "type": "gemini", "content": said, "model": "gemini-2.5-pro"},
        ]
    chat = {"sessionId": sid, "projectHash": project_hash, "startTime": _iso(start), "lastUpdated": messages[-1]["timestamp"], "messages": messages}
    path = folder / f"session-{start:%Y-%m-%dT%H-%M}-{sid[:8]}.json"
    path.write_text(json.dumps(chat, indent=2), encoding="utf-8")
    return sid, path


WRITERS = {"claude-code": claude_session, "codex": codex_session, "gemini": gemini_session}


def seed(home: Path, cwd: Path, plan: list[tuple[str, datetime]], first: int = 0, turns: int = 1) -> dict[str, dict]:
    """Write one session of `turns` exchanges per (agent, start) of `plan` that ran in `cwd`, numbered
    from `first`; each file's modification time is now (not its start). Returns session id -> {agent, start, path}."""
    out = {}
    for i, (agent, start) in enumerate(plan, start=first):
        sid, path = WRITERS[agent](home, cwd, i, start, turns)
        os.utime(path)
        out[sid] = {"agent": agent, "start": start, "path": path}
    return out
