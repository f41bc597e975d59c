"""`memory hooks install|uninstall|run` on copies of real-looking agent config files."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memtool import hooks as core
from memtool.cli import hooks as cli_hooks
from memtool.jsonc import Document

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
RUNNER = "memory"

# agent -> (fixture copied into place, path relative to the project folder, allows comments)
CASES = {
    "claude-code": ("claude_settings.json", ".claude/settings.json", False),
    "codex": ("codex_hooks.json", ".codex/hooks.json", False),
    "gemini": ("gemini_settings.json", ".gemini/settings.json", True),
}


@pytest.fixture(autouse=True)
def fixed_runner(monkeypatch):
    """Installed commands start with plain `memory`, whatever is on this machine's PATH."""
    monkeypatch.setattr(core, "default_runner", lambda: RUNNER)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def place(project: Path, agent: str) -> Path:
    fixture, rel, _ = CASES[agent]
    target = project / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / fixture, target)
    return target


def load(path: Path, agent: str) -> Any:
    return Document(path.read_text(encoding="utf-8"), comments=CASES[agent][2]).data()


def cli(*args: str, input: str | None = None):
    root = typer.Typer()
    root.add_typer(cli_hooks.app, name="hooks")

    @root.callback()
    def _main() -> None:  # a callback keeps `hooks` a sub-command
        pass

    return CliRunner().invoke(root, ["hooks", *args], input=input)


