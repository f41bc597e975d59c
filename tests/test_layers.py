"""The layering rule of docs/design.md ("Layers"): every import inside memtool/ goes to a module of the
same layer or one below, counting imports inside functions and under TYPE_CHECKING, and no two
modules import each other, directly or around a loop, counting imports inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "memtool"
LAYERS = ["primitives", "files", "settings and providers", "derived cache and search", "use cases", "front doors"]
# module (or package: every module under it) -> layer; the table docs/design.md shows
LAYER_OF = {
    **dict.fromkeys(
        ["memtool", "agent_history", "chunking", "constants", "dates", "errors", "extras", "jsonc", "mcp_fit", "models", "quoting", "redact", "text"]
        + ["transcripts"],
        "primitives",
    ),
    **dict.fromkeys(["cache", "confine", "dayfile", "fsutil", "roots", "session_vectors", "store", "tombstones"], "files"),
    **dict.fromkeys(["config", "providers"], "settings and providers"),
    **dict.fromkeys(["docfreq", "index_json", "search", "sync_scan"], "derived cache and search"),
    **dict.fromkeys(
        ["archive", "backup", "context", "dedupe", "doctor", "edit", "entities", "export", "forget", "gitmerge", "importer", "memory", "migrate"]
        + ["promote", "recall", "report", "retry", "scaffold", "stats", "sync", "watch"],
        "use cases",
    ),
    **dict.fromkeys(["__main__", "app", "cli", "hooks", "mcp_http", "mcp_server", "mcp_tools", "ui"], "front doors"),
}


def module_name(path: Path) -> str:
    parts = ["memtool", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> str:
    parts = module.split(".")
    if module == "memtool":
        return LAYER_OF["memtool"]
    for n in range(len(parts), 1, -1):  # a new module is not "memtool" (primitives) by default: it must be named
        key = ".".join(parts[1:n])
        if key in LAYER_OF:
            return LAYER_OF[key]
    raise AssertionError(f"{module} has no layer: add it to LAYER_OF (tests/test_layers.py) and to the table in docs/design.md")


def imports(module: str) -> list[tuple[str, int, bool]]:
    """(memtool module imported, line, under `if TYPE_CHECKING:`) for every import in `module`, in functions too."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for b in node.body for n in ast.walk(b)
    }
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *([base] if base else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        found += [(t, node.lineno, id(node) in typing_only) for t in targets if t == "memtool" or t.startswith("memtool.")]
    return found


def test_every_module_has_a_layer():
    assert [m for m in MODULES if not layer(m)] == []


def test_imports_go_to_the_same_layer_or_below():
    upward = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{line}: {m} ({layer(m)}) imports {t} ({layer(t)})"
        for m in MODULES
        for t, line, _ in imports(m)
        if LAYERS.index(layer(t)) > LAYERS.index(layer(m))
    ]
    assert upward == []


def test_no_import_cycle_counting_imports_inside_functions():
    graph = {m: {t for t, _, typing_only in imports(m) if not typing_only and t != m} for m in MODULES}
    for m in MODULES:  # importing memtool.a.b runs memtool/a/__init__.py first (already running for a module inside memtool.a)
        parents = {t.rsplit(".", k)[0] for t in graph[m] for k in range(1, t.count("."))}
        graph[m] |= {p for p in parents if p in MODULES and not f"{m}.".startswith(f"{p}.")}
    seen: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def walk(m: str) -> list[str] | None:
        seen[m] = 1
        path.append(m)
        for t in sorted(graph[m]):
            if seen.get(t) == 1:
                return path[path.index(t) :] + [t]
            if t not in seen and (loop := walk(t)):
                return loop
        seen[m] = 2
        path.pop()
        return None

    for m in MODULES:
        if m not in seen and (loop := walk(m)):
            raise AssertionError("import cycle: " + " -> ".join(loop))


def test_the_rule_sees_an_upward_import_inside_a_function(tmp_path, monkeypatch):
    """The check itself: an upward import hidden in a function body is found (and named)."""
    fake = tmp_path / "store.py"
    fake.write_text("def f():\n    from memtool.memory import Memory\n", encoding="utf-8")
    monkeypatch.setitem(MODULES, "memtool.store", fake)
    assert ("memtool.memory", 2, False) in imports("memtool.store")
    assert LAYERS.index(layer("memtool.memory")) > LAYERS.index(layer("memtool.store"))
