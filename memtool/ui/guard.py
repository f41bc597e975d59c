"""The viewer's door: every request passes here before any route sees it (an ASGI middleware).

- Host: only `127.0.0.1:PORT` and `localhost:PORT` (a page on another name that resolves to
  127.0.0.1, DNS rebinding, is refused before anything else: 403).
- Session: the per-run token, in the URL the command opens (`/?token=...`), is exchanged once per
  browser for an HttpOnly, SameSite=Strict cookie holding another random secret, and the browser is
  sent on to `/` (the token leaves the address bar and the history). Without a valid cookie,
  everything is 401.
- Writes: only POST changes anything, and a POST needs the CSRF token of the page (header
  X-CSRF-Token), a JSON body, and no Origin or Sec-Fetch-Site naming another site: else 403. Other
  methods are 405, so no CORS preflight is ever answered, and no Access-Control-* header is ever sent.
- Every answer carries a strict Content-Security-Policy (scripts and styles of this origin only,
  nothing inline, no frames, no forms), nosniff, no referrer, no caching.
"""

from __future__ import annotations

import hmac
import secrets
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs

from memtool import constants as C

CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


class Secrets:
    """The run's three secrets: the URL token, the session cookie's value and the CSRF token."""

    def __init__(self) -> None:
        self.token = secrets.token_urlsafe(C.UI_TOKEN_BYTES)
        self.session = secrets.token_urlsafe(C.UI_TOKEN_BYTES)
        self.csrf = secrets.token_urlsafe(C.UI_TOKEN_BYTES)


def _same(given: str | None, secret: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), secret.encode())


class Guard:
    """ASGI middleware in front of the app, for one port and one run's secrets."""

    def __init__(self, app, port: int, keys: Secrets):
        self.app, self.keys = app, keys
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.origins = {f"http://{h}" for h in self.hosts}
        self.cookie = f"{C.UI_COOKIE}_{port}"

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":  # lifespan: nothing from outside
            return await self.app(scope, receive, send)
        headers: dict[str, str] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            return await _answer(send, *refusal)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if "token" in query:  # the exchange: a good token sets the cookie and leaves the URL
            if scope["method"] != "GET" or not _same(query["token"][0], self.keys.token):
                return await _answer(send, 401, "this link's token is not this run's: open the URL `memory ui` printed")
            cookie = f"{self.cookie}={self.keys.session}; HttpOnly; SameSite=Strict; Path=/"
            return await _answer(send, 303, "signed in", [(b"location", b"/"), (b"set-cookie", cookie.encode())])
        if not _same(_cookie(headers, self.cookie), self.keys.session):
            return await _answer(send, 401, "not signed in: open the URL `memory ui` printed (it holds this run's token)")
        if scope["method"] == "POST":
            refusal = self._write_refusal(headers)
            if refusal is not None:
                return await _answer(send, 403, refusal)

        async def send_guarded(message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if not k.lower().startswith(b"access-control-")]
                message = {**message, "headers": kept + HEADERS}
            await send(message)

        await self.app(scope, receive, send_guarded)

    def _refusal(self, scope, headers: dict[str, str]) -> tuple[int, str] | None:
        if headers.get("host") not in self.hosts:
            return 403, "wrong Host: this viewer answers to 127.0.0.1 and localhost on its own port only"
        if scope["method"] not in ("GET", "HEAD", "POST"):
            return 405, "method not allowed"
        return None

    def _write_refusal(self, headers: dict[str, str]) -> str | None:
        if "origin" in headers and headers["origin"] not in self.origins:
            return "cross-origin request refused"
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return "cross-site request refused"
        if not _same(headers.get("x-csrf-token"), self.keys.csrf):
            return "missing or wrong CSRF token: reload the page"
        if headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return "a change is sent as JSON (content-type application/json)"
        return None


def _cookie(headers: dict[str, str], name: str) -> str | None:
    jar = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:  # a malformed header holds no session
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


async def _answer(send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    head = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()), *(extra or []), *HEADERS]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})
