"""A small real HTTP server speaking the Gemini REST endpoints that google-genai 3.4.0 calls.

Paths (the SDK's default API version for the Gemini API is v1; any version prefix is accepted):
  POST /{version}/models/{model}:generateContent     -> candidates[0].content.parts[0].text
  POST /{version}/models/{model}:batchEmbedContents  -> embeddings[i].values
  POST /{version}/models/{model}:countTokens         -> totalTokens
The API key arrives in the `x-goog-api-key` header. The server checks it but never stores it:
each recorded request only says whether a key was sent, whether it matched, and whether it leaked
into the URL. Answers are deterministic; failures are scripted with fail_next / delay / model_text.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

FAKE_KEY = "AIzaFAKE-memtool-test-key-7f3a9c"  # recognisable, so tests can assert it never leaks
_PATH = re.compile(r"^/(?P<version>v1\w*)/models/(?P<model>[^:/]+):(?P<action>\w+)$")
_STATUS = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


@dataclass
class Recorded:
    path: str
    version: str
    model: str
    action: str
    body: dict[str, Any]
    headers: dict[str, str]  # without the API key
    key_sent: bool
    key_ok: bool
    key_in_url: bool
    status: int = 200

    @property
    def texts(self) -> list[str]:
        """The text parts this request carried (one per embedding request, or the prompt)."""
        if self.action == "batchEmbedContents":
            return [_text(r.get("content", {})) for r in self.body.get("requests", [])]
        return [_text(c) for c in self.body.get("contents", [])]


@dataclass
class _Script:
    failures: list[tuple[int, bool]] = field(default_factory=list)  # (status, echo the key back)
    delays: list[float] = field(default_factory=list)
    texts: list[tuple[str, str]] = field(default_factory=list)  # (raw text, finishReason)
    embed_dim: int | None = None
    count_factor: float = 1.0


def _text(content: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in content.get("parts", []))


def fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic, not normalised (like gemini-embedding-001 below 3072 dims)."""
    out: list[float] = []
    counter = 0
    while len(out) < dim:
        out.extend((b - 127.5) / 127.5 for b in hashlib.sha256(f"{counter}:{text}".encode()).digest())
        counter += 1
    return out[:dim]


