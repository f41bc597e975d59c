"""Hybrid search over the cache (memtool/cache.py; read.py reads it, build.py writes it): BM25 over our own postings + vectors (numpy), ranked in engine.py."""
