"""Hybrid search: BM25 (bm25s) + vectors (numpy), fused by weighted reciprocal rank."""
