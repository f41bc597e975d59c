"""Rank fusion of several scored channels."""

from __future__ import annotations

import numpy as np


def top_ranks(scores: np.ndarray, allowed: np.ndarray, depth: int, positive_only: bool) -> tuple[np.ndarray, np.ndarray]:
    """(doc indices, 1-based ranks) of the `depth` best allowed docs in one channel."""
    cand = np.flatnonzero(allowed & (scores > 0)) if positive_only else np.flatnonzero(allowed)
    if cand.size == 0:
        return cand, cand
    if cand.size > depth:
        part = np.argpartition(-scores[cand], depth - 1)[:depth]
        cand = cand[part]
    order = cand[np.argsort(-scores[cand], kind="stable")]
    return order, np.arange(1, order.size + 1)


def weighted_rrf(channels: list[tuple[np.ndarray, np.ndarray, float]], k: int) -> dict[int, float]:
    """score(d) = sum over channels of weight / (k + rank of d in that channel)."""
    fused: dict[int, float] = {}
    for docs, ranks, weight in channels:
        if weight <= 0:
            continue
        for d, r in zip(docs.tolist(), ranks.tolist()):
            fused[d] = fused.get(d, 0.0) + weight / (k + r)
    return fused
