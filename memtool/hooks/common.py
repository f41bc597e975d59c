"""What the three agents share: their description, and the merge of memtool's hook groups into
their JSON (or JSONC) config file.

Config files are edited as text: only the spans we add or remove change, so every other byte (key
order, formatting, and the comments Gemini CLI's JSONC allows) is kept. Each edit is checked
against the same change made on the parsed document (`installed_semantics`,
`uninstalled_semantics`) before anything is written.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from memtool.errors import HookConfigError, StorageError
from memtool.fsutil import atomic_write_text
from memtool.jsonc import Document, JsoncError

Group = dict[str, Any]  # one matcher group: {"matcher": ..., "hooks": [handler, ...]}

_OURS = re.compile(r"(?:^|\s)hooks\s+run\s+session-(?:start|end)\b")


def no_warnings(path: Path, new_text: str) -> list[str]:
    return []


@dataclass(frozen=True)
class AgentSpec:
    """One agent: where its hook config lives, its format, and the groups memtool adds to it."""

    name: str
    label: str
    folder: str  # holds the config file: in the project folder, and (user scope) in the home directory
    file: str  # the config file in that folder
    comments: bool  # the format allows // and /* */ comments
    groups: Callable[[str, str], tuple[Group, Group]]  # (start command, end command) -> (start group, end group)
    notes: tuple[str, ...]
    warnings: Callable[[Path, str], list[str]] = no_warnings  # (config file, its new text): settings that keep the hooks from running
    folder_env: str | None = None  # an environment variable naming the user-scope folder instead
    start_event: str = "SessionStart"
    end_event: str = "SessionEnd"


def is_ours(handler: Any) -> bool:
    """A hook handler that memtool installed (recognised by its command line)."""
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return (
        isinstance(command, str)
        and bool(_OURS.search(command))
        and ("memory" in command or "memtool" in command)
    )


# --- semantic transforms (the reference each text edit is checked against) -------------------


def _strip_ours_from_groups(groups: list[Any]) -> bool:
    """Remove our handlers from a list of matcher groups (and groups left empty by that)."""
    changed = False
    for i in range(len(groups) - 1, -1, -1):
        group = groups[i]
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        handlers = group["hooks"]
        kept = [h for h in handlers if not is_ours(h)]
        if len(kept) == len(handlers):
            continue
        changed = True
        if kept:
            group["hooks"] = kept
        else:
            del groups[i]
    return changed


def _ours_in(groups: list[Any]) -> list[tuple[int, int]]:
    return [
        (gi, hi)
        for gi, group in enumerate(groups)
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hi, handler in enumerate(group["hooks"])
        if is_ours(handler)
    ]


def installed_semantics(doc: dict[str, Any], groups: dict[str, Group]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    hooks = out.setdefault("hooks", {})
    for event, group in groups.items():
        arr = hooks.setdefault(event, [])
        if _already_installed(arr, group):
            continue
        _strip_ours_from_groups(arr)
        arr.append(copy.deepcopy(group))
    return out


def uninstalled_semantics(
    doc: dict[str, Any], keep_events: frozenset[str] = frozenset(), keep_hooks: bool = False
) -> dict[str, Any]:
    """`doc` without our handlers; lists and the hooks object we empty go too, unless kept
    (a text edit keeps an emptied container that still holds a comment)."""
    out = copy.deepcopy(doc)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    touched = False
    for event in list(hooks):
        arr = hooks[event]
        if isinstance(arr, list) and _strip_ours_from_groups(arr):
            touched = True
            if not arr and event not in keep_events:
                del hooks[event]
    if touched and not hooks and not keep_hooks:
        del out["hooks"]
    return out


def _already_installed(arr: list[Any], group: Group) -> bool:
    ours = _ours_in(arr)
    if len(ours) != 1:
        return False
    gi, _ = ours[0]
    return arr[gi] == group


# --- text edits -------------------------------------------------------------------------------


def _open(path: Path, text: str, comments: bool) -> Document:
    try:
        doc = Document(text, comments=comments)
    except JsoncError as err:
        kind = "JSON (comments allowed)" if comments else "JSON"
        raise HookConfigError(
            f"{path}: line {err.line}, column {err.column}: invalid {kind}: {err.message}. "
            "Fix the file (or move it away) and run again; nothing was changed."
        ) from None
    if doc.root.kind != "object":
        raise HookConfigError(f"{path}: line 1: the top-level value must be a JSON object; nothing was changed.")
    found = doc.lookup("hooks")
    if found is not None and found[1].kind != "object":
        raise HookConfigError(f"{path}: line {doc.line_of(found[1])}: \"hooks\" must be an object; nothing was changed.")
    return doc


def _verify(doc: Document, expected: dict[str, Any], path: Path) -> None:
    if doc.data() != expected:
        raise AssertionError(f"{path}: the text edit does not match the intended change (memtool bug)")


def _as_lists(groups: dict[str, Group]) -> dict[str, list[Group]]:
    return {event: [group] for event, group in groups.items()}


def merge_in(path: Path, old_text: str | None, groups: dict[str, Group], comments: bool) -> str:
    """`old_text` with `groups` (keyed by event) merged in, replacing older memtool handlers (pure)."""
    if old_text is None or not old_text.strip():
        return json.dumps({"hooks": _as_lists(groups)}, ensure_ascii=False, indent=2) + "\n"
    doc = _open(path, old_text, comments)
    for event in groups:
        found = doc.lookup("hooks", event)
        if found is not None and found[1].kind != "array":
            raise HookConfigError(f"{path}: line {doc.line_of(found[1])}: \"hooks.{event}\" must be a list; nothing was changed.")
    expected = installed_semantics(doc.data(), groups)
    if doc.lookup("hooks") is None:
        doc.append(doc.root, _as_lists(groups), key="hooks")
    for event, group in groups.items():
        found = doc.lookup("hooks", event)
        if found is None:
            doc.append(doc.node("hooks"), [group], key=event)
            continue
        if _already_installed(found[1].plain(), group):
            continue
        _remove_ours(doc, ("hooks", event))
        doc.append(doc.node("hooks", event), group)
    _verify(doc, expected, path)
    return doc.full_text()


def take_out(path: Path, old_text: str, comments: bool) -> str:
    """`old_text` with exactly memtool's handlers removed (pure)."""
    if not old_text.strip():
        return old_text
    doc = _open(path, old_text, comments)
    original = doc.data()
    found = doc.lookup("hooks")
    if found is None:
        return old_text
    touched = False
    kept: set[str] = set()
    for event in dict.fromkeys(found[1].keys):
        if not _remove_ours(doc, ("hooks", event)):
            continue
        touched = True
        emptied = doc.lookup("hooks", event)
        if emptied is None or emptied[1].children:
            continue
        if doc.is_bare_empty(emptied[1]):
            doc.remove(doc.node("hooks"), emptied[0])
        else:
            kept.add(event)  # it holds a comment: keep the (empty) list and the comment
    hooks = doc.lookup("hooks")
    keep_hooks = hooks is not None and not hooks[1].children and not doc.is_bare_empty(hooks[1])
    if touched and hooks is not None and not hooks[1].children and not keep_hooks:
        doc.remove(doc.root, hooks[0])
    _verify(doc, uninstalled_semantics(original, frozenset(kept), keep_hooks), path)
    return doc.full_text()


