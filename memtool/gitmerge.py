"""A memory shared through git: how its files merge.

`memory init` (and `memory git setup`, for an existing store or a fresh clone) writes `.gitattributes`
at the memory root and registers the merge driver `memtool` in the clone's local git config (git
never copies config from a remote, so each clone runs `memory git setup` once):

- daily logs (memory/YYYY-MM-DD.md) and the tombstones merge line by line (`merge=union`): lines are
  only ever appended to them;
- day files, index.json (when a store still versions it), vector files and MEMORY.md / USER.md /
  AGENTS.md go through `memory merge-driver %O %A %B %P` (merge_bytes): entry files three-way by
  entry id (an entry added, changed or removed on one side is taken from that side; one forgotten
  anywhere, a tombstone, is dropped), index.json likewise (never a conflict: it is derived), a
  vector file (binary, `-diff`) from either side (derived: a sync re-embeds an entry whose vector
  does not match it; the same bytes on both sides never reach the driver), Markdown by git's own
  merge, with both sides' lines kept where both only inserted lines at one place;
- index.json itself is git-ignored (memory/.gitignore): every clone derives it from the day files.

A real conflict, one entry changed two ways, keeps one version in "entries" and both under
"conflicts" in the day file, and git reports the file conflicted; `memory doctor` names it.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from memtool import constants as C
from memtool.dayfile import DAY_RE
from memtool.errors import BadInput
from memtool.fsutil import append_text, atomic_write_text, dumps_json
from memtool.index_json import index_document, write_index
from memtool.tombstones import parse_tombstones, read_tombstones

DRIVER = "memtool"


def _attributes(vectors: str) -> str:
    """The .gitattributes memtool writes, with `vectors`: the rules for the live vector files."""
    return f"""# memtool: how git merges this memory (written by `memory init` / `memory git setup`).
