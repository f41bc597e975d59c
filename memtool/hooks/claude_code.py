"""Claude Code: `.claude/settings.json` in the project, `~/.claude/settings.json` for the user (JSON)."""

from __future__ import annotations

from memtool import constants as C
from memtool.hooks.common import AgentSpec, Group


def groups(start: str, end: str) -> tuple[Group, Group]:
    """Context on start-up, /clear and compaction; SessionEnd gets a timeout (Claude Code's default is 1.5 s)."""
    return (
        {"matcher": "startup|clear|compact", "hooks": [{"type": "command", "command": start, "timeout": C.HOOK_START_TIMEOUT_S}]},
        {"hooks": [{"type": "command", "command": end, "timeout": C.HOOK_END_TIMEOUT_S}]},
    )


SPEC = AgentSpec(
    name="claude-code",
    label="Claude Code",
    folder=".claude",
    file="settings.json",
    comments=False,
    groups=groups,
    notes=("Claude Code reads hooks at start-up: restart it, then check them with /hooks.",),
)
