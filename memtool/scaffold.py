"""`memory init`: create the layout. Idempotent; never overwrites a file that exists."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from memtool import constants as C
from memtool.config import Settings
from memtool.fsutil import atomic_write_text
from memtool.store import Layout

GITIGNORE = f"# derived data, rebuilt from the files; safe to delete\n{C.CACHE_DIR}/\n{C.LOCK_FILE}\n"


def config_text() -> str:
    lines = ["# memtool settings. Every line is optional; shown values are the defaults.",
             "# Environment variables MEMTOOL_<NAME> override this file.", ""]
    for name, default, help_ in Settings.describe():
        lines.append(f"# {help_}")
        value = "[]" if default == [] else ("true" if default is True else "false" if default is False else repr(default) if isinstance(default, str) else default)
        lines.append(f"# {name}: {value}")
    return "\n".join(lines) + "\n"


def template_text(name: str) -> str:
    return resources.files("memtool").joinpath("templates", name).read_text(encoding="utf-8")


def is_untouched_template(name: str, text: str) -> bool:
    """True when a Layer 3 file still holds exactly what `memory init` wrote: boilerplate, not memory."""
    return name in C.LAYER3_FILES and text.strip() == template_text(name).strip()


def init(root: Path) -> list[Path]:
    """Create what is missing; return the paths created."""
    layout = Layout(root)
    created: list[Path] = []
    for folder in (layout.memory_dir, layout.index_dir, layout.embeddings_dir):
        if not folder.is_dir():
            folder.mkdir(parents=True)
            created.append(folder)
    files = {
        layout.memory_dir / C.GITIGNORE_FILE: GITIGNORE,
        layout.config_file: config_text(),
        **{root / name: template_text(name) for name in C.LAYER3_FILES},
    }
    for path, text in files.items():
        if not path.exists():
            atomic_write_text(path, text)
            created.append(path)
    return created
