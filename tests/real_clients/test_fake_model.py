"""The fake model server speaks each API well enough for that API's own client library (in the
default suite: no npm needed, under a second): OpenAI Responses through the openai SDK, Gemini
through google-genai, Anthropic Messages SSE read by hand (the anthropic SDK is not a dependency).
"""

from __future__ import annotations

import http.client
import json

import pytest

from tests.real_clients.fake_model import REPLY, FakeModelServer


@pytest.fixture
def server(tmp_path):
    with FakeModelServer(tmp_path / "requests.jsonl") as fake:
        yield fake


def test_openai_responses_stream_through_the_sdk(server):
    from openai import OpenAI

    client = OpenAI(base_url=f"{server.url}/v1", api_key="sk-fake-secret", max_retries=0)
    events = list(client.responses.create(model="gpt-5", instructions="be brief", input="what did we decide?", stream=True))
    assert events[-1].type == "response.completed"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == REPLY
    (request,) = server.log.generations("openai")
    assert "be brief" in request.text() and "what did we decide?" in request.text()
    assert request.headers["authorization"] == "<set>"  # the key is not logged


def test_gemini_stream_and_json_answers_through_google_genai(server):
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="AIzaFAKE", http_options=types.HttpOptions(base_url=server.url))
    streamed = "".join(chunk.text or "" for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents="what did we decide?"))
    assert streamed == REPLY
    schema = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1}, "choice": {"type": "string", "enum": ["flash", "pro"]}}}
    answer = client.models.generate_content(
        model="gemini-2.5-flash", contents="route this", config=types.GenerateContentConfig(response_mime_type="application/json", response_json_schema=schema)
    )
    assert json.loads(answer.text) == {"score": 1, "choice": "flash"}  # Gemini CLI's router checks its answer against the schema
    assert [r.text() for r in server.log.generations("gemini")] == ["what did we decide?", "route this"]


def test_anthropic_messages_stream_as_server_sent_events(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    body = {"model": "claude-x", "max_tokens": 50, "stream": True, "system": "be brief", "messages": [{"role": "user", "content": "what did we decide?"}]}
    conn.request("POST", "/v1/messages?beta=true", json.dumps(body), {"content-type": "application/json", "x-api-key": "sk-ant-secret"})
    response = conn.getresponse()
    assert response.status == 200 and response.getheader("content-type") == "text/event-stream"
    frames = [f for f in response.read().decode().split("\n\n") if f.strip()]
    names = [f.split("\n")[0].removeprefix("event: ") for f in frames]
    assert names == ["message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    delta = json.loads(frames[3].split("data: ", 1)[1])
    assert delta["delta"]["text"] == REPLY
    (request,) = server.log.generations("anthropic")
    assert request.text() == "be brief\nwhat did we decide?" and request.headers["x-api-key"] == "<set>"
    logged = (server.log.path.read_text(encoding="utf-8") if server.log.path else "").strip().splitlines()
    assert len(logged) == 1 and "sk-ant-secret" not in logged[0]


def test_an_unknown_endpoint_is_logged_and_answered_404(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    conn.request("GET", "/api/hello")
    assert conn.getresponse().status == 404
    assert [(r.api, r.path) for r in server.log.requests] == [("other", "/api/hello")]
    assert "1 request(s) reached the fake model server" in server.log.render()
