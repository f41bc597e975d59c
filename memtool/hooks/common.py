"""What the three agents share: the merge of memtool's hook groups into their JSON (or JSONC)
config file, and the record install keeps for uninstall.

Config files are edited as text: only the spans we add or remove change, so every other byte (key
order, formatting, and the comments Gemini CLI's JSONC allows) is kept; memtool.jsonc checks each
edit against the data it intended before anything is written.

The record: text alone cannot tell `{"model": "x"}` from `{"model": "x", "hooks": {}}` (laid out
alike) once our hooks are in, yet uninstall must give back `"hooks": {}` to the one and nothing to
the other. So install notes, per config file (by its real path), each container that was there,
empty, before it filled it (the root object, "hooks", or an event's list) with the text between
its brackets; uninstall keeps those containers when our hooks leave them empty, giving back their
blank (spaces, line breaks) as it was; comments inside come back by the text edit itself. The
record is a cache file beside the hooks log. When it is missing (cleared, another machine, a file
installed by an older memtool), uninstall drops an emptied container that holds no comment, as
install would have created it.

The record also names each config file install created, with the folders it made for it: when
uninstall leaves such a file an empty object, it removes the file, and those folders once empty, so
that nothing is left where there was nothing. Without the record an emptied file stays (`{}`).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memtool.errors import HookConfigError, StorageError
from memtool.fsutil import atomic_write_text, dumps_json, locked, make_folder
from memtool.jsonc import Document, JsoncError

Group = dict[str, Any]  # one matcher group: {"matcher": ..., "hooks": [handler, ...]}
Containers = dict[tuple[str, ...], str]  # the record: container path from the root -> the text between its brackets
_RECORD_VERSION = 1

_EVENT = r"(?:session-start|session-end|prompt|pre-compact)"  # memtool.hooks.OUR_EVENTS
_OURS = re.compile(rf"(?:^|\s)hooks\s+run\s+{_EVENT}(?=\s|$)")
_OURS_WHOLE = re.compile(rf"(?:^|\s)hooks\s+run\s+{_EVENT}\s+--agent\s+(?:claude-code|codex|gemini)\s*$")


def is_ours(handler: Any) -> bool:
    """A hook handler that memtool installed (recognised by its command line)."""
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    if not isinstance(command, str) or not _OURS.search(command):
        return False
    # the program is memory (or python -m memtool), or one named by `install --memory`: then the
    # command is exactly what install writes after it
    return "memory" in command or "memtool" in command or bool(_OURS_WHOLE.search(command))


def ours_in(groups: Any) -> dict[int, list[int]]:
    """Our handlers in a list of matcher groups: group index -> the indexes of ours in its "hooks"."""
    found = {}
    for gi, group in enumerate(groups if isinstance(groups, list) else ()):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        ours = [hi for hi, handler in enumerate(handlers) if is_ours(handler)] if isinstance(handlers, list) else []
        if ours:
            found[gi] = ours
    return found


def _already_installed(arr: list[Any], group: Group) -> bool:
    """The list holds one handler of ours, in a group equal to `group`."""
    holding = [arr[gi] for gi, ours in ours_in(arr).items() for _ in ours]
    return len(holding) == 1 and holding[0] == group


# --- text edits -------------------------------------------------------------------------------


def open_config(path: Path, text: str, comments: bool) -> Document:
    try:
        doc = Document(text, comments=comments)
    except JsoncError as err:
        kind = "JSON (comments allowed)" if comments else "JSON"
        raise HookConfigError(
            f"{path}: line {err.line}, column {err.column}: invalid {kind}: {err.message}. Fix the file (or move it away) and run again; nothing was changed."
        ) from None
    if doc.root.kind != "object":
        raise HookConfigError(f"{path}: line 1: the top-level value must be a JSON object; nothing was changed.")
    found = doc.lookup("hooks")
    if found is not None and found[1].kind != "object":
        raise HookConfigError(f'{path}: line {doc.line_of(found[1])}: "hooks" must be an object; nothing was changed.')
    return doc


def merge_in(path: Path, old_text: str | None, groups: dict[str, Group], comments: bool, previous: Containers) -> tuple[str, Containers]:
    """`old_text` with `groups` (keyed by event) merged in, replacing older memtool handlers, and the
    record after that: the empty containers it fills (the root object, "hooks", the events' lists),
    plus what the `previous` record says of those that still hold entries (ours, from an earlier
    install); containers gone are forgotten (pure)."""
    if old_text is None or not old_text.strip():
        return json.dumps({"hooks": {event: [group] for event, group in groups.items()}}, ensure_ascii=False, indent=2) + "\n", {}
    doc = open_config(path, old_text, comments)
    for event in groups:
        found = doc.lookup("hooks", event)
        if found is not None and found[1].kind != "array":
            raise HookConfigError(f'{path}: line {doc.line_of(found[1])}: "hooks.{event}" must be a list; nothing was changed.')
    record: Containers = {}
    for where in ((), ("hooks",), *(("hooks", event) for event in groups)):
        found = doc.lookup(*where)
        if found is not None and not found[1].children:
            record[where] = doc.inside(found[1])
        elif found is not None and where in previous:
            record[where] = previous[where]
    data = doc.data()
    if "hooks" not in data:
        doc.append((), {event: [group] for event, group in groups.items()}, key="hooks")
    for event, group in groups.items() if "hooks" in data else ():
        if event not in data["hooks"]:
            doc.append(("hooks",), [group], key=event)
        elif not _already_installed(data["hooks"][event], group):
            _remove_ours(doc, event)
            doc.append(("hooks", event), group)
    return doc.full_text(), record


def take_out(path: Path, old_text: str, comments: bool, kept: Containers | None = None) -> str:
    """`old_text` with exactly memtool's handlers removed, and the containers they leave empty
    unless install's record `kept` or a comment keeps them (see _keep_emptied) (pure)."""
    kept = kept or {}
    if not old_text.strip():
        return old_text
    doc = open_config(path, old_text, comments)
    original = doc.data()
    if "hooks" not in original:
        return old_text
    touched = False
    for event in reversed(original["hooks"]):  # last first: the reverse of install's appends
        if _remove_ours(doc, event):
            touched = True
            _keep_emptied(doc, ("hooks", event), kept)
    if touched and not _keep_emptied(doc, ("hooks",), kept) and not doc.root.children:
        _keep_emptied(doc, (), kept)
    return doc.full_text()


def _keep_emptied(doc: Document, where: tuple[str, ...], kept: Containers) -> bool:
    """A container our handlers left empty goes, unless it is the root, `kept` says it was there,
    empty, before install, or it holds a comment. One that stays gets back the blank recorded for it
    (install lays out the entries it puts into an empty container afresh). True: it stays."""
    node = doc.node(*where)
    if node.children:
        return False
    bare = not doc.inside(node).strip(" \t\r\n")  # no comment between its brackets
    if where and where not in kept and bare:
        doc.remove(*where)
        return False
    was = kept.get(where)
    if was is not None and not was.strip(" \t\r\n") and bare:  # comments: the text edit kept them
        doc.replace([(node.start + 1, node.end - 1, was)])
    return True


def _remove_ours(doc: Document, event: str) -> bool:
    """Remove our handlers, and the groups they leave empty, from the event's groups list."""
    groups = doc.data()["hooks"].get(event)
    found = ours_in(groups)
    for gi, ours in reversed(found.items()):
        if len(ours) == len(groups[gi]["hooks"]):
            doc.remove("hooks", event, gi)
        else:
            for hi in reversed(ours):
                doc.remove("hooks", event, gi, "hooks", hi)
    return bool(found)


# --- plans and file IO ------------------------------------------------------------------------


@dataclass
class HookPlan:
    agent: str
    action: Literal["install", "uninstall"]
    path: Path
    old_text: str | None  # None: the file does not exist
    new_text: str | None  # None: leave the file absent
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    commands: dict[str, str] = field(default_factory=dict)
    record: Containers | None = None  # the record to keep for this file after the change (see above); None: as it is
    created: list[str] | None = None  # install: the folders it makes for a file it creates (outermost first); uninstall: those to remove once empty

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text

    def diff(self) -> str:
        old, new = ((text or "").splitlines(keepends=True) for text in (self.old_text, self.new_text))
        label = str(self.path)
        lines = difflib.unified_diff(old, new, fromfile=label if self.old_text is not None else "/dev/null", tofile=label)
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def to_json(self, dry_run: bool, written: bool) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "action": self.action,
            "path": str(self.path),
            "changed": self.changed,
            "dry_run": dry_run,
            "written": written,
            "commands": self.commands,
            "warnings": self.warnings,
            "notes": self.notes,
            "diff": self.diff(),
        }


