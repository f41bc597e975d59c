"""Watch a memory root and sync on change.

A watchdog observer (imported only here, only when watching) reports changes to the Layer 3 files
at the root and to anything under memory/. Editor droppings (swap, backup and temp files), the
derived cache, the lock file and the files the last sync wrote itself are ignored. Changes are
debounced: a sync starts once the tree has been quiet for `debounce` seconds, or at the latest
`max_latency` seconds after the first change, so a `git pull` touching hundreds of files is one
sync. Saves by rename (write a temp file, then replace) and delete-then-create are ordinary
events; sync compares content hashes, so whatever the editor did, the result is what counts.
"""

from __future__ import annotations

import fnmatch
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from memtool import constants as C
from memtool.errors import MemtoolError
from memtool.memory import Memory
from memtool.store import Layout
from memtool.sync import SyncReport, sync

if TYPE_CHECKING:
    from memtool.retry import RetryReport

CHANGE_EVENTS = {"created", "deleted", "modified", "moved"}  # not opened/closed: sync itself reads files
WAKE_S = 0.2  # longest a wait blocks before checking the stop flag (keeps Ctrl-C prompt)


class Debouncer:
    """Collects pokes from the observer thread; `wait` returns once a burst has settled."""

    def __init__(self, quiet: float, max_latency: float):
        self.quiet, self.max_latency = quiet, max_latency
        self._cond = threading.Condition()
        self._first: float | None = None
        self._last = 0.0
        self._paths: set[str] = set()

    def poke(self, paths: list[str]) -> None:
        with self._cond:
            now = time.monotonic()
            if self._first is None:
                self._first = now
            self._last = now
            self._paths.update(paths)
            self._cond.notify_all()

    def wait(self, stop: threading.Event) -> set[str] | None:
        """The paths of the settled burst, or None once `stop` is set."""
        with self._cond:
            while not stop.is_set():
                if self._first is None:
                    self._cond.wait(WAKE_S)
                    continue
                now = time.monotonic()
                due = min(self._last + self.quiet, self._first + self.max_latency)
                if now >= due:
                    paths, self._paths, self._first = self._paths, set(), None
                    return paths
                self._cond.wait(min(due - now, WAKE_S))
        return None


def ignored_name(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pat) for pat in C.WATCH_IGNORE)


def relevant(layout: Layout, path: str) -> bool:
    """Does a change at `path` concern the memory? (Layer 3 files, or anything under memory/ but
    the cache, the lock and editor droppings.)"""
    try:
        rel = Path(path).relative_to(layout.root)
    except ValueError:
        return False
    parts = rel.parts
    if not parts:
        return False
    if len(parts) == 1:
        return parts[0] in C.LAYER3_FILES or parts[0] == C.MEMORY_DIR
    return parts[0] == C.MEMORY_DIR and not any(ignored_name(p) for p in parts[1:])


