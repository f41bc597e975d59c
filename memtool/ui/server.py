"""`memory ui`: the viewer's web app (Starlette) and its server (uvicorn on 127.0.0.1, a free port).

The page, its script and its style sheet are files of this package (memtool/ui/static/), read once
at start: a request names one of them, never a path. Routes call memtool/ui/api.py, one core use
case each, under one lock (the core's Memory is not shared between threads otherwise). While a
watcher runs (the default), changes to the files are synced as `memory watch` syncs them, and the
page hears of each on the event stream (/api/events): "rebuilding" when a sync starts, "synced" when
it is done, so it can say so and load again.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from importlib.resources import files
from typing import Callable

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from memtool import constants as C
from memtool.errors import BadInput, MemtoolError, NotFound
from memtool.memory import Memory
from memtool.ui import api
from memtool.ui.guard import Guard, Secrets

STATIC = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
STATUS = {BadInput: 400, NotFound: 404}  # any other domain error: 409 (the store refused; the message says why)


class Hub:
    """Events for the pages listening on /api/events, published from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue]] = []
        self.rebuilding = False

    def listen(self) -> asyncio.Queue:
        q: asyncio.Queue = asyncio.Queue()
        with self._lock:
            self._queues.append((asyncio.get_running_loop(), q))
        return q

    def leave(self, q: asyncio.Queue) -> None:
        with self._lock:
            self._queues = [(loop, other) for loop, other in self._queues if other is not q]

    def close(self) -> None:
        """End every event stream (the server is stopping: an open stream would hold it up)."""
        with self._lock:
            targets, self._queues = list(self._queues), []
        for loop, q in targets:
            loop.call_soon_threadsafe(q.put_nowait, None)

    def publish(self, event: dict) -> None:
        if event.get("type") in ("rebuilding", "synced"):
            self.rebuilding = event["type"] == "rebuilding"
        with self._lock:
            targets = list(self._queues)
        for loop, q in targets:
            loop.call_soon_threadsafe(q.put_nowait, event)


def _status(exc: MemtoolError) -> int:
    return next((code for kind, code in STATUS.items() if isinstance(exc, kind)), 409)


def build_app(mem: Memory, port: int, keys: Secrets, hub: Hub | None = None) -> Guard:
    """The app for `mem`, behind its Guard (memtool/ui/guard.py) for this port and these secrets."""
    hub, viewer = hub or Hub(), api.Viewer(mem)
    lock = threading.Lock()
    static = {name: files("memtool.ui").joinpath(f"static/{name}").read_bytes() for name in STATIC}
    page = files("memtool.ui").joinpath("static/index.html").read_text("utf-8").replace("{{csrf}}", keys.csrf)

    viewer.every_entry([])  # the day files read now, before the URL is given: the page's first timeline reads none

    def answer(call: Callable[[], dict]) -> Response:
        try:
            with lock:
                return JSONResponse(call())
        except MemtoolError as exc:
            return JSONResponse({"error": str(exc)}, status_code=_status(exc))

    async def body_of(request: Request):
        data = b""
        async for chunk in request.stream():  # at most the cap (and one chunk) is ever held
            data += chunk
            if len(data) > C.UI_MAX_BODY_BYTES:
                raise BadInput("the request is too large")
        try:
            return json.loads(data or b"{}")
        except ValueError:
            raise BadInput("the request body is not JSON") from None

    def read(view: Callable) -> Callable:
        def route(request: Request) -> Response:
            return answer(lambda: view(viewer, dict(request.query_params)))

        return route

    def one(view: Callable) -> Callable:
        def route(request: Request) -> Response:
            return answer(lambda: view(viewer, request.path_params["ref"]))

        return route

    def change(view: Callable, with_body: bool = False) -> Callable:
        async def route(request: Request) -> Response:
            try:
                body = await body_of(request)
            except BadInput as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            args = (body,) if with_body else ()
            done = await asyncio.to_thread(answer, lambda: view(viewer, request.path_params["ref"], *args))
            if done.status_code == 200:
                hub.publish({"type": "changed"})
            return done

        return route

    def index(request: Request) -> Response:
        return Response(page, media_type="text/html; charset=utf-8")

    def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in static:
            return Response("not found\n", status_code=404, media_type="text/plain")
        return Response(static[name], media_type=STATIC[name])

    def status(request: Request) -> Response:
        return JSONResponse({"root": str(mem.layout.root), "rebuilding": hub.rebuilding, "version": _version()})

    async def events(request: Request) -> Response:
        async def stream():
            q = hub.listen()
            try:
                yield "retry: 2000\n\n"
                while True:
                    try:
                        event = await asyncio.wait_for(q.get(), C.UI_HEARTBEAT_S)
                    except asyncio.TimeoutError:
                        yield ": still here\n\n"
                        continue
                    if event is None:  # the server stops
                        return
                    yield f"data: {json.dumps(event)}\n\n"
            finally:
                hub.leave(q)

        return StreamingResponse(stream(), media_type="text/event-stream")

    routes = [
        Route("/", index),
        Route("/static/{name}", asset),
        Route("/api/status", status),
        Route("/api/events", events),
        Route("/api/timeline", read(api.timeline)),
        Route("/api/search", read(api.search)),
        Route("/api/context", read(api.context)),
        Route("/api/pictures", lambda request: answer(lambda: api.pictures(viewer))),
        Route("/api/log/{ref}", one(api.daily_log)),
        Route("/api/entry/{ref}", one(api.entry)),
        Route("/api/entry/{ref}/edit", change(api.edit, with_body=True), methods=["POST"]),
        Route("/api/entry/{ref}/forget", change(api.forget), methods=["POST"]),
        Route("/api/entry/{ref}/archive", change(api.archive), methods=["POST"]),
        Route("/api/entry/{ref}/promote", change(api.promote, with_body=True), methods=["POST"]),
    ]
    return Guard(Starlette(routes=routes), port, keys)


