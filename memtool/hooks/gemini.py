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
        {"hooks": [_handler(START_NAME, start, "Load the memtool memory context", C.HOOK_START_TIMEOUT_S)]},
        {"hooks": [_handler(END_NAME, end, "Compress this session into memtool memory", C.HOOK_END_TIMEOUT_S)]},
    )


def _handler(name: str, command: str, description: str, timeout_s: int) -> dict[str, Any]:
    return {"name": name, "type": "command", "command": command, "description": description, "timeout": timeout_s * 1000}


def warnings(path: Path, new_text: str) -> list[str]:
    """Hooks turned off, or ours listed as disabled, in the same settings file."""
    data = Document(new_text, comments=True).data()
    holders = {label: data[label] for label in ("hooksConfig", "hooks") if isinstance(data.get(label), dict)}
    out = [f"{path}: {label}.enabled is false, so Gemini CLI runs no hooks." for label, holder in holders.items() if holder.get("enabled") is False]
    disabled = [name for holder in holders.values() if isinstance(holder.get("disabled"), list) for name in holder["disabled"]]
    return out + [f"{path}: hook {name!r} is listed as disabled." for name in (START_NAME, END_NAME) if name in disabled]


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