# The `{DRIVER}` driver must be registered in each clone: run `memory git setup` once after cloning.
{C.MEMORY_DIR}/*.md merge=union
{C.MEMORY_DIR}/{C.INDEX_DIR}/{C.TOMBSTONES_FILE} merge=union
{C.MEMORY_DIR}/{C.INDEX_DIR}/*.json merge={DRIVER}
{vectors}
{C.MEMORY_DIR}/{C.ARCHIVE_DIR}/**/*.md merge=union
{chr(10).join(f"/{name} merge={DRIVER}" for name in C.LAYER3_FILES)}
"""


GITATTRIBUTES = _attributes(
    f"""{C.MEMORY_DIR}/{C.INDEX_DIR}/{C.EMBEDDINGS_DIR}/**/*{C.VECTOR_SUFFIX} -diff -text merge={DRIVER}
{C.MEMORY_DIR}/{C.INDEX_DIR}/{C.PASSAGES_DIR}/**/*{C.VECTOR_SUFFIX} -diff -text merge={DRIVER}
{C.MEMORY_DIR}/{C.ARCHIVE_DIR}/**/*.json merge={DRIVER}
{C.MEMORY_DIR}/{C.ARCHIVE_DIR}/**/*{C.VECTOR_SUFFIX} -diff -text merge={DRIVER}"""
)
# what `memory git setup` wrote before binary vectors, and before passages files: replaced by
# GITATTRIBUTES where it is found
PREVIOUS_GITATTRIBUTES = (
    _attributes(f"{C.MEMORY_DIR}/{C.INDEX_DIR}/{C.EMBEDDINGS_DIR}/*.json merge={DRIVER}\n{C.MEMORY_DIR}/{C.ARCHIVE_DIR}/**/*.json merge={DRIVER}"),
    _attributes(
        f"""{C.MEMORY_DIR}/{C.INDEX_DIR}/{C.EMBEDDINGS_DIR}/**/*{C.VECTOR_SUFFIX} -diff -text merge={DRIVER}
{C.MEMORY_DIR}/{C.ARCHIVE_DIR}/**/*.json merge={DRIVER}
{C.MEMORY_DIR}/{C.ARCHIVE_DIR}/**/*{C.VECTOR_SUFFIX} -diff -text merge={DRIVER}"""
    ),
)
# the commits a merge driver's two sides come from: MERGE_HEAD is written only after the files are
# merged, so a `git pull` is seen through FETCH_HEAD, a `git merge origin/main` through the upstream
MERGE_SIDES = ("HEAD", "FETCH_HEAD", "@{upstream}", "MERGE_HEAD", "REBASE_HEAD", "CHERRY_PICK_HEAD")
_HUNK_RE = re.compile(rb"^<{7}[^\n]*\n(.*?)^\|{7}[^\n]*\n(.*?)^={7}\n(.*?)^>{7}[^\n]*\n", re.M | re.S)


@dataclass
class Merged:
    data: bytes
    conflicts: list[str] = field(default_factory=list)  # entry ids changed two ways (or "text" for Markdown, "unreadable" for a side not read)
    problems: list[str] = field(default_factory=list)  # why a side could not be read ("theirs: \"entries\" is a JSON str, not a list")


def merge_bytes(path: str, base: bytes, ours: bytes, theirs: bytes, tombstoned: set[str] | None = None, prefer: str = "ours") -> Merged:
    """The merge of one file of the store (`path`: relative to the repository, as git names it)."""
    name = path.rsplit("/", 1)[-1]
    vectors = any(f"/{folder}/" in "/" + path for folder in (C.EMBEDDINGS_DIR, C.PASSAGES_DIR))
    if name.endswith((C.VECTOR_SUFFIX, C.LEGACY_VECTOR_SUFFIX)) and vectors:
        return Merged(ours if prefer == "ours" else theirs)  # derived from the entry (and its transcript): a fill writes a stale one anew
    if name == C.INDEX_FILE or (name.endswith(".json") and DAY_RE.match(name[:-5])):
        docs, problems = [], []
        for side, data in zip(SIDES, (base, ours, theirs)):
            doc, problem = _read_side(data)
            docs.append(doc)
            if problem:
                problems.append(f"{side}: {problem}")
        if problems and name == C.INDEX_FILE:  # derived from the day files: ours stands until the next sync rebuilds it
            return Merged(ours)
        if problems:  # never merged by id from a side that cannot be read: that would drop its entries
            return _unreadable(ours, theirs, problems)
        return _merge_entries(name, docs, tombstoned or set(), prefer)
    return _merge_text(base, ours, theirs)


SIDES = ("base", "ours", "theirs")


def _read_side(data: bytes) -> tuple[dict, str]:
    """One side of an entry file as {"entries": [...], ...}, and '' ; or {} and what makes it unreadable.
    An empty side (the file added or removed on one side) holds no entries."""
    if not data.strip():
        return {"entries": []}, ""
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return {}, f"not UTF-8 (byte {exc.start})"
    except ValueError as exc:
        return {}, f"not valid JSON ({exc})"
    if not isinstance(doc, dict):
        return {}, f'{_json_type(doc)}, not an object with "entries"'
    entries = doc.get("entries")
    if not isinstance(entries, list):
        return {}, f'"entries" is {"missing" if "entries" not in doc else _json_type(entries)}, not a list'
    ids: set[str] = set()
    for n, item in enumerate(entries, 1):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            return {}, f'entry {n} is not an object with a string "id"'
        if item["id"] in ids:
            return {}, f"entry id {item['id']} is there twice"
        ids.add(item["id"])
    return doc, ""


def _json_type(value: object) -> str:
    names = {bool: "true or false", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _unreadable(ours: bytes, theirs: bytes, problems: list[str]) -> Merged:
    """A conflict over the whole file: both sides kept between git's markers, each side's problem named."""

    def side(data: bytes) -> bytes:
        return data if data.endswith(b"\n") or not data else data + b"\n"

    marked = b"<<<<<<< ours\n" + side(ours) + b"=======\n" + side(theirs) + b">>>>>>> theirs\n"
    return Merged(marked, ["unreadable"], problems)


def _by_id(doc: dict) -> dict[str, dict]:
    return {d["id"]: d for d in doc["entries"]}


def _merge_entries(name: str, docs: list[dict], tombstoned: set[str], prefer: str) -> Merged:
    base, ours, theirs = (_by_id(d) for d in docs)
    merged: dict[str, dict] = {}
    conflicts: list[dict] = []
    for i in dict.fromkeys([*ours, *theirs, *base]):
        if i in tombstoned:
            continue
        b, o, t = base.get(i), ours.get(i), theirs.get(i)
        if o == t or t == b:
            kept = o
        elif o == b:
            kept = t
        else:
            conflicts.append({"id": i, "ours": o, "theirs": t})
            kept = (o if prefer == "ours" else t) or o or t
        if kept is not None:
            merged[i] = kept
    if name == C.INDEX_FILE:  # derived from the day files: the day file reports the conflict, the next sync rebuilds this
        provider = str(next((d.get("provider") for d in docs[1:] if isinstance(d.get("provider"), str) and d.get("provider")), "local"))
        return Merged(index_document(provider, merged.values()))
    date = next((d.get("date") for d in docs[1:] if isinstance(d.get("date"), str) and d.get("date")), name[:-5])
    entries = sorted(merged.values(), key=lambda d: (str(d.get("timestamp", "")), d["id"]))  # day_document's order
    doc = {"date": date, "entries": entries} | ({"conflicts": conflicts} if conflicts else {})
    return Merged(dumps_json(doc).encode("utf-8"), [c["id"] for c in conflicts])


def _merge_text(base: bytes, ours: bytes, theirs: bytes) -> Merged:
    """git merge-file with base lines shown; a conflict where both sides only inserted lines (base
    empty: two promotes into one section, two log lines) keeps both, ours first."""
    with tempfile.TemporaryDirectory(prefix="memtool-merge-") as tmp:
        files = [Path(tmp) / label for label in ("ours", "base", "theirs")]
        for path, data in zip(files, (ours, base, theirs)):
            path.write_bytes(data)
        out = subprocess.run(["git", "merge-file", "-p", "--diff3", "-L", "ours", "-L", "base", "-L", "theirs", *files], capture_output=True)
    if out.returncode == 0:
        return Merged(out.stdout)
    if out.returncode < 0 or out.returncode > 127:
        raise BadInput(f"git merge-file failed: {out.stderr.decode(errors='replace').strip()}")
    if all(not m.group(2) for m in _HUNK_RE.finditer(out.stdout)):
        return Merged(_HUNK_RE.sub(lambda m: m.group(1) + m.group(3), out.stdout))
    return Merged(out.stdout, ["text"])


def tombstoned_ids(prefix: str) -> set[str]:
    """Ids forgotten on either side of the merge under way: the tombstones of the working tree and of
    commits either side can be (MERGE_SIDES: git merges files in no set order, so the merged
    tombstones may not be written yet). `prefix`: the memory root's path in the repository."""
    dead = set(read_tombstones(Path(prefix or ".")))
    name = f"{prefix}{C.MEMORY_DIR}/{C.INDEX_DIR}/{C.TOMBSTONES_FILE}"
    for ref in MERGE_SIDES:
        shown = subprocess.run(["git", "show", f"{ref}:{name}"], capture_output=True)
        if shown.returncode == 0:
            dead |= set(parse_tombstones(shown.stdout.decode("utf-8", errors="replace")))
    return dead


