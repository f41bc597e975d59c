"""`memory hooks install|uninstall` on copies of real-looking agent config files."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memtool import hooks as core
from memtool.errors import ConfigError
from memtool.jsonc import MAX_DEPTH
from memtool.scaffold import init
from tests.hooks.conftest import CASES, RUNNER, cli, load, ours, place

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
    for event, agent_event in core.spec(agent).events.items():
        assert [h["command"] for h in ours(after["hooks"][agent_event])] == [f"{RUNNER} hooks run {event} --agent {agent}"]
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
                    "hooks": [{"type": "command", "command": f"{RUNNER} hooks run session-start --agent claude-code", "timeout": 30}],
                }
            ],
            "SessionEnd": [{"hooks": [{"type": "command", "command": f"{RUNNER} hooks run session-end --agent claude-code", "timeout": 10}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"{RUNNER} hooks run prompt --agent claude-code", "timeout": 10}]}],
            "PreCompact": [{"hooks": [{"type": "command", "command": f"{RUNNER} hooks run pre-compact --agent claude-code", "timeout": 10}]}],
        }
    }
    assert set(codex) == {"hooks"}  # Codex refuses unknown top-level keys in hooks.json
    assert codex["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # Codex caps SessionEnd at 3 s
    assert set(codex["hooks"]) == {"SessionStart", "SessionEnd", "UserPromptSubmit", "PreCompact"}
    gemini_end = gemini["hooks"]["SessionEnd"][0]["hooks"][0]
    assert gemini_end["name"] == "memtool-session-end" and gemini_end["timeout"] == 10_000  # milliseconds
    assert [g["hooks"][0]["name"] for g in (gemini["hooks"]["BeforeAgent"][0], gemini["hooks"]["PreCompress"][0])] == ["memtool-prompt", "memtool-pre-compress"]


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
    assert [h["command"] for h in ours(start)] == [f"{RUNNER} hooks run session-start --agent claude-code"]
    assert len(start) == 1


def test_dry_run_writes_nothing(project):
    path = place(project, "claude-code")
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    result = cli("install", "--agent", "claude-code", "--dry-run", "--project-dir", str(project))
    assert result.exit_code == 0
    assert '+    "SessionEnd": [' in result.output
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
    mine = {"type": "command", "command": f"{RUNNER} hooks run session-end --agent claude-code", "timeout": 10}
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


@pytest.mark.parametrize("agent", sorted(CASES))
def test_uninstall_of_a_file_we_created_removes_it_and_the_folder_we_made(project, agent):
    """Nothing was there: after install and uninstall nothing is there (not `{}`, not an empty folder)."""
    before = sorted(project.rglob("*"))
    assert cli("install", "--agent", agent, "--project-dir", str(project)).exit_code == 0
    config = project / CASES[agent][1]
    assert config.is_file()
    result = cli("uninstall", "--agent", agent, "--project-dir", str(project))
    assert result.exit_code == 0 and "which install had created" in result.output
    assert sorted(project.rglob("*")) == before == []


def test_uninstall_keeps_a_created_file_the_user_added_to_and_a_folder_holding_more(project):
    folder = project / ".codex"
    assert cli("install", "--agent", "codex", "--project-dir", str(project)).exit_code == 0
    (folder / "config.toml").write_text("model = 'x'\n")  # the folder now holds another file
    assert cli("uninstall", "--agent", "codex", "--project-dir", str(project)).exit_code == 0
    assert sorted(p.name for p in folder.iterdir()) == ["config.toml"]
    assert cli("install", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    settings = project / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    settings.write_text(json.dumps({"model": "opus"} | data, indent=2) + "\n")  # the user's own setting, after install
    assert cli("uninstall", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    assert json.loads(settings.read_text()) == {"model": "opus"}


def test_uninstall_without_the_record_leaves_an_empty_object(project, tmp_path):
    """The record gone (cache cleared): uninstall cannot know install made the file, so it keeps it."""
    assert cli("install", "--agent", "codex", "--project-dir", str(project)).exit_code == 0
    for record in (tmp_path / "home" / ".cache" / "memtool" / "hooks").glob("filled-containers.json"):
        record.unlink()
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


def test_file_mode_is_kept(project):
    path = place(project, "claude-code")
    path.chmod(0o640)
    assert cli("install", "--agent", "claude-code", "--project-dir", str(project)).exit_code == 0
    assert path.stat().st_mode & 0o777 == 0o640


def test_unknown_agent_is_rejected(project):
    result = cli("install", "--agent", "cursor", "--project-dir", str(project))
    assert result.exit_code == 2
    assert not any(project.iterdir())


ENTRY = Path(sys.executable).parent / "memory"
needs_entry = pytest.mark.skipif(not ENTRY.exists(), reason="no `memory` script beside this interpreter (not an installed environment)")


@needs_entry
def test_default_runner_is_the_entry_point_beside_this_interpreter_as_an_absolute_path(monkeypatch):
    """`python -m memtool hooks install` in a venv: the venv's bin/memory, found without PATH."""
    monkeypatch.undo()
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(sys, "argv", [str(Path(core.__file__).parent.parent / "__main__.py"), "hooks", "install"])
    runner = core.default_runner()
    assert runner == str(ENTRY) and Path(runner).is_absolute() and os.access(runner, os.X_OK)


