"""Writing a segment of the search cache (memtool/search/segment.py reads it), and the records a
segment keeps of what it was built from, so that the next delta can tell what changed since."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import numpy as np

from memtool import confine
from memtool.errors import UnsafePath
from memtool.models import Entry
from memtool.search.cues import doc_cues
from memtool.search.docs import Declared, Doc
from memtool.search.segment import IMPORTANCE_CODE, KIND_CODE, LENGTH_FILE, SOURCES_FILE
from memtool.search.typos import SURFACE_FILE, surface_words
from memtool.text import WORDS_VERSION, terms, words

CACHE_VERSION = f"12.{WORDS_VERSION}"  # the layout of the cache, and the word rules its BM25 terms were split by
ENTRY_DAYS_FILE = "entry-days.json"  # in every segment: each entry's day file
TRANSCRIPTS_FILE = "transcripts.json"  # in every segment: kept transcripts' stats when read (the base's: all of them)
SUPERSEDES_FILE = "supersedes.json"  # in every segment: the entries that supersede others (Declared)


def file_sig(path: Path) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}"


def manifest(folder: Path) -> dict:
    """A segment's manifest; {} when there is none or it cannot be read (a cut-off one is rebuilt)."""
    try:
        meta = json.loads(confine.read_bytes(folder / "manifest.json"))
    except (OSError, ValueError, UnsafePath):
        return {}
    return meta if isinstance(meta, dict) else {}


def write_segment(folder: Path, docs: list[Doc], vectors: np.ndarray, meta: dict, extra: dict[str, str] | None = None) -> None:
    """Write a segment next to `folder`, then swap it in (readers holding the old one keep their maps)."""
    import bm25s

    confine.safe_folder(folder.parent, create=True)  # memory/.cache reached without a link, or UnsafePath
    tmp = folder.with_name(folder.name + ".tmp")
    _remove(tmp)
    tmp.mkdir()
    groups: dict[str, int] = {}
    group = np.array([groups.setdefault(d.entry or d.ref, len(groups)) for d in docs], dtype=np.int32)
    np.save(tmp / "kind.npy", np.array([KIND_CODE[d.kind] for d in docs], dtype=np.int8))
    np.save(tmp / "ts.npy", np.array([d.ts for d in docs], dtype=np.float64))
    np.save(tmp / "importance.npy", np.array([IMPORTANCE_CODE.get(d.importance, 1) for d in docs], dtype=np.int8))
    np.save(tmp / "trusted.npy", np.array([d.trusted for d in docs], dtype=bool))
    np.save(tmp / "pinned.npy", np.array([d.pinned for d in docs], dtype=bool))
    (tmp / "groups.json").write_text(json.dumps(list(groups), ensure_ascii=False), encoding="utf-8")  # a new folder, swapped in whole
    np.save(tmp / "group.npy", group)
    np.save(tmp / "vectors.npy", vectors)
    offsets = []
    with open(tmp / "docs.jsonl", "wb") as fh:
        for d in docs:
            offsets.append(fh.tell())
            rec = {"kind": d.kind, "ref": d.ref, "entry": d.entry, "text": d.text, "session": d.session, "ts": d.ts,
                   "importance": d.importance, "topics": list(d.topics), "trusted": d.trusted, "line": d.line,
                   "superseded_by": d.superseded_by}
            fh.write(json.dumps(rec, ensure_ascii=False).encode("utf-8") + b"\n")
    np.save(tmp / "offsets.npy", np.array(offsets, dtype=np.int64))
    corpus, cues, surface = [], np.zeros(len(docs), dtype=np.uint8), set()
    for i, d in enumerate(docs):  # each text split into words once: BM25 terms, answer cues, words for typos
        ws = words(d.index_text)
        corpus.append(terms(ws) or [""])
        cues[i] = doc_cues(ws)
        surface |= surface_words(ws)
    np.save(tmp / "cues.npy", cues)
    np.save(tmp / LENGTH_FILE, np.array([len(c) for c in corpus], dtype=np.int32))  # as bm25s counts them
    (tmp / SURFACE_FILE).write_text("\n".join(sorted(surface)), encoding="utf-8")
    retriever = bm25s.BM25()
    retriever.index(corpus or [[""]], show_progress=False)
    retriever.save(str(tmp / "bm25"), show_progress=False)
    for name, text in (extra or {}).items():
        (tmp / name).write_text(text, encoding="utf-8")
    meta = {**meta, "n": len(docs), "groups": len(groups), "version": CACHE_VERSION, "build_id": uuid.uuid4().hex}
    (tmp / "manifest.json").write_text(json.dumps(meta), encoding="utf-8")
    old = folder.with_name(folder.name + ".old")
    _remove(old)
    if os.path.lexists(folder):
        folder.rename(old)
    tmp.rename(folder)
    _remove(old)


def _remove(path: Path) -> None:
    """A leftover build folder gone; a link or file in its place (a cache a clone brought) removed itself, never followed."""
    if os.path.islink(path) or os.path.isfile(path):
        path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def records(docs: list[Doc], entries: list[Entry], source_sigs: dict[str, str], transcripts: dict[str, str]) -> dict[str, str]:
    """What a segment records of what it was built from, so that the next delta can tell what changed
    since: each source file's signature and documents, each entry's day file, its kept transcript's
    signature, and the entries that supersede others."""
    ranges = {src: [sig, 0, 0] for src, sig in source_sigs.items()}
    for i, d in enumerate(docs):  # each source's documents are contiguous: [start, end)
        r = ranges.setdefault(d.source, ["-", 0, 0])
        if r[1] == r[2]:
            r[1] = i
        r[2] = i + 1
    day_of = {d.ref: d.source for d in docs if d.kind == "entry"}
    declared = [Declared(e.id, e.timestamp, list(e.supersedes), day_of.get(e.id, "")) for e in entries if e.supersedes]
    return {SOURCES_FILE: json.dumps(ranges, ensure_ascii=False), TRANSCRIPTS_FILE: json.dumps(transcripts),
            ENTRY_DAYS_FILE: json.dumps(day_of, ensure_ascii=False), SUPERSEDES_FILE: json.dumps(declared, ensure_ascii=False)}
