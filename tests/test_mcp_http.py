"""`memory serve --http`: the real server (a `memory` process on a loopback port) through the real
SDK's streamable-HTTP client, and the requests it must refuse (no token, another token, a Host
header that does not name it) refused before anything is read or written."""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from memtool import constants as C
from tests.test_mcp import Client

pytest.importorskip("mcp")

TOKEN = "test-token-0123456789abcdefghij"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@contextmanager
def http_server(root: Path, env: dict[str, str], *extra: str, token: str | None = TOKEN) -> Iterator[tuple[str, Path]]:
    """(the URL it printed, its stderr log) of `memory serve --http --port 0` running on `root`."""
    env = {k: v for k, v in env.items() if k != C.ENV_MCP_TOKEN} | ({C.ENV_MCP_TOKEN: token} if token else {})
    log = root.parent / "http-server.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "memtool", "--root", str(root), "serve", "--http", "--port", "0", *extra], env=env, stderr=err)
    try:
        deadline = time.monotonic() + 60
        while "token:" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        url = next(w for w in log.read_text().split() if w.startswith("http://"))
        yield url, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "Traceback" not in log.read_text(), log.read_text()


@contextmanager
def http_client(url: str, token: str) -> Iterator[Client]:
    from anyio.from_thread import start_blocking_portal
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with start_blocking_portal() as portal:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        with portal.wrap_async_context_manager(streamable_http_client(url, http_client=http)) as (read, write):
            with portal.wrap_async_context_manager(ClientSession(read, write, read_timeout_seconds=60)) as session:
                portal.call(session.initialize)
                yield Client(portal, session, Path("/dev/null"))


@pytest.fixture
def root(root, env) -> Path:
    subprocess.run([sys.executable, "-m", "memtool", "init"], env=env, check=True, capture_output=True)
    return root


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    inner = getattr(exc, "exceptions", None)  # an exception group (BaseExceptionGroup: Python 3.11 on)
    return [x for e in inner for x in leaves(e)] if inner is not None else [exc]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and C.CACHE_DIR not in p.parts}


def test_search_and_log_over_http_with_the_token(root, env):
    subprocess.run([sys.executable, "-m", "memtool", "log", "The zeppelin gateway times out after 30 s; we raised it to 90 s."], env=env, check=True)
    with http_server(root, env) as (url, _):
        assert url.startswith("http://127.0.0.1:") and url.endswith(C.MCP_HTTP_PATH)  # loopback unless told otherwise
        with http_client(url, TOKEN) as c:
            hits = c.ok("memory_search", {"query": "zeppelin gateway timeout"})["hits"]
            assert any("zeppelin gateway" in h["text"] for h in hits), hits
            c.ok("memory_log", {"text": "Quillfeather queue drained by hand on Tuesday."})
            hits = c.ok("memory_search", {"query": "Quillfeather queue"})["hits"]
            assert any("Quillfeather" in h["text"] for h in hits), hits
    assert "Quillfeather queue drained" in "".join(p.read_text() for p in (root / "memory").glob("*.md"))


def test_requests_without_the_token_or_to_another_host_are_refused(root, env):
    import httpx2

    before = files(root)
    with http_server(root, env) as (url, _):
        port = url.split(":")[2].split("/")[0]
        assert httpx2.post(url, json=INIT, headers=ACCEPT).status_code == 401
        refused = httpx2.post(url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {TOKEN}x"})
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert httpx2.post(url, json=INIT, headers={**ACCEPT, "Authorization": TOKEN}).status_code == 401  # not as a bearer
        rebound = httpx2.post(url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {TOKEN}", "Host": f"attacker.example:{port}"})
        assert rebound.status_code == 421
        other_origin = httpx2.post(url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {TOKEN}", "Origin": "http://attacker.example"})
        assert other_origin.status_code == 403
        assert httpx2.post(url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {TOKEN}"}).status_code == 200
        with pytest.raises(Exception) as refused_sdk:  # the SDK's client, with another token, gets nowhere either
            with http_client(url, "another-token-0123456789abcdef"):
                pass
        assert [str(e) for e in leaves(refused_sdk.value)] == ["Server returned an error response"]  # the SDK's word for the 401
    assert files(root) == before


def test_a_token_is_made_per_run_when_none_is_set(root, env):
    import httpx2

    with http_server(root, env, token=None) as (url, log):
        made = log.read_text().split("token: ", 1)[1].split()[0]
        assert len(made) >= C.MCP_TOKEN_MIN_CHARS
        assert httpx2.post(url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {made}"}).status_code == 200
        assert httpx2.post(url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {TOKEN}"}).status_code == 401


def test_a_short_token_or_http_options_without_http_are_refused(root, env):
    short = subprocess.run(
        [sys.executable, "-m", "memtool", "serve", "--http", "--port", "0"], env={**env, C.ENV_MCP_TOKEN: "short"}, capture_output=True, text=True, timeout=60
    )
    assert short.returncode == 2 and C.ENV_MCP_TOKEN in short.stderr
    stray = subprocess.run([sys.executable, "-m", "memtool", "serve", "--port", "9"], env=env, capture_output=True, text=True, timeout=60)
    assert stray.returncode == 2 and "--http" in stray.stderr