def ours(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [h for g in groups for h in g.get("hooks", []) if core.is_ours(h)]


# --- install ----------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", sorted(CASES))
def test_install_merges_and_keeps_every_other_setting(project, agent):
    path = place(project, agent)
    before = load(path, agent)

    result = cli("install", "--agent", agent, "--project-dir", str(project))
    assert result.exit_code == 0, result.output
    after = load(path, agent)

    # unrelated settings: identical in meaning
    assert {k: v for k, v in after.items() if k != "hooks"} == {k: v for k, v in before.items() if k != "hooks"}
    # the hooks that were there are all still there, unchanged and first
    for event, groups in before["hooks"].items():
        assert after["hooks"][event][: len(groups)] == groups
    # ours: exactly one handler per session event, with the documented command
    spec = core.spec(agent)
    start, end = ours(after["hooks"][spec.start_event]), ours(after["hooks"][spec.end_event])
    assert [h["command"] for h in start] == [f"memory hooks run session-start --agent {agent}"]
    assert [h["command"] for h in end] == [f"memory hooks run session-end --agent {agent}"]
    assert "memory" in result.output and str(path) in result.output


def test_install_output_for_each_agent_uses_its_own_schema(project):
    for agent in CASES:
        cli("install", "--agent", agent, "--project-dir", str(project))
    claude = json.loads((project / ".claude/settings.json").read_text())
    codex = json.loads((project / ".codex/hooks.json").read_text())
    gemini = json.loads((project / ".gemini/settings.json").read_text())
    assert claude == {
        "hooks": {
            "SessionStart": [
                {
                    "matcher": "startup|clear|compact",
                    "hooks": [{"type": "command", "command": "memory hooks run session-start --agent claude-code", "timeout": 30}],
                }
            ],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "memory hooks run session-end --agent claude-code", "timeout": 10}]}],
        }
    }
    assert set(codex) == {"hooks"}  # Codex refuses unknown top-level keys in hooks.json
    assert codex["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # Codex caps SessionEnd at 3 s
    gemini_end = gemini["hooks"]["SessionEnd"][0]["hooks"][0]
    assert gemini_end["name"] == "memtool-session-end" and gemini_end["timeout"] == 10_000  # milliseconds


@pytest.mark.parametrize("agent", sorted(CASES))
def test_install_twice_gives_identical_bytes(project, agent):
    path = place(project, agent)
    assert cli("install", "--agent", agent, "--project-dir", str(project)).exit_code == 0
    once = path.read_bytes()
    second = cli("install", "--agent", agent, "--project-dir", str(project))
    assert second.exit_code == 0
    assert "already installed" in second.output
    assert path.read_bytes() == once


def test_install_into_missing_file_creates_it_and_twice_is_stable(project):
    path = project / ".claude" / "settings.json"
    assert cli("install", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    once = path.read_bytes()
    assert cli("install", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    assert path.read_bytes() == once
    assert once.endswith(b"\n")


def test_gemini_comments_are_kept_and_only_lines_are_added(project):
    path = place(project, "gemini")
    original = path.read_text()
    assert cli("install", "--agent", "gemini", "--project-dir", str(project)).exit_code == 0
    installed = path.read_text()
    for comment in re.findall(r"//[^\n]*|/\*.*?\*/", original):
        assert comment in installed
    # every original line is still there, in order; at most one of them gained a comma
    remaining = iter(installed.splitlines())
    gained_comma = 0
    for line in original.splitlines():
        for candidate in remaining:
            if candidate == line or candidate == line + ",":
                gained_comma += candidate != line
                break
        else:
            pytest.fail(f"line lost or changed: {line!r}")
    assert gained_comma == 1
    assert len(installed.splitlines()) > len(original.splitlines())


def test_comment_after_the_last_entry_stays_on_its_line(project):
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "theme": "GitHub" // keep me\n}\n')
    assert cli("install", "--agent", "gemini", "--project-dir", str(project)).exit_code == 0
    text = path.read_text()
    assert '  "theme": "GitHub", // keep me\n  "hooks": {' in text
    assert cli("uninstall", "--agent", "gemini", "--project-dir", str(project)).exit_code == 0
    assert Document(path.read_text(), comments=True).data() == {"theme": "GitHub"}
    assert "// keep me" in path.read_text()


def test_install_follows_the_files_indentation_and_line_endings(project):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{\r\n\t"model": "opus"\r\n}\r\n')
    assert cli("install", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    data = path.read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"")  # only CRLF line endings
    assert b'\r\n\t"hooks": {\r\n\t\t"SessionStart": [' in data
    assert cli("uninstall", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    assert path.read_bytes() == b'{\r\n\t"model": "opus"\r\n}\r\n'


def test_single_line_file(project):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}')
    assert cli("install", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    data = json.loads(path.read_text())
    assert data["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "say done"}]}]
    assert len(ours(data["hooks"]["SessionEnd"])) == 1
    assert cli("uninstall", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    assert path.read_text() == '{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}'


def test_outdated_memtool_hook_is_replaced_not_duplicated(project):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    old = "/old/venv/bin/python -m memtool hooks run session-start --agent claude-code"
    path.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": old}]}]}}, indent=2))
    assert cli("install", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    start = json.loads(path.read_text())["hooks"]["SessionStart"]
    assert [h["command"] for h in ours(start)] == ["memory hooks run session-start --agent claude-code"]
    assert len(start) == 1


def test_dry_run_writes_nothing(project):
    path = place(project, "claude-code")
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    result = cli("install", "--agent", "claude-code", "--dry-run", "--project-dir", str(project))
    assert result.exit_code == 0
    assert "+    \"SessionEnd\": [" in result.output
    assert "not written" in result.output
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime

    missing = project / ".gemini" / "settings.json"
    result = cli("install", "--agent", "gemini", "--dry-run", "--project-dir", str(project))
    assert result.exit_code == 0 and "+++" in result.output
    assert not missing.exists() and not missing.parent.exists()


def test_dry_run_json_reports_the_diff(project):
    place(project, "codex")
    result = cli("install", "--agent", "codex", "--dry-run", "--json", "--project-dir", str(project))
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert report["changed"] is True and report["written"] is False and report["dry_run"] is True
    assert report["path"] == str(project / ".codex" / "hooks.json")
    assert '+    "SessionStart": [' in report["diff"]
    assert any("trust" in note for note in report["notes"])


# --- uninstall --------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", sorted(CASES))
def test_uninstall_restores_the_original(project, agent):
    path = place(project, agent)
    original_bytes = path.read_bytes()
    original = load(path, agent)
    assert cli("install", "--agent", agent, "--project-dir", str(project)).exit_code == 0
    assert path.read_bytes() != original_bytes
    result = cli("uninstall", "--agent", agent, "--project-dir", str(project))
    assert result.exit_code == 0, result.output
    assert load(path, agent) == original
    assert path.read_bytes() == original_bytes


def test_uninstall_keeps_other_hooks_sharing_a_group(project):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    mine = {"type": "command", "command": "memory hooks run session-end --agent claude-code", "timeout": 10}
    theirs = {"type": "command", "command": "./backup.sh"}
    doc = {"hooks": {"SessionEnd": [{"hooks": [theirs, mine]}], "SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}}
    path.write_text(json.dumps(doc, indent=2) + "\n")
    assert cli("uninstall", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    expected = copy.deepcopy(doc)
    expected["hooks"]["SessionEnd"][0]["hooks"] = [theirs]
    assert json.loads(path.read_text()) == expected


def test_uninstall_without_our_hooks_or_file_changes_nothing(project):
    path = place(project, "claude-code")
    before = path.read_bytes()
    result = cli("uninstall", "--agent", "claude-code", "--project-dir", str(project))
    assert result.exit_code == 0 and "nothing to remove" in result.output
    assert path.read_bytes() == before
    result = cli("uninstall", "--agent", "gemini", "--project-dir", str(project))
    assert result.exit_code == 0 and "does not exist" in result.output
    assert not (project / ".gemini").exists()


def test_uninstall_of_a_file_we_created_leaves_an_empty_object(project):
    assert cli("install", "--agent", "codex", "--project-dir", str(project)).exit_code == 0
    assert cli("uninstall", "--agent", "codex", "--project-dir", str(project)).exit_code == 0
    assert json.loads((project / ".codex" / "hooks.json").read_text()) == {}


def test_uninstall_dry_run_writes_nothing(project):
    path = place(project, "gemini")
    cli("install", "--agent", "gemini", "--project-dir", str(project))
    installed = path.read_bytes()
    result = cli("uninstall", "--agent", "gemini", "--dry-run", "--project-dir", str(project))
    assert result.exit_code == 0 and '-    "SessionStart": [' in result.output
    assert path.read_bytes() == installed


# --- malformed files --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "text", "line"),
    [
        ("claude-code", '{\n  "model": "opus",\n  "env": {\n    "A": "1",\n  }\n}\n', 5),
        ("codex", '{\n  "hooks": {\n    "Stop": [\n  }\n}\n', 4),
        ("gemini", '// settings\n{\n  "model": { "name": "x" } // ok\n  "theme": "dark"\n}\n', 4),
        ("claude-code", '{\n  // comments are not JSON\n  "model": "opus"\n}\n', 2),
    ],
)
def test_malformed_config_is_an_error_naming_file_and_line(project, agent, text, line):
    path = project / CASES[agent][1]
    path.parent.mkdir(parents=True)
    path.write_text(text)
    for command in ("install", "uninstall"):
        result = cli(command, "--agent", agent, "--project-dir", str(project))
        assert result.exit_code == 5, result.output
        assert str(path) in result.stderr
        assert f"line {line}," in result.stderr
        assert path.read_text() == text


@pytest.mark.parametrize("text", ['["a list"]\n', '{"hooks": []}\n', '{"hooks": {"SessionStart": {"matcher": "x"}}}\n'])
def test_unexpected_shapes_are_refused(project, text):
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    result = cli("install", "--agent", "claude-code", "--project-dir", str(project))
    assert result.exit_code == 5
    assert str(path) in result.stderr and "line 1" in result.stderr
    assert path.read_text() == text


# --- scopes and warnings ----------------------------------------------------------------------


def test_user_scope_writes_under_home(project, tmp_path):
    home = Path.home()
    assert home == tmp_path / "home"  # conftest points HOME at tmp_path
    for agent, rel in (("claude-code", ".claude/settings.json"), ("codex", ".codex/hooks.json"), ("gemini", ".gemini/settings.json")):
        result = cli("install", "--agent", agent, "--scope", "user")
        assert result.exit_code == 0, result.output
        assert len(ours(json.loads((home / rel).read_text())["hooks"]["SessionStart"])) == 1
    assert not (project / ".claude").exists()


def test_codex_user_scope_honours_codex_home(tmp_path, monkeypatch):
    codex_home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    assert cli("install", "--agent", "codex", "--scope", "user").exit_code == 0
    assert (codex_home / "hooks.json").is_file()


def test_codex_warns_when_config_toml_turns_hooks_off(project):
    place(project, "codex")
    config = project / ".codex" / "config.toml"
    config.write_text((FIXTURES / "codex_config.toml").read_text().replace("hooks = true", "hooks = false"))
    result = cli("install", "--agent", "codex", "--project-dir", str(project))
    assert result.exit_code == 0
    assert "[features] hooks = false" in result.stderr


def test_codex_warns_about_malformed_config_toml_without_touching_it(project):
    config = project / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    bad = 'model = "gpt-5"\n[features\nhooks = true\n'
    config.write_text(bad)
    result = cli("install", "--agent", "codex", "--project-dir", str(project))
    assert result.exit_code == 0
    assert str(config) in result.stderr and "line 2" in result.stderr
    assert config.read_text() == bad


def test_codex_fixture_config_toml_raises_no_warning(project):
    shutil.copyfile(FIXTURES / "codex_config.toml", (project / ".codex").mkdir() or project / ".codex" / "config.toml")
    result = cli("install", "--agent", "codex", "--project-dir", str(project))
    assert result.exit_code == 0 and "warning" not in result.stderr


def test_gemini_warns_when_hooks_are_disabled(project):
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"hooksConfig": {"enabled": false, "disabled": ["memtool-session-end"]}}\n')
    result = cli("install", "--agent", "gemini", "--project-dir", str(project))
    assert result.exit_code == 0
    assert "hooksConfig.enabled is false" in result.stderr
    assert "'memtool-session-end' is listed as disabled" in result.stderr


def test_file_mode_is_kept(project):
    path = place(project, "claude-code")
    path.chmod(0o640)
    assert cli("install", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    assert path.stat().st_mode & 0o777 == 0o640


def test_unknown_agent_is_rejected(project):
    result = cli("install", "--agent", "cursor", "--project-dir", str(project))
    assert result.exit_code == 2
    assert not any(project.iterdir())


def test_default_runner_is_this_interpreter_when_memory_is_not_on_path(monkeypatch):
    monkeypatch.undo()  # the real default_runner
    monkeypatch.setenv("PATH", "")
    runner = core.default_runner()
    assert runner.endswith(" -m memtool") and sys.executable in runner


# --- hooks run --------------------------------------------------------------------------------


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


def test_session_end_hook_spawns_a_detached_worker_and_returns(tmp_path, monkeypatch):
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


def test_session_end_worker_converts_the_transcript_and_runs_compress(tmp_path, monkeypatch):
    seen: dict[str, Any] = {}

    def fake_run(cmd, **kwargs):
        seen["cmd"], seen["kwargs"] = cmd, kwargs
        seen["text"] = Path(cmd[4]).read_text(encoding="utf-8")
        return subprocess.CompletedProcess(cmd, 0, stdout="ctx-1  stored\n", stderr="")

    monkeypatch.setattr(subprocess, "run", fake_run)
    payload = claude_payload(tmp_path)
    result = cli("run", "session-end", "--agent", "claude-code", "--foreground", input=json.dumps(payload))
    assert result.exit_code == 0, result.output

    markdown = tmp_path / "home" / ".cache" / "memtool" / "hooks" / "claude-code-5f0c2a9e-1111.md"
    assert seen["cmd"] == [
        sys.executable, "-m", "memtool", "compress", str(markdown),
        "--session", "5f0c2a9e-1111", "--agent", "claude-code",
    ]
    assert seen["kwargs"]["cwd"] == Path(payload["cwd"])
    assert seen["text"].startswith("summary: Login form crash fixed\n\nuser: The login form crashes")
    assert "assistant: [tool Edit] file_path=src/login.ts" in seen["text"]
    assert not markdown.exists()  # removed once compress succeeded


def test_session_end_worker_keeps_the_markdown_when_compress_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(
        subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 6, stdout="", stderr="error: quota\n")
    )
    result = cli("run", "session-end", "--agent", "claude-code", "--foreground", input=json.dumps(claude_payload(tmp_path)))
    assert result.exit_code == 6
    assert "error: quota" in result.stderr and "kept" in result.stderr
    assert (tmp_path / "home" / ".cache" / "memtool" / "hooks" / "claude-code-5f0c2a9e-1111.md").exists()


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
        return subprocess.CompletedProcess(cmd, 0, stdout="## MEMORY.md\nUse pnpm, not npm.\n", stderr="[120/2000 tokens]\n")

    monkeypatch.setattr(subprocess, "run", fake_run)
    payload = claude_payload(tmp_path, "SessionStart")
    result = cli("run", "session-start", "--agent", "gemini", input=json.dumps(payload))
    assert result.exit_code == 0
    assert seen["cmd"] == [sys.executable, "-m", "memtool", "context"]
    assert seen["kwargs"]["cwd"] == Path(payload["cwd"])
    assert json.loads(result.stdout) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "## MEMORY.md\nUse pnpm, not npm."}
    }


@pytest.mark.parametrize(
    "outcome",
    [
        subprocess.CompletedProcess([], 3, stdout="", stderr="error: no memory root here\n"),
        subprocess.TimeoutExpired(["memory"], 25),
        subprocess.CompletedProcess([], 0, stdout="  \n", stderr=""),
    ],
)
def test_session_start_failure_or_empty_context_prints_nothing(tmp_path, monkeypatch, outcome):
    def fake_run(cmd, **kwargs):
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(subprocess, "run", fake_run)
    result = cli("run", "session-start", "--agent", "claude-code", input=json.dumps(claude_payload(tmp_path)))
    assert result.exit_code == 0
    assert result.stdout == ""
    if isinstance(outcome, subprocess.TimeoutExpired) or outcome.returncode:
        assert "no memory loaded" in result.stderr


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


# --- property: any document, any layout -------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=8))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)
_handler = st.fixed_dictionaries({"type": st.just("command"), "command": st.sampled_from(["./a.sh", "say hi", "echo memory"])})
_group = st.fixed_dictionaries({"hooks": st.lists(_handler, min_size=1, max_size=2)}, optional={"matcher": st.text(max_size=5)})
_hooks = st.dictionaries(st.sampled_from(["PreToolUse", "SessionStart", "SessionEnd", "Stop"]), st.lists(_group, max_size=2), max_size=4)
_docs = st.builds(
    lambda other, hooks, with_hooks: {**other, **({"hooks": hooks} if with_hooks else {})},
    st.dictionaries(st.text(max_size=6).filter(lambda k: k != "hooks"), _values, max_size=4),
    _hooks,
    st.booleans(),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=_docs, indent=st.sampled_from([None, 2, 4, "\t"]), agent=st.sampled_from(sorted(CASES)))
def test_install_then_uninstall_round_trips_any_document(doc, indent, agent):
    path = Path("settings.json")
    text = json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"
    installed = core.install_text(agent, path, text, RUNNER)
    assert json.loads(installed) == core.installed_semantics(doc, core.desired_groups(agent, RUNNER))
    assert core.install_text(agent, path, installed, RUNNER) == installed
    restored = core.uninstall_text(agent, path, installed)
    assert json.loads(restored) == core.uninstalled_semantics(json.loads(installed))
    if core.uninstalled_semantics(json.loads(installed)) == doc:
        assert restored == text  # byte for byte
    else:  # only case: an empty "hooks" / event list that we filled goes away with our entries
        assert doc["hooks"] == {} or [] in doc["hooks"].values()
