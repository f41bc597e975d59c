"""`memory serve`: the Model Context Protocol server (stdio) over one memory root.

Built on the official SDK (`mcp` 2.x, `MCPServer`). Import this module only on the serve path:
`mcp` and pydantic cost most of a second. The tools are the `@tool` methods of `memtool.mcp_tools.MemoryTools`
(which call the core `Memory` API), registered as they are declared; a `MemtoolError` becomes a tool error
result carrying its message, and the server keeps running. Answers are indented JSON (also sent as
structured content).
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any, Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import ToolAnnotations

from memtool import __version__
from memtool import constants as C
from memtool.errors import MemtoolError, NotFound
from memtool.mcp_fit import capped_message
from memtool.mcp_tools import TRUST_NOTE, MemoryTools


def _instructions(root: Path) -> str:
    return (
        f"Long-term memory of the project at {root} (this server serves only this root). "
        "At the start of a task call memory_context with what the task is about; use memory_search to look up "
        "past decisions, bugs and conventions; memory_log a one-line note when you decide or learn something; "
        "memory_compress the session transcript at the end; memory_promote insights every session should know. "
        "Nothing is remembered between requests: pass the ids you were already sent as exclude_ids (memory_search lists them "
        "by id only, memory_context leaves them out) and your name as agent when you write. " + TRUST_NOTE
    )


TOOLS = ("search", "context", "compress", "log", "get", "promote", "status", "forget", "archive", "reembed")  # listed in this order


def build_server(root: Path, max_tokens: int = C.MCP_MAX_TOKENS, log_level: str = "WARNING") -> MCPServer:
    """An MCP server for the memory root `root` (which must exist: `memory init`)."""
    tools = MemoryTools(root, max_tokens)
    server = MCPServer(C.MCP_SERVER_NAME, instructions=_instructions(root), version=__version__, log_level=log_level)  # type: ignore[arg-type]
    for handler in logging.getLogger().handlers:  # stderr is the client's log: libraries (bm25s) log DEBUG on their own
        handler.setLevel(log_level)
    s = tools.settings  # defaults the schema shows come from the root's settings and the server's cap
    runtime = {"search": {"limit": s.search_limit}, "context": {"budget": s.budget, "template": s.template}}
    for name in TOOLS:
        add_tool(server, tools, getattr(tools, name), {"max_tokens": max_tokens, **runtime.get(name, {})})

    def resource(uri: str, name: str, description: str, read: Callable[[], str]) -> None:
        def fn() -> str:
            try:
                with tools.lock:
                    return read()
            except MemtoolError as exc:  # missing, or there but unreadable
                refusal = ResourceNotFoundError if isinstance(exc, NotFound) else ResourceError
                raise refusal(capped_message(str(exc), {}, tools.max_tokens)) from exc

        server.resource(uri, name=name, description=description, mime_type="text/markdown")(fn)

    long_file = " A long one keeps its first sections and says where memory_get reads on."
    resource(
        "memory://MEMORY.md", "MEMORY.md", "Long-term project knowledge (Layer 3): decisions, patterns, context." + long_file, lambda: tools.layer3(C.MEMORY_MD)
    )
    resource("memory://USER.md", "USER.md", "What is known about the user: preferences, conventions." + long_file, lambda: tools.layer3(C.USER_MD))
    resource(
        "memory://log/today",
        "Today's log",
        "Today's daily log (memory/YYYY-MM-DD.md), newest lines last; a long one keeps its newest lines and says so.",
        tools.today_log,
    )
    return server


def add_tool(server: MCPServer, tools: MemoryTools, method: Callable[..., dict[str, Any]], defaults: dict[str, Any]) -> None:
    """Register a `@tool` method as memory_<name>: its signature (with `defaults`) is the schema. Calls are serialised; a MemtoolError becomes a tool error
    result (long arguments it echoes shortened, within the call's max_tokens). The SDK sends the dict as
    indented JSON text plus structured content."""
    description, read_only, destructive = method.mcp_tool  # type: ignore[attr-defined]
    sig = inspect.signature(method, eval_str=True)

    def run(**kwargs: Any) -> dict[str, Any]:
        try:
            with tools.lock:
                return method(**kwargs)
        except MemtoolError as exc:
            cap = kwargs.get("max_tokens", tools.max_tokens)  # the SDK checked it against the schema before the call
            raise ToolError(capped_message(str(exc), kwargs, cap)) from exc

    run.__name__ = f"memory_{method.__name__}"  # names the schema's models too
    params = [p.replace(default=defaults.get(p.name, p.default)) for p in sig.parameters.values()]
    run.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    hints = ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, open_world_hint=False)
    server.add_tool(run, name=run.__name__, description=description, annotations=hints)
