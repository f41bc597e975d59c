"""`memory hooks run session-start|session-end`: what the installed hooks execute."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hooks.conftest import FIXTURES, cli


def claude_payload(tmp_path: Path, event: str = "SessionEnd") -> dict[str, Any]:
    transcript = tmp_path / "5f0c2a9e.jsonl"
    shutil.copyfile(FIXTURES / "claude_transcript.jsonl", transcript)
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    return {
        "session_id": "5f0c2a9e-1111",
        "transcript_path": str(transcript),
        "cwd": str(workdir),
        "permission_mode": "default",
        "hook_event_name": event,
        "reason": "prompt_input_exit",
    }


class FakeProc:
    def __init__(self) -> None:
        self.stdin = self
        self.data = b""
        self.closed = False

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        self.closed = True


def test_session_end_hook_spawns_a_detached_worker_and_returns(tmp_path, monkeypatch, root):
    from memtool.scaffold import init

    init(root)
    calls: list[tuple[list[str], dict[str, Any]]] = []
    proc = FakeProc()

    def fake_popen(cmd, **kwargs):
        calls.append((cmd, kwargs))
        return proc

    monkeypatch.setattr(subprocess, "Popen", fake_popen)
    payload = claude_payload(tmp_path)
    raw = json.dumps(payload)
    result = cli("run", "session-end", "--agent", "claude-code", input=raw)
    assert result.exit_code == 0
    assert result.stdout == ""
    [(cmd, kwargs)] = calls
    assert cmd == [sys.executable, "-m", "memtool", "hooks", "run", "session-end", "--agent", "claude-code", "--foreground"]
    assert kwargs["start_new_session"] is True
    assert kwargs["cwd"] == Path(payload["cwd"])
    assert proc.data == raw.encode() and proc.closed
    assert "background" in result.stderr


def test_session_end_worker_runs_compress_on_the_transcript_file_itself(tmp_path, monkeypatch):
    seen: dict[str, Any] = {}

    def fake_run(cmd, **kwargs):
        seen["cmd"], seen["kwargs"] = cmd, kwargs
        return subprocess.CompletedProcess(cmd, 0, stdout="ctx-1  stored\n", stderr="")

    monkeypatch.setattr(subprocess, "run", fake_run)
    payload = claude_payload(tmp_path)
    result = cli("run", "session-end", "--agent", "claude-code", "--foreground", input=json.dumps(payload))
    assert result.exit_code == 0, result.output
    assert seen["cmd"] == [sys.executable, "-m", "memtool", "compress", payload["transcript_path"], "--session", "5f0c2a9e-1111", "--agent", "claude-code"]
    assert seen["kwargs"]["cwd"] == Path(payload["cwd"])
    assert not hook_cache(tmp_path).exists() or [p.name for p in hook_cache(tmp_path).iterdir() if p.suffix == ".md"] == []  # no copy made


FAKE_TOKEN = "ghp_" + "R7tY2uI9oP4aS6dF8gH1jK3lZ5xC7vB9nM2q"
FAKE_PASSWORD = "Pr0d-Db-Pw-77x"


def payload_with_secrets(tmp_path: Path, turn_text: str = "") -> dict[str, Any]:
    payload = claude_payload(tmp_path)
    with open(payload["transcript_path"], "a", encoding="utf-8") as fh:
        turn = {"type": "user", "message": {"role": "user", "content": turn_text or f"use {FAKE_TOKEN} and DB_PWD={FAKE_PASSWORD} for the deploy"}}
        fh.write(json.dumps(turn | {"sessionId": payload["session_id"], "timestamp": "2026-02-07T10:05:00.000Z"}) + "\n")
    return payload


def hook_cache(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".cache" / "memtool" / "hooks"


def stored_text(root: Path) -> str:
    """Every byte memtool keeps under memory/ (entries, transcripts, logs) and its search cache."""
    return "".join(p.read_bytes().decode("utf-8", "replace") for p in sorted((root / "memory").rglob("*")) if p.is_file())


def test_session_end_end_to_end_dates_the_entry_from_the_transcript_and_redacts(tmp_path, root, model_cache, monkeypatch):
    """The real worker and the real `memory compress` on a Claude Code transcript whose first message
    names another date: the entry is dated when the session ran (its own timestamps), holds no secret,
    and a second run on the same transcript adds nothing (idempotent by the agent's session id)."""
    from memtool.scaffold import init
    from memtool.store import Layout, Store

    monkeypatch.setenv("MEMTOOL_EMBEDDER", "wordllama")
    init(root)
    payload = payload_with_secrets(tmp_path) | {"cwd": str(root)}
    lines = Path(payload["transcript_path"]).read_text().splitlines()
    first = json.loads(lines[1])
    assert first["type"] == "user"
    first["message"]["content"] = "About the release of 3 March 2025: " + str(first["message"]["content"])
    Path(payload["transcript_path"]).write_text("\n".join([lines[0], json.dumps(first), *lines[2:]]) + "\n")
    for _ in range(2):
        done = cli("run", "session-end", "--agent", "claude-code", "--foreground", input=json.dumps(payload))
        assert done.exit_code == 0, done.output
    [entry] = list(Store(Layout(root)).iter_entries())
    assert entry.timestamp.startswith("2026-02-07") and entry.source_session == "5f0c2a9e-1111" and entry.agent == "claude-code"
    kept = stored_text(root)
    assert FAKE_TOKEN not in kept and FAKE_PASSWORD not in kept and "[REDACTED:github_token]" in kept
    assert "duplicate" in done.stderr or "already stored" in done.stderr
    from memtool.hooks.state import compressed_sizes

    assert compressed_sizes()["claude-code:5f0c2a9e-1111"] == Path(payload["transcript_path"]).stat().st_size  # for the catch-up


@pytest.mark.parametrize("failure", [OSError("cannot fork"), subprocess.TimeoutExpired(["memory"], 120)])
def test_session_end_failing_to_run_compress_says_where_the_transcript_is(tmp_path, failure, capsys):
    from memtool.hooks.session import parse_payload, run_session_end

    def broken(cmd, **kwargs):
        raise failure

    payload = parse_payload(json.dumps(claude_payload(tmp_path)))
    if isinstance(failure, OSError):
        with pytest.raises(OSError):
            run_session_end(payload, "claude-code", run=broken)
    else:
        assert run_session_end(payload, "claude-code", run=broken) == 1
        assert str(payload.transcript_path) in capsys.readouterr().err


def test_session_end_with_a_real_compress_that_fails_says_so(tmp_path):
    """The real worker and a real `memory compress` that fails (the session's folder is no memory root)."""
    payload = payload_with_secrets(tmp_path)
    result = cli("run", "session-end", "--agent", "claude-code", "--foreground", input=json.dumps(payload))
    assert result.exit_code == 3
    assert "is not a memory root" in result.stderr and "compress failed (exit 3)" in result.stderr


def test_gemini_session_end_says_nothing_when_all_is_well(tmp_path, root, monkeypatch):
    """Gemini CLI shows a hook's stderr as a message when stdout is empty: on success, nothing at all."""
    from memtool.scaffold import init

    init(root)
    monkeypatch.setattr(subprocess, "Popen", lambda cmd, **kw: FakeProc())
    payload = claude_payload(tmp_path) | {"cwd": str(root)}
    gemini = cli("run", "session-end", "--agent", "gemini", input=json.dumps(payload))
    assert gemini.exit_code == 0 and gemini.stdout == "" and gemini.stderr == ""
    claude = cli("run", "session-end", "--agent", "claude-code", input=json.dumps(payload))
    assert "compressing the session in the background" in claude.stderr


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("", "no hook payload"),
        ("{not json", "not JSON"),
        ('["a list"]', "JSON object"),
        ('{"session_id": "s", "transcript_path": null, "cwd": "/"}', "no transcript_path"),
    ],
)
def test_hooks_never_fail_the_agent_session(stdin, message, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: pytest.fail("nothing to spawn"))
    monkeypatch.setattr(subprocess, "run", lambda cmd, **k: subprocess.CompletedProcess(cmd, 0, stdout="", stderr=""))
    for event in ("session-start", "session-end"):
        result = cli("run", event, "--agent", "codex", input=stdin)
        assert result.exit_code == 0
        assert result.stdout == ""
    assert message in result.stderr


