"""Hold `memory context` to its budget by the provider's own token count.

The packer counts offline (`memtool.text.count_tokens`: 11-19 % above a SentencePiece tokenizer,
measured by bench/tokens.py). When the configured compressor or embedder is Gemini, the packed
text is counted once by the model; if that count is over the budget, the bundle is packed again
with the budget scaled by the measured ratio. At most MAX_COUNT_REQUESTS count requests are made.
A count that fails falls back to the offline count with a warning: counting never fails a context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from memtool.context import ContextResult
from memtool.errors import ProviderError
from memtool.providers import TokenCounter

if TYPE_CHECKING:
    from memtool.config import Settings
    from memtool.providers import Compressor, Embedder

PROVIDER = "gemini"  # the provider whose own count is used
MAX_COUNT_REQUESTS = 3
REPACK_MARGIN = 0.97  # aim slightly under the budget when packing again
MIN_PACK_BUDGET = 50  # pack() refuses smaller budgets


@dataclass
class Counting:
    """What the provider's count is taken with: the settings, the compressor factory and the embedder,
    and where warnings go (the caller's list). No Memory: budget is below it, not beside it."""

    settings: Settings
    compressor: Callable[[str], Compressor]
    embedder: Embedder
    warnings: list[str]


def provider_counter(c: Counting) -> tuple[TokenCounter, str] | None:
    """(counter, model name) when the configured compressor or embedder is Gemini, else None.

    Raises ProviderError when the counter cannot be built (no API key)."""
    s = c.settings
    if s.compressor == PROVIDER:
        compressor = c.compressor(PROVIDER)
        if isinstance(compressor, TokenCounter):
            return compressor, compressor.model
    if s.embedder == PROVIDER:
        from memtool.providers.gemini import GeminiEmbedder, GeminiTokenCounter

        if isinstance(c.embedder, GeminiEmbedder):  # count with the generation model, which reads the context
            return GeminiTokenCounter(c.embedder.client, s.gemini_model), s.gemini_model
    return None


def fit_to_provider_count(counting: Counting, pack_at: Callable[[int], ContextResult], budget: int) -> ContextResult:
    """pack_at(budget), checked (and re-packed if needed) against the provider's count."""
    res = pack_at(budget)
    if PROVIDER not in (counting.settings.compressor, counting.settings.embedder):
        return res
    try:
        found = provider_counter(counting)
    except ProviderError as exc:
        counting.warnings.append(f"context: cannot count tokens with Gemini ({exc}); used the offline count")
        return res
    if found is None:
        return res
    counter, model = found
    target, ratio = budget, 1.0
    for _ in range(MAX_COUNT_REQUESTS):
        try:
            counted = counter.count_tokens(res.text)
        except ProviderError as exc:
            counting.warnings.append(f"context: Gemini token count failed ({exc}); used the offline count")
            return res
        if counted <= budget:
            res.tokens, res.counter = counted, model
            return res
        ratio = counted / max(res.tokens, 1)  # provider tokens per offline token, for this text
        smaller = min(target - 1, int(budget / ratio * REPACK_MARGIN))
        if smaller < MIN_PACK_BUDGET:
            counting.warnings.append(f"context: {counted} tokens by {model}'s count, over the budget of {budget}; the budget is too small to fit")
            res.tokens, res.counter = counted, model
            return res
        target = smaller
        res = pack_at(target)
        res.budget, res.truncated = budget, True
    # every count so far was over: this last packing is scaled by the latest ratio but not counted again
    res.tokens, res.counter = math.ceil(res.tokens * ratio), f"{model} (estimated)"
    return res
