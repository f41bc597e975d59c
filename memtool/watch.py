"""Watch a memory root and sync on change.

A watchdog observer (imported only here, only when watching) reports changes to the Layer 3 files
at the root and to anything under memory/. Editor droppings (swap, backup and temp files), the
derived cache, the lock file and the files the last sync wrote itself are ignored. Changes are
debounced: a sync starts once the tree has been quiet for `debounce` seconds, or at the latest
`max_latency` seconds after the first change, so a `git pull` touching hundreds of files is one
sync. Saves by rename (write a temp file, then replace) and delete-then-create are ordinary
events; sync compares content hashes, so whatever the editor did, the result is what counts.

Folders are watched one by one, and an inotify watch belongs to a folder (its inode), not to a path:
a folder deleted and made again (`rm -rf memory/index && git checkout -- memory/index`), or replaced,
is another folder and gets a fresh watch. memory/ itself may vanish for a while (a branch checkout
without it, `git stash -u`, a `mv`): the watcher says so, syncs nothing (a sync would make a new
memory/ in its place), and picks memory/ up again when it is back.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from memtool import constants as C
from memtool.errors import MemtoolError
from memtool.fsutil import FileSig, stat_sig
from memtool.memory import Memory
from memtool.search.fill import fill_later
from memtool.store import Layout
from memtool.sync import SyncReport, sync

if TYPE_CHECKING:
    from memtool.retry import RetryReport

WAKE_S = 0.2  # longest a wait blocks before checking the stop flag (keeps Ctrl-C prompt)
GONE_POLL_S = 1.0  # while memory/ is missing, also looked for this often (besides the root's events)


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
            self._last = time.monotonic()
            if self._first is None:
                self._first = self._last
            self._paths.update(paths)
            self._cond.notify_all()

    def wait(self, stop: threading.Event, idle: float | None = None) -> set[str] | None:
        """The paths of the settled burst, or None once `stop` is set; with `idle`, an empty set once
        that long has passed without a change."""
        with self._cond:
            start = time.monotonic()
            while not stop.is_set():
                now = time.monotonic()
                if self._first is None and idle is not None and now - start >= idle:
                    return set()
                due = now + WAKE_S if self._first is None else min(self._last + self.quiet, self._first + self.max_latency)
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
        parts = Path(path).relative_to(layout.root).parts
    except ValueError:
        return False
    if len(parts) == 1:
        return parts[0] in C.LAYER3_FILES or parts[0] == C.MEMORY_DIR
    return len(parts) > 1 and parts[0] == C.MEMORY_DIR and not any(ignored_name(p) for p in parts[1:])


def _settings_sig(layout: Layout) -> tuple:
    """What a change of settings shows in: memory/config.yaml, the user's own config, and the list of
    approved repository configs (`memory config trust`)."""
    from memtool.config import trust_file, user_config_file

    return tuple(stat_sig(path) for path in (layout.config_file, user_config_file(), trust_file()))


def _ident(path: str) -> tuple[int, int] | None:
    """(device, inode) of the folder at `path`, or None if there is no folder there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _raise(exc: MemtoolError) -> None:
    raise exc