@needs_entry
def test_default_runner_keeps_the_link_the_install_ran_from(monkeypatch, tmp_path):
    """pipx and `uv tool install` put a link in ~/.local/bin: the hook names the link, which survives a reinstall."""
    monkeypatch.undo()
    link = tmp_path / ".local" / "bin" / "memory"
    link.parent.mkdir(parents=True)
    link.symlink_to(ENTRY)
    monkeypatch.setattr(sys, "argv", [str(link), "hooks", "install"])
    assert core.default_runner() == str(link)
    monkeypatch.setenv("PATH", str(link.parent))
    monkeypatch.setattr(sys, "argv", ["memory", "hooks", "install"])  # started by name: found on PATH
    assert core.default_runner() == str(link)


def test_default_runner_without_an_entry_point_is_this_interpreter_by_absolute_path(monkeypatch, tmp_path):
    monkeypatch.undo()
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setattr(sys, "argv", ["-c"])
    monkeypatch.setenv("PATH", "")
    assert core.default_runner() == f"{python} -m memtool"


@pytest.mark.parametrize("runner", ["memory", "python3 -m memtool", "/nonexistent/bin/memory", "{plain file}"])
def test_install_refuses_a_command_that_is_not_an_absolute_executable(project, tmp_path, runner):
    plain = tmp_path / "memory"
    plain.write_text("#!/bin/sh\n")
    plain.chmod(0o644)
    runner = runner.replace("{plain file}", str(plain))
    with pytest.raises(ConfigError, match="absolute path|does not exist|not an executable"):
        core.install("claude-code", project_dir=project, runner=runner)
    assert not (project / ".claude").exists()


def test_install_memory_option_must_name_an_executable(project):
    result = cli("install", "--agent", "codex", "--project-dir", str(project), "--memory", str(project / "nothing" / "memory"))
    assert result.exit_code == ConfigError.exit_code
    assert "does not exist" in result.stderr and "--memory" in result.stderr
    assert not (project / ".codex").exists()


def test_a_memory_program_of_any_name_is_installed_once_and_uninstalled(project, tmp_path):
    program = tmp_path / "tools" / "mt"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    for _ in range(2):
        assert cli("install", "--agent", "codex", "--project-dir", str(project), "--memory", str(program)).exit_code == 0
    config = project / ".codex" / "hooks.json"
    start = load(config, "codex")["hooks"]["SessionStart"]
    assert [h["command"] for h in ours(start)] == [f"{program} hooks run session-start --agent codex"]
    assert cli("uninstall", "--agent", "codex", "--project-dir", str(project)).exit_code == 0
    assert not config.exists()  # install had created it