def _sig(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class Watcher:
    """Runs the sync loop in the calling thread; the observer runs in its own."""

    def __init__(
        self,
        mem: Memory,
        debounce: float = C.WATCH_DEBOUNCE_S,
        max_latency: float = C.WATCH_MAX_LATENCY_S,
        on_sync: Callable[[SyncReport], None] | None = None,
        on_error: Callable[[MemtoolError], None] | None = None,
        reopen: Callable[[], Memory] | None = None,
        on_retry: Callable[["RetryReport"], None] | None = None,
        retry_interval: float = C.WATCH_RETRY_INTERVAL_S,
    ):
        self.mem = mem
        self.reopen = reopen  # builds a fresh Memory when memory/config.yaml changes (say, another embedder)
        self._config = _sig(str(mem.layout.config_file))
        self.layout = mem.layout
        self.debouncer = Debouncer(debounce, max_latency)
        self.on_sync = on_sync
        self.on_error = on_error
        self.syncs = 0
        self.skipped = 0  # settled bursts made only of this watcher's own writes
        self._own: dict[str, tuple[int, int] | None] = {}  # path -> stat right after our own write / delete
        self.ready = threading.Event()  # set once the observer runs and the first sync is done
        self.on_retry = on_retry
        self.retry_interval = retry_interval
        self._last_retry = float("-inf")

    # called from the observer thread for every event
    def dispatch(self, event) -> None:
        if event.event_type not in CHANGE_EVENTS or (event.is_directory and event.event_type == "modified"):
            return
        paths = [os.fsdecode(p) for p in (event.src_path, getattr(event, "dest_path", "")) if p]
        paths = [p for p in paths if relevant(self.layout, p)]
        if paths:
            self.debouncer.poke(paths)

    def _ours(self, path: str) -> bool:
        return path in self._own and self._own[path] == _sig(path)

    def sync_now(self) -> SyncReport | None:
        try:
            config = _sig(str(self.layout.config_file))
            if self.reopen is not None and config != self._config:
                self.mem, self._config = self.reopen(), config
            report = sync(self.mem)
        except MemtoolError as exc:  # reported; the next change retries
            if self.on_error is None:
                raise
            self.on_error(exc)
            return None
        own = {str(p): _sig(str(p)) for p in report.touched}
        self._own = own if len(self._own) > C.WATCH_OWN_WRITES_KEPT else {**self._own, **own}  # late events of earlier syncs too
        self.syncs += 1
        if self.on_sync:
            self.on_sync(report)
        self.retry_pending()
        return report

    def retry_pending(self) -> "RetryReport | None":
        """Complete entries a provider failure left pending (`memory retry`), at most once per
        retry_interval: on start and after syncs, so a quota error is not hammered."""
        if time.monotonic() - self._last_retry < self.retry_interval:
            return None
        self._last_retry = time.monotonic()
        from memtool.retry import retry, work

        pending, unembedded = work(self.mem)
        if not pending and not unembedded:
            return None
        try:
            report = retry(self.mem)
        except MemtoolError as exc:
            if self.on_error is None:
                raise
            self.on_error(exc)
            return None
        if self.on_retry:
            self.on_retry(report)
        return report

    def _follow(self, observer, folders: dict[str, object], changes: list) -> None:
        """Watch every folder under memory/ (recursively) but the derived cache and editor droppings,
        whose writes would only wake the observer: folders that appeared are added, gone ones dropped."""
        for path in [p for p in folders if not os.path.isdir(p)]:
            observer.unschedule(folders.pop(path))
        with os.scandir(self.layout.memory_dir) as it:
            found = [d.path for d in it if d.is_dir() and not ignored_name(d.name) and d.path not in folders]
        for path in found:
            try:
                folders[path] = observer.schedule(self, path, recursive=True, event_filter=changes)
            except OSError:
                continue  # gone again: its deletion is the next event

    def run(self, once: bool = False, stop: threading.Event | None = None) -> int:
        """Sync now, then after every settled burst of changes, until `stop` is set (or after the
        first change-triggered sync with `once`). Returns the number of syncs run."""
        from watchdog import events as ev
        from watchdog.observers import Observer

        # only changes: reads (opened / closed without writing), which sync and searches do by the
        # hundred, are not even subscribed to, so they never compete with a sync for the CPU
        changes = [ev.FileCreatedEvent, ev.FileDeletedEvent, ev.FileModifiedEvent, ev.FileMovedEvent,
                   ev.DirCreatedEvent, ev.DirDeletedEvent, ev.DirMovedEvent]
        stop = stop or threading.Event()
        observer = Observer()
        observer.schedule(self, str(self.layout.root), recursive=False, event_filter=changes)
        observer.schedule(self, str(self.layout.memory_dir), recursive=False, event_filter=changes)
        folders: dict[str, object] = {}
        self._follow(observer, folders, changes)
        observer.start()
        try:
            self.sync_now()
            self.ready.set()
            while not stop.is_set():
                paths = self.debouncer.wait(stop)
                if paths is None:
                    break
                if all(self._ours(p) for p in paths):
                    self.skipped += 1  # only our own writes came back
                    continue
                self._follow(observer, folders, changes)  # before the sync, which sees what a new folder holds
                if self.sync_now() is not None and once:
                    break
        finally:
            observer.stop()
            observer.join(timeout=5)
        return self.syncs
