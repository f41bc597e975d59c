"""Hybrid search over the derived store (store.py, SQLite): BM25 over our own postings + vectors (numpy), ranked in engine.py."""