@needs_entry
def test_install_from_the_entry_point_writes_its_absolute_path_for_an_agent_without_the_venv(project, tmp_path):
    """The real `memory` program, run by its path from a shell whose PATH does not hold it."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [str(ENTRY), "hooks", "install", "--agent", "gemini", "--project-dir", str(project)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    commands = [h["command"] for h in ours(load(project / ".gemini/settings.json", "gemini")["hooks"]["SessionStart"])]
    assert commands == [f"{ENTRY} hooks run session-start --agent gemini"]
    program = Path(commands[0].split()[0])
    assert program.is_absolute() and program.is_file() and os.access(program, os.X_OK)


def test_a_cold_search_does_not_import_the_hooks(root, env):
    """`memory hooks` is a command of the full CLI, but its modules load only when it runs."""
    init(root)
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('hooks modules:', sorted(m for m in sys.modules if m.startswith('memtool.hooks'))))\n"
        "from memtool.cli.main import run\n"
        "sys.argv = ['memory', 'search', 'redis cache']\n"
        "run()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "hooks modules: []"


# --- symbolic links -------------------------------------------------------------------------


def test_a_linked_config_is_edited_at_its_target_and_stays_a_link(tmp_path):
    """~/.claude/settings.json linked (through a second, relative link) into a dotfiles folder."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude.json"
    original = b'{\n  "model": "opus"\n}\n'
    target.write_bytes(original)
    target.chmod(0o640)
    (dotfiles / "current.json").symlink_to("claude.json")  # a chain, relative
    link = Path.home() / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(dotfiles / "current.json")

    assert cli("install", "--agent", "claude-code", "--scope", "user").exit_code == 0
    assert link.is_symlink() and (dotfiles / "current.json").is_symlink()
    assert len(ours(json.loads(target.read_text())["hooks"]["SessionStart"])) == 1
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude.json", "current.json"]  # no temp left
    assert cli("install", "--agent", "claude-code", "--scope", "user").output.count("already installed") == 1

    assert cli("uninstall", "--agent", "claude-code", "--scope", "user").exit_code == 0
    assert link.is_symlink() and target.read_bytes() == original


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_link_to_nothing_is_an_error_and_nothing_is_created(tmp_path, command):
    link = Path.home() / ".gemini" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(tmp_path / "dotfiles" / "gemini.json")
    result = cli(command, "--agent", "gemini", "--scope", "user")
    assert result.exit_code == 5, result.output
    assert f"{link} is a symbolic link to {tmp_path / 'dotfiles' / 'gemini.json'}, which does not exist" in result.stderr
    assert link.is_symlink() and not (tmp_path / "dotfiles").exists()
    assert [p.name for p in link.parent.iterdir()] == ["settings.json"]


def test_a_linked_folder_to_nothing_is_an_error(tmp_path):
    folder = Path.home() / ".codex"
    folder.symlink_to(tmp_path / "missing")
    result = cli("install", "--agent", "codex", "--scope", "user")
    assert result.exit_code == 5 and f"{folder} is a symbolic link" in result.stderr
    assert not (tmp_path / "missing").exists()


# --- nesting ----------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_config_nested_thousands_deep_is_an_error_naming_file_and_line(project, agent, command):
    path = project / CASES[agent][1]
    path.parent.mkdir(parents=True)
    text = '{\n  "hooks": {},\n  "deep": ' + "[" * 5000 + "]" * 5000 + "\n}\n"
    path.write_text(text)
    result = cli(command, "--agent", agent, "--project-dir", str(project))
    assert result.exit_code == 5, result.output
    assert f"{path}: line 3, column " in result.stderr and "nested more than 200 levels deep" in result.stderr
    assert "Traceback" not in result.output and path.read_text() == text


@pytest.mark.parametrize("agent", sorted(CASES))
def test_a_config_nested_as_deep_as_allowed_round_trips(project, agent):
    """Up to MAX_DEPTH levels (here in a setting and inside someone else's hook) the whole
    install and uninstall, deep copies and comparisons included, has stack to spare."""
    path = project / CASES[agent][1]
    path.parent.mkdir(parents=True)
    deep = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)  # the root object is level 1
    handler = '{"type": "command", "command": "./a.sh", "x": ' + '{"k": ' * (MAX_DEPTH - 6) + "1" + "}" * (MAX_DEPTH - 6) + "}"
    text = '{"deep": ' + deep + ', "hooks": {"SessionStart": [{"hooks": [' + handler + "]}]}}\n"
    path.write_text(text)
    assert cli("install", "--agent", agent, "--project-dir", str(project)).exit_code == 0
    assert cli("install", "--agent", agent, "--project-dir", str(project)).exit_code == 0
    assert cli("uninstall", "--agent", agent, "--project-dir", str(project)).exit_code == 0
    assert path.read_text() == text
    path.write_text(text.replace(deep, "[" + deep + "]"))
    assert cli("install", "--agent", agent, "--project-dir", str(project)).exit_code == 5
