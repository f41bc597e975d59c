"""A fake model server on 127.0.0.1 for the real agent clients: it logs every request and answers
each with one fixed short reply, streamed the way the client asks.

Speaks:
  Anthropic Messages   POST /v1/messages (SSE when "stream": true), /v1/messages/count_tokens
  OpenAI Responses     POST /v1/responses (SSE when "stream": true), GET /v1/models
  Gemini               POST /{v1beta|v1}/models/{model}:generateContent | :streamGenerateContent
                       (SSE with ?alt=sse, else a JSON array) | :countTokens
Anything else gets a 404 and is logged all the same, so a client's new endpoint shows up in the log.
`hold(marker)`: a generation request whose text holds `marker` is logged, then kept waiting for its
answer until `release()` (or HOLD_MAX_S): a test can kill the client mid-session.

`ModelLog.reached_model()` is what the model was sent, one text per request (system prompt,
instructions and every message), and `render()` prints the whole log readably for a failing test's
message. Run alone for poking at a client by hand:
    python -m tests.real_clients.fake_model --port 8765 --log /tmp/requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

REPLY = "Noted: dual writes stay behind the feature flag."  # the model's one answer, to every request
_GEMINI_PATH = re.compile(r"^/(?P<version>v1\w*)/models/(?P<model>[^:/]+):(?P<action>\w+)$")
HOLD_MAX_S = 120.0
_SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "api-key"}


@dataclass
class Request:
    """One request the server received."""

    api: str  # anthropic | openai | gemini | other
    method: str
    path: str  # with the query string
    headers: dict[str, str]  # API keys replaced by "<set>"
    body: Any  # parsed JSON, or the raw text when it was not JSON
    at: float = field(default_factory=time.time)

    @property
    def is_generation(self) -> bool:
        """A request for the model to answer (not a token count or a model list)."""
        if self.api == "anthropic":
            return self.path.split("?")[0] == "/v1/messages"
        if self.api == "openai":
            return self.path.split("?")[0] == "/v1/responses"
        return self.api == "gemini" and ("generateContent" in self.path or "GenerateContent" in self.path)

    def text(self) -> str:
        """Everything this request showed the model, as one text: system prompt, instructions, messages."""
        return "\n".join(_strings(self.body, _TEXT_KEYS[self.api])) if isinstance(self.body, dict) else str(self.body)

    def tool_names(self) -> list[str]:
        """The tools the client offered the model."""
        body = self.body if isinstance(self.body, dict) else {}
        if self.api == "gemini":
            return [d.get("name", "") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
        return [t.get("name") or (t.get("function") or {}).get("name", "") for t in body.get("tools") or []]


# the JSON keys whose string values are text the model reads, per API (the rest is settings)
_TEXT_KEYS = {
    "anthropic": {"system", "messages", "content", "text", "tool_result"},
    "openai": {"instructions", "input", "content", "text", "output"},
    "gemini": {"systemInstruction", "contents", "parts", "text"},
    "other": set(),
}


def _strings(value: Any, keys: set[str], inside: bool = False) -> Iterator[str]:
    """The string values under `keys` (at any depth, once inside one of them)."""
    if isinstance(value, str):
        if inside:
            yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, keys, inside)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in keys or (inside and key not in ("type", "role", "id", "call_id", "name", "cache_control", "signature")):
                yield from _strings(item, keys, inside or key in keys)


class ModelLog:
    """The requests received, in order (thread-safe), also appended to a JSONL file when one is given."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self._lock = threading.Lock()
        self.requests: list[Request] = []

    def add(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)
            if self.path is not None:
                with open(self.path, "a", encoding="utf-8") as out:
                    out.write(json.dumps(request.__dict__, ensure_ascii=False) + "\n")

    def generations(self, api: str | None = None) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.is_generation and (api is None or r.api == api)]

    def reached_model(self, api: str | None = None) -> list[str]:
        return [r.text() for r in self.generations(api)]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def render(self, limit: int = 6000) -> str:
        """The log for a human: one line per request, then what each generation request showed the model."""
        with self._lock:
            requests = list(self.requests)
        lines = [f"{len(requests)} request(s) reached the fake model server:"]
        for i, r in enumerate(requests):
            lines.append(f"  [{i}] {r.api} {r.method} {r.path}" + (f" tools={len(r.tool_names())}" if r.is_generation else ""))
        for i, r in enumerate(requests):
            if r.is_generation:
                text = r.text()
                shown = text if len(text) <= limit else text[: limit // 2] + f"\n[... {len(text) - limit} characters ...]\n" + text[-limit // 2 :]
                lines.append(f"--- [{i}] what reached the model ({len(text)} characters) ---\n{shown}")
        return "\n".join(lines)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "FakeModelServer"

    def log_message(self, format: str, *args: Any) -> None:  # the ModelLog is the log
        pass

    def _api(self, path: str) -> str:
        if path.startswith("/v1/messages"):
            return "anthropic"
        if path.startswith(("/v1/responses", "/v1/models")) and not _GEMINI_PATH.match(path):
            return "openai"
        return "gemini" if _GEMINI_PATH.match(path) else "other"

    def _receive(self) -> Request:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw
        headers = {k.lower(): ("<set>" if k.lower() in _SECRET_HEADERS else v) for k, v in self.headers.items()}
        request = Request(self._api(self.path.split("?")[0]), self.command, self.path, headers, body)
        self.server.log.add(request)
        return request

    def do_GET(self) -> None:
        request = self._receive()
        if request.api == "openai" and request.path.split("?")[0] == "/v1/models":
            self._json({"object": "list", "data": [{"id": "gpt-5", "object": "model", "created": 0, "owned_by": "memtool-fake"}]})
        else:
            self._json({"error": {"message": f"no such endpoint: {request.path}"}}, status=404)

    def do_HEAD(self) -> None:
        self._receive()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        try:
            self._answer(self._receive())
        except (BrokenPipeError, ConnectionResetError):  # the client went away (a test killed it)
            pass

    def _answer(self, request: Request) -> None:
        marker = self.server.held
        if marker and request.is_generation and marker in request.text():
            self.server.released.wait(HOLD_MAX_S)
        body = request.body if isinstance(request.body, dict) else {}
        path = request.path.split("?")[0]
        if request.api == "anthropic":
            if path.endswith("/count_tokens"):
                self._json({"input_tokens": len(request.text()) // 4 + 1})
            elif body.get("stream"):
                self._sse(_anthropic_events(body.get("model", "claude")), named=True)
            else:
                self._json(_anthropic_message(body.get("model", "claude")))
        elif request.api == "openai" and path == "/v1/responses" and body.get("stream"):
            self._sse(_openai_events(body.get("model", "gpt-5")), named=True)
        elif request.api == "openai" and path == "/v1/responses":
            self._json(_openai_response(body.get("model", "gpt-5")))
        elif request.api == "gemini":
            action = _GEMINI_PATH.match(path)["action"]
            if action == "countTokens":
                self._json({"totalTokens": len(request.text()) // 4 + 1})
            elif action == "streamGenerateContent":
                chunk = _gemini_answer(body)
                if "alt=sse" in request.path:
                    self._sse(iter([(None, chunk)]), named=False)
                else:
                    self._json([chunk])
            elif action == "generateContent":
                self._json(_gemini_answer(body))
            else:
                self._json({"error": {"code": 404, "message": f"no such action: {action}", "status": "NOT_FOUND"}}, status=404)
        else:
            self._json({"error": {"message": f"no such endpoint: {request.path}"}}, status=404)

    def _json(self, data: Any, status: int = 200) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _sse(self, events: Iterator[tuple[str | None, dict[str, Any]]], named: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for name, data in events:
            frame = (f"event: {name}\n" if named and name else "") + f"data: {json.dumps(data)}\n\n"
            raw = frame.encode()
            self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _usage_anthropic(output: int) -> dict[str, int]:
    return {"input_tokens": 100, "output_tokens": output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _anthropic_message(model: str) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": REPLY}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": _usage_anthropic(12),
    }


def _anthropic_events(model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    message = _anthropic_message(model) | {"content": [], "stop_reason": None, "usage": _usage_anthropic(1)}
    yield "message_start", {"type": "message_start", "message": message}
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    yield "ping", {"type": "ping"}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": REPLY}}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 12}}
    yield "message_stop", {"type": "message_stop"}


def _openai_item(status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": REPLY, "annotations": []}] if status == "completed" else []
    return {"id": "msg_fake", "type": "message", "status": status, "role": "assistant", "content": content}


def _openai_response(model: str, status: str = "completed") -> dict[str, Any]:
    usage = {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 12,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 112,
    }
    done = status == "completed"
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": [_openai_item("completed")] if done else [],
        "usage": usage if done else None,
    }


def _openai_events(model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": "msg_fake", "output_index": 0, "content_index": 0}
    events = [
        ("response.created", {"response": _openai_response(model, "in_progress")}),
        ("response.in_progress", {"response": _openai_response(model, "in_progress")}),
        ("response.output_item.added", {"output_index": 0, "item": _openai_item("in_progress")}),
        ("response.content_part.added", where | {"part": part}),
        ("response.output_text.delta", where | {"delta": REPLY}),
        ("response.output_text.done", where | {"text": REPLY}),
        ("response.content_part.done", where | {"part": part | {"text": REPLY}}),
        ("response.output_item.done", {"output_index": 0, "item": _openai_item("completed")}),
        ("response.completed", {"response": _openai_response(model)}),
    ]
    for number, (name, data) in enumerate(events):
        yield name, {"type": name, "sequence_number": number} | data


def _gemini_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The fixed reply; JSON when the request asks for JSON (Gemini CLI's model router and checks do)."""
    config = body.get("generationConfig") or {}
    wants_json = config.get("responseMimeType") == "application/json" or "responseJsonSchema" in config or "responseSchema" in config
    text = json.dumps(_json_reply(config.get("responseJsonSchema") or config.get("responseSchema") or {})) if wants_json else REPLY
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 12, "totalTokenCount": 112},
        "modelVersion": "gemini-fake",
    }


def _json_reply(schema: dict[str, Any]) -> Any:
    """A small value that fits `schema` (its first enum value, an empty string, ...)."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {name: _json_reply(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    return "ok"


class FakeModelServer(ThreadingHTTPServer):
    """The server on 127.0.0.1 (a free port), serving from a daemon thread; a context manager."""

    daemon_threads = True

    def __init__(self, log_path: Path | None = None, port: int = 0):
        self.log = ModelLog(log_path)
        self.held = ""  # see hold()
        self.released = threading.Event()
        super().__init__(("127.0.0.1", port), _Handler)
        self._thread = threading.Thread(target=self.serve_forever, name="fake-model", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def hold(self, marker: str) -> None:
        """Keep each generation request whose text holds `marker` unanswered until release()."""
        self.released.clear()
        self.held = marker

    def release(self) -> None:
        self.held = ""
        self.released.set()

    def __enter__(self) -> "FakeModelServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
        self.shutdown()
        self.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--log", type=Path, default=None, help="append every request to this JSONL file")
    args = parser.parse_args()
    with FakeModelServer(args.log, args.port) as server:
        print(f"fake model server on {server.url}; Ctrl-C stops it", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
