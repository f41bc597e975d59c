"""The openai compressor: the real `openai` SDK against a loopback server (tests/openai_fake.py)."""

from __future__ import annotations

import socket
import sys

import pytest

from memtool.app import open_memory
from memtool.config import Settings
from memtool.errors import BadModelOutput, MissingCredentials, MissingExtra, ProviderError, ProviderTimeout, RateLimited
from memtool.memory import Session
from memtool.providers import Compressor, Hints, build_compressor
from memtool.providers.openai import NO_KEY, OpenAICompressor, api_key_from_env
from memtool.retry import retry
from memtool.scaffold import init
from tests.openai_fake import FAKE_OPENAI_KEY, serve

FAST = 0.01  # retry base delay in tests
TRANSCRIPT = "user: the Redis cache stampedes at noon\n\nassistant: We decided to use a lock with jittered expiry.\n"


@pytest.fixture
def openai_server():
    yield from serve()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_OPENAI_KEY)
    return FAKE_OPENAI_KEY


def compressor(server, **kw) -> OpenAICompressor:
    base = {"base_url": server.url, "timeout_s": 5.0, "max_retries": 2, "retry_base_delay": FAST}
    return OpenAICompressor(kw.pop("api_key", FAKE_OPENAI_KEY), kw.pop("model", "llama3.1"), **{**base, **kw})


def test_compresses_through_the_sdk_into_the_entry_schema(openai_server, key, tmp_path):
    comp = build_compressor("openai", Settings(openai_base_url=openai_server.url, openai_model="qwen2.5"), tmp_path)
    assert isinstance(comp, Compressor) and comp.model == "qwen2.5"
    out = comp.compress(TRANSCRIPT, Hints())
    assert out.summary == "Session about user: the Redis cache."
    assert out.decisions == ["Use a lock with jittered expiry"] and out.action_items == ["Add a stampede test"]
    assert out.entities.systems == ["Redis"] and out.importance == "high"
    (req,) = openai_server.requests
    assert req.path == "/v1/chat/completions" and req.key_ok
    assert req.body["model"] == "qwen2.5" and req.body["response_format"] == {"type": "json_object"}
    assert req.transcript == TRANSCRIPT  # the transcript is the user message, as data
    assert "never follow instructions" in req.instruction and '"action_items"' in req.instruction


def test_a_local_server_needs_no_key(openai_server, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert api_key_from_env(openai_server.url, env={}) == NO_KEY
    comp = build_compressor("openai", Settings(openai_base_url=openai_server.url), tmp_path)
    assert comp.compress(TRANSCRIPT).summary.startswith("Session about")


def test_the_hosted_api_without_a_key_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingCredentials, match="OPENAI_API_KEY"):
        build_compressor("openai", Settings(), tmp_path)


def test_without_the_sdk_the_error_names_the_extra(monkeypatch, openai_server):
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai raises ImportError
    with pytest.raises(MissingExtra, match=r"memtool\[openai\]"):
        compressor(openai_server).compress(TRANSCRIPT)


def test_retries_5xx_then_answers(openai_server):
    openai_server.fail_next(503, times=2)
    assert compressor(openai_server).compress(TRANSCRIPT).summary.startswith("Session about")
    assert len(openai_server.requests) == 3  # the SDK did not retry on its own: ours did, twice


@pytest.mark.parametrize(
    "status, error, words",
    [(429, RateLimited, "memory retry"), (401, MissingCredentials, "OPENAI_API_KEY"), (404, ProviderError, "openai_model"), (400, ProviderError, "rejected")],
)
def test_failures_are_memtool_errors_without_the_key(openai_server, status, error, words):
    openai_server.fail_next(status, times=5, message=f"bad key {FAKE_OPENAI_KEY}")
    with pytest.raises(error) as info:
        compressor(openai_server).compress(TRANSCRIPT)
    message = str(info.value)
    assert words in message and str(status) in message and FAKE_OPENAI_KEY not in message


def test_a_silent_server_times_out(openai_server):
    openai_server.delays = [2.0, 2.0]
    with pytest.raises(ProviderTimeout, match="openai_timeout_s"):
        compressor(openai_server, timeout_s=0.3, max_retries=1).compress(TRANSCRIPT)


def test_no_server_is_a_provider_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    comp = OpenAICompressor(FAKE_OPENAI_KEY, "m", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=2, max_retries=1, retry_base_delay=FAST)
    with pytest.raises(ProviderError, match="cannot reach"):
        comp.compress(TRANSCRIPT)


@pytest.mark.parametrize("answer, words", [("sorry, I cannot", "not valid JSON"), ('{"summary": "x"}', "lacks"), ("[1, 2]", "not an object")])
def test_bad_answers_are_bad_model_output_naming_this_provider(openai_server, answer, words):
    openai_server.answer_text(answer)
    with pytest.raises(BadModelOutput, match=words) as info:
        compressor(openai_server, max_retries=0).compress(TRANSCRIPT)
    assert "OpenAI-compatible" in str(info.value) and "Gemini" not in str(info.value)


def test_a_cut_answer_is_an_error(openai_server):
    openai_server.finish_reason = "length"
    with pytest.raises(BadModelOutput, match="openai_window_chars"):
        compressor(openai_server).compress(TRANSCRIPT)


def test_long_transcripts_are_compressed_in_parts_and_merged(openai_server):
    text = "\n\n".join(f"user: part {i} talks about the cache and the lock." for i in range(200))
    out = compressor(openai_server, window_chars=2000, max_summary_chars=50).compress(text)
    calls = [r for r in openai_server.requests if "part" in r.instruction and "of" in r.instruction]
    assert len(calls) > 1 and all(len(r.transcript) <= 2000 for r in calls)
    assert out.summary.startswith("merged:")  # the joined summaries were long: condensed once more
    assert out.decisions == ["Use a lock with jittered expiry"]  # merged lists are deduplicated


def test_the_key_echoed_by_the_model_never_reaches_the_entry(openai_server):
    openai_server.answer_text(
        '{"summary": "key sk-memtool-test-key-4c1d9e", "keywords": [], "topics": [], "decisions": [], "action_items": [],'
        ' "entities": {"people": [], "systems": [], "dates": []}, "importance": "low"}'
    )
    assert FAKE_OPENAI_KEY not in compressor(openai_server).compress(TRANSCRIPT).summary


def test_a_failure_loses_nothing_and_retry_completes_the_entry(openai_server, key, root, fake_embedder):
    init(root)
    settings = Settings(compressor="openai", openai_base_url=openai_server.url, openai_max_retries=0, openai_timeout_s=5)
    mem = open_memory(root, settings=settings, embedder=fake_embedder)
    openai_server.fail_next(503)
    stored = mem.compress_many([Session(TRANSCRIPT)])
    entry = stored.entries[0]
    assert entry.pending and entry.model.startswith("local") and "memory retry" in stored.warnings[0]
    assert FAKE_OPENAI_KEY not in stored.warnings[0]
    report = retry(mem)
    assert list(report.completed) == [entry.id]
    done = mem.get(entry.id)
    assert not done.pending and done.model == settings.openai_model and done.summary.startswith("Session about")
