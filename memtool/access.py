"""Use counts: how often each entry was returned by a query (search, context, the MCP tools).

Kept in the derived store (memory/.cache/memtool.sqlite, table `access`), never in the versioned
files, so reading memory never dirties git. An increment is one upsert: concurrent searches never
lose each other's counts, except when one gives up waiting for another process's change set
(STATE_WAIT_S). The counts are the one thing in the store the files cannot give back: they survive
every rebuild of the search tables, and are lost only with a store discarded as damaged (or
deleted). They only tune ranking (`access_boost`, off by default), so that loss costs nothing else.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Iterable

import numpy as np

from memtool.search.store import open_state, write_state
from memtool.store import Layout


def load_counts(layout: Layout) -> dict[str, int]:
    """id -> times returned; none when the store cannot be read."""
    conn = open_state(layout, create=False)
    if conn is None:
        return {}
    try:
        return dict(conn.execute("SELECT id, uses FROM access").fetchall())
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def record(layout: Layout, ids: Iterable[str]) -> None:
    """Add one use to each id (an id repeated in one answer counts once). Skipped quietly when the
    store cannot be written (read-only checkout): counts only tune ranking, and a search must not
    fail for them."""
    ids = list(dict.fromkeys(ids))
    conn = open_state(layout) if ids else None
    if conn is not None:
        with closing(conn):
            write_state(conn, [("INSERT INTO access VALUES (?, 1) ON CONFLICT(id) DO UPDATE SET uses = uses + 1", [(i,) for i in ids])])


def boost(counts: np.ndarray, factor: float) -> np.ndarray:
    """Score multiplier for entries returned `counts` times before: 1 + factor * ln(1 + count)."""
    return 1.0 + factor * np.log1p(np.asarray(counts, dtype=np.float64))


__all__ = ["load_counts", "record", "boost"]