def _remove_ours(doc: Document, path: tuple[str, ...]) -> bool:
    """Remove our handlers, and the groups they leave empty, from the groups list at `path`."""
    found = doc.lookup(*path)
    if found is None or found[1].kind != "array":
        return False
    removed = False
    for gi in range(len(found[1].children) - 1, -1, -1):
        group = doc.node(*path).children[gi]
        handlers = group.member("hooks") if group.kind == "object" else None
        if handlers is None or handlers[1].kind != "array":
            continue
        ours = [hi for hi, h in enumerate(handlers[1].children) if is_ours(h.plain())]
        if not ours:
            continue
        removed = True
        if len(ours) == len(handlers[1].children):
            doc.remove(doc.node(*path), gi)
            continue
        for hi in reversed(ours):
            member = doc.node(*path).children[gi].member("hooks")
            assert member is not None
            doc.remove(member[1], hi)
    return removed


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

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text

    def diff(self) -> str:
        old = (self.old_text or "").splitlines(keepends=True)
        new = (self.new_text or "").splitlines(keepends=True)
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


def read_config(path: Path) -> str | None:
    """The config file's text, or None when it does not exist."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as err:
        raise HookConfigError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start}); nothing was changed.") from None
    except OSError as err:
        raise StorageError(f"{path}: cannot read: {err.strerror}") from None


def apply(plan: HookPlan) -> bool:
    """Write the plan's new content (atomically) when it differs; True when written."""
    if not plan.changed or plan.new_text is None:
        return False
    atomic_write_text(plan.path, plan.new_text)
    return True

