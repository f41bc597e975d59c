"""Optional extras: what only some users need is installed with `pip install 'memtool[NAME]'`.

The default install stays small and offline (local compressor, e5 / WordLlama embedders). A feature
that needs an extra calls `require` before importing it, so a missing one is a clear message naming
the extra (MissingExtra, its own exit code), not an ImportError traceback. Nothing is imported here.
"""

from __future__ import annotations

import importlib.util

from memtool.errors import MissingExtra

# extra -> (the module it provides, the distribution that provides it)
EXTRAS: dict[str, tuple[str, str]] = {
    "gemini": ("google.genai", "google-genai"),
    "mcp": ("mcp", "mcp"),
    "openai": ("openai", "openai"),  # the openai compressor (any OpenAI-compatible endpoint)
    "ui": ("uvicorn", "uvicorn"),  # `memory ui`: uvicorn and Starlette (the mcp extra brings both too)
    "postgresql": ("psycopg", "psycopg[binary]"),  # the search cache a team shares (setting `cache`)
}


def require(extra: str, feature: str) -> None:
    """MissingExtra naming `pip install 'memtool[extra]'` unless the extra's module can be imported
    (found without importing it)."""
    module, dist = EXTRAS[extra]
    try:
        if importlib.util.find_spec(module) is not None:
            return
    except (ImportError, ValueError):  # its parent package is missing (or blocked)
        pass
    raise MissingExtra(
        f"{feature} needs the optional package {dist}, which is not installed. Install it with "
        f"`pip install 'memtool[{extra}]'` (pipx: `pipx inject memtool {dist}`; uv: "
        f"`uv tool install 'memtool[{extra}]'`)."
    )
