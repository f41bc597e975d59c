"""Gemini CLI: its settings allow comments, which install and uninstall keep; disabled hooks are warned about."""

from __future__ import annotations

import re

import pytest

from memtool.jsonc import Document
from tests.hooks.conftest import cli, place


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


def test_gemini_warns_when_hooks_are_disabled(project):
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"hooksConfig": {"enabled": false, "disabled": ["memtool-session-end"]}}\n')
    result = cli("install", "--agent", "gemini", "--project-dir", str(project))
    assert result.exit_code == 0
    assert "hooksConfig.enabled is false" in result.stderr
    assert "'memtool-session-end' is listed as disabled" in result.stderr


def test_uninstall_keeps_a_line_comment_from_swallowing_the_rest_of_the_line(project):
    """Our hook last in a list, after a `//` comment that follows the comma, with more on its own line:
    the comment stays and what followed the hook stays outside it (this once crashed uninstall)."""
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    theirs = '{"hooks": [{"type": "command", "command": "./a.sh"}]}'
    ours = '{"hooks": [{"type": "command", "command": "/old/venv/bin/memory hooks run session-end --agent gemini"}]}'
    path.write_text('{"hooks": {"Stop": [' + theirs + ", // mine\n" + ours + "/* end */]}}")
    result = cli("uninstall", "--agent", "gemini", "--project-dir", str(project))
    assert result.exit_code == 0, result.output
    assert path.read_text() == '{"hooks": {"Stop": [' + theirs + " // mine\n/* end */]}}"
