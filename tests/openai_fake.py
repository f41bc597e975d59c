"""A small real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions endpoint
(POST {base}/chat/completions), as Ollama, llama.cpp's server, vLLM and LM Studio serve it.

Each request is recorded without the key (only whether one was sent and whether it matched).
Answers are deterministic: an entry whose summary names the first words of the transcript; failures
are scripted with fail_next / delay / answer_text.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAKE_OPENAI_KEY = "sk-memtool-test-key-4c1d9e"  # recognisable, so tests can assert it never leaks


@dataclass
class Request:
    path: str
    body: dict[str, Any]
    key_sent: bool
    key_ok: bool

    @property
    def transcript(self) -> str:
        return next((m["content"] for m in self.body.get("messages", []) if m.get("role") == "user"), "")

    @property
    def instruction(self) -> str:
        return next((m["content"] for m in self.body.get("messages", []) if m.get("role") == "system"), "")


@dataclass
class FakeOpenAI:
    url: str = ""
    requests: list[Request] = field(default_factory=list)
    failures: list[tuple[int, str]] = field(default_factory=list)  # (status, message) of the next answers
    delays: list[float] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)  # raw message contents to answer next
    finish_reason: str = "stop"

    def fail_next(self, status: int, times: int = 1, message: str = "scripted failure") -> None:
        self.failures += [(status, message)] * times

    def answer_text(self, *texts: str) -> None:
        self.answers += list(texts)


def entry_for(transcript: str) -> dict[str, Any]:
    first = " ".join(transcript.split()[:4])
    if "summaries of consecutive parts" in transcript:
        return {"summary": f"merged: {first}"}
    return {
        "summary": f"Session about {first}.",
        "keywords": ["redis", "cache"],
        "topics": ["infrastructure"],
        "decisions": ["Use a lock with jittered expiry"],
        "action_items": ["Add a stampede test"],
        "entities": {"people": ["alice"], "systems": ["Redis"], "dates": []},
        "importance": "high",
    }


def _handler(state: FakeOpenAI, key: str):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            auth = self.headers.get("Authorization", "")
            state.requests.append(Request(self.path, body, bool(auth.strip() not in ("", "Bearer")), auth == f"Bearer {key}"))
            if state.delays:
                time.sleep(state.delays.pop(0))
            if not self.path.endswith("/chat/completions"):
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            if state.failures:
                status, message = state.failures.pop(0)
                return self._send(status, {"error": {"message": message, "type": "scripted"}})
            if state.answers:
                content = state.answers.pop(0)
            else:
                system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
                user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
                content = json.dumps(entry_for(("summaries of consecutive parts " if "summaries of consecutive parts" in system else "") + user))
            self._send(
                200,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": body.get("model", ""),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": state.finish_reason}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                },
            )

        def _send(self, status: int, payload: dict[str, Any]):
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

    return Handler


def serve():
    """Start a server; yields its FakeOpenAI state and stops it after (a fixture's body)."""
    state = FakeOpenAI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state, FAKE_OPENAI_KEY))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
