"""Commands for agents: serve (the MCP server) and promote (an insight into MEMORY.md)."""

from __future__ import annotations

import os
from typing import Optional

import typer

from memtool import constants as C
from memtool.cli.common import command_group, echo, open_from, print_json, root_of
from memtool.errors import BadInput


def serve(
    ctx: typer.Context,
    max_tokens: int = typer.Option(
        C.MCP_MAX_TOKENS, "--max-tokens", help="Default cap on the size of one tool answer, in tokens (a call may ask for another)."
    ),
    http: bool = typer.Option(
        False,
        "--http",
        help=f"Serve streamable HTTP at {C.MCP_HTTP_PATH} instead of stdio (a bearer token required: ${C.ENV_MCP_TOKEN}, else one made per run and printed).",
    ),
    host: str = typer.Option(C.MCP_HTTP_HOST, "--host", help="With --http: the address to listen on (loopback unless given)."),
    port: int = typer.Option(C.MCP_HTTP_PORT, "--port", help="With --http: the port (0: any free one, printed)."),
    allowed_host: list[str] = typer.Option(
        [], "--allowed-host", help="With --http: a name clients reach this server by (its Host header), besides the address; repeatable."
    ),
) -> None:
    """Run the MCP server on stdio (or streamable HTTP, --http) for one memory root, named by --root or $MEMTOOL_ROOT.

    Tools: memory_search, memory_context, memory_compress, memory_log, memory_get, memory_promote,
    memory_status, memory_forget, memory_archive, memory_reembed; resources: MEMORY.md, USER.md,
    today's log, memory://entry/{id}; prompts: recall, save_session, promote_decision.
    """
    named = root_of(ctx) or os.environ.get(C.ENV_ROOT)
    if not named:
        raise BadInput(f"name the memory root to serve: `memory --root DIR serve` or set {C.ENV_ROOT}, so that the agent never writes to a guessed project")
    if not C.MCP_MIN_TOKENS <= max_tokens <= C.MCP_MAX_TOKENS_CEILING:
        raise BadInput(f"--max-tokens must be between {C.MCP_MIN_TOKENS} and {C.MCP_MAX_TOKENS_CEILING}")
    from memtool.extras import require
    from memtool.roots import resolve_root

    require("mcp", "`memory serve` (the MCP server)")
    if http:
        if not 0 <= port <= 65535:
            raise BadInput("--port must be between 0 and 65535")
        from memtool.mcp_http import HttpOptions, serve_http

        serve_http(resolve_root(named), max_tokens, HttpOptions(host, port, tuple(allowed_host)))
        return
    if (host, port, allowed_host) != (C.MCP_HTTP_HOST, C.MCP_HTTP_PORT, []):
        raise BadInput("--host, --port and --allowed-host go with --http")
    from memtool.mcp_server import build_server

    build_server(resolve_root(named), max_tokens).run("stdio")  # until the client disconnects


def promote(
    ctx: typer.Context,
    target: str = typer.Argument(..., help="An entry id (ctx-YYYYMMDD-xxxxxxxx) or the insight as text."),
    section: Optional[str] = typer.Option(
        None, "--section", help=f"MEMORY.md section. Default: '{C.PROMOTE_DECISIONS_SECTION}' for an entry with decisions, else '{C.PROMOTE_CONTEXT_SECTION}'."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    personal: bool = typer.Option(False, "--personal", help="Into your personal memory's MEMORY.md (an entry id: one of its entries), not the project's."),
    private: bool = typer.Option(False, "--private", help="Into the MEMORY.md of the private entries (memory/.private/, ignored by git)."),
) -> None:
    """Add an insight to MEMORY.md under a section, leaving the rest of the file untouched."""
    from memtool.promote import promote as do_promote

    p = do_promote(open_from(ctx, personal=personal, private=private), target, section)
    if as_json:
        print_json(p)
        return
    echo(f"added to {p.path.name} under ## {p.section}:\n{p.bullet}" if p.added else f"already in {p.path.name} under ## {p.section}; nothing added")


COMMANDS = (serve, promote)  # registered in this order by memtool.cli.main


def serve_alone(args: list[str]) -> None:
    """`memory [--root DIR] serve ...` without the rest of the CLI (the fast path of memtool.__main__): an
    MCP client that starts the server waits for its first answer, and some give up within seconds."""
    app = command_group("Run the MCP server.")

    @app.callback()
    def main(ctx: typer.Context, root: Optional[str] = typer.Option(None, "--root", help="Memory root folder (default: $MEMTOOL_ROOT).")) -> None:
        ctx.obj = {"root": root}

    app.command()(serve)
    app(args=args, prog_name="memory")
