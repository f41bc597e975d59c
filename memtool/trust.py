"""Config trust: which repository config files the user approved, kept in the user's own config folder.

A `memory/config.yaml` that came with a repository (a clone, a restore) was written by someone else.
Like direnv and mise, memtool honours the settings of such a file that send data off this machine or
weaken protection (the `protected` fields of memtool.config.Settings) only after the user approved
the file once with `memory config trust`. The approval is the file's absolute path and the SHA-256 of
its bytes, recorded in $XDG_CONFIG_HOME/memtool/trusted.json (default ~/.config/memtool): any edit
changes the hash and so withdraws the approval until the user looks again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from memtool import constants as C
from memtool.errors import ConfigError


def user_config_dir() -> Path:
    """The user's own memtool folder: $XDG_CONFIG_HOME/memtool, default ~/.config/memtool (a relative
    XDG_CONFIG_HOME is ignored, as the XDG spec says: it would name a folder inside each repository)."""
    base = os.environ.get(C.ENV_CONFIG_HOME, "")
    return Path(base if os.path.isabs(base) else Path.home() / ".config") / C.USER_CONFIG_DIR


def user_config_file() -> Path:
    return user_config_dir() / C.CONFIG_FILE


def trust_file() -> Path:
    return user_config_dir() / C.TRUST_FILE


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _approvals() -> dict[str, str]:
    path = trust_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc}). Fix or delete it (then approve configs again with `memory config trust`).") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ConfigError(f"{path}: expected a JSON object of config path -> sha256. Fix or delete it.")
    return data


def _save(approvals: dict[str, str]) -> None:
    from memtool.fsutil import atomic_write_text

    atomic_write_text(trust_file(), json.dumps(dict(sorted(approvals.items())), indent=2) + "\n")


def is_trusted(config: Path, data: bytes) -> bool:
    """Whether the user approved exactly these bytes at this path."""
    return _approvals().get(os.path.abspath(config)) == digest(data)


def trust(config: Path, data: bytes) -> str:
    """Approve these bytes of `config`; returns their hash."""
    approvals = _approvals()
    approvals[os.path.abspath(config)] = sha = digest(data)
    _save(approvals)
    return sha


def untrust(config: Path) -> bool:
    """Withdraw the approval of `config`; False when there was none."""
    approvals = _approvals()
    if approvals.pop(os.path.abspath(config), None) is None:
        return False
    _save(approvals)
    return True
