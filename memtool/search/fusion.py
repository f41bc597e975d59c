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


SIBLINGS_COUNTED = 3  # documents of one result whose scores add up in `sibling_sums`


def sibling_sums(docs: np.ndarray, scores: np.ndarray, group: np.ndarray, weight: float) -> dict[int, tuple[int, float]]:
    """result -> (position of its best doc in `docs`, s1 + w*s2 + w^2*s3) for `docs` best first,
    `scores` theirs: a result whose documents match in several places counts them all."""
    sums: dict[int, tuple[int, float]] = {}
    counted: dict[int, int] = {}
    for i, (g, s) in enumerate(zip(group[docs].tolist(), scores.tolist())):
        c = counted.get(g, 0)
        if c == 0:
            sums[g] = (i, s)
        elif c < SIBLINGS_COUNTED:
            sums[g] = (sums[g][0], sums[g][1] + weight**c * s)
        counted[g] = c + 1
    return sums
