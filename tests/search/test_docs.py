"""How the search cache names its source files."""

from pathlib import Path

import pytest

from memtool.search.docs import source_key
from memtool.store import Layout


def test_source_key_is_the_path_under_the_root_with_slashes(tmp_path):
    lay = Layout(tmp_path / "proj")
    for rel in ("memory/index/2026-02-01.json", "memory/areas/billing/README.md", "MEMORY.md"):
        assert source_key(lay, lay.root / rel) == rel == (lay.root / rel).relative_to(lay.root).as_posix()
    with pytest.raises(ValueError):  # a sibling folder whose name starts like the root's is not under it
        source_key(lay, Path(str(lay.root) + "-old") / "MEMORY.md")
