"""Codex CLI: `.codex/hooks.json` in the project, `$CODEX_HOME/hooks.json` (default `~/.codex`) for
the user (JSON). Hooks also need `[features] hooks` left on in the config.toml beside that file."""

from __future__ import annotations

from pathlib import Path

from memtool import constants as C
from memtool.hooks.common import AgentSpec, Group


def groups(start: str, end: str) -> tuple[Group, Group]:
    """Like Claude Code's, with the status line Codex shows; Codex caps SessionEnd hooks at 3 s."""
    return (
        {"matcher": "startup|clear|compact", "hooks": [_handler(start, C.HOOK_START_TIMEOUT_S, "Loading memtool memory")]},
        {"hooks": [_handler(end, C.HOOK_CODEX_END_TIMEOUT_S, "Saving session to memtool")]},
    )


def _handler(command: str, timeout_s: int, status: str) -> dict[str, object]:
    return {"type": "command", "command": command, "timeout": timeout_s, "statusMessage": status}


def warnings(path: Path, new_text: str) -> list[str]:
    """The config.toml beside hooks.json turning hooks off, or unreadable."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: no stdlib TOML reader; skip the check
        return []
    config = path.parent / "config.toml"
    try:
        raw = config.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as err:
        return [f"{config}: cannot read it to check [features].hooks: {err}"]
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as err:
        return [f"{config}: invalid TOML ({err}); Codex will not start until it is fixed."]
    features = data.get("features")
    off = [key for key in ("hooks", "codex_hooks") if isinstance(features, dict) and features.get(key) is False]
    return [f"{config}: [features] {off[0]} = false turns Codex hooks off."] if off else []


SPEC = AgentSpec(
    name="codex",
    label="Codex CLI",
    folder=".codex",
    file="hooks.json",
    comments=False,
    groups=groups,
    notes=(
        "Codex runs new hooks only after you review and trust them: open /hooks in Codex.",
        "SessionEnd hooks need a recent Codex (0.146 or later); project hooks load only in trusted projects.",
    ),
    warnings=warnings,
    folder_env="CODEX_HOME",
)