def real_file(path: Path) -> Path:
    """The file to write for `path`: the end of its symbolic links (so a config linked from a
    dotfiles folder is edited there and stays a link). A link to nothing is an error."""
    for link in filter(Path.is_symlink, (path, *path.parents)):
        try:
            os.path.realpath(link, strict=True)
        except OSError as err:
            why = "which does not exist" if isinstance(err, FileNotFoundError) else f"which cannot be followed ({err.strerror})"
            raise HookConfigError(
                f"{link} is a symbolic link to {os.readlink(link)}, {why}. "
                "Create the file it points to (or remove the link) and run again; nothing was changed."
            ) from None
    return Path(os.path.realpath(path))


def read_config(path: Path) -> str | None:
    """The config file's text (through symbolic links), or None when it does not exist."""
    real_file(path)
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as err:
        raise HookConfigError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}); nothing was changed.") from None
    except OSError as err:
        raise StorageError(f"{path}: cannot read: {err.strerror}") from None


def missing_folders(path: Path) -> list[str]:
    """The folders above `path` that do not exist yet, outermost first."""
    return [str(folder) for folder in reversed(path.parents) if not folder.exists()]


def left_empty(text: str, comments: bool) -> bool:
    """The config text is an empty object with nothing but blank between its braces."""
    doc = Document(text, comments=comments)
    return not doc.root.children and not doc.inside(doc.root).strip(" \t\r\n")