def test_session_start_prints_the_context_as_hook_json(tmp_path, monkeypatch):
    seen: dict[str, Any] = {}

    def fake_run(cmd, **kwargs):
        seen["cmd"], seen["kwargs"] = cmd, kwargs
        bundle = {"text": "## MEMORY.md\nUse pnpm, not npm.\n", "included": ["ctx-20260207-1a2b3c4d"], "tokens": 12}
        return subprocess.CompletedProcess(cmd, 0, stdout=json.dumps(bundle), stderr="")

    monkeypatch.setattr(subprocess, "run", fake_run)
    payload = claude_payload(tmp_path, "SessionStart")
    result = cli("run", "session-start", "--agent", "gemini", input=json.dumps(payload))
    assert result.exit_code == 0
    assert seen["cmd"] == [sys.executable, "-m", "memtool", "context", "--json"]
    assert seen["kwargs"]["cwd"] == Path(payload["cwd"])
    assert json.loads(result.stdout) == {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "## MEMORY.md\nUse pnpm, not npm."}}


@pytest.mark.parametrize(
    ("outcome", "note"),
    [
        (subprocess.CompletedProcess([], 3, stdout="", stderr="error: /w is not a memory root\n"), "no memory/ in"),
        (subprocess.CompletedProcess([], 6, stdout="", stderr="error: embedder down\n"), "failed (exit 6): error: embedder down; no memory loaded"),
        (subprocess.TimeoutExpired(["memory"], 25), "took longer than 25 s; no memory loaded"),
    ],
)
def test_session_start_failure_is_one_line_the_agent_shows(tmp_path, monkeypatch, outcome, note):
    """Not a silent failure: the agent's own output at session start says memtool loaded nothing, and why."""

    def fake_run(cmd, **kwargs):
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(subprocess, "run", fake_run)
    result = cli("run", "session-start", "--agent", "claude-code", input=json.dumps(claude_payload(tmp_path)))
    assert result.exit_code == 0
    shown = json.loads(result.stdout)
    assert note in shown["systemMessage"] and "\n" not in shown["systemMessage"]
    assert shown["hookSpecificOutput"] == {"hookEventName": "SessionStart", "additionalContext": shown["systemMessage"]}


