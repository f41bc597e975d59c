"""`python -m memtool ...` runs the `memory` CLI.

`python -m memtool hooks run ...` goes straight to the hooks sub-app: agent hooks have tight
time budgets (Claude Code gives SessionEnd 1.5 s, Codex 3 s), so they skip loading every
command module of the full CLI.
"""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if args[:2] == ["hooks", "run"]:
        from memtool.cli.hooks import app

        app(args=args[1:], prog_name="memory hooks")
        return
    from memtool.cli.main import run

    run()


if __name__ == "__main__":
    main()
