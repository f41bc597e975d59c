"""memtool: file-first memory for AI coding agents.

The flow, in three files:
  memtool/memory.py        transcript -> compress -> files (the write path)
  memtool/search/engine.py files -> derived cache -> hybrid search (the read path)
  memtool/context.py       search hits + Layer 3 files -> token-budgeted context
"""

__version__ = "0.1.0"