def test_session_start_with_an_empty_context_prints_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 0, stdout='{"text": "  \\n", "included": []}', stderr=""))
    result = cli("run", "session-start", "--agent", "claude-code", input=json.dumps(claude_payload(tmp_path)))
    assert result.exit_code == 0 and result.stdout == ""


def test_session_start_in_a_project_without_memory_says_so_for_real(tmp_path, monkeypatch, env):
    """A user-scope hook in a project with no memory/: the real `memory context` exits 3; the agent shows one line."""
    monkeypatch.delenv("MEMTOOL_ROOT")
    payload = claude_payload(tmp_path, "SessionStart")
    done = subprocess.run(
        [sys.executable, "-m", "memtool", "hooks", "run", "session-start", "--agent", "claude-code"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={k: v for k, v in env.items() if k != "MEMTOOL_ROOT"},
    )
    assert done.returncode == 0, done.stderr
    note = json.loads(done.stdout)["systemMessage"]
    assert note == f"memtool: no memory/ in {payload['cwd']} or above; run `memory init` there to keep memory for this project."


def test_session_end_in_a_project_without_memory_spawns_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMTOOL_ROOT")
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: pytest.fail("nothing to spawn"))
    result = cli("run", "session-end", "--agent", "codex", input=json.dumps(claude_payload(tmp_path)))
    assert result.exit_code == 0 and result.stdout == ""
    assert "no memory/ here or above" in result.stderr


def test_python_dash_m_memtool_runs_hooks_directly(tmp_path):
    """The installed command path: `python -m memtool hooks run ...` as a real process."""
    done = subprocess.run(
        [sys.executable, "-m", "memtool", "hooks", "run", "session-end", "--agent", "gemini"],
        input="definitely not json",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0
    assert done.stdout == ""
    assert "session-end hook skipped" in done.stderr


RESUMED_TURNS = [
    {"type": "user", "message": {"role": "user", "content": "Back again: the signup page throws the same crash when the email field is empty."}},
    {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": (
                        "Found it: validateEmail() dereferences the value before checking it. I added an early return for blank input, "
                        "a regression test in signup.spec.ts, and a Sentry breadcrumb so the next failure shows the form state. "
                        "We agreed to port the same guard to the password reset and invite forms next sprint."
                    ),
                }
            ],
        },
    },
]


def test_a_resumed_claude_session_supersedes_its_first_part_end_to_end(tmp_path, root, model_cache, monkeypatch):
    """The real worker and the real `memory compress`, twice on one Claude Code session that grew
    (resumed): the second entry supersedes the first, and the session-start bundle shows only it.
    The processes embed with WordLlama from the shared model cache (this is not about the embedder)."""
    from memtool.scaffold import init
    from memtool.store import Layout, Store

    monkeypatch.setenv("MEMTOOL_EMBEDDER", "wordllama")
    init(root)
    payload = claude_payload(tmp_path) | {"cwd": str(root)}
    first = cli("run", "session-end", "--agent", "claude-code", "--foreground", input=json.dumps(payload))
    assert first.exit_code == 0, first.output
    [old] = list(Store(Layout(root)).iter_entries())
    with open(payload["transcript_path"], "a", encoding="utf-8") as fh:  # the session resumed and went on
        for turn in RESUMED_TURNS:
            fh.write(json.dumps(turn | {"sessionId": "5f0c2a9e-1111-4b7a-9c1d-2e3f4a5b6c7d", "timestamp": "2026-02-08T09:00:00.000Z"}) + "\n")
    second = cli("run", "session-end", "--agent", "claude-code", "--foreground", input=json.dumps(payload))
    assert second.exit_code == 0, second.output
    entries = {e.id: e for e in Store(Layout(root)).iter_entries()}
    [new] = [e for i, e in entries.items() if i != old.id]
    assert new.supersedes == [old.id] and new.source_session == old.source_session == "5f0c2a9e-1111"
    bundle = subprocess.run([sys.executable, "-m", "memtool", "context", "login crash submit guard", "--json"], capture_output=True, text=True, cwd=root)
    assert bundle.returncode == 0, bundle.stderr
    assert json.loads(bundle.stdout)["included"][:1] == [new.id] and old.id not in bundle.stdout
