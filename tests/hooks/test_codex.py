"""Codex CLI: $CODEX_HOME for the user scope, and the config.toml that can turn hooks off."""

from __future__ import annotations

import shutil

from tests.hooks.conftest import FIXTURES, cli, place


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
