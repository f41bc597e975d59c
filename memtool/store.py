"""The files: where everything lives and how it is read and written.

Per-day entry files (memory/index/YYYY-MM-DD.json, memtool/dayfile.py) are the source of truth for
Layer 2; index.json is the master index derived from them (memtool/index_json.py); one embedding
file per entry.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterator

import numpy as np

from memtool import constants as C
from memtool.confine import register_root
from memtool.dayfile import DAY_RE, day_document, id_day, load_json, read_day
from memtool.errors import DimensionMismatch, NotAMemoryRoot, StoreCorrupt
from memtool.fsutil import append_text, atomic_write_many, atomic_write_text, locked, write_json
from memtool.index_json import IndexJson
from memtool.models import Entry


@dataclass(frozen=True)
class Layout:
    """Where every file of a memory root lives. The folders that batch work asks for once per
    entry are joined once (cached_property: pathlib joins cost microseconds each)."""

    root: Path

    def __post_init__(self) -> None:
        register_root(self.root)  # every file below it is opened by confine's walk

    @cached_property
    def memory_dir(self) -> Path:
        return self.root / C.MEMORY_DIR

    @cached_property
    def index_dir(self) -> Path:
        return self.memory_dir / C.INDEX_DIR

    @property
    def index_file(self) -> Path:
        return self.index_dir / C.INDEX_FILE

    @cached_property
    def embeddings_dir(self) -> Path:
        return self.index_dir / C.EMBEDDINGS_DIR

    @cached_property
    def transcripts_dir(self) -> Path:
        return self.memory_dir / C.TRANSCRIPTS_DIR

    @property
    def cache_dir(self) -> Path:
        return self.memory_dir / C.CACHE_DIR

    @property
    def lock_file(self) -> Path:
        return self.memory_dir / C.LOCK_FILE

    @property
    def config_file(self) -> Path:
        return self.memory_dir / C.CONFIG_FILE

    @property
    def archive_dir(self) -> Path:
        return self.memory_dir / C.ARCHIVE_DIR

    @property
    def quarantine_dir(self) -> Path:
        return self.memory_dir / C.QUARANTINE_DIR

    def day_file(self, day: str) -> Path:
        return self.index_dir / f"{day}.json"

    def daily_log(self, day: str) -> Path:
        return self.memory_dir / f"{day}.md"

    def embedding_file(self, entry_id: str) -> Path:
        return self.embeddings_dir / f"{entry_id}.json"

    def transcript_file(self, entry_id: str) -> Path:
        return self.transcripts_dir / f"{entry_id}.md"

    def is_memory_root(self) -> bool:
        return self.memory_dir.is_dir()

    def require(self) -> "Layout":
        if not self.is_memory_root():
            raise NotAMemoryRoot(f"{self.root} is not a memory root (no {C.MEMORY_DIR}/ folder). Run `memory init` there, or pass --root / set {C.ENV_ROOT}.")
        for folder in (self.index_dir, self.embeddings_dir, self.transcripts_dir):
            if os.path.lexists(folder) and not folder.is_dir():
                raise StoreCorrupt(
                    f"{folder} is a file, not a folder: memtool keeps entries there. Move or rename it, then run `memory init` to recreate the folder."
                )
        return self

    def day_files(self) -> list[Path]:
        if not self.index_dir.is_dir():
            return []
        names = sorted(n for n in os.listdir(self.index_dir) if n.endswith(".json") and DAY_RE.match(n[:-5]))  # str sort: Paths sort slowly
        return [self.index_dir / n for n in names]

    def markdown_files(self) -> list[Path]:
        """Layer 3 files at the root and every Markdown file under memory/ (not transcripts, cache, archive,
        nor the generated entity pages of memory/areas, which repeat entries)."""
        out = [self.root / name for name in C.LAYER3_FILES if (self.root / name).is_file()]
        skip = {C.TRANSCRIPTS_DIR, C.CACHE_DIR, C.ARCHIVE_DIR, C.QUARANTINE_DIR, C.INDEX_DIR, C.AREAS_DIR}
        if self.memory_dir.is_dir():
            for dirpath, dirnames, filenames in os.walk(self.memory_dir):
                if Path(dirpath) == self.memory_dir:
                    dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith(".")]
                base = Path(dirpath)
                out.extend(base / f for f in sorted(filenames) if f.endswith(".md") and not f.startswith("."))
        return out


def round6(values: np.ndarray) -> np.ndarray:
    """round(float(x), 6) for every x (any shape, as float64), vectorised: numpy rounds, and the rare
    values whose scaled fraction sits next to .5 (where x*1e6 may round the other way) go through round()."""
    v = np.asarray(values, dtype=np.float64)
    scaled = v * 1e6
    out = np.rint(scaled) / 1e6
    with np.errstate(invalid="ignore"):  # inf - inf: those go through round() below
        odd = (np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6) | ~np.isfinite(v) | (np.abs(v) >= 1e9)
    for i in zip(*np.nonzero(odd)):
        out[i] = round(float(v[i]), 6)
    return out


_DIGITS3 = np.array([list(f"{i:03d}".encode()) for i in range(1000)], np.uint8)  # "000" .. "999"
_SHORT3 = np.array([list(f"{i:03d}".rstrip("0").ljust(3, "\0").encode()) for i in range(1000)], np.uint8)  # "25\0", "\0\0\0"


def json_floats(values: np.ndarray, sep: str) -> list[str]:
    """sep.join(json.dumps(x) for x in round6(row)) for each row of a 2-D array, built with array
    operations (~2.5x faster than printing every float). A rounded value is k/1e6 and Python prints
    it with the digits of k, trailing zeros dropped: "0.25", "-0.000123", "0.0", "-0.0", and below
    1e-4 with an exponent: "5e-06", "1.2e-05". Each value gets a fixed-width cell whose unused bytes
    are NUL, dropped at the end; rows holding a value >= 1 (or inf, nan) go to json.dumps."""
    rounded = round6(np.atleast_2d(values))
    n, d = rounded.shape
    if not d:
        return [""] * n
    simple = (np.abs(rounded) < 1).all(axis=1)  # False for nan too
    r = np.where(simple[:, None], rounded, 0.0).ravel()
    k = np.rint(np.abs(r) * 1e6).astype(np.int64)
    hi, lo = np.divmod(k, 1000)
    cells = np.empty((k.size, 9 + len(sep)), np.uint8)  # "-0.dddddd" + sep
    cells[:, 0] = np.where(np.signbit(r), ord("-"), 0)
    cells[:, 1:3] = np.frombuffer(b"0.", np.uint8)
    cells[:, 3:6] = np.where((lo > 0)[:, None], _DIGITS3[hi], _SHORT3[hi])
    cells[:, 6:9] = _SHORT3[lo]
    cells[k == 0, 3] = ord("0")  # "0.0"
    tiny = np.flatnonzero((k > 0) & (k < 100))
    if tiny.size:
        kt = k[tiny]
        text = np.tile(np.frombuffer(b"0.0e-05\0", np.uint8), (tiny.size, 1))
        text[:, 0] = 48 + np.where(kt < 10, kt, kt // 10)
        text[:, 2] = 48 + np.where(kt < 10, 0, kt % 10)
        whole = text[:, 2] == ord("0")  # "7e-06", "1e-05": no decimal
        text[whole, 1:] = np.frombuffer(b"e-05\0\0\0", np.uint8)
        text[kt < 10, 4] = ord("6")
        cells[tiny, 1:9] = text
    cells[:, 9:] = np.frombuffer(sep.encode("ascii"), np.uint8)
    cells[d - 1 :: d, 9:] = 0
    cells[d - 1 :: d, 9] = ord("|")  # ends each row
    rows = cells.tobytes().translate(None, b"\0").decode("ascii").split("|")[:-1]
    for i in np.flatnonzero(~simple).tolist():
        rows[i] = sep.join(json.dumps(x) for x in rounded[i].tolist())
    return rows


@dataclass
class Found:
    """Where one entry is stored: the layout owning its files (live or an archive year) and its day file."""

    entry: Entry
    home: Layout
    day_file: Path


def locate(homes: list[Layout], ids: list[str], errors: list[str]) -> dict[str, list[Found]]:
    """Every place each id is stored under `homes`. The day files the ids name are read first, the
    others only for ids not found there (an entry a hand edit filed under another day). Each file is
    read once; unreadable ones go into `errors`."""
    found: dict[str, list[Found]] = {i: [] for i in ids}
    listed = [(home, home.day_files()) for home in homes]
    read: set[Path] = set()

    def scan(home: Layout, path: Path) -> None:
        read.add(path)
        try:
            entries = read_day(path)
        except (StoreCorrupt, UnicodeDecodeError) as exc:
            errors.append(str(exc))
            return
        for e in entries:
            if e.id in found:
                found[e.id].append(Found(e, home, path))

    named = {id_day(i) for i in ids} - {None}
    for home, paths in listed:
        for path in paths:
            if path.stem in named:
                scan(home, path)
    if any(not places for places in found.values()):
        for home, paths in listed:
            for path in paths:
                if path not in read:
                    scan(home, path)
    return found


class Store(IndexJson):
    """Reads and writes the versioned files. Writers hold the root's lock briefly."""

    def __init__(self, layout: Layout):
        self.layout = layout

    def lock(self):
        """The store's write lock. memory/ must be there: moved or deleted while a command runs, it
        is an error (NotAMemoryRoot), never an empty memory/ made again by the lock."""
        return locked(self.layout.lock_file, folder_must_exist=True)

    # -- entries ---------------------------------------------------------------------------------
    def iter_entries(self, errors: list[str] | None = None) -> Iterator[Entry]:
        """Every entry from the per-day files. A bad file raises, or is reported into `errors` and skipped."""
        for path in self.layout.day_files():
            try:
                yield from read_day(path)
            except (StoreCorrupt, UnicodeDecodeError) as exc:
                if errors is None:
                    raise
                errors.append(str(exc))

    def get(self, entry_id: str) -> Entry | None:
        day = id_day(entry_id)
        path = self.layout.day_file(day) if day else None
        if path is not None and path.is_file():
            for e in read_day(path):
                if e.id == entry_id:
                    return e
        return next((e for e in self.iter_entries() if e.id == entry_id), None)

    def update_entries(self, entries: list[Entry]) -> None:
        """Replace stored entries by id in the day file that holds each now: a hand edit may have changed
        its date or filed it under another day, and writing it by its date would leave two copies.
        Caller holds the lock."""
        found = locate([self.layout], [e.id for e in entries], [])
        new = {e.id: e for e in entries}
        for path in sorted({f.day_file for places in found.values() for f in places}):
            atomic_write_text(path, day_document(path.stem, [new.get(e.id, e) for e in read_day(path)]))
        self.write_entries([e for e in entries if not found[e.id]])

    def write_entries(self, entries: list[Entry]) -> None:
        """Add (or replace by id) entries in the day files of their dates. Caller holds the lock."""
        by_day: dict[str, list[Entry]] = {}
        for e in entries:
            by_day.setdefault(e.day, []).append(e)
        for day, new in by_day.items():
            path = self.layout.day_file(day)
            current = {e.id: e for e in read_day(path)} if path.is_file() else {}
            current.update({e.id: e for e in new})
            atomic_write_text(path, day_document(day, current.values()))

    # -- embeddings --------------------------------------------------------------------------------
    def write_embedding(self, entry: Entry, model: str, vector: np.ndarray) -> None:
        doc = {
            "id": entry.id,
            "model": model,
            "dim": int(vector.shape[0]),
            "content_hash": entry.content_hash(),
            "embedding": [round(float(x), 6) for x in vector],
        }
        write_json(self.layout.embedding_file(entry.id), doc)

    def write_embeddings(self, entries: list[Entry], model: str, vectors: np.ndarray) -> list[Path]:
        """write_embedding for a batch: the same bytes, files already identical left alone, fsyncs in
        parallel. Returns the paths written."""
        vectors = np.asarray(vectors)
        items = []
        model_json = json.dumps(model, ensure_ascii=False)
        for entry, floats in zip(entries, json_floats(vectors, ",\n    ")):
            head = f'{{\n  "id": {json.dumps(entry.id, ensure_ascii=False)},\n  "model": {model_json},\n  "dim": {vectors.shape[1]},\n  '
            body = "[\n    " + floats + "\n  ]" if floats else "[]"
            text = f'{head}"content_hash": "{entry.content_hash()}",\n  "embedding": {body}\n}}\n'
            items.append((self.layout.embedding_file(entry.id), text.encode("utf-8")))
        return atomic_write_many(items)

    def read_embedding(self, entry_id: str) -> dict | None:
        path = self.layout.embedding_file(entry_id)
        if not path.is_file():
            return None
        data = load_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("embedding"), list):
            raise StoreCorrupt(f"{path}: expected an object with an 'embedding' list")
        return data

    def vector_for(self, entry: Entry, model: str, dim: int) -> np.ndarray | None:
        """The stored vector if it is current for this model; None if it must be (re)computed (also when
        the file is damaged: `memory doctor` reports it, and a sync or `doctor --fix` writes it anew)."""
        try:
            data = self.read_embedding(entry.id)
        except StoreCorrupt:
            return None
        if data is None or data.get("content_hash") != entry.content_hash():
            return None
        if data.get("model") != model:
            raise DimensionMismatch(
                f"entry {entry.id} was embedded with '{data.get('model')}' ({data.get('dim')} dims) but the "
                f"configured embedder is '{model}' ({dim} dims). Run `memory reembed` to re-embed the store."
            )
        vec = np.asarray(data["embedding"], dtype=np.float32)
        if vec.shape != (dim,):
            raise DimensionMismatch(f"{self.layout.embedding_file(entry.id)}: {vec.shape[0]} dims, expected {dim}. Run `memory reembed`.")
        return vec

    # -- transcripts and logs ----------------------------------------------------------------------
    def write_transcript(self, entry_id: str, text: str) -> None:
        self.write_transcripts([(entry_id, text)])

    def write_transcripts(self, items: list[tuple[str, str]]) -> list[Path]:
        """Kept transcripts for a batch of entries, written together (fsyncs in parallel)."""
        return atomic_write_many([(self.layout.transcript_file(i), (t if t.endswith("\n") else t + "\n").encode("utf-8")) for i, t in items])

    def append_log(self, day: str, line: str) -> Path:
        path = self.layout.daily_log(day)
        if not path.exists():
            append_text(path, f"# {day}\n")
        append_text(path, line)
        return path