def _version() -> str:
    from memtool import __version__

    return __version__


def bind() -> socket.socket:
    """A listening socket on 127.0.0.1 at a free port the system picks."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((C.UI_HOST, 0))
    sock.listen(128)
    return sock


def watch(mem: Memory, hub: Hub, stop: threading.Event, reopen: Callable[[], Memory], on_error: Callable[[str], None]) -> threading.Thread:
    """Sync on change as `memory watch` does (with its own Memory), telling the pages; in a daemon thread."""
    from memtool.watch import Watcher

    class Told(Watcher):
        def sync_now(self):
            hub.publish({"type": "rebuilding"})
            try:
                report = super().sync_now()
            finally:
                hub.publish({"type": "synced"})
            if report is not None:
                mem.invalidate()
            return report

    watcher = Told(reopen(), reopen=reopen, on_error=lambda exc: on_error(str(exc)), on_warning=on_error)
    thread = threading.Thread(target=watcher.run, kwargs={"stop": stop}, name="memtool-ui-watch", daemon=True)
    thread.start()
    return thread


class _Uvicorn(uvicorn.Server):
    """uvicorn that ends the event streams when told to stop (Ctrl-C, SIGTERM), so it stops at once."""

    def __init__(self, config: uvicorn.Config, hub: Hub):
        super().__init__(config)
        self.hub = hub

    def handle_exit(self, sig, frame) -> None:
        self.hub.close()
        super().handle_exit(sig, frame)


class Server:
    """uvicorn serving the app on a socket bound here; `url` holds the run's token."""

    def __init__(self, mem: Memory, hub: Hub | None = None):
        self.keys, self.hub = Secrets(), hub or Hub()
        self.sock = bind()
        self.port = self.sock.getsockname()[1]
        self.url = f"http://{C.UI_HOST}:{self.port}/?token={self.keys.token}"
        app = build_app(mem, self.port, self.keys, self.hub)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False, date_header=False, timeout_graceful_shutdown=1)
        self.uvicorn = _Uvicorn(config, self.hub)

    def run(self) -> None:
        """Serve until Ctrl-C (or `stop`)."""
        self.uvicorn.run(sockets=[self.sock])

    def stop(self) -> None:
        self.hub.close()
        self.uvicorn.should_exit = True