def run_driver(base: Path, ours: Path, theirs: Path, path: str) -> int:
    """`memory merge-driver %O %A %B %P`: merge into `ours` (git's %A); 0 merged, 1 a conflict left."""
    prefix = path.split(C.MEMORY_DIR + "/", 1)[0] if (C.MEMORY_DIR + "/") in path else ""
    try:
        old, mine, other = (p.read_bytes() for p in (base, ours, theirs))
    except OSError as exc:
        print(f"memtool: {path}: cannot read {exc.filename}: {exc.strerror}; left as a conflict for git", file=sys.stderr)
        return 1
    merged = merge_bytes(path, old, mine, other, tombstoned_ids(prefix))
    ours.write_bytes(merged.data)
    if merged.problems:
        print(
            f"memtool: {path}: not merged by entry id, one side is not a memtool entry file ({'; '.join(merged.problems)}). "
            "Both sides are kept between conflict markers: keep the readable one (or mend the other), then `memory doctor`",
            file=sys.stderr,
        )
        return 1
    if merged.conflicts:
        what = "changed two ways at one place" if merged.conflicts == ["text"] else f"edited two ways ({', '.join(merged.conflicts)})"
        print(f"memtool: {path}: {what}; `memory doctor` explains", file=sys.stderr)
        return 1
    return 0


