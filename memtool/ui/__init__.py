"""`memory ui`: a local viewer in the browser for one memory root (memtool/ui/server.py), safe by
construction (memtool/ui/guard.py), over the core use cases the CLI calls (memtool/ui/api.py)."""
