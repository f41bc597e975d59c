"""`memory serve --http`: the MCP server (memtool/mcp_server.py, the same tools, resources and
prompts) over streamable HTTP, for a team whose clones share one search cache (setting `cache`).

Bound to 127.0.0.1 unless another address is given. Every request must carry the token as
`Authorization: Bearer <token>`: one without it, or with another, is answered 401 before the MCP
layer sees it. The token comes from $MEMTOOL_MCP_TOKEN, else a random one is made for this run and
printed on stderr: never from a file in a repository. The Host header must name this server
(127.0.0.1, localhost or [::1] with its port, or the names given): a page that rebinds a DNS name to
this machine is refused (the SDK's check, 421), as is a browser's request from another Origin (403).
Import this module only on that path: it loads `mcp`, starlette and uvicorn.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from memtool import constants as C
from memtool.errors import BadInput

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class HttpOptions:
    host: str = C.MCP_HTTP_HOST
    port: int = C.MCP_HTTP_PORT
    allowed_hosts: tuple[str, ...] = ()  # Host header names (besides the loopback ones) a request may give


def server_token(env: dict[str, str] | None = None) -> tuple[str, bool]:
    """(the token, whether it was made for this run). One from the environment must be long enough to guess no faster than a random one."""
    given = (os.environ if env is None else env).get(C.ENV_MCP_TOKEN, "")
    if not given:
        return secrets.token_urlsafe(32), True
    if len(given) < C.MCP_TOKEN_MIN_CHARS or not given.isascii() or not given.isprintable() or " " in given:
        raise BadInput(f"{C.ENV_MCP_TOKEN} must be at least {C.MCP_TOKEN_MIN_CHARS} printable ASCII characters without spaces")
    return given, False


class RequireToken:
    """ASGI middleware: an HTTP request without `Authorization: Bearer <token>` is answered 401."""

    def __init__(self, app, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            given = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "a bearer token is required (Authorization: Bearer <token>)"}'
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"www-authenticate", b"Bearer")]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise BadInput(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


def serve_http(root: Path, max_tokens: int, options: HttpOptions) -> None:
    """Run the server until interrupted. Prints where it listens (and a token made for this run) on stderr."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from memtool.mcp_server import build_server

    token, made = server_token()
    sock = _listen(options.host, options.port)
    port = sock.getsockname()[1]
    names = [*(LOOPBACK if options.host in (*LOOPBACK, "0.0.0.0", "::") else ()), options.host, *options.allowed_hosts]
    hosts = sorted({f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names})
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=[f"http://{h}" for h in hosts])
    app = build_server(root, max_tokens).streamable_http_app(transport_security=security, host=options.host)
    shown = f"[{options.host}]" if ":" in options.host else options.host
    print(f"memtool MCP server for {root} on http://{shown}:{port}{C.MCP_HTTP_PATH}", file=sys.stderr)
    print(f"token: {token}" if made else f"token: from {C.ENV_MCP_TOKEN}", file=sys.stderr, flush=True)
    config = uvicorn.Config(RequireToken(app, token), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
