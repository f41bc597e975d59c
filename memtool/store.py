"""The files: where everything lives and how it is read and written.

Per-day entry files (memory/index/YYYY-MM-DD.json, memtool/dayfile.py) are the source of truth for
Layer 2; index.json is the master index derived from them (memtool/index_json.py), git-ignored. Each
entry's vector (memory/index/embeddings/YYYY-MM/<id>.vec, float16), kept transcript
(memory/transcripts/YYYY-MM/<id>.md) and its transcript's passage vectors
(memory/index/passages/YYYY-MM/<id>.vec) live in the folder of the month its id names, so no folder
grows past a month's entries.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from memtool import confine
from memtool import constants as C
from memtool.confine import register_root, safe_folder
from memtool.dayfile import DAY_RE, ID_DAY_RE, day_document, id_day, read_day
from memtool.errors import DimensionMismatch, NotAMemoryRoot, OldLayout, StorageError, StoreCorrupt, UnsafePath
from memtool.fsutil import append_text, atomic_write_bytes, atomic_write_many, atomic_write_text, locked, stat_sig
from memtool.models import Entry, utcnow

if TYPE_CHECKING:
    import numpy as np


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
    def passages_dir(self) -> Path:
        return self.index_dir / C.PASSAGES_DIR

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

    def rel(self, path: Path) -> str:
        """`path` (under the root) as the root-relative posix name reports show."""
        return path.relative_to(self.root).as_posix()

    def day_file(self, day: str) -> Path:
        return self.index_dir / f"{day}.json"

    def daily_log(self, day: str) -> Path:
        return self.memory_dir / f"{day}.md"

    def embedding_file(self, entry_id: str) -> Path:
        return self.embeddings_dir / shard_of(entry_id) / f"{entry_id}{C.VECTOR_SUFFIX}"

    def transcript_file(self, entry_id: str) -> Path:
        return self.transcripts_dir / shard_of(entry_id) / f"{entry_id}{C.TRANSCRIPT_SUFFIX}"

    def passages_file(self, entry_id: str) -> Path:
        return self.passages_dir / shard_of(entry_id) / f"{entry_id}{C.VECTOR_SUFFIX}"

    def entry_files(self, entry_id: str) -> tuple[Path, Path, Path]:
        """The files an entry has beside its day file: kept transcript, vector, passage vectors."""
        return self.transcript_file(entry_id), self.embedding_file(entry_id), self.passages_file(entry_id)

    def embedding_files(self) -> Iterator[os.DirEntry]:
        """Every entry vector file (<id>.vec in a month folder); the id is the name without the suffix."""
        return _shard_files(self.embeddings_dir, C.VECTOR_SUFFIX)

    def transcript_files(self) -> Iterator[os.DirEntry]:
        """Every kept transcript (<id>.md in a month folder)."""
        return _shard_files(self.transcripts_dir, C.TRANSCRIPT_SUFFIX)

    def passages_files(self) -> Iterator[os.DirEntry]:
        """Every passage vectors file (<id>.vec in a month folder of passages/)."""
        return _shard_files(self.passages_dir, C.VECTOR_SUFFIX)

    def embeddings_stamp(self) -> int | None:
        """Changes when a vector file is added, removed or replaced (the folder's and its month folders'
        stats); None without the folder."""
        return _tree_stamp(self.embeddings_dir)

    def transcripts_stamp(self) -> int | None:
        """Changes when a kept transcript is added or removed; None without the folder."""
        return _tree_stamp(self.transcripts_dir)

    def legacy_files(self) -> list[Path]:
        """Files of the layout before month folders and binary vectors (`memory migrate` moves them):
        JSON vectors anywhere under embeddings/, and transcripts directly in transcripts/."""
        return sorted(Path(de.path) for de in (*self._top_legacy_files(), *_shard_files(self.embeddings_dir, C.LEGACY_VECTOR_SUFFIX)))

    def _top_legacy_files(self) -> Iterator[os.DirEntry]:
        for folder, suffix in ((self.transcripts_dir, C.TRANSCRIPT_SUFFIX), (self.embeddings_dir, C.LEGACY_VECTOR_SUFFIX)):
            yield from (de for de in _scan(folder) if de.name.endswith(suffix) and not de.name.startswith(".") and _is_file(de))

    def is_memory_root(self) -> bool:
        return self.memory_dir.is_dir()

    def require(self, legacy_ok: bool = False) -> "Layout":
        """This root, checked: a memory root whose folders are folders and, unless `legacy_ok`, laid out as
        this version lays it out (an older layout raises OldLayout: run `memory migrate`)."""
        if not self.is_memory_root():
            raise NotAMemoryRoot(f"{self.root} is not a memory root (no {C.MEMORY_DIR}/ folder). Run `memory init` there, or pass --root / set {C.ENV_ROOT}.")
        for folder in (self.index_dir, self.embeddings_dir, self.transcripts_dir):
            if os.path.lexists(folder) and not folder.is_dir():
                raise StoreCorrupt(
                    f"{folder} is a file, not a folder: memtool keeps entries there. Move or rename it, then run `memory init` to recreate the folder."
                )
        if legacy_ok:
            return self
        homes = [self]
        if type(self) is Layout and self.archive_dir.is_dir():  # an archive year, or no archive: nothing more to look at (nor to import)
            homes += archive_layouts(self)
        old = [lay for lay in homes if any(lay._top_legacy_files())]  # their top folders tell: flat embeddings/ and transcripts/, JSON vectors
        if old:
            where = ", ".join(str(lay.memory_dir.relative_to(self.root)) for lay in old)
            raise OldLayout(
                f"{where} holds vectors or transcripts in the layout before month folders (one flat folder, JSON vectors). "
                "Run `memory migrate` to move them (lossless; `memory migrate --dry-run` shows the plan)."
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
        for dirpath, dirnames, filenames in os.walk(self.memory_dir):  # nothing when memory/ is not there
            if Path(dirpath) == self.memory_dir:
                dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith(".")]
            base = Path(dirpath)
            out.extend(base / f for f in sorted(filenames) if f.endswith(".md") and not f.startswith("."))
        return out


SHARD_RE = re.compile(rf"^(?:\d{{4}}-\d{{2}}|{C.UNDATED_SHARD})$")  # month folders: YYYY-MM, and one for ids naming no day


def shard_of(entry_id: str) -> str:
    """The month folder of an entry's vector and transcript: YYYY-MM of the day its id names
    (ctx-YYYYMMDD-...), the same on every clone and for ever; ids naming no day share one folder."""
    day = id_day(entry_id)
    return day[:7] if day else C.UNDATED_SHARD


def _scan(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _is_file(de: os.DirEntry) -> bool:
    try:
        return de.is_file(follow_symlinks=False)
    except OSError:
        return False


def _shards(folder: Path) -> list[os.DirEntry]:
    """The month folders in `folder`, by name."""
    return [de for de in sorted(_scan(folder), key=lambda de: de.name) if SHARD_RE.match(de.name) and de.is_dir(follow_symlinks=False)]


def _shard_files(folder: Path, suffix: str) -> Iterator[os.DirEntry]:
    for shard in _shards(folder):
        yield from (de for de in _scan(Path(shard.path)) if de.name.endswith(suffix) and not de.name.startswith("."))


def _tree_stamp(folder: Path) -> int | None:
    """A number that changes when a file is added to, removed from or renamed into `folder` or one of
    its month folders (their sizes and mtimes); None when the folder is not there."""
    top = stat_sig(folder)
    if top is None:
        return None
    parts = [str(top), *(f"{de.name}:{sig}" for de in _shards(folder) if (sig := stat_sig(de.path)))]
    return int.from_bytes(hashlib.blake2b("|".join(parts).encode(), digest_size=7).digest(), "big")


# -- vector files ------------------------------------------------------------------------------------
# <id>.vec: one header line, then the vector as float16 little-endian (2 bytes a dimension):
#   memtool-vector 1 {"content_hash": "...", "dim": 384, "id": "ctx-...", "model": "..."}\n<dim * 2 bytes>
# The header names the model and the text embedded (content_hash); `head -1` shows it. A vector of
# 384 dims is 768 bytes plus the header, against ~5.7 KB as JSON floats.
VECTOR_MAGIC = b"memtool-vector 1 "


def vector_bytes(entry_id: str, model: str, content_hash: str, vector: np.ndarray) -> bytes:
    import numpy as np  # only where vectors are read or written: the MCP server starts without it

    vec = np.asarray(vector, dtype="<f2").ravel()
    head = json.dumps({"content_hash": content_hash, "dim": int(vec.shape[0]), "id": entry_id, "model": model}, ensure_ascii=False, sort_keys=True)
    return VECTOR_MAGIC + head.encode("utf-8") + b"\n" + vec.tobytes()


def _split_header(path: Path, data: bytes, magic: bytes, kind: str) -> tuple[Any, bytes]:
    """(the JSON header after `magic`, the bytes after its line) of a vector or passages file; StoreCorrupt when it is not one."""
    end = data.find(b"\n")
    if not data.startswith(magic) or end < 0:
        raise StoreCorrupt(f"{path}: not a memtool {kind} file (it starts {data[:20]!r})")
    try:
        return json.loads(data[len(magic) : end].decode("utf-8")), data[end + 1 :]
    except (UnicodeDecodeError, ValueError):
        raise StoreCorrupt(f"{path}: unreadable header") from None


def parse_vector(path: Path, data: bytes) -> dict:
    """{"id", "model", "dim", "content_hash", "embedding" (float32 array)} of a vector file's bytes;
    StoreCorrupt naming what is wrong."""
    head, body = _split_header(path, data, VECTOR_MAGIC, "vector")
    if not isinstance(head, dict) or not isinstance(head.get("dim"), int) or head["dim"] * 2 != len(body):
        raise StoreCorrupt(f"{path}: header and vector disagree ({len(body)} bytes for dim {head.get('dim') if isinstance(head, dict) else None!r})")
    import numpy as np

    return {**head, "embedding": np.frombuffer(body, dtype="<f2").astype(np.float32)}


def _read_parsed(path: Path, parse: Callable[[Path, bytes], dict]) -> dict | None:
    """`parse` of the file at `path` (opened by confine: no link, no FIFO); None if it is not there."""
    try:
        data = confine.read_bytes(path)
    except FileNotFoundError:
        return None
    except UnsafePath as exc:
        raise StoreCorrupt(str(exc)) from None
    return parse(path, data)


def read_vector_file(path: Path) -> dict | None:
    """parse_vector of the file at `path`; None if it is not there."""
    return _read_parsed(path, parse_vector)


# <id>.vec under passages/: the vectors of the entry's kept transcript's passages (the chunks the
# search cache indexes, memtool/chunking.py), so a clone reads them instead of embedding them again:
#   memtool-passages 1 {"dim": 384, "id": "ctx-...", "keys": ["<sha1 of a passage's text>", ...], "model": "..."}\n
# then len(keys) * dim float16 values, a passage's vector after another in the order of `keys`.
PASSAGES_MAGIC = b"memtool-passages 1 "


def passages_bytes(entry_id: str, model: str, keys: list[str], vectors: np.ndarray) -> bytes:
    import numpy as np

    vecs = np.asarray(vectors, dtype="<f2")
    head = json.dumps({"dim": int(vecs.shape[1]), "id": entry_id, "keys": keys, "model": model}, ensure_ascii=False, sort_keys=True)
    return PASSAGES_MAGIC + head.encode("utf-8") + b"\n" + vecs.tobytes()


def parse_passages(path: Path, data: bytes) -> dict:
    """{"id", "model", "dim", "keys", "vectors" (float32, one row a key)} of a passages file's bytes;
    StoreCorrupt naming what is wrong."""
    head, body = _split_header(path, data, PASSAGES_MAGIC, "passages")
    ok = isinstance(head, dict) and isinstance(head.get("dim"), int) and head["dim"] > 0 and isinstance(head.get("keys"), list)
    if not ok or not all(isinstance(k, str) for k in head["keys"]) or len(head["keys"]) * head["dim"] * 2 != len(body):
        raise StoreCorrupt(f"{path}: header and vectors disagree ({len(body)} bytes)")
    import numpy as np

    return {**head, "vectors": np.frombuffer(body, dtype="<f2").astype(np.float32).reshape(len(head["keys"]), head["dim"])}


def read_passages(path: Path) -> dict | None:
    """parse_passages of the file at `path`; None if it is not there."""
    return _read_parsed(path, parse_passages)


def _readable_vector(path: Path) -> dict:
    """read_vector_file, or {} when the file is not there or cannot be read."""
    try:
        return read_vector_file(path) or {}
    except (StoreCorrupt, OSError):
        return {}


def vector_file_ok(path: Path, model: str, dim: int, content_hash: str) -> bool:
    """The file at `path` holds a vector of `model`, `dim` dimensions, made from the text `content_hash` names."""
    data = _readable_vector(path)
    return data.get("model") == model and data.get("content_hash") == content_hash and data.get("dim") == dim


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
    files = [(home, path) for home in homes for path in home.day_files()]
    named = {id_day(i) for i in ids} - {None}

    def wanted() -> Iterator[tuple[Layout, Path]]:
        yield from ((home, path) for home, path in files if path.stem in named)
        if not all(found.values()):
            yield from ((home, path) for home, path in files if path.stem not in named)

    for home, path in wanted():
        try:
            entries = read_day(path)
        except (StoreCorrupt, UnicodeDecodeError) as exc:
            errors.append(str(exc))
            continue
        for e in entries:
            if e.id in found:
                found[e.id].append(Found(e, home, path))
    return found


class Store:
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
        if day and (path := self.layout.day_file(day)).is_file():
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
    def write_embedding(self, entry: Entry, model: str, vector: np.ndarray, replace: bool = False) -> None:
        import numpy as np

        self.write_embeddings([entry], model, np.asarray(vector)[None, :], replace)

    def write_embeddings(self, entries: list[Entry], model: str, vectors: np.ndarray, replace: bool = False) -> list[Path]:
        """Vector files for a batch of entries, fsyncs in parallel; returns the paths written. An entry's
        file is written once per model: one already holding a readable vector of `model` is kept even
        when the entry was edited since (unless `replace`), so a summary correction never rewrites a
        versioned file a teammate's forget deletes (git's modify/delete); the edited entry's vector lives
        in the search cache (keyed by its content hash), and `memory reembed` to another model rewrites all."""
        import numpy as np

        items = []
        for e, v in zip(entries, np.asarray(vectors)):
            path = self.layout.embedding_file(e.id)
            if not replace and _readable_vector(path).get("model") == model:
                continue
            items.append((path, vector_bytes(e.id, model, e.content_hash(), v)))
        return atomic_write_many(items)

    def read_embedding(self, entry_id: str) -> dict | None:
        """The entry's vector file as {"id", "model", "dim", "content_hash", "embedding"}; None if none."""
        return read_vector_file(self.layout.embedding_file(entry_id))

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
        vec = data["embedding"]
        if vec.shape != (dim,):
            raise DimensionMismatch(f"{self.layout.embedding_file(entry.id)}: {vec.shape[0]} dims, expected {dim}. Run `memory reembed`.")
        return vec

    def write_passages(self, items: list[tuple[str, list[str], np.ndarray]], model: str) -> list[Path]:
        """Passage vectors files for (entry id, passage keys, their vectors), fsyncs in parallel; a
        file that already holds these bytes is left alone. Returns the paths written."""
        return atomic_write_many([(self.layout.passages_file(i), passages_bytes(i, model, keys, vecs)) for i, keys, vecs in items])

    # -- transcripts and logs ----------------------------------------------------------------------
    def write_transcripts(self, items: list[tuple[str, str]]) -> list[Path]:
        """Kept transcripts for a batch of entries, written together (fsyncs in parallel)."""
        return atomic_write_many([(self.layout.transcript_file(i), (t if t.endswith("\n") else t + "\n").encode("utf-8")) for i, t in items])

    def append_log(self, day: str, line: str) -> Path:
        path = self.layout.daily_log(day)
        if not path.exists():
            append_text(path, f"# {day}\n")
        append_text(path, line)
        return path


