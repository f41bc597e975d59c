"""Prompt recall (`hooks run prompt`), the caps of each agent, and the catch-up of session ends that
never ran (`hooks run pre-compact`, and every session start): the hook commands run as real
processes, as the agents run them, on a real store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from memtool import constants as C
from memtool.hooks.session import fit_context
from memtool.scaffold import init
from memtool.text import count_tokens
from tests.hooks.conftest import FIXTURES

MIGRATION = (
    "user: We need to move the billing tables from MySQL to Postgres without downtime.\n\n"
    "assistant: Decision: dual writes behind the feature flag billing_pg_dual_write, then backfill, then flip reads. "
    "Action item: Dana owns the migration runbook and the rollback steps."
)
UNRELATED = "user: The CSS of the marketing page is off on Safari.\n\nassistant: Fixed the flexbox gap fallback for Safari 14."


def hook(event: str, agent: str, payload: dict[str, Any], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """One hook command, as the agent runs it: a new process, the payload on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "memtool", "hooks", "run", event, "--agent", agent],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


@pytest.fixture
def store(root, model_cache, monkeypatch) -> Path:
    from memtool.app import open_memory

    monkeypatch.setenv("MEMTOOL_EMBEDDER", "wordllama")
    monkeypatch.setenv("MEMTOOL_COMPRESSOR", "local")
    init(root)
    mem = open_memory(root)
    mem.compress(MIGRATION, session="s-migration", agent="claude-code")
    mem.compress(UNRELATED, session="s-css", agent="claude-code")
    return root


