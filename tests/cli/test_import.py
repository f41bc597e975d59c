"""`memory import` through the CLI, on agent sessions written where and as the agents write them in
the test's HOME (tests/agent_sessions.py), with sessions of another project beside them."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtool.cli.main import app
from tests.agent_sessions import seed

runner = CliRunner()
DAY = datetime(2026, 1, 5, 9, 30, tzinfo=timezone.utc)


def run(*args, input=None):
    return runner.invoke(app, list(args), input=input)


@pytest.fixture(autouse=True)
def agent_homes(monkeypatch):
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def sessions(root, tmp_path):
    """Two sessions of each agent in this project (the memory root) on different days, and one of each
    in another project."""
    assert run("init").exit_code == 0
    home = Path(os.environ["HOME"])
    ours = seed(home, root, [(agent, DAY + timedelta(days=i * 3 + k)) for k, agent in enumerate(("claude-code", "codex", "gemini")) for i in range(2)])
    other = tmp_path / "elsewhere"
    other.mkdir()
    theirs = seed(home, other, [(agent, DAY) for agent in ("claude-code", "codex", "gemini")], first=100)
    return ours, theirs


def entries(root) -> list[dict]:
    out = run("export")
    assert out.exit_code == 0, out.output
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def test_dry_run_shows_what_it_found_and_stores_nothing(root, sessions):
    before = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    out = run("import", "--dry-run")
    assert out.exit_code == 0, out.output
    assert f"found 6 sessions of {root}" in out.stdout
    for agent in ("claude-code", "codex", "gemini"):
        line = next(line for line in out.stdout.splitlines() if line.strip().startswith(agent))
        assert re.search(r"2 sessions +2 new +[\d.]+ KiB", line), line
    assert "2026-01-05 .. 2026-01-08" in out.stdout and "2026-01-07 .. 2026-01-10" in out.stdout  # claude-code, gemini
    assert "would compress 6 sessions" in out.stdout
    plan = json.loads(run("import", "--dry-run", "--json").stdout)
    assert {a["agent"]: (a["sessions"], a["first"], a["last"]) for a in plan["agents"]} == {
        "claude-code": (2, "2026-01-05", "2026-01-08"),
        "codex": (2, "2026-01-06", "2026-01-09"),
        "gemini": (2, "2026-01-07", "2026-01-10"),
    }
    assert sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file()) == before  # nothing written, not even a cache


def test_imports_this_projects_sessions_dated_by_their_own_timestamps_once(root, sessions):
    ours, theirs = sessions
    out = run("import")  # no terminal: no prompt
    assert out.exit_code == 0, out.output
    assert "imported 6 sessions" in out.stdout
    stored = entries(root)
    assert {e["source_session"]: (e["agent"], e["timestamp"][:16]) for e in stored} == {
        sid: (s["agent"], f"{s['start']:%Y-%m-%dT%H:%M}") for sid, s in ours.items()
    }  # every session of this project, none of the other's, each at its start, not its file's time (now)
    again = run("import")
    assert again.exit_code == 0 and "6 already in memory" in again.stdout
    assert len(entries(root)) == 6
    assert "new" in run("import", "--dry-run").stdout and json.loads(run("import", "--dry-run", "--json").stdout)["todo"] == []


def test_a_session_the_hooks_stored_is_not_imported_again(root, sessions):
    ours, _ = sessions
    sid, first = next((sid, s) for sid, s in ours.items() if s["agent"] == "codex")
    hook = run("compress", str(first["path"]), "--session", sid, "--agent", "codex")  # what the session-end hook runs
    assert hook.exit_code == 0, hook.output
    out = run("import", "--agent", "codex", "--json")
    result = json.loads(out.stdout)
    assert result["held"] == 1 and [s["session_id"] for s in result["result"]["stored"]] == [s for s, v in ours.items() if v["agent"] == "codex" and s != sid]
    assert [e["source_session"] for e in entries(root)].count(sid) == 1


def test_agent_since_and_all_projects(root, sessions):
    ours, theirs = sessions
    only = json.loads(run("import", "--dry-run", "--json", "--agent", "gemini").stdout)
    assert [a["agent"] for a in only["agents"]] == ["gemini"]
    assert json.loads(run("import", "--dry-run", "--json", "--since", "2999-01-01").stdout)["todo"] == []  # files changed now
    every = json.loads(run("import", "--dry-run", "--json", "--all-projects").stdout)
    assert {s["session_id"] for s in every["todo"]} == set(ours) | set(theirs)
    bad = run("import", "--agent", "cursor")
    assert bad.exit_code != 0 and "unknown agent 'cursor'" in bad.output


def test_a_session_that_cannot_be_read_is_reported_and_the_rest_imported(root, sessions):
    ours, _ = sessions
    broken = next(s["path"] for s in ours.values() if s["agent"] == "claude-code")
    text = broken.read_text()
    broken.write_text(text + "\x00" * 10)  # binary now: refused by the loader
    out = run("import")
    assert out.exit_code == 0, out.output
    assert f"skipped: {broken}: looks like a binary file" in out.output
    assert "imported 5 sessions" in out.stdout and "1 could not be read" in out.stdout
    broken.write_text(text)
    assert "imported 1 session " in run("import").stdout  # mended: imported next time
    assert len(entries(root)) == 6


def test_a_forgotten_session_is_not_imported_again(root, sessions):
    assert run("import").exit_code == 0
    victim = entries(root)[0]
    assert run("forget", victim["id"], "--yes").exit_code == 0
    out = run("import")
    assert out.exit_code == 0 and "its entry was forgotten" in out.stdout
    assert victim["id"] not in {e["id"] for e in entries(root)} and len(entries(root)) == 5


def test_stopped_import_goes_on_where_it_left_off(root, sessions):
    """Ctrl-C in the middle of the run: what was written stays, the next run stores the rest, once."""
    from memtool.app import open_memory
    from memtool.importer import plan_import, run_import

    mem = open_memory()
    plan = plan_import(mem, root)
    seen = []

    def stop_after_four(found):
        seen.append(found)
        if len(seen) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_import(mem, plan, stop_after_four, batch=2)
    assert len(entries(root)) == 4  # two batches written before the interrupt
    out = run("import", "--json")
    result = json.loads(out.stdout)
    assert result["held"] == 4 and len(result["result"]["stored"]) == 2
    assert sorted(e["source_session"] for e in entries(root)) == sorted(sessions[0])


def test_killed_import_process_resumes_without_loss_or_duplicate(root, env, tmp_path):
    """SIGKILL a real `memory import` once it has written its first entries; run it again."""
    assert run("init").exit_code == 0
    home = Path(env["HOME"])
    agents = ("claude-code", "codex", "gemini")
    ours = seed(home, root, [(agents[i % 3], DAY + timedelta(hours=5 * i)) for i in range(60)])
    env = env | {"CLAUDE_CONFIG_DIR": "", "CODEX_HOME": "", "GEMINI_CLI_HOME": ""}
    day_files = lambda: list((root / "memory" / "index").glob("20*.json"))  # noqa: E731
    proc = subprocess.Popen([sys.executable, "-m", "memtool", "import", "--yes"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not day_files() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL, "the import finished before it could be killed"
    partial = {e["source_session"] for e in entries(root)}
    assert 0 < len(partial) < 60
    done = subprocess.run([sys.executable, "-m", "memtool", "import", "--json"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["held"] == len(partial)
    stored = [e["source_session"] for e in entries(root)]
    assert sorted(stored) == sorted(ours)  # each session once