YEAR_RE = re.compile(r"^\d{4}$")


@dataclass(frozen=True)
class ArchiveLayout(Layout):
    """memory/archive/YYYY/ seen as a memory/ folder. Locks and caches stay those of the live root."""

    year: str = ""

    @property
    def memory_dir(self) -> Path:
        return self.root / C.MEMORY_DIR / C.ARCHIVE_DIR / self.year

    @property
    def cache_dir(self) -> Path:
        return Layout(self.root).cache_dir

    @property
    def lock_file(self) -> Path:
        return Layout(self.root).lock_file

    def markdown_files(self) -> list[Path]:
        """Only the archived daily logs: Layer 3 files are never archived."""
        return sorted(p for p in self.memory_dir.glob("*.md") if DAY_RE.match(p.stem))


@dataclass(frozen=True)
class LiveAndArchive(Layout):
    """The live memory and every archive year read as one folder: what `search --archive` indexes.

    Day files and logs are those of both; an entry's transcript and embedding are found where its
    entry lives."""

    def day_files(self) -> list[Path]:
        return [*Layout(self.root).day_files(), *(p for a in archive_layouts(self) for p in a.day_files())]

    def markdown_files(self) -> list[Path]:
        return [*Layout(self.root).markdown_files(), *(p for a in archive_layouts(self) for p in a.markdown_files())]

    def embedding_file(self, entry_id: str) -> Path:
        return self._home(entry_id, Layout.embedding_file)

    def transcript_file(self, entry_id: str) -> Path:
        return self._home(entry_id, Layout.transcript_file)

    def passages_file(self, entry_id: str) -> Path:
        return self._home(entry_id, Layout.passages_file)

    def _home(self, entry_id: str, file_of) -> Path:
        live = file_of(Layout(self.root), entry_id)
        m = ID_DAY_RE.match(entry_id)
        if live.is_file() or not m:
            return live
        return file_of(ArchiveLayout(self.root, m.group(1)), entry_id)


