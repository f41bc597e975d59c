"""`memory migrate`: move a store made by an older memtool to the current layout, losslessly.

- transcripts from memory/transcripts/<id>.md to memory/transcripts/YYYY-MM/<id>.md (a rename);
- vectors from JSON floats (memory/index/embeddings/<id>.json) to binary float16 files in month
  folders (memory/index/embeddings/YYYY-MM/<id>.vec: the same model, content hash and values as
  float16, which the search cache already held);
- the same inside every archive year (memory/archive/YYYY/);
- index.json, derived from the day files, is git-ignored and, when git tracks it, untracked
  (`git rm --cached`: the file stays); .gitattributes gets the rules for the binary vectors.

Each file is moved on its own (the new file written and fsynced, then the old one removed), under
the root's lock: an interrupted run leaves every file in its old place or its new one, and running
again completes it. A JSON vector that cannot be read is set aside in memory/quarantine/ (a sync
embeds its entry again); a transcript whose new place holds other bytes is left where it is and named.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from memtool import confine
from memtool import constants as C
from memtool.errors import StorageError, UnsafePath
from memtool.fsutil import atomic_write_bytes
from memtool.gitmerge import setup_git
from memtool.store import Layout, Quarantine, Store, archive_layouts, vector_bytes


@dataclass
class MigrateReport:
    dry_run: bool
    transcripts: int = 0  # kept transcripts moved into month folders
    vectors: int = 0  # JSON vectors written as binary files in month folders
    set_aside: list[str] = field(default_factory=list)  # unreadable JSON vectors moved to memory/quarantine/
    left: list[str] = field(default_factory=list)  # "path: why" for files left where they are
    index_untracked: bool = False  # `git rm --cached` of index.json was run (or, dry run, would be)
    index_command: str = ""  # the command for the user when memtool could not run it
    attributes: bool = False  # .gitattributes / memory/.gitignore brought up to date

    @property
    def moved(self) -> int:
        return self.transcripts + self.vectors + len(self.set_aside)

    def to_dict(self) -> dict:
        return {**asdict(self), "moved": self.moved}


def migrate(root: Path, dry_run: bool = False) -> MigrateReport:
    layout = Layout(root).require(legacy_ok=True)
    report = MigrateReport(dry_run=dry_run)
    with Store(layout).lock():
        for home in [layout, *archive_layouts(layout)]:
            for path in home.legacy_files():
                if path.suffix == C.TRANSCRIPT_SUFFIX:
                    _move_transcript(path, home.transcript_file(path.stem), report, dry_run)
                else:
                    _convert_vector(layout, path, home.embedding_file(path.stem), report, dry_run)
        _untrack_index(layout, report, dry_run)
    if not dry_run:
        report.attributes = setup_git(layout.root).wrote_attributes
    return report


def _move_transcript(src: Path, dest: Path, report: MigrateReport, dry_run: bool) -> None:
    moved = dest.exists()  # by a run that was cut off before it removed the old name
    if moved and confine.read_bytes(dest) != confine.read_bytes(src):
        report.left.append(f"{src}: {dest} holds another transcript; compare them and keep one")
        return
    report.transcripts += 1
    if dry_run:
        return
    if moved:
        src.unlink()
        return
    try:
        confine.safe_folder(dest.parent, create=True)
        os.rename(src, dest)  # one rename on one file system: in one place or the other
    except OSError as exc:
        raise StorageError(f"cannot move {src} to {dest}: {exc.strerror or exc}. Nothing else was changed; run `memory migrate` again.") from None


def _convert_vector(layout: Layout, src: Path, dest: Path, report: MigrateReport, dry_run: bool) -> None:
    try:
        doc = json.loads(confine.read_bytes(src))
        values = np.asarray(doc["embedding"], dtype=np.float32)
        model, content_hash = doc["model"], doc["content_hash"]
        if values.ndim != 1 or not isinstance(model, str) or not isinstance(content_hash, str):
            raise ValueError("not a vector")
    except (OSError, UnsafePath, ValueError, TypeError, KeyError, RecursionError):
        report.set_aside.append(str(src.relative_to(layout.root)))
        if not dry_run:
            Quarantine(layout).move(src)
        return
    report.vectors += 1
    if dry_run:
        return
    atomic_write_bytes(dest, vector_bytes(src.stem, model, content_hash, values))  # written and fsynced first
    src.unlink()


def _untrack_index(layout: Layout, report: MigrateReport, dry_run: bool) -> None:
    """index.json out of git's index (the file itself stays: every clone derives its own)."""
    rel = layout.rel(layout.index_file)
    try:
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", "--", rel], cwd=layout.root, capture_output=True, text=True)
    except OSError:  # no git on this machine
        report.index_command = f"git rm --cached {rel}"
        return
    if tracked.returncode != 0:
        return  # not a git work tree, or index.json not tracked
    report.index_untracked = True
    if dry_run:
        return
    done = subprocess.run(["git", "rm", "--cached", "-q", "--", rel], cwd=layout.root, capture_output=True, text=True)
    if done.returncode != 0:
        report.index_untracked = False
        report.index_command = f"git rm --cached {rel}  ({done.stderr.strip()})"
