"""`memory edit ID`: correct one field of a stored entry, as a person would by hand.

The fields a person corrects: the summary, the decisions, the action items, the importance and
whether the entry is pinned. The entry is replaced where it is stored (its day file, under the
root's lock) and nothing else of it changes: not its id, its token counts or its vector file (the
search cache embeds the edited text, keyed by its content hash, as after a hand edit), so `git diff`
shows the changed field alone, as if the day file had been edited in an editor. index.json (derived)
is written again. An archived entry is not edited: `memory search --archive` reads it as history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memtool import constants as C
from memtool.errors import BadInput, NotFound
from memtool.index_json import write_index
from memtool.memory import Memory
from memtool.models import ID_RE
from memtool.store import get_archived, locate

TEXT_FIELDS = ("summary",)
LIST_FIELDS = ("decisions", "action_items")
EDITABLE = (*TEXT_FIELDS, *LIST_FIELDS, "importance", "pinned")


@dataclass
class Edited:
    id: str
    changed: list[str] = field(default_factory=list)  # the fields whose value changed (none: the entry was left alone)
    day_file: str = ""  # root-relative path of the day file rewritten ("" when nothing changed)


def checked_changes(changes: dict[str, Any]) -> dict[str, Any]:
    """The changes, checked: known fields with values of their kind (text stripped, empty list items dropped)."""
    if not changes:
        raise BadInput(f"nothing to edit: give at least one of {', '.join(EDITABLE)}")
    out: dict[str, Any] = {}
    for name, value in changes.items():
        if name not in EDITABLE:
            raise BadInput(f"{name!r:.40} is not a field that can be edited; one of {', '.join(EDITABLE)}")
        if name in TEXT_FIELDS:
            if not isinstance(value, str) or not value.strip():
                raise BadInput(f"{name} must be non-empty text")
            value = value.strip()
        elif name in LIST_FIELDS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise BadInput(f"{name} must be a list of text items")
            value = [v.strip() for v in value if v.strip()]
        elif name == "importance":
            if value not in C.IMPORTANCE_LEVELS:
                raise BadInput(f"importance must be one of {', '.join(C.IMPORTANCE_LEVELS)}, got {value!r:.40}")
        elif not isinstance(value, bool):  # pinned
            raise BadInput("pinned must be true or false")
        if "\x00" in (value if isinstance(value, str) else "".join(value) if isinstance(value, list) else ""):
            raise BadInput(f"{name}: NUL characters are not text")
        out[name] = value
    return out


def edit_entry(mem: Memory, entry_id: str, changes: dict[str, Any]) -> Edited:
    """Set these fields of the live entry `entry_id` (checked_changes says which and how), in the root
    that holds it (`Memory.holder`: the project's, its private part or the personal memory); the text is
    redacted like a stored session's. NotFound for an unknown id, BadInput for an archived one."""
    entry_id = entry_id.strip()
    if not ID_RE.fullmatch(entry_id):
        raise BadInput(f"{entry_id!r:.60} is not an entry id (like ctx-20260207-1a2b3c4d). `memory search` lists ids.")
    wanted = checked_changes(changes)
    mem = mem.holder(entry_id)
    wanted = {k: (mem.redact(v) if isinstance(v, str) else [mem.redact(x) for x in v] if isinstance(v, list) else v) for k, v in wanted.items()}
    with mem.store.lock():
        homes = locate([mem.layout], [entry_id], [])[entry_id]
        if not homes:
            if get_archived(mem.layout, entry_id) is not None:
                raise BadInput(f"entry {entry_id} is archived (memory/archive/): archived entries are history and are not edited")
            raise NotFound(f"no entry with id {entry_id}. `memory search` lists ids.")
        entry = homes[0].entry
        changed = [k for k, v in wanted.items() if getattr(entry, k) != v]
        if not changed:
            return Edited(entry_id)
        for k in changed:
            setattr(entry, k, wanted[k])
        mem.store.update_entries([entry])
        write_index(mem.layout, mem.settings.compressor)
    mem.invalidate()
    return Edited(entry_id, changed, mem.layout.rel(homes[0].day_file))