def archive_layouts(layout: Layout) -> list[ArchiveLayout]:
    """One ArchiveLayout per memory/archive/YYYY/ folder, oldest year first."""
    base = layout.archive_dir
    if not base.is_dir():
        return []
    return [ArchiveLayout(layout.root, p.name) for p in sorted(base.iterdir()) if p.is_dir() and YEAR_RE.match(p.name)]


def archived_entries(layout: Layout, errors: list[str] | None = None) -> list[Entry]:
    """Every entry `memory archive` moved to memory/archive/, oldest year first (a bad day file
    raises, or is reported into `errors` and skipped, as Store.iter_entries does)."""
    return [e for arch in archive_layouts(layout) for e in Store(arch).iter_entries(errors)]


def get_archived(layout: Layout, entry_id: str) -> Entry | None:
    """An archived entry by id (its id names its day), or None."""
    m = ID_DAY_RE.match(entry_id)
    if not m:
        return None
    path = ArchiveLayout(layout.root, m.group(1)).day_file("-".join(m.groups()))
    return next((e for e in read_day(path) if e.id == entry_id), None) if path.is_file() else None


class Quarantine:
    """memory/quarantine/<UTC timestamp>/..., created on first use."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.moved: list[str] = []

    @cached_property
    def folder(self) -> Path:
        """memory/quarantine/<timestamp>[-n], one not there yet (not even as a dangling link)."""
        stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
        folder, n = self.layout.quarantine_dir / stamp, 1
        while os.path.lexists(folder):
            n += 1
            folder = self.layout.quarantine_dir / f"{stamp}-{n}"
        return folder

    def move(self, path: Path) -> None:
        dest = self.folder / path.relative_to(self.layout.memory_dir)
        try:
            safe_folder(dest.parent, create=True)  # memory/quarantine reached without a link (memtool/confine.py)
            os.replace(path, dest)
        except OSError as exc:
            raise StorageError(f"cannot move {path} into {self.folder}: {exc.strerror}") from None
        self.moved.append(dest.relative_to(self.layout.root).as_posix())

    def write(self, relative: str | Path, data: str | bytes) -> None:
        dest = self.folder / relative
        atomic_write_bytes(dest, data.encode("utf-8") if isinstance(data, str) else data)
        self.moved.append(dest.relative_to(self.layout.root).as_posix())


def template_text(name: str) -> str:
    from importlib import resources  # ~5 ms: only when a template is read

    return resources.files("memtool").joinpath(f"templates/{name}").read_text(encoding="utf-8")


def is_untouched_template(name: str, text: str) -> bool:
    """True when a Layer 3 file still holds exactly what `memory init` wrote: boilerplate, not memory."""
    return name in C.LAYER3_FILES and text.strip() == template_text(name).strip()
