"""memtool.context's provider count: `Memory.context` held to the budget by the provider's count (a counting
compressor registered as 'gemini' stands in for the model here; the real SDK path is in
tests/cli/test_gemini_cli.py)."""

from __future__ import annotations

import pytest

from memtool.app import open_memory
from memtool.config import Settings
from memtool.context import MAX_COUNT_REQUESTS
from memtool.errors import ProviderTimeout
from memtool.scaffold import init
from memtool.text import count_tokens
from tests.conftest import FakeCompressor


class CountingCompressor(FakeCompressor):
    """Counts `factor` x the offline count; or raises; records every call."""

    name = "gemini"
    model = "counting-model"

    def __init__(self, factor: float = 1.0, fail: Exception | None = None, fixed: int | None = None):
        self.factor, self.fail, self.fixed = factor, fail, fixed
        self.counted: list[str] = []

    def count_tokens(self, text: str) -> int:
        self.counted.append(text)
        if self.fail:
            raise self.fail
        return self.fixed if self.fixed is not None else int(count_tokens(text) * self.factor) + 1


@pytest.fixture
def mem_with(root, fake_embedder):
    init(root)
    (root / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(f"- Rule {i}: keep migrations reversible and tested." for i in range(60)))
    seed = open_memory(root, embedder=fake_embedder)
    for i in range(8):
        seed.compress(f"Session {i}: we tuned the Redis cache and the Postgres pool for the Billing service.", session=f"s{i}")

    def make(counter: CountingCompressor, compressor: str = "gemini"):
        return open_memory(root, settings=Settings(compressor=compressor), compressor=counter, embedder=fake_embedder)

    return make


def test_under_budget_one_count_and_the_provider_number(mem_with):
    counter = CountingCompressor(factor=0.8)
    res = mem_with(counter).context(budget=300)
    assert counter.counted == [res.text]
    assert res.counter == "counting-model" and res.tokens == int(count_tokens(res.text) * 0.8) + 1 <= 300


@pytest.mark.parametrize("factor", [1.3, 2.5])
def test_over_budget_repacks_within_three_counts(mem_with, factor):
    counter = CountingCompressor(factor=factor)
    res = mem_with(counter).context(budget=300)
    assert 2 <= len(counter.counted) <= MAX_COUNT_REQUESTS
    assert counter.counted[-1] == res.text
    assert res.tokens == int(count_tokens(res.text) * factor) + 1 <= 300
    assert res.budget == 300 and res.truncated and res.counter == "counting-model"


def test_never_under_budget_stops_after_three_counts(mem_with):
    counter = CountingCompressor(fixed=10_000)
    mem = mem_with(counter)
    res = mem.context(budget=300)
    assert len(counter.counted) <= MAX_COUNT_REQUESTS
    assert res.tokens > 300 and "too small" in res.warnings[0]


def test_count_failure_falls_back_to_offline_with_a_warning(mem_with):
    counter = CountingCompressor(fail=ProviderTimeout("no answer within 5 s"))
    mem = mem_with(counter)
    res = mem.context(budget=300)
    assert res.counter == "offline" and res.tokens == count_tokens(res.text) <= 300
    assert "no answer within 5 s" in res.warnings[0] and "offline count" in res.warnings[0]
    assert len(counter.counted) == 1


def test_offline_provider_is_never_asked(mem_with):
    counter = CountingCompressor()
    res = mem_with(counter, compressor="fake").context(budget=300)
    assert counter.counted == [] and res.counter == "offline"


def test_three_counts_over_then_an_estimate(mem_with):
    counter = CountingCompressor(fixed=301)  # always just over: each re-pack is scaled, none confirmed
    res = mem_with(counter).context(budget=300)
    assert len(counter.counted) == MAX_COUNT_REQUESTS
    assert res.counter == "counting-model (estimated)" and res.tokens <= 300
    assert count_tokens(res.text) < count_tokens(counter.counted[-1])  # packed once more, smaller
