"""`memory --version`, and the optional extras: the default install works without them, and a
feature that needs one names it. A missing extra is simulated in a real process by a meta-path
finder that refuses to import its modules."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest

from memtool.errors import MissingExtra
from memtool.scaffold import init

BLOCKER = """
import sys

class Blocker:
    '''As if google-genai, mcp, uvicorn and starlette were not installed.'''
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('mcp', 'uvicorn', 'starlette') or name.startswith('google.genai'):
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)
        return None

sys.meta_path.insert(0, Blocker())
sys.argv = ['memory', *sys.argv[1:]]
from memtool.__main__ import main
main()
"""


def memory_without_extras(*args: str, env: dict[str, str], cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCKER, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=180)


def test_version_is_the_installed_package_version():
    done = subprocess.run([sys.executable, "-m", "memtool", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"memory (memtool) {version('memtool')}\n"


def test_the_default_install_compresses_and_searches_without_the_extras(root, env):
    init(root)
    (root / "s1.md").write_text("We decided to move billing to Postgres; Bob writes the migration before the audit.\n")
    stored = memory_without_extras("compress", "s1.md", env=env, cwd=root)
    assert stored.returncode == 0, stored.stderr
    found = memory_without_extras("search", "billing postgres", "--json", env=env, cwd=root)
    assert found.returncode == 0, found.stderr
    assert "Postgres" in found.stdout


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (("serve",), "mcp"),
        (("ui", "--no-browser"), "ui"),
        (("compress", "s1.md", "--provider", "gemini"), "gemini"),
    ],
)
def test_a_missing_extra_is_named_with_its_install_command(root, env, args, extra):
    init(root)
    (root / "s1.md").write_text("We decided to move billing to Postgres.\n")
    before = sorted(p.relative_to(root) for p in (root / "memory").rglob("*"))
    done = memory_without_extras(*args, env=env | {"GEMINI_API_KEY": "test-key"}, cwd=root)
    assert done.returncode == MissingExtra.exit_code, done.stderr
    assert f"pip install 'memtool[{extra}]'" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.relative_to(root) for p in (root / "memory").rglob("*")) == before  # nothing stored
