"""Use counts: how often each entry was returned by a query (search, context, the MCP tools).

Kept in the derived cache (memory/.cache/access.json), never in the versioned files, so reading
memory never dirties git. Writers replace the file atomically without taking a lock: two searches
at once may lose an increment, never corrupt the file. A file that cannot be read counts as empty.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Iterable

import numpy as np

from memtool import confine
from memtool import constants as C
from memtool.errors import UnsafePath
from memtool.store import Layout


def access_file(layout: Layout) -> Path:
    return layout.cache_dir / C.ACCESS_FILE


def load_counts(layout: Layout) -> dict[str, int]:
    """id -> times returned. Missing, torn or foreign content reads as no counts at all."""
    try:
        data = json.loads(confine.read_bytes(access_file(layout)))
    except (OSError, ValueError, UnsafePath):  # ValueError covers JSON and UTF-8 decoding errors
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v > 0}


def record(layout: Layout, ids: Iterable[str]) -> None:
    """Add one use to each id. Skipped quietly when the cache cannot be written (read-only
    checkout): counts only tune ranking, and a search must not fail for them."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return
    counts = load_counts(layout)
    for i in ids:
        counts[i] = counts.get(i, 0) + 1
    path = access_file(layout)
    data = json.dumps(counts, separators=(",", ":"), sort_keys=True).encode("utf-8")
    try:
        confine.safe_folder(path.parent, create=True)  # memory/.cache reached without a link
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except (OSError, UnsafePath):
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)  # no fsync: a crash may lose counts (derived data), the rename never tears the file
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass  # never created, or already renamed
        return


def boost(counts: np.ndarray, factor: float) -> np.ndarray:
    """Score multiplier for entries returned `counts` times before: 1 + factor * ln(1 + count)."""
    return 1.0 + factor * np.log1p(np.asarray(counts, dtype=np.float64))


__all__ = ["access_file", "load_counts", "record", "boost"]
