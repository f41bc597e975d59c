"""The `memory` command: thin typer modules that parse, call the core, and render."""