def driver_command() -> str:
    """How git calls the driver on this machine: the `memory` on PATH, else this Python's module."""
    memory = shutil.which("memory")
    head = shlex.quote(memory) if memory else f"{shlex.quote(sys.executable)} -m memtool"
    return f"{head} merge-driver %O %A %B %P"


@dataclass
class GitSetup:
    attributes: Path
    wrote_attributes: bool
    registered: bool  # the driver is in the clone's git config (False: not inside a git work tree)
    repository: Path | None
    index_built: bool = False  # index.json (git-ignored) was missing, as in a fresh clone: derived from the day files


IGNORED = (f"{C.QUARANTINE_DIR}/", f"{C.INDEX_DIR}/{C.INDEX_FILE}")  # in memory/.gitignore: local to each clone


def _ignore_local_files(root: Path) -> None:
    """memory/quarantine/ (copies `memory doctor --fix` set aside) and index/index.json (derived from
    the day files, rebuilt by every clone) are never committed: added to memory/.gitignore of a store
    made before they were listed there."""
    ignore = root / C.MEMORY_DIR / C.GITIGNORE_FILE
    if not ignore.is_file():
        return
    have = ignore.read_text(encoding="utf-8", errors="replace").split()
    missing = [line for line in IGNORED if line not in have]
    if missing:
        append_text(ignore, "\n".join(missing))


def setup_git(root: Path) -> GitSetup:
    """Write .gitattributes at the memory root (kept as is when it already names the driver, else
    memtool's lines appended) and register the driver in the enclosing git repository's local config."""
    attributes = root / C.GITATTRIBUTES_FILE
    current = attributes.read_text(encoding="utf-8") if attributes.is_file() else ""
    wrote = GITATTRIBUTES not in current
    if wrote:
        for earlier in PREVIOUS_GITATTRIBUTES:
            current = current.replace(earlier, "")
        atomic_write_text(attributes, current + ("\n" if current and not current.endswith("\n") else "") + GITATTRIBUTES)
    _ignore_local_files(root)
    built = _derive_index(root)
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True)
    except OSError:  # no git on this machine: the attributes wait for a clone that has it
        top = None
    if top is None or top.returncode != 0:
        return GitSetup(attributes, wrote, False, None, built)
    settings = (
        (f"merge.{DRIVER}.name", "memtool: entries by id, Markdown by line"),
        (f"merge.{DRIVER}.driver", driver_command()),
        # `memory archive` moves every file of a folder: git would take it for a renamed folder
        # and move the other side's new entries after it ("CONFLICT (file location)")
        ("merge.directoryRenames", "false"),
    )
    for key, value in settings:
        subprocess.run(["git", "config", key, value], cwd=root, check=True, capture_output=True)
    return GitSetup(attributes, wrote, True, Path(top.stdout.strip()), built)


def _derive_index(root: Path) -> bool:
    """index.json is git-ignored, so a fresh clone has none: derive it from the day files (as any
    write or `memory reindex` would). False when it is already there."""
    from memtool.config import load_settings
    from memtool.store import Layout, Store

    layout = Layout(root)
    if layout.index_file.exists() or not layout.index_dir.is_dir():
        return False
    store = Store(layout)
    with store.lock():
        return not write_index(store.layout, load_settings(root).compressor).not_written
