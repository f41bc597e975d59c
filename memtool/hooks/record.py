"""What `hooks install` remembers for `hooks uninstall`: the containers that were already in the
config file, empty, before install put memtool's hooks into them.

Text alone cannot tell: `{"model": "x"}` and `{"model": "x", "hooks": {}}` (laid out alike) become
the same text once our hooks are in, yet uninstall must give back `"hooks": {}` to the one and
nothing to the other. So install notes, per config file (by its real path), each such container
(the root object, "hooks", or an event's list) with the text between its brackets, and uninstall
keeps those containers when our hooks leave them empty, giving back their blank (spaces, line
breaks) as it was; comments inside come back by the text edit itself.

The record is a cache file beside the hooks log. When it is missing (cleared, another machine,
a file installed by an older memtool), uninstall drops an emptied container that holds no
comment, as install would have created it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memtool.fsutil import atomic_write_text, dumps_json, locked, make_folder

Containers = dict[tuple[str, ...], str]  # container path from the root -> the text between its brackets

_VERSION = 1


def _file() -> Path:
    from memtool.config import user_cache_dir

    return user_cache_dir() / "hooks" / "filled-containers.json"


def _key(config: Path) -> str:
    return os.path.realpath(config)


def _read_all() -> dict[str, Containers]:
    """Every file's record; an unreadable or damaged record counts as none (it is a cache)."""
    try:
        data = json.loads(_file().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("version") == _VERSION else None
    out: dict[str, Containers] = {}
    for name, entries in files.items() if isinstance(files, dict) else ():
        kept: Containers = {}
        for entry in entries if isinstance(entries, list) else ():
            match entry:
                case [list() as where, str() as inside] if all(isinstance(key, str) for key in where):
                    kept[tuple(where)] = inside
        if kept:
            out[name] = kept
    return out


def load(config: Path) -> Containers:
    return _read_all().get(_key(config), {})


def save(config: Path, containers: Containers) -> None:
    """Record `containers` for `config` (an empty dict forgets it); raises StorageError."""
    lock = _file().with_suffix(".lock")
    make_folder(lock.parent)  # ~/.cache/memtool/hooks with its parents: a lock makes no tree
    with locked(lock):
        records = _read_all()
        if containers:
            records[_key(config)] = dict(containers)
        elif records.pop(_key(config), None) is None:
            return
        files = {name: [[list(path), inside] for path, inside in sorted(kept.items())] for name, kept in sorted(records.items())}
        atomic_write_text(_file(), dumps_json({"version": _VERSION, "files": files}))