class Watcher:
    """Runs the sync loop in the calling thread; the observer runs in its own. A failed sync or retry
    goes to `on_error` (default: raised), the other callbacks' default ignores what they are given."""

    def __init__(
        self,
        mem: Memory,
        debounce: float = C.WATCH_DEBOUNCE_S,
        max_latency: float = C.WATCH_MAX_LATENCY_S,
        on_sync: Callable[[SyncReport], None] = lambda report: None,
        on_error: Callable[[MemtoolError], None] = _raise,
        reopen: Callable[[], Memory] | None = None,
        on_retry: Callable[["RetryReport"], None] = lambda report: None,
        retry_interval: float = C.WATCH_RETRY_INTERVAL_S,
        on_warning: Callable[[str], None] = lambda message: None,
    ):
        self.mem = mem
        self.reopen = reopen  # builds a fresh Memory when the settings change (say, another embedder)
        self._config = _settings_sig(mem.layout)
        self.layout = mem.layout
        self.debouncer = Debouncer(debounce, max_latency)
        self.on_sync = on_sync
        self.on_error = on_error
        self.syncs = 0
        self.skipped = 0  # settled bursts made only of this watcher's own writes
        self._own: dict[str, FileSig | None] = {}  # path -> stat right after our own write / delete
        self.ready = threading.Event()  # set once the observer runs and the first sync is done
        self.on_retry = on_retry
        self.retry_interval = retry_interval
        self._last_retry = float("-inf")
        self.on_warning = on_warning
        self._watches: dict[str, tuple[object, tuple[int, int]]] = {}  # folder -> (its watch, its identity then)
        self._changes: list | None = None  # the event types subscribed to (set by run)
        self.gone = False  # memory/ is missing: nothing is synced until it is back

    def dispatch(self, event) -> None:
        """Called from the observer thread for every event of the kinds subscribed to (run: changes only)."""
        paths = [os.fsdecode(p) for p in (event.src_path, getattr(event, "dest_path", "")) if p]
        paths = [p for p in paths if relevant(self.layout, p)]
        if paths:
            self.debouncer.poke(paths)

    def _missing(self) -> None:
        if not self.gone:
            self.gone = True
            self.on_warning(f"{self.layout.memory_dir} is gone; nothing is synced until it is back")

    def sync_now(self) -> SyncReport | None:
        try:
            config = _settings_sig(self.layout)
            if self.reopen is not None and config != self._config:
                self.mem, self._config = self.reopen(), config
            report = sync(self.mem, fill=False)  # vectors a change leaves missing: the background fill's, not the watcher's
            fill_later(self.layout, self.mem.embedder, self.mem.settings.background_embed)
        except (MemtoolError, FileNotFoundError) as exc:  # reported; the next change retries
            if not self.layout.memory_dir.is_dir():
                self._missing()  # memory/ went away (the lock does not make it again); the next burst follows it
                return None
            if isinstance(exc, FileNotFoundError):
                raise
            return self.on_error(exc)
        own = {str(p): stat_sig(p) for p in report.touched}
        self._own = own if len(self._own) > C.WATCH_OWN_WRITES_KEPT else {**self._own, **own}  # late events of earlier syncs too
        self.syncs += 1
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
            return self.on_error(exc)
        self.on_retry(report)
        return report

    def _watch(self, observer, path: str, recursive: bool, renew: bool, stopped: set) -> bool:
        """Keep a live watch on the folder at `path`: a fresh one if there was none, if the folder there
        now is another one (another inode; or `renew`: the folder itself was made, deleted or moved in
        the burst, which an inode number reused at once would hide), or if watchdog stopped the old one
        (it does once its folder is deleted). False if there is no folder at `path`."""
        ident = _ident(path)
        held = self._watches.get(path)
        if held is not None and (renew or ident != held[1] or held[0] in stopped):
            observer.unschedule(self._watches.pop(path)[0])
            held = None
        if ident is None:
            return False
        if held is None:
            try:  # identity taken first: a folder replaced meanwhile only means one renewal too many
                self._watches[path] = (observer.schedule(self, path, recursive=recursive, event_filter=self._changes), ident)
            except OSError as exc:
                if _ident(path) is None:
                    return False  # gone again: its deletion is the next event
                self.on_warning(f"cannot watch {path}: {exc.strerror or exc}; retried after the next change")
        return True

    def _follow(self, observer, changed: set[str] | frozenset[str] = frozenset()) -> bool:
        """Watch the root (not recursively, for the Layer 3 files and memory/ coming and going), memory/
        (likewise) and every folder in it (recursively) but the derived cache and editor droppings, whose
        writes would only wake the observer. Folders that appeared are added, gone ones dropped, and one
        replaced (`changed`: the paths of the burst) gets a fresh watch. Returns whether memory/ is there;
        while it is not, only the root is watched, for its return."""
        stopped = {e.watch for e in list(observer.emitters) if e.stopped_event.is_set()}
        root, top = str(self.layout.root), str(self.layout.memory_dir)
        self._watch(observer, root, False, False, stopped)
        renew = top in changed  # memory/ itself made, deleted or moved: everything in it is renewed too
        found: set[str] | None = None
        if self._watch(observer, top, False, renew, stopped):
            try:
                with os.scandir(top) as it:  # a linked folder is not watched (nor read: confine)
                    found = {d.path for d in it if d.is_dir(follow_symlinks=False) and not ignored_name(d.name)}
            except (FileNotFoundError, NotADirectoryError):
                found = None  # gone meanwhile
        keep = {root} if found is None else {root, top, *found}
        for path in [p for p in self._watches if p not in keep]:
            observer.unschedule(self._watches.pop(path)[0])
        if found is None:
            self._missing()
            return False
        for path in sorted(found):
            self._watch(observer, path, True, renew or path in changed, stopped)
        self.gone = False
        return True

    def run(self, once: bool = False, stop: threading.Event | None = None) -> int:
        """Sync now, then after every settled burst of changes, until `stop` is set; with `once`, the
        first sync only (one pass, as a cron job or a script wants: it never waits for a change).
        Returns the number of syncs run."""
        if once:
            if self.layout.memory_dir.is_dir():
                self.sync_now()
            else:
                self._missing()
            self.ready.set()
            return self.syncs
        from watchdog.events import DirCreatedEvent, DirDeletedEvent, DirMovedEvent, FileCreatedEvent, FileDeletedEvent, FileModifiedEvent, FileMovedEvent
        from watchdog.observers import Observer

        # only changes: reads (opened / closed without writing), which sync and searches do by the
        # hundred, are not even subscribed to, so they never compete with a sync for the CPU
        self._changes = [FileCreatedEvent, FileDeletedEvent, FileModifiedEvent, FileMovedEvent, DirCreatedEvent, DirDeletedEvent, DirMovedEvent]
        stop = stop or threading.Event()
        observer = Observer()
        observer.start()  # first: a folder gone before its watch starts is then an OSError of schedule()
        try:
            if self._follow(observer):
                self.sync_now()
            self.ready.set()
            while (paths := self.debouncer.wait(stop, idle=GONE_POLL_S if self.gone else None)) is not None:  # None: stopped
                if paths and all(p in self._own and self._own[p] == stat_sig(p) for p in paths):
                    self.skipped += 1  # only our own writes came back
                    continue
                if not self._follow(observer, paths):  # before the sync, which sees what a new folder holds
                    continue  # memory/ is missing
                if self.sync_now() is not None and once:
                    break
        finally:
            observer.stop()
            observer.join(timeout=5)
            self._watches.clear()
        return self.syncs
