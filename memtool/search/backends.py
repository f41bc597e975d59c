"""The seam between memtool and its search cache: the one place that picks the local SQLite cache
(memtool/cache.py, memtool/search/build.py, the default) or the PostgreSQL cache a team shares
(memtool/search/pg.py, setting `cache: postgresql://…`). Both give the search engine an object shaped
as read.CacheView, and take the same calls: open for a search, bring up to date with the files,
purge forgotten entries, write the passages files a clone reads instead of embedding."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from typing import Iterable, Protocol, Sequence

from memtool.cache import cache_path, connect
from memtool.search import build, fill
from memtool.store import Layout


class DerivedCache(Protocol):
    def open_view(self, layout: Layout, embedder, progress, errors: list[str] | None, archive: bool = False, defer: bool = False): ...

    def refresh_cache(self, layout: Layout, embedder, progress=None, errors: list[str] | None = None, *, known=None, full: bool = False) -> bool: ...

    def purge_entries(self, layout: Layout, entry_ids: list[str], passage_keys: Sequence[str] = ()) -> int: ...

    def write_passage_files(self, layout: Layout, model: str, entry_ids: Iterable[str]) -> int: ...


class SqliteCache:
    """The cache under memory/.cache, built by each clone (memtool/search/build.py)."""

    open_view = staticmethod(build.open_view)
    refresh_cache = staticmethod(build.refresh_cache)
    purge_entries = staticmethod(build.purge_entries)

    @staticmethod
    def write_passage_files(layout: Layout, model: str, entry_ids: Iterable[str]) -> int:
        path = cache_path(layout)
        if not path.is_file():
            return 0
        with closing(connect(path)) as conn:
            return fill.write_passage_files(layout, conn, model, entry_ids)


@dataclass(frozen=True)
class PostgresCache:
    """The cache a team shares on one PostgreSQL server (memtool/search/pg.py). A search over the
    archives (`--archive`) is not served by it: that one is built locally, as without it."""

    url: str

    def open_view(self, layout, embedder, progress, errors, archive=False, defer=False):
        from memtool.search import pg

        if archive:
            return SqliteCache().open_view(layout, embedder, progress, errors, archive=True)
        return pg.open_view(self.url, layout, embedder, progress, errors)

    def refresh_cache(self, layout, embedder, progress=None, errors=None, known=None, full=False) -> bool:
        from memtool.search import pg

        return pg.refresh(self.url, layout, embedder, progress, errors, known=known, full=full)

    def purge_entries(self, layout, entry_ids, passage_keys=()) -> int:
        from memtool.search import pg

        return pg.purge(self.url, layout, entry_ids, passage_keys)

    def write_passage_files(self, layout, model, entry_ids) -> int:
        return 0  # the team's clones search the shared cache: none embeds the passages again


def derived_cache(setting: str, layout: Layout) -> DerivedCache:
    """The cache the `cache` setting names for this root: '' or 'sqlite' the local store, a
    postgresql:// URL the shared one (this clone's files recorded first, pg.attach)."""
    if setting in ("", "sqlite"):
        return SqliteCache()
    from memtool.search import pg

    pg.attach(layout)
    return PostgresCache(setting)