def fake_token_count(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def fake_entry(text: str) -> dict[str, Any]:
    """First sentence as summary, capitalised words as keywords, 'decided'/'TODO' sentences, @people."""
    sentences = _sentences(text) or [text.strip() or "empty"]
    caps = list(dict.fromkeys(re.findall(r"\b[A-Z][a-z]{2,}\b", text)))
    low = text.lower()
    importance = "critical" if "critical" in low else "high" if "urgent" in low else "medium"
    return {
        "summary": sentences[0][:200],
        "keywords": caps[:8],
        "topics": [w.lower() for w in caps[:2]],
        "decisions": [s for s in sentences if "decided" in s.lower()],
        "action_items": [s for s in sentences if s.startswith("TODO")],
        "entities": {
            "people": list(dict.fromkeys(re.findall(r"@(\w+)", text))),
            "systems": [w for w in dict.fromkeys(re.findall(r"\b[A-Z]{2,}\b", text)) if w != "TODO"],
            "dates": list(dict.fromkeys(re.findall(r"\b\d{4}-\d{2}-\d{2}\b", text))),
        },
        "importance": importance,
    }


class FakeGemini:
    """The server; start() binds 127.0.0.1 on a free port and serves from a thread."""

    def __init__(self, api_key: str = FAKE_KEY):
        self._expected_key = api_key
        self._lock = threading.Lock()
        self._script = _Script()
        self._stopping = threading.Event()
        self.requests: list[Recorded] = []
        self._httpd: ThreadingHTTPServer | None = None

    # --- scripting ---------------------------------------------------------------
    def fail_next(self, status: int = 429, times: int = 1, *, echo_key: bool = False) -> None:
        """The next `times` requests answer `status` with a Google-style error body."""
        with self._lock:
            self._script.failures.extend([(status, echo_key)] * times)

    def delay(self, seconds: float, times: int = 1) -> None:
        """The next `times` requests sleep `seconds` before answering."""
        with self._lock:
            self._script.delays.extend([seconds] * times)

    def model_text(self, text: str, times: int = 1, finish_reason: str = "STOP") -> None:
        """The next `times` generateContent answers carry this raw text instead of a fake entry.

        finish_reason="CONTINUATION" also sends a continuationToken, which the SDK would follow
        unless automatic continuation is switched off.
        """
        with self._lock:
            self._script.texts.extend([(text, finish_reason)] * times)

    def embed_dim(self, dim: int | None) -> None:
        """Answer embeddings with this dimension regardless of outputDimensionality (None: honour it)."""
        with self._lock:
            self._script.embed_dim = dim

    def count_factor(self, factor: float) -> None:
        """countTokens answers `factor` times the usual count (plus one): the model counts more than memtool's estimate."""
        with self._lock:
            self._script.count_factor = factor

    def reset(self) -> None:
        """Drop whatever is still scripted (recorded requests are kept)."""
        with self._lock:
            self._script = _Script()

    def calls(self, action: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.action == action]

    # --- lifecycle ---------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeGemini":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                fake._handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in delay()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    # --- handling ----------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        raw = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        path, _, query = h.path.partition("?")
        key = h.headers.get("x-goog-api-key") or ""
        match = _PATH.match(path)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        rec = Recorded(
            path=path,
            version=match["version"] if match else "",
            model=match["model"] if match else "",
            action=match["action"] if match else "",
            body=body,
            headers={k.lower(): v for k, v in h.headers.items() if k.lower() != "x-goog-api-key"},
            key_sent=bool(key),
            key_ok=key == self._expected_key,
            key_in_url=bool(key) and key in h.path,
        )
        with self._lock:
            self.requests.append(rec)
            failure = self._script.failures.pop(0) if self._script.failures else None
            pause = self._script.delays.pop(0) if self._script.delays else 0.0
        if pause:
            self._stopping.wait(pause)
        if failure is not None:
            status, echo = failure
            msg = {429: "Resource has been exhausted (e.g. check quota).", 500: "An internal error has occurred."}
            text = msg.get(status, "Scripted failure.") + (f" (proxy saw key {key})" if echo else "")
            return self._send(h, rec, status, self._error(status, text))
        if not rec.key_ok:
            err = self._error(400, "API key not valid. Please pass a valid API key.")
            err["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]
            return self._send(h, rec, 400, err)
        handler = {
            "generateContent": self._generate,
            "batchEmbedContents": self._embed,
            "countTokens": self._count,
        }.get(rec.action)
        if handler is None:
            return self._send(h, rec, 404, self._error(404, f"Unknown path {path}"))
        self._send(h, rec, 200, handler(rec))

    @staticmethod
    def _error(status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}

    def _send(self, h: BaseHTTPRequestHandler, rec: Recorded, status: int, payload: dict[str, Any]) -> None:
        rec.status = status
        data = json.dumps(payload).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json; charset=UTF-8")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to answer

    def _generate(self, rec: Recorded) -> dict[str, Any]:
        prompt = "".join(rec.texts)
        with self._lock:
            scripted = self._script.texts.pop(0) if self._script.texts else None
        candidate: dict[str, Any] = {"index": 0, "finishReason": "STOP"}
        if scripted is not None:
            text, candidate["finishReason"] = scripted
            if candidate["finishReason"] == "CONTINUATION":
                candidate["continuationToken"] = base64.b64encode(b"more").decode()
        else:
            schema = rec.body.get("generationConfig", {}).get("responseSchema", {})
            if set(schema.get("properties", {})) == {"summary"}:
                answer: dict[str, Any] = {"summary": (_sentences(prompt) or ["empty"])[0]}
            else:
                answer = fake_entry(prompt)
            text = json.dumps(answer)
        candidate["content"] = {"role": "model", "parts": [{"text": text}]}
        return {
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": fake_token_count(prompt), "totalTokenCount": fake_token_count(prompt)},
            "modelVersion": rec.model,
        }

    def _embed(self, rec: Recorded) -> dict[str, Any]:
        with self._lock:
            forced = self._script.embed_dim
        out = []
        for req, text in zip(rec.body.get("requests", []), rec.texts):
            dim = forced or req.get("outputDimensionality") or 3072
            out.append({"values": fake_vector(text, dim)})
        return {"embeddings": out}

    def _count(self, rec: Recorded) -> dict[str, Any]:
        with self._lock:
            factor = self._script.count_factor
        total = sum(fake_token_count(t) for t in rec.texts)
        return {"totalTokens": total if factor == 1.0 else int(total * factor) + 1}


@pytest.fixture
def gemini_server():
    """A started FakeGemini expecting FAKE_KEY; stopped after the test."""
    server = FakeGemini().start()
    try:
        yield server
    finally:
        server.stop()