def apply(plan: HookPlan) -> bool:
    """Write the plan's new content (atomically, at the end of a symbolic link, which stays) when
    it differs, or remove a file install created (and its emptied folders), then its record; True when
    the config file was written or removed."""
    written = plan.changed
    real = real_file(plan.path)
    if written and plan.new_text is not None:
        atomic_write_text(real, plan.new_text)
    elif written:
        try:
            real.unlink()
            for folder in reversed(plan.created or []):  # innermost first; one holding anything stays
                with suppress(OSError):
                    Path(folder).rmdir()
        except OSError as err:
            raise StorageError(f"{real}: cannot remove: {err.strerror}") from None
    try:
        if plan.record is not None:
            save_record(plan.path, plan.record)
        if plan.action == "install" and plan.created is not None and written:
            save_created(plan.path, plan.created)
        elif plan.action == "uninstall" and written:
            save_created(plan.path, None)
    except StorageError as err:  # the config file is right; only uninstall's memory is lost
        plan.warnings.append(f"{err} (uninstall may then remove empty containers that were there before install, or leave `{{}}` in a file it created)")
    return written


def _record_file() -> Path:
    from memtool.config import user_cache_dir

    return user_cache_dir() / "hooks" / "filled-containers.json"


def _read_data() -> dict[str, Any]:
    try:
        data = json.loads(_record_file().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == _RECORD_VERSION else {}


def _read_created(data: dict[str, Any]) -> dict[str, list[str]]:
    created = data.get("created")
    items = created.items() if isinstance(created, dict) else ()
    return {name: folders for name, folders in items if isinstance(folders, list) and all(isinstance(f, str) for f in folders)}


def _read_records(data: dict[str, Any] | None = None) -> dict[str, Containers]:
    """Every file's record; an unreadable or damaged record counts as none (it is a cache)."""
    data = _read_data() if data is None else data
    files = data.get("files")
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


def load_record(config: Path) -> Containers:
    return _read_records().get(os.path.realpath(config), {})


def load_created(config: Path) -> list[str] | None:
    """The folders install made for `config` when it created the file (outermost first), or None:
    install did not create it (or the record is gone)."""
    return _read_created(_read_data()).get(os.path.realpath(config))


def save_record(config: Path, containers: Containers) -> None:
    """Record `containers` for `config` (an empty dict forgets it); raises StorageError."""
    _save(config, containers=containers)


def save_created(config: Path, folders: list[str] | None) -> None:
    """Record that install created `config` with `folders` (None forgets it); raises StorageError."""
    _save(config, created=folders)


_KEEP = object()


def _save(config: Path, containers: Any = _KEEP, created: Any = _KEEP) -> None:
    lock = _record_file().with_suffix(".lock")
    make_folder(lock.parent)  # ~/.cache/memtool/hooks with its parents: a lock makes no tree
    name = os.path.realpath(config)
    with locked(lock):
        data = _read_data()
        records, made = _read_records(data), _read_created(data)
        before = (records.get(name), made.get(name))
        if containers is not _KEEP:
            records.pop(name, None)
            if containers:
                records[name] = dict(containers)
        if created is not _KEEP:
            made.pop(name, None)
            if created is not None:
                made[name] = list(created)
        if (records.get(name), made.get(name)) == before:
            return
        files = {n: [[list(path), inside] for path, inside in sorted(kept.items())] for n, kept in sorted(records.items())}
        atomic_write_text(_record_file(), dumps_json({"version": _RECORD_VERSION, "files": files, "created": dict(sorted(made.items()))}))
