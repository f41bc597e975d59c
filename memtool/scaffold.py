"""`memory init`: create the layout. Idempotent; never overwrites a file that exists."""

from __future__ import annotations

import json
import os
from pathlib import Path

from memtool import constants as C
from memtool.config import Settings, load_settings, protection
from memtool.errors import BadInput, StorageError
from memtool.fsutil import atomic_write_text
from memtool.providers import EMBEDDER_GROUP, REGISTERED, auto
from memtool.roots import private_root
from memtool.store import Layout, template_text

GITIGNORE = (
    f"# derived data, rebuilt from the files; safe to delete\n{C.CACHE_DIR}/\n{C.LOCK_FILE}\n{C.INDEX_DIR}/{C.INDEX_FILE}\n"
    f"# copies `memory doctor --fix` set aside: local to this machine, never committed\n{C.QUARANTINE_DIR}/\n"
)


def config_text() -> str:
    lines = [
        "# memtool settings for this repository. Every line is optional; shown values are the defaults.",
        "# Layers, each overriding the one before: defaults; your own ~/.config/memtool/config.yaml",
        "# ($XDG_CONFIG_HOME/memtool); this file; MEMTOOL_<NAME> environment variables; command options.",
        "#",
        "# Trust: this file travels with the repository, so whoever wrote the repository wrote it.",
        "# Settings marked [protected ...] send data off this machine, weaken protection or run on every write; set here, they",
        "# apply only after you approve this file's exact content with `memory config trust` (any later",
        "# edit withdraws the approval; `memory config untrust` withdraws it too). Until then they are",
        "# ignored with a warning. In your own config or the environment they always apply.",
        "# `memory config show` lists the settings in effect and where each came from.",
        "",
    ]
    for name, default, help_ in Settings.describe():
        lines.append(f"# {help_}{f' [{protection(name)}]' if protection(name) else ''}")
        lines.append(f"# {name}: {repr(default) if isinstance(default, str) else json.dumps(default)}")  # YAML: true, [], 0.5
    return "\n".join(lines) + "\n"


def pin_embedder(root: Path) -> str | None:
    """Write the embedder `auto` stands for into memory/config.yaml (versioned: one model for everyone sharing
    the store) when the file leaves it to `auto`: the one the environment names (MEMTOOL_EMBEDDER, the user's
    explicit choice), else this machine's best. The name written; None if set, or registered in this process only."""
    from memtool.sync import persist_embedder  # the search engine and numpy: not for every `memory init` import

    if load_settings(root, env={}).embedder != C.DEFAULT_EMBEDDER:
        return None
    chosen = load_settings(root).embedder
    name = chosen if chosen != C.DEFAULT_EMBEDDER else auto.choose_embedder(root)
    if name in REGISTERED[EMBEDDER_GROUP]:
        return None
    persist_embedder(Layout(root), name)
    return name


def _in_the_way(folder: Path) -> Path | None:
    """The first of `folder` and its parents that exists but is not a folder (a file, a broken link)."""
    for path in (folder, *folder.parents):
        if path.is_dir():
            return None
        if os.path.lexists(path):
            return path
    return None


def init(root: Path) -> list[Path]:
    """Create what is missing; return the paths created. When a file stands where a folder of the
    layout must go, BadInput names it and nothing is created."""
    layout = Layout(root)
    folders = (layout.memory_dir, layout.index_dir, layout.embeddings_dir)
    for folder in folders:
        blocker = _in_the_way(folder)
        if blocker is None:
            continue
        what = "a file, not a folder" if blocker.is_file() else "not a folder (a broken link?)"
        if blocker == root:
            raise BadInput(f"{root} is {what}: a memory root must be a folder. Pass another --root (or set MEMTOOL_ROOT).")
        if not blocker.is_relative_to(root):
            raise BadInput(f"cannot create the memory root {root}: {blocker} is {what}. Pass another --root (or set MEMTOOL_ROOT).")
        raise BadInput(f"cannot create {folder.relative_to(root)}/ in {root}: {blocker} is {what}. Move or rename it, then run `memory init` again.")
    created: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            try:
                folder.mkdir(parents=True)
            except OSError as exc:  # e.g. permission denied, or a file put there since the check
                raise StorageError(f"cannot create {folder}: {exc.strerror or exc}") from None
            created.append(folder)
    files = {
        layout.memory_dir / C.GITIGNORE_FILE: GITIGNORE,
        layout.config_file: config_text(),
        **{root / name: template_text(name) for name in C.LAYER3_FILES},
    }
    for path, text in files.items():
        if not path.exists():
            atomic_write_text(path, text)
            created.append(path)
    if layout.config_file in created:  # a new store: its embedder is chosen once, for everyone who shares it
        pin_embedder(root)
    from memtool.gitmerge import setup_git

    done = setup_git(root)  # .gitattributes, the merge driver when inside git, quarantine/ ignored
    created += [done.attributes] if done.wrote_attributes else []
    return created


PRIVATE_GITIGNORE = "# private entries and log lines: never committed, nor backed up or exported without --include-private\n*\n"


def init_private(root: Path) -> Path:
    """The root of `root`'s private entries (memory/.private), made when missing: its .gitignore (`*`:
    git ignores the folder and everything in it, whatever the project's own ignore lists say) is
    written first, before any entry can be, then the store's folders. Returns the private root."""
    private = private_root(root)
    ignore = private / C.GITIGNORE_FILE
    if not ignore.is_file():
        try:
            private.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create {private}: {exc.strerror or exc}") from None
        atomic_write_text(ignore, PRIVATE_GITIGNORE)
    layout = Layout(private)
    for folder in (layout.memory_dir, layout.index_dir, layout.embeddings_dir):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create {folder}: {exc.strerror or exc}") from None
    return private
