"""`memory doctor`: check the store's files against each other; repair what can be repaired without loss.

The per-day entry files are the truth. Checked against them: index.json, the embedding files (model,
dimension, content hash), the kept transcripts (orphans), duplicates (same id twice, or the same
content under two ids), unparsable files (path:line), git conflict markers and temp files left by
an interrupted write. `repair` rebuilds index.json, removes temp files, dedupes, embeds missing
vectors with the configured embedder, and MOVES whatever it cannot repair into
memory/quarantine/<timestamp>/<same relative path>: nothing is ever deleted.

The archive (memory/archive/YYYY/, laid out like memory/) is checked and repaired the same way, as a
second store: its day files, embeddings, transcripts and logs, and also an entry both live and
archived (the live copy is kept, as `memory archive` does) and a day file in another year's folder.
It has no index.json, and archived stand-in entries are not reported (`memory retry` is for live ones).

The modules: checks.py (Problem, Report, and Checker: the checks, read-only), repair.py (Doctor:
the checks and `--fix`; memtool.store.Quarantine). Here: open_doctor, which reads the root's settings and embedder.
"""

from __future__ import annotations

import re
from pathlib import Path

from memtool import constants as C
from memtool.config import Settings, load_settings
from memtool.doctor.checks import WARNING, Problem, Report
from memtool.doctor.repair import Doctor
from memtool.errors import ConfigError, ProviderError
from memtool.store import Layout


def open_doctor(root: Path) -> Doctor:
    """A Doctor for this root. A broken config or embedder is reported, not fatal: defaults are used."""
    from memtool.providers import build_embedder

    layout = Layout(root).require()
    config = Path(C.MEMORY_DIR, C.CONFIG_FILE).as_posix()
    notes: list[Problem] = []
    try:
        settings = load_settings(layout.root)
    except ConfigError as exc:
        settings, line = Settings(), re.search(r" line (\d+)", str(exc))
        notes.append(Problem("config", config, f"{exc} (checked with the default settings)", int(line.group(1)) if line else None))
    try:
        embedder = build_embedder(settings.embedder, settings, layout.root)
    except (ProviderError, ConfigError) as exc:
        embedder = None
        message = f"cannot build the embedder '{settings.embedder}': {exc}; embedding files were not checked against it"
        notes.append(Problem("config", config, message, severity=WARNING))
    return Doctor(layout, settings, embedder, notes)


__all__ = ["Doctor", "Problem", "Report", "open_doctor"]
