"""`memory serve`: the Model Context Protocol server (stdio) over one memory root.

Built on the official SDK (`mcp` 2.x, `MCPServer`). Import this module only on the serve path:
`mcp` and pydantic cost most of a second. Listing the tools loads none of memtool's core
(`memtool.mcp_tools` opens the memory at the first call). The tools are the `@tool` methods of
`memtool.mcp_tools.MemoryTools`, registered as they are declared; a `MemtoolError` becomes a tool
error result carrying its message. Besides the tools: resources (MEMORY.md, USER.md, today's log,
the template memory://entry/{id}) and prompts for the common acts.
"""

from __future__ import annotations

import inspect
import json
import logging
from pathlib import Path
from typing import Any, Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import ToolAnnotations

from memtool import __version__
from memtool import constants as C
from memtool.errors import MemtoolError, NotFound
from memtool.mcp_fit import capped_message, render
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


ENTRY_URI = "memory://entry/{id}"
TOOLS = ("search", "context", "compress", "log", "get", "promote", "status", "forget", "archive", "reembed")  # listed in this order


def build_server(root: Path, max_tokens: int = C.MCP_MAX_TOKENS, log_level: str = "WARNING") -> MCPServer:
    """An MCP server for the memory root `root` (which must exist: `memory init`)."""
    tools = MemoryTools(root, max_tokens)
    server = MCPServer(C.MCP_SERVER_NAME, instructions=_instructions(root), version=__version__, log_level=log_level)  # type: ignore[arg-type]
    for handler in logging.getLogger().handlers:  # stderr is the client's log: libraries (bm25s) log DEBUG on their own
        handler.setLevel(log_level)
    s = tools.settings  # defaults the schema shows come from the root's settings and the server's cap
    runtime: dict[str, dict[str, Any]] = {"search": {"limit": s.search_limit}, "context": {"budget": s.budget, "template": s.template}}
    for name in TOOLS:
        add_tool(server, tools, getattr(tools, name), {"max_tokens": max_tokens, **runtime.get(name, {})})

    def resource(uri: str, name: str, description: str, read: Callable[[], str]) -> None:
        def fn() -> str:
            try:
                with tools.lock:
                    return read()
            except MemtoolError as exc:  # missing, or there but unreadable
                raise refusal(exc, tools.max_tokens) from exc

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

    @server.resource(
        ENTRY_URI,
        name="Memory entry",
        description="One stored entry by its id (as memory_get answers for an entry id), as JSON. Only entry ids (ctx-YYYYMMDD-xxxxxxxx).",
        mime_type="application/json",
    )
    def entry(id: str) -> str:
        try:
            with tools.lock:
                return render(tools.entry_resource(id))
        except MemtoolError as exc:  # not an entry id, or no such entry
            raise refusal(exc, tools.max_tokens) from exc

    add_prompts(server)
    return server


def refusal(exc: MemtoolError, cap: int) -> ResourceError:
    """A resource read refused: not found, or unreadable or not a name this server reads."""
    return (ResourceNotFoundError if isinstance(exc, NotFound) else ResourceError)(capped_message(str(exc), {}, cap))


def add_prompts(server: MCPServer) -> None:
    """Prompts for the common acts: what to ask the agent, in words, calling the tools (nothing is run
    until the agent calls them)."""

    @server.prompt(name="recall", title="Recall for a task", description="Load what the memory knows about a task before starting on it.")
    def recall(task: str) -> str:
        return (
            f"Before working on this task, load what the project's memory knows about it: call memory_context with query "
            f"{json.dumps(task)}, then memory_search for any past decision, bug or convention the task touches "
            "(pass the ids you already have as exclude_ids). Say briefly what you found and how it bears on the task."
        )

    @server.prompt(name="save_session", title="Save this session", description="Store this session in the memory: its transcript, compressed.")
    def save_session(agent: str = "") -> str:
        named = f", agent {json.dumps(agent)}" if agent.strip() else ", agent your name (e.g. claude-code)"
        return (
            "Store this session in the project's memory: call memory_compress with the transcript (path: the transcript file "
            f"inside the memory root if you have one, else text: the conversation so far){named}. Then memory_log one line "
            "for each decision taken that the summary may miss."
        )

    @server.prompt(name="promote_decision", title="Promote a decision", description="Add a decision every future session should know to MEMORY.md.")
    def promote_decision(decision: str, section: str = "") -> str:
        where = f" under section {json.dumps(section)}" if section.strip() else ""
        return (
            f"Record this decision for every future session: call memory_promote with text {json.dumps(decision)}{where} "
            "(one sentence; if an entry already holds it, pass that entry's id instead, from memory_search)."
        )


def add_tool(server: MCPServer, tools: MemoryTools, method: Callable[..., dict[str, Any]], defaults: dict[str, Any]) -> None:
    """Register a `@tool` method as memory_<name>: its signature (with `defaults`) is the schema, its
    ToolSpec the title and hints. Calls are serialised; a MemtoolError becomes a tool error result (long
    arguments it echoes shortened, within the call's max_tokens). The SDK sends the dict as indented
    JSON text plus structured content."""
    spec = method.mcp_tool  # type: ignore[attr-defined]
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
    hints = ToolAnnotations(
        title=spec.title, read_only_hint=spec.read_only, destructive_hint=spec.destructive, idempotent_hint=spec.idempotent, open_world_hint=False
    )
    server.add_tool(run, name=run.__name__, title=spec.title, description=spec.description, annotations=hints)
