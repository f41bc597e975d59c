"""Gemini CLI: `.gemini/settings.json` in the project, `~/.gemini/settings.json` for the user (JSON
with comments, which are kept)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memtool import constants as C
from memtool.hooks.common import AgentSpec, Group
from memtool.jsonc import Document

START_NAME, END_NAME = "memtool-session-start", "memtool-session-end"


def groups(start: str, end: str) -> tuple[Group, Group]:
    """Named handlers with timeouts in milliseconds; lifecycle matchers are exact strings, so none (= all)."""
    return (
        {
            "hooks": [
                {
                    "name": START_NAME,
                    "type": "command",
                    "command": start,
                    "description": "Load the memtool memory context",
                    "timeout": C.HOOK_START_TIMEOUT_S * 1000,
                }
            ]
        },
        {
            "hooks": [
                {
                    "name": END_NAME,
                    "type": "command",
                    "command": end,
                    "description": "Compress this session into memtool memory",
                    "timeout": C.HOOK_END_TIMEOUT_S * 1000,
                }
            ]
        },
    )


def warnings(path: Path, new_text: str) -> list[str]:
    """Hooks turned off, or ours listed as disabled, in the same settings file."""
    out: list[str] = []
    data = Document(new_text, comments=True).data()
    hooks_config = data.get("hooksConfig")
    hooks = data.get("hooks")
    for label, holder in (("hooksConfig", hooks_config), ("hooks", hooks)):
        if isinstance(holder, dict) and holder.get("enabled") is False:
            out.append(f"{path}: {label}.enabled is false, so Gemini CLI runs no hooks.")
    disabled: list[Any] = []
    for holder in (hooks_config, hooks):
        if isinstance(holder, dict) and isinstance(holder.get("disabled"), list):
            disabled += holder["disabled"]
    for name in (START_NAME, END_NAME):
        if name in disabled:
            out.append(f"{path}: hook {name!r} is listed as disabled.")
    return out


SPEC = AgentSpec(
    name="gemini",
    label="Gemini CLI",
    folder=".gemini",
    file="settings.json",
    comments=True,
    groups=groups,
    notes=("Check the hooks with /hooks panel in Gemini CLI (older versions need hooks enabled in /settings).",),
    warnings=warnings,
)
