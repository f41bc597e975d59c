"""The `memory` command: thin typer modules that parse, call the core, and render."""

import os

# A `memory` process does small vector work (one matrix-vector product per search). OpenBLAS's
# worker threads only spin at start-up and take the second core from whatever else runs: a cold
# search beside one busy core went 443 -> 391 ms median (bench/scale.py's cold_search_ms). This
# runs before anything imports numpy; a value the user set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
