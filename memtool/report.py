"""`memory report`: the numbers of `memory stats` as one self-contained HTML page.

No scripts, no external CSS, fonts or images: inline CSS and SVG charts drawn here, and a Content
Security Policy that forbids loading anything. Every label is escaped (topics and names come from
transcripts, which may hold anything). Each bar carries data-label / data-value attributes, so a
test (or a script) can read the numbers back.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from memtool import constants as C
from memtool.fsutil import atomic_write_text
from memtool.memory import Memory
from memtool.stats import collect, human_bytes, week_series

WIDTH = 720  # chart viewBox width; the page scales it
HALF = 440  # viewBox width of a chart in a half-width column (keeps its text readable)
BAR_ROW = 24  # height of one horizontal bar row
VALUE_LABEL_MIN_STEP = 18  # bars at least this wide (viewBox units) get their value printed above
LABEL_CHARS = 28  # longer labels are cut in the chart (the tooltip has them whole)
IMPORTANCE_CLASS = {"low": "imp-low", "medium": "imp-medium", "high": "imp-high", "critical": "imp-critical"}

CSS = """
:root { --fg: #1f2328; --muted: #59636e; --bg: #ffffff; --card: #f6f8fa; --line: #d1d9e0; --bar: #4f7fd1; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117; --card: #161b22; --line: #3d444d; --bar: #6d9ce8; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 960px; padding: 24px; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
h1 { margin: 0 0 4px; font-size: 26px; } h2 { margin: 0 0 8px; font-size: 18px; } h3 { margin: 12px 0 4px; font-size: 14px; color: var(--muted); }
.sub { color: var(--muted); margin: 0 0 20px; word-break: break-all; }
section { margin: 0 0 28px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: 10px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card .v { font-size: 22px; font-weight: 600; } .card .k { color: var(--muted); font-size: 13px; }
.note { color: var(--muted); font-size: 13px; margin: 4px 0 0; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; } @media (max-width: 760px) { .grid2 { grid-template-columns: 1fr; } }
svg.chart { width: 100%; height: auto; display: block; }
svg text { fill: var(--fg); font-size: 12px; } svg .axis { stroke: var(--line); } svg .tick { fill: var(--muted); font-size: 11px; }
svg .bar { fill: var(--bar); } svg .imp-low { fill: #8c959f; } svg .imp-medium { fill: #4f7fd1; } svg .imp-high { fill: #d4891c; } svg .imp-critical { fill: #cf222e; }
.empty { color: var(--muted); font-style: italic; }
ul.problems { color: #cf222e; }
"""


def render(data: dict) -> str:
    weeks = week_series(data["entries_per_week"])
    span = f"{data['first_day']} to {data['last_day']}" if data["entries"] else "no entries yet"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>memtool report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>Memory report</h1>",
        f'<p class="sub">{escape(data["root"])} · {data["entries"]} entries · {escape(span)}</p>',
        _section("summary", "At a glance", _cards(data)),
        _section("weeks", "Entries per week", _columns("weeks", weeks, "entries"), f"{len(weeks)} weeks, empty weeks included."),
        '<div class="grid2">',
        _section("topics", "Top topics", _rows("topics", list(data["top_topics"].items()), "entries", width=HALF)),
        _section(
            "importance", "Importance", _rows("importance", [(k, data["importance"].get(k, 0)) for k in C.IMPORTANCE_LEVELS], "entries", IMPORTANCE_CLASS, HALF)
        ),
        "</div>",
        _section(
            "compression",
            "Compression ratio",
            _columns("compression", list(data["compression_ratio_histogram"].items()), "entries"),
            f"Mean {data['mean_compression_ratio']}:1, median {data['median_compression_ratio']}:1, "
            f"range {data['compression_ratio_range'][0]}:1 to {data['compression_ratio_range'][1]}:1.",
        ),
        _section("entities", "Entities", _entity_charts(data)),
    ]
    if data["problems"]:
        items = "".join(f"<li>{escape(p)}</li>" for p in data["problems"])
        parts.append(
            _section(
                "problems",
                "Problems",
                f'<ul class="problems">{items}</ul>',
                "Files that could not be read were left out. `memory doctor` explains and repairs.",
            )
        )
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _section(key: str, title: str, body: str, note: str = "") -> str:
    tail = f'<p class="note">{escape(note)}</p>' if note else ""
    return f'<section id="{key}"><h2>{escape(title)}</h2>{body}{tail}</section>'


def _cards(d: dict) -> str:
    cards = [  # (key in collect(), its value, as shown, caption)
        ("entries", d["entries"], str(d["entries"]), "entries"),
        ("days_with_entries", d["days_with_entries"], str(d["days_with_entries"]), "days with entries"),
        ("daily_logs", d["daily_logs"], str(d["daily_logs"]), "daily logs"),
        ("transcripts", d["transcripts"], str(d["transcripts"]), "transcripts kept"),
        ("pending_embeddings", d["pending_embeddings"], str(d["pending_embeddings"]), "pending embeddings"),
        ("pending_compression", d["pending_compression"], str(d["pending_compression"]), "pending compression"),
        ("mean_compression_ratio", d["mean_compression_ratio"], f"{d['mean_compression_ratio']}:1", "mean compression"),
        ("tokens_original", d["tokens_original"], f"{d['tokens_original']:,}", "tokens in transcripts"),
        ("tokens_compressed", d["tokens_compressed"], f"{d['tokens_compressed']:,}", "tokens in entries"),
        ("store_bytes", d["store_bytes"], human_bytes(d["store_bytes"]), "store size"),
        ("cache_bytes", d["cache_bytes"], human_bytes(d["cache_bytes"]), "derived cache"),
    ]
    out = [
        f'<div class="card" data-key="{k}" data-value="{v}"><div class="v">{escape(shown)}</div><div class="k">{caption}</div></div>'
        for k, v, shown, caption in cards
    ]
    out.append(
        f'<div class="card" data-key="embedder" data-value="{escape(d["embedder"])}"><div class="v" style="font-size:14px">'
        f'{escape(d["embedder"])}</div><div class="k">embedder</div></div>'
    )
    return f'<div class="cards">{"".join(out)}</div>'


def _empty(what: str) -> str:
    return f'<p class="empty">No {escape(what)} yet.</p>'


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def _bar(x: float, y: float, w: float, h: float, label: str, value: int, unit: str, cls: str = "bar") -> str:
    tip = escape(f"{label}: {value} {unit}")
    return (
        f'<rect class="{cls}" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="2" '
        f'data-label="{escape(label)}" data-value="{value}"><title>{tip}</title></rect>'
    )


def _columns(key: str, series: list[tuple[str, int]], unit: str) -> str:
    """Vertical bars, one per (label, value), labels under every k-th bar so they never overlap."""
    if not series:
        return _empty(unit)
    height, top, bottom, left, right = 180, 18, 28, 36, 30
    plot_h, plot_w = height - top - bottom, WIDTH - left - right
    peak = max(v for _, v in series) or 1
    step = plot_w / len(series)
    every = max(1, -(-len(series) * 70 // plot_w))  # ~70 px per label
    out = [
        f'<svg class="chart" id="chart-{key}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(key)} chart">',
        f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{WIDTH - right}" y2="{top + plot_h}"/>',
        f'<text class="tick" x="{left - 6}" y="{top + 4}" text-anchor="end">{peak}</text>',
        f'<text class="tick" x="{left - 6}" y="{top + plot_h}" text-anchor="end">0</text>',
    ]
    for i, (label, value) in enumerate(series):
        h = plot_h * value / peak
        x = left + i * step
        out.append(_bar(x + step * 0.12, top + plot_h - h, max(step * 0.76, 1.0), h, label, value, unit))
        if value and step >= VALUE_LABEL_MIN_STEP:
            out.append(f'<text class="tick" x="{x + step / 2:.1f}" y="{top + plot_h - h - 4:.1f}" text-anchor="middle">{value}</text>')
        if i % every == 0:
            out.append(f'<text class="tick" x="{x + step / 2:.1f}" y="{height - 8}" text-anchor="middle">{escape(_short(label))}</text>')
    out.append("</svg>")
    return "".join(out)


def _rows(key: str, items: list[tuple[str, int]], unit: str, classes: dict[str, str] | None = None, width: int = WIDTH) -> str:
    """Horizontal bars with the label on the left and the value at the bar's end."""
    if not items:
        return _empty(key)
    label_w, right = (200 if width == WIDTH else 150), 40
    height = BAR_ROW * len(items) + 8
    peak = max(v for _, v in items) or 1
    out = [f'<svg class="chart" id="chart-{key}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(key)} chart">']
    for i, (label, value) in enumerate(items):
        y = 4 + i * BAR_ROW
        w = (width - label_w - right) * value / peak
        cls = (classes or {}).get(label, "bar")
        out.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">{escape(_short(label))}</text>')
        out.append(_bar(label_w, y + 3, w, BAR_ROW - 6, label, value, unit, cls))
        out.append(f'<text class="tick" x="{label_w + w + 6:.1f}" y="{y + 16}">{value}</text>')
    out.append("</svg>")
    return "".join(out)


def _entity_charts(d: dict) -> str:
    counts = _rows("entity-kinds", [(k, d["entities"].get(k, 0)) for k in C.ENTITY_KINDS], "distinct names")
    people = _rows("people", list(d["top_people"].items()), "entries", width=HALF)
    systems = _rows("systems", list(d["top_systems"].items()), "entries", width=HALF)
    return (
        f"<h3>Distinct names per kind</h3>{counts}"
        f'<div class="grid2"><div><h3>People</h3>{people}</div><div><h3>Systems</h3>{systems}</div></div>'
        '<p class="note">Browse them as pages with `memory entities --pages` (memory/areas/).</p>'
    )


def write_report(mem: Memory, path: Path | None = None) -> tuple[Path, dict]:
    """Write the page (atomically; left alone if the bytes are the same) and return its path and the numbers."""
    data = collect(mem)
    target = Path(path) if path else mem.layout.memory_dir / C.REPORT_FILE
    text = render(data)
    if not (target.is_file() and not target.is_symlink() and target.read_bytes() == text.encode("utf-8")):
        atomic_write_text(target, text)
    return target, data