def _context(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hookSpecificOutput"]


@pytest.mark.parametrize(
    ("agent", "event_name", "tagged"), [("claude-code", "UserPromptSubmit", True), ("codex", "UserPromptSubmit", True), ("gemini", "BeforeAgent", False)]
)
def test_a_prompt_recalls_the_relevant_entry_once_per_session(store, env, agent, event_name, tagged):
    from memtool.store import Layout, Store

    [migration] = [e for e in Store(Layout(store)).iter_entries() if e.source_session == "s-migration"]
    payload = {
        "session_id": f"recall-{uuid.uuid4()}",
        "cwd": str(store),
        "hook_event_name": event_name,
        "prompt": "How do we migrate the billing tables to Postgres?",
    }
    out = _context(hook("prompt", agent, payload, env, store))
    assert out["hookEventName"] == event_name
    text = out["additionalContext"]
    assert text.startswith(f"<{C.INJECTED_TAG}>\n") == tagged and text.endswith(f"</{C.INJECTED_TAG}>") == tagged
    assert migration.id in text and "dual writes" in text and "Safari" not in text
    again = hook("prompt", agent, payload, env, store)  # the same session: it was sent already
    assert again.returncode == 0 and again.stdout == ""
    other = hook("prompt", agent, payload | {"session_id": f"recall-{uuid.uuid4()}"}, env, store)  # another session gets it
    assert migration.id in _context(other)["additionalContext"]


@pytest.mark.parametrize("prompt", ["How do I bake sourdough bread at home?", "yes", "go on"])
def test_nothing_relevant_injects_nothing(store, env, prompt):
    payload = {"session_id": f"recall-{uuid.uuid4()}", "cwd": str(store), "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    done = hook("prompt", "claude-code", payload, env, store)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_what_the_session_start_sent_is_not_recalled_again(store, env):
    session = f"recall-{uuid.uuid4()}"
    start = _context(hook("session-start", "claude-code", {"session_id": session, "cwd": str(store), "hook_event_name": "SessionStart"}, env, store))
    assert "dual writes" in start["additionalContext"]  # the start context holds the entry
    prompt = {"session_id": session, "cwd": str(store), "hook_event_name": "UserPromptSubmit", "prompt": "How do we migrate the billing tables to Postgres?"}
    done = hook("prompt", "claude-code", prompt, env, store)
    assert done.returncode == 0 and done.stdout == "", done.stdout


def test_a_folder_without_memory_recalls_nothing_and_fails_nothing(tmp_path, env):
    folder = tmp_path / "bare"
    folder.mkdir()
    environment = {k: v for k, v in env.items() if k != "MEMTOOL_ROOT"}
    done = hook("prompt", "codex", {"session_id": "x", "cwd": str(folder), "prompt": "billing migration to Postgres"}, environment, folder)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


# --- the caps -----------------------------------------------------------------------------------


def long_bundle(lines: int = 800) -> str:
    return "\n".join(
        f"- [2026-02-0{i % 9 + 1} ctx-2026020{i % 9 + 1}-{i:08x}] decision number {i}: keep the billing writes dual until the backfill ends"
        for i in range(lines)
    )


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_context_over_an_agents_cap_is_cut_at_a_line_and_says_how_to_get_the_rest(agent):
    from memtool.hooks import spec

    bundle = long_bundle()
    shown = fit_context(agent, bundle, "run `memory context` for the whole bundle")
    s = spec(agent)
    assert s.cap_chars is None or len(shown) <= s.cap_chars
    assert s.cap_tokens is None or count_tokens(shown) <= s.cap_tokens
    body = shown.removeprefix(f"<{C.INJECTED_TAG}>\n").removesuffix(f"\n</{C.INJECTED_TAG}>").split("\n")
    kept, note = body[:-1], body[-1]
    assert kept == bundle.split("\n")[: len(kept)] and len(kept) > 10  # whole lines, from the top
    assert (
        note
        == f"[memtool: {800 - len(kept)} more lines left out to fit {s.label}'s "
        + (f"{s.cap_chars:,} characters" if s.cap_chars else f"{s.cap_tokens:,} tokens")
        + "; run `memory context` for the whole bundle]"
    )
    assert fit_context(agent, "one line", "x") == f"<{C.INJECTED_TAG}>\none line\n</{C.INJECTED_TAG}>"


def test_the_session_start_hook_fits_claude_codes_cap_for_real(store, env):
    """A bundle of 20,000 tokens (the user's budget) reaches Claude Code within its 10,000 characters."""
    with open(store / "MEMORY.md", "a", encoding="utf-8") as fh:
        fh.write("\n## Key decisions\n" + long_bundle() + "\n")
    with open(store / "memory" / "config.yaml", "a", encoding="utf-8") as fh:
        fh.write("\nbudget: 20000\n")
    out = _context(hook("session-start", "claude-code", {"session_id": f"cap-{uuid.uuid4()}", "cwd": str(store)}, env, store))
    text = out["additionalContext"]
    assert len(text) <= C.HOOK_CLAUDE_CAP_CHARS and "more lines left out to fit Claude Code's 10,000 characters" in text


# --- catch-up of session ends that never ran ---------------------------------------------------


def claude_transcript(home: Path, project: Path, session_id: str, minutes_ago: float = 30, said: str = "") -> Path:
    from memtool.agent_history import claude_folder_name

    folder = home / ".claude" / "projects" / claude_folder_name(str(project))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    text = (FIXTURES / "claude_transcript.jsonl").read_text().replace("/home/dev/shop", str(project))
    turn = {
        "type": "user",
        "message": {"role": "user", "content": said or f"Also note {session_id} in the changelog."},
        "timestamp": "2026-02-07T10:09:00.000Z",
    }
    path.write_text(text.replace("5f0c2a9e-1111-4b7a-9c1d-2e3f4a5b6c7d", session_id) + json.dumps(turn | {"sessionId": session_id}) + "\n")
    when = path.stat().st_mtime - minutes_ago * 60
    os.utime(path, (when, when))
    return path


def test_pre_compact_catches_up_earlier_sessions_once(root, env):
    """Two earlier Claude Code sessions of this project whose end hook never ran (one of another
    project, one too fresh, and the current one are left alone): the catch-up worker compresses both,
    dated from their transcripts; run again, it adds nothing."""
    from memtool.store import Layout, Store

    init(root)
    home = Path(env["HOME"])
    missed = [f"missed-{uuid.uuid4()}" for _ in range(2)]
    for session, said in zip(missed, ["Then rotate the staging TLS certificates before Friday.", "Also pin the Redis client to 5.0.8 in the worker image."]):
        claude_transcript(home, root, session, said=said)
    claude_transcript(home, root, "current-session")
    claude_transcript(home, root, f"fresh-{uuid.uuid4()}", minutes_ago=0)
    elsewhere = root.parent / "elsewhere"
    elsewhere.mkdir()
    claude_transcript(home, elsewhere, f"other-{uuid.uuid4()}")
    payload = {"session_id": "current-session", "cwd": str(root), "hook_event_name": "PreCompact", "trigger": "auto"}
    worker = [sys.executable, "-m", "memtool", "hooks", "run", "pre-compact", "--agent", "claude-code", "--foreground"]
    for _ in range(2):
        done = subprocess.run(worker, input=json.dumps(payload), capture_output=True, text=True, timeout=300, cwd=root, env=env)
        assert done.returncode == 0, done.stderr
    entries = list(Store(Layout(root)).iter_entries())
    assert sorted(e.source_session for e in entries) == sorted(missed)
    assert all(e.timestamp.startswith("2026-02-07") and e.agent == "claude-code" for e in entries)
    assert done.stderr == ""  # the second run found nothing to do


def test_the_pre_compact_hook_returns_at_once_and_prints_nothing(root, env):
    init(root)
    done = hook("pre-compact", "claude-code", {"session_id": "s", "cwd": str(root), "trigger": "manual"}, env, root)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def test_the_start_context_gemini_puts_into_the_prompt_is_not_searched_for(store, env):
    """Gemini CLI's BeforeAgent prompt carries the start context it was given, as <hook_context>: the
    recall searches what the user asked, not what memtool sent."""
    given = "<hook_context>## Relevant past work\n- [1 Dec 2026] The CSS of the marketing page is off on Safari; fixed the flexbox gap.</hook_context>\n"
    payload = {"session_id": f"recall-{uuid.uuid4()}", "cwd": str(store), "hook_event_name": "BeforeAgent"}
    asked = _context(hook("prompt", "gemini", payload | {"prompt": given + "How do we migrate the billing tables to Postgres?"}, env, store))
    assert "dual writes" in asked["additionalContext"] and "Safari" not in asked["additionalContext"]
    nothing = hook("prompt", "gemini", payload | {"session_id": f"recall-{uuid.uuid4()}", "prompt": given + "go on"}, env, store)
    assert nothing.returncode == 0 and nothing.stdout == ""


def test_a_session_killed_seconds_ago_is_caught_up_unless_its_end_hook_is_at_it(root, env, monkeypatch):
    """A transcript quiet for CATCHUP_QUIET_S is an ended session: caught up at once, unless a live
    process marks it as being compressed (its own end hook)."""
    from memtool.hooks.state import compressing
    from memtool.store import Layout, Store

    init(root)
    home = Path(env["HOME"])
    killed, busy = f"killed-{uuid.uuid4()}", f"busy-{uuid.uuid4()}"
    claude_transcript(home, root, killed, minutes_ago=(C.CATCHUP_QUIET_S + 5) / 60, said="Then rotate the staging TLS certificates before Friday.")
    claude_transcript(home, root, busy, minutes_ago=(C.CATCHUP_QUIET_S + 5) / 60, said="Also pin the Redis client to 5.0.8 in the worker image.")
    payload = {"session_id": "current-session", "cwd": str(root), "hook_event_name": "PreCompact", "trigger": "auto"}
    worker = [sys.executable, "-m", "memtool", "hooks", "run", "pre-compact", "--agent", "claude-code", "--foreground"]
    monkeypatch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])  # the mark goes where the worker looks
    with compressing("claude-code", busy):
        done = subprocess.run(worker, input=json.dumps(payload), capture_output=True, text=True, timeout=300, cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    assert [e.source_session for e in Store(Layout(root)).iter_entries()] == [killed]


def test_a_session_killed_just_before_the_next_one_ended_is_caught_up_by_that_end(root, env):
    """The next session's end waits for the killed one to be quiet, then compresses it too."""
    from memtool.store import Layout, Store

    init(root)
    home = Path(env["HOME"])
    ended, killed = f"ended-{uuid.uuid4()}", f"killed-{uuid.uuid4()}"
    path = claude_transcript(home, root, ended, said="Then rotate the staging TLS certificates before Friday.")
    claude_transcript(home, root, killed, minutes_ago=2 / 60, said="Also pin the Redis client to 5.0.8 in the worker image.")
    payload = {"session_id": ended, "transcript_path": str(path), "cwd": str(root), "hook_event_name": "SessionEnd"}
    worker = [sys.executable, "-m", "memtool", "hooks", "run", "session-end", "--agent", "claude-code", "--foreground"]
    done = subprocess.run(worker, input=json.dumps(payload), capture_output=True, text=True, timeout=300, cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(e.source_session for e in Store(Layout(root)).iter_entries()) == sorted([ended, killed])
