"""`python -m memtool ...` runs the `memory` CLI.

`python -m memtool hooks run ...` goes straight to the hooks sub-app, and `python -m memtool
[--root DIR] serve ...` to the MCP server: agent hooks have tight time budgets (Claude Code gives
SessionEnd 1.5 s, Codex 3 s) and an MCP client waits for the server's first answer, so both skip
loading every command module of the full CLI.
"""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if args[:2] == ["hooks", "run"]:
        from memtool.cli.hooks import app

        app(args=args[1:], prog_name="memory hooks")
        return
    rest = args[2:] if args[:1] == ["--root"] else args[1:] if args[:1] and args[0].startswith("--root=") else args
    if rest[:1] == ["serve"]:
        from memtool.cli.serve import serve_alone

        serve_alone(args)
        return
    from memtool.cli.main import run

    run()


if __name__ == "__main__":
    main()
