"""Shared by the hook tests: copies of real-looking agent config files, and the `memory hooks` CLI."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memtool import hooks as core
from memtool.cli import hooks as cli_hooks
from memtool.hooks.common import is_ours
from memtool.jsonc import Document

FIXTURES = Path(__file__).parent.parent / "fixtures" / "hooks"
# the `memory` entry point of the environment running the tests: install checks that it exists
RUNNER = shutil.which("memory", path=str(Path(sys.executable).parent)) or "memory"

# agent -> (fixture copied into place, path relative to the project folder, allows comments)
CASES = {
    "claude-code": ("claude_settings.json", ".claude/settings.json", False),
    "codex": ("codex_hooks.json", ".codex/hooks.json", False),
    "gemini": ("gemini_settings.json", ".gemini/settings.json", True),
}


@pytest.fixture(autouse=True)
def fixed_runner(monkeypatch):
    """Installed commands start with RUNNER, whatever is on this machine's PATH."""
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
    return [h for g in groups for h in g.get("hooks", []) if is_ours(h)]
