"""`memory` end to end with the Gemini providers: the real google-genai SDK talks HTTP to the local
fake server (tests/gemini_fake.py). Every test also checks, at teardown, that the API key appears
in no output and in no file under tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtool.cli.main import app
from tests.conftest import embedding_path, read_vector_at, transcript_path
from tests.gemini_fake import FAKE_KEY, FakeGemini, fake_token_count

GEMINI_MODEL = "gemini-2.5-flash"
EMBED_MODEL = "gemini-embedding-001"
DIM = 64

REDIS = (
    "We fixed the Redis cache stampede in the Billing service with @alice. "
    "We decided to use a lock with jittered expiry. TODO add a Grafana alert for cache misses."
)
POSTGRES = (
    "Migrated the Postgres database of the Ledger service to version 16 with @bob. We decided to run the migration at night. TODO check the Vacuum settings."
)


class Cli:
    """Runs `memory` in-process; keeps every output so teardown can look for the key."""

    def __init__(self, server: FakeGemini, root: Path):
        self.server, self.root = server, root
        self.outputs: list[str] = []
        self.runner = CliRunner()

    def env(self, key: bool = True, **settings: str | int) -> dict[str, str | None]:
        env: dict[str, str | None] = {
            "MEMTOOL_GEMINI_BASE_URL": self.server.url,
            "MEMTOOL_GEMINI_MAX_RETRIES": "0",  # back-off itself is covered in tests/providers
            "MEMTOOL_GEMINI_TIMEOUT_S": "5",
            "GEMINI_API_KEY": FAKE_KEY if key else None,
            "GOOGLE_API_KEY": None,
        }
        env.update({f"MEMTOOL_{k.upper()}": str(v) for k, v in settings.items()})
        return env

    def __call__(self, *args: str, code: int = 0, key: bool = True, **settings: str | int):
        res = self.runner.invoke(app, list(args), env=self.env(key, **settings))
        self.outputs.append(res.stdout + res.stderr)
        assert res.exit_code == code, f"memory {' '.join(args)} -> {res.exit_code}\n{res.stdout}\n{res.stderr}\n{res.exception!r}"
        return res

    def transcript(self, name: str, text: str) -> str:
        path = self.root / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    def entries(self) -> list[dict]:
        out = []
        for day in sorted((self.root / "memory" / "index").glob("????-??-??.json")):
            out.extend(json.loads(day.read_text())["entries"])
        return out

    def embedding(self, entry_id: str) -> dict | None:
        path = embedding_path(self.root, entry_id)
        return read_vector_at(path) if path.is_file() else None


@pytest.fixture
def cli(gemini_server, root, tmp_path):
    c = Cli(gemini_server, root)
    c("init")
    yield c
    for out in c.outputs:
        assert FAKE_KEY not in out
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert FAKE_KEY.encode() not in path.read_bytes(), f"the API key was written to {path}"
    assert not any(r.key_in_url for r in gemini_server.requests)


def test_compress_with_provider_gemini_records_the_model(cli, gemini_server):
    path = cli.transcript("s.md", REDIS)
    res = cli("compress", path, "--provider", "gemini", "--json")
    [entry] = json.loads(res.stdout)
    assert (entry.pop("status"), entry.pop("inputs")) == ("stored", [path])  # what this compress did, beside the stored entry
    assert entry["model"] == GEMINI_MODEL and entry["pending"] is False
    assert entry["summary"] == "We fixed the Redis cache stampede in the Billing service with @alice."
    assert entry["decisions"] == ["We decided to use a lock with jittered expiry."]
    assert cli.entries() == [entry]
    [call] = gemini_server.calls("generateContent")
    assert call.model == GEMINI_MODEL and call.key_ok
    shown = json.loads(cli("show", entry["id"], "--json").stdout)
    assert shown["model"] == GEMINI_MODEL


def test_gemini_from_config_yaml_compress_and_search(cli, gemini_server, root):
    (root / "memory" / "config.yaml").write_text(f"compressor: gemini\nembedder: gemini\ngemini_embed_dim: {DIM}\n")
    cli("config", "trust")  # a repository's config sends data away only once approved (tests/test_config.py)
    cli("compress", cli.transcript("redis.md", REDIS), "--session", "redis")
    cli("compress", cli.transcript("pg.md", POSTGRES), "--session", "pg")
    entries = cli.entries()
    assert {e["model"] for e in entries} == {GEMINI_MODEL}
    for e in entries:
        emb = cli.embedding(e["id"])
        assert emb["model"] == EMBED_MODEL and emb["dim"] == DIM == len(emb["embedding"])

    hits = json.loads(cli("search", "Postgres migration Ledger", "--json").stdout)
    assert hits[0]["source_session"] == "pg"
    tasks = [r.get("taskType") for call in gemini_server.calls("batchEmbedContents") for r in call.body["requests"]]
    assert "RETRIEVAL_DOCUMENT" in tasks and tasks[-1] == "RETRIEVAL_QUERY"
    dims = {r.get("outputDimensionality") for call in gemini_server.calls("batchEmbedContents") for r in call.body["requests"]}
    assert dims == {DIM}


def test_rate_limited_compress_saves_pending_then_retry_completes(cli, gemini_server, root):
    gemini = {"embedder": "gemini", "gemini_embed_dim": DIM, "keep_transcripts": "false"}
    gemini_server.fail_next(429, times=1000)  # quota exhausted, for both generateContent and embeddings
    res = cli("compress", cli.transcript("s.md", REDIS), "--provider", "gemini", "--importance", "high", "--session", "s1", **gemini)
    assert "quota" in res.stderr and "memory retry" in res.stderr
    assert "pending" in res.stdout
    [stand_in] = cli.entries()
    assert stand_in["pending"] is True and stand_in["model"] != GEMINI_MODEL
    transcript = transcript_path(root, stand_in["id"])
    assert transcript.is_file(), "a pending entry keeps its transcript even with keep_transcripts: false"
    assert cli.embedding(stand_in["id"]) is None

    res = cli("retry", code=5, **gemini)  # the configured compressor is local: says what to do
    assert "--provider gemini" in res.stderr
    res = cli("retry", "--provider", "gemini", code=6, **gemini)
    assert "still pending" in res.stderr and "quota" in res.stderr
    assert cli.entries() == [stand_in]

    gemini_server.reset()  # the quota is back
    report = json.loads(cli("retry", "--provider", "gemini", "--json", **gemini).stdout)
    assert report["completed"] == {stand_in["id"]: GEMINI_MODEL} and report["ok"]
    [done] = cli.entries()
    assert done["pending"] is False and done["model"] == GEMINI_MODEL
    for key in ("id", "timestamp", "source_session", "source", "agent", "trusted", "tokens_original"):
        assert done[key] == stand_in[key]
    assert done["importance"] == "high"  # the user's importance is never lowered
    assert done["summary"] == "We fixed the Redis cache stampede in the Billing service with @alice."
    assert cli.embedding(done["id"])["model"] == EMBED_MODEL
    assert not transcript.exists(), "keep_transcripts: false drops the transcript once completed"
    index = json.loads((root / "memory" / "index" / "index.json").read_text())
    assert [e["model"] for e in index["entries"]] == [GEMINI_MODEL]

    res = cli("retry", **gemini)
    assert "nothing to retry" in res.stdout


def test_embedding_failure_saves_without_vector_then_retry_embeds(cli, gemini_server):
    gemini = {"embedder": "gemini", "gemini_embed_dim": DIM}
    gemini_server.fail_next(503, times=1)
    res = cli("compress", cli.transcript("s.md", REDIS), **gemini)
    assert "embedding failed" in res.stderr and "memory retry" in res.stderr
    [entry] = cli.entries()
    assert entry["pending"] is False and cli.embedding(entry["id"]) is None

    res = cli("retry", **gemini)
    assert "1 entry embedded with gemini-embedding-001" in res.stdout
    emb = cli.embedding(entry["id"])
    assert emb["model"] == EMBED_MODEL and emb["dim"] == DIM


def test_missing_key_names_both_variables_and_stores_nothing(cli, gemini_server, root):
    res = cli("compress", cli.transcript("s.md", REDIS), "--provider", "gemini", key=False, code=7)
    assert "GEMINI_API_KEY" in res.stderr and "GOOGLE_API_KEY" in res.stderr
    assert cli.entries() == []
    assert [p for p in (root / "memory").rglob("*") if p.is_file() and ("transcripts" in p.parts or "embeddings" in p.parts)] == []
    res = cli("search", "redis", key=False, code=7, embedder="gemini")
    assert "GEMINI_API_KEY" in res.stderr
    assert gemini_server.requests == []


def test_wordllama_store_searched_with_gemini_names_reembed(cli, gemini_server):
    cli("compress", cli.transcript("s.md", REDIS))  # local compressor, wordllama embedder
    [entry] = cli.entries()
    assert cli.embedding(entry["id"])["model"] != EMBED_MODEL
    res = cli("search", "redis", code=8, embedder="gemini", gemini_embed_dim=DIM)
    assert "memory reembed" in res.stderr


def test_rejected_key_echoed_by_the_server_is_scrubbed(cli, gemini_server):
    gemini_server.fail_next(429, times=1, echo_key=True)
    res = cli("compress", cli.transcript("s.md", REDIS), "--provider", "gemini")
    assert "[REDACTED]" in res.stderr  # the key itself is checked at teardown


# --- token counting in `memory context` ---------------------------------------------------------


class InflatedCounts(FakeGemini):
    """Counts `factor` times the usual fake count, so the provider disagrees with the offline count."""

    factor = 1.0

    def _count(self, rec):
        return {"totalTokens": int(super()._count(rec)["totalTokens"] * self.factor) + 1}


@pytest.fixture
def inflated():
    server = InflatedCounts().start()
    try:
        yield server
    finally:
        server.stop()


def _fill(cli: Cli, root: Path) -> None:
    (root / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(f"- Rule {i}: always run the linters before the tests." for i in range(40)) + "\n")
    files = [cli.transcript(f"s{i}.md", text + f" Session number {i}.") for i, text in enumerate([REDIS, POSTGRES] * 3)]
    cli("compress", *files, "--provider", "local")


def test_context_is_counted_by_gemini_when_configured(cli, gemini_server, root):
    _fill(cli, root)
    offline = json.loads(cli("context", "--json", "--budget", "300").stdout)
    assert offline["counter"] == "offline" and gemini_server.calls("countTokens") == []

    res = json.loads(cli("context", "--json", "--budget", "300", compressor="gemini").stdout)
    [call] = gemini_server.calls("countTokens")
    assert res["counter"] == GEMINI_MODEL and res["tokens"] == fake_token_count(res["text"]) <= 300
    assert call.texts == [res["text"]]


def test_context_repacks_when_gemini_counts_more(inflated, root):
    cli = Cli(inflated, root)
    cli("init")
    _fill(cli, root)
    inflated.factor = 1.8  # the fake counts fewer tokens than the offline estimate; make it count more
    res = json.loads(cli("context", "--json", "--budget", "300", compressor="gemini").stdout)
    calls = inflated.calls("countTokens")
    assert 2 <= len(calls) <= 3
    assert res["counter"] == GEMINI_MODEL and res["tokens"] <= 300 and res["budget"] == 300
    assert res["tokens"] == int(fake_token_count(res["text"]) * 1.8) + 1  # the last count is of the text returned
    assert res["truncated"]


def test_context_falls_back_to_offline_count_when_counting_fails(cli, gemini_server, root):
    _fill(cli, root)
    gemini_server.fail_next(500, times=1)
    res = cli("context", "--budget", "300", compressor="gemini")
    assert "used the offline count" in res.stderr and "HTTP 500" in res.stderr
    assert res.stdout.strip()
    res = cli("context", "--budget", "300", compressor="gemini", key=False)  # no key: offline, with a warning
    assert "GEMINI_API_KEY" in res.stderr and res.stdout.strip()


# --- one real process -------------------------------------------------------------------------


def test_real_subprocess_compress_and_search_with_gemini(cli, gemini_server, root):
    path = cli.transcript("s.md", REDIS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_") and k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    env.update({k: v for k, v in cli.env(embedder="gemini", gemini_embed_dim=DIM).items() if v is not None})
    env["MEMTOOL_ROOT"] = str(root)
    memory = [sys.executable, "-m", "memtool"]
    out = subprocess.run([*memory, "compress", path, "--provider", "gemini", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    [entry] = json.loads(out.stdout)
    assert entry["model"] == GEMINI_MODEL
    found = subprocess.run([*memory, "search", "Redis stampede", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["id"] == entry["id"]
    cli.outputs += [out.stdout + out.stderr, found.stdout + found.stderr]
    assert [c.key_ok for c in gemini_server.requests] == [True] * len(gemini_server.requests)
