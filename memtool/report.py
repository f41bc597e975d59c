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
from memtool.fsutil import atomic_write_many
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
body { margin: 0 auto; max-width: 960px; padding: 24px; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--fg); background: var(--bg); } section { margin: 0 0 28px; }
h1 { margin: 0 0 4px; font-size: 26px; } h2 { margin: 0 0 8px; font-size: 18px; } h3 { margin: 12px 0 4px; font-size: 14px; color: var(--muted); }
.sub { color: var(--muted); margin: 0 0 20px; word-break: break-all; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: 10px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card .v { font-size: 22px; font-weight: 600; } .card .k { color: var(--muted); font-size: 13px; }
.note { color: var(--muted); font-size: 13px; margin: 4px 0 0; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; } @media (max-width: 760px) { .grid2 { grid-template-columns: 1fr; } }
svg.chart { width: 100%; height: auto; display: block; }
svg text { fill: var(--fg); font-size: 12px; } svg .axis { stroke: var(--line); } svg .tick { fill: var(--muted); font-size: 11px; }
svg .bar { fill: var(--bar); } svg .imp-low { fill: #8c959f; } svg .imp-medium { fill: #4f7fd1; }
svg .imp-high { fill: #d4891c; } svg .imp-critical { fill: #cf222e; } .empty { color: var(--muted); font-style: italic; } ul.problems { color: #cf222e; }
"""


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>memtool report</title>
<style>{css}</style></head><body>
<h1>Memory report</h1>
<p class="sub">{root} · {entries} entries · {span}</p>
<section id="summary"><h2>At a glance</h2>{cards}</section>
<section id="weeks"><h2>Entries per week</h2>{weeks}<p class="note">{week_count} weeks, empty weeks included.</p></section>
<div class="grid2">
<section id="topics"><h2>Top topics</h2>{topics}</section>
<section id="importance"><h2>Importance</h2>{importance}</section>
</div>
<section id="compression"><h2>Compression ratio</h2>{ratios}\
<p class="note">Mean {mean}:1, median {median}:1, range {low}:1 to {high}:1.</p></section>
<section id="entities"><h2>Entities</h2><h3>Distinct names per kind</h3>{kinds}\
<div class="grid2"><div><h3>People</h3>{people}</div><div><h3>Systems</h3>{systems}</div></div>\
<p class="note">Browse them as pages with `memory entities --pages` (memory/areas/).</p></section>
{problems}</body></html>
"""
PROBLEMS = """<section id="problems"><h2>Problems</h2><ul class="problems">{}</ul>\
<p class="note">Files that could not be read were left out. `memory doctor` explains and repairs.</p></section>
"""
CARDS = (  # (key in collect(), caption, the value as shown)
    ("entries", "entries", str),
    ("days_with_entries", "days with entries", str),
    ("daily_logs", "daily logs", str),
    ("transcripts", "transcripts kept", str),
    ("pending_embeddings", "pending embeddings", str),
    ("pending_compression", "pending compression", str),
    ("mean_compression_ratio", "mean compression", "{}:1".format),
    ("tokens_original", "tokens in transcripts", "{:,}".format),
    ("tokens_compressed", "tokens in entries", "{:,}".format),
    ("store_bytes", "store size", human_bytes),
    ("cache_bytes", "derived cache", human_bytes),
    ("embedder", "embedder", str),
)
VALUE_STYLE = {"embedder": ' style="font-size:14px"'}  # a model's name is long: smaller type


def render(d: dict) -> str:
    """The page: numbers as they are, every label (from transcripts, so anything) escaped."""
    weeks = week_series(d["entries_per_week"])
    problems = "".join(f"<li>{escape(p)}</li>" for p in d["problems"])
    return PAGE.format(
        css=CSS,
        root=escape(d["root"]),
        entries=d["entries"],
        span=escape(f"{d['first_day']} to {d['last_day']}" if d["entries"] else "no entries yet"),
        cards=_cards(d),
        weeks=_columns("weeks", weeks, "entries"),
        week_count=len(weeks),
        topics=_rows("topics", list(d["top_topics"].items()), "entries", width=HALF),
        importance=_rows("importance", [(k, d["importance"].get(k, 0)) for k in C.IMPORTANCE_LEVELS], "entries", IMPORTANCE_CLASS, HALF),
        ratios=_columns("compression", list(d["compression_ratio_histogram"].items()), "entries"),
        mean=d["mean_compression_ratio"],
        median=d["median_compression_ratio"],
        low=d["compression_ratio_range"][0],
        high=d["compression_ratio_range"][1],
        kinds=_rows("entity-kinds", [(k, d["entities"].get(k, 0)) for k in C.ENTITY_KINDS], "distinct names"),
        people=_rows("people", list(d["top_people"].items()), "entries", width=HALF),
        systems=_rows("systems", list(d["top_systems"].items()), "entries", width=HALF),
        problems=PROBLEMS.format(problems) if problems else "",
    )


def _cards(d: dict) -> str:
    cards = (
        f'<div class="card" data-key="{k}" data-value="{escape(str(d[k]))}"><div class="v"{VALUE_STYLE.get(k, "")}>'
        f'{escape(shown(d[k]))}</div><div class="k">{caption}</div></div>'
        for k, caption, shown in CARDS
    )
    return f'<div class="cards">{"".join(cards)}</div>'


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
        return f'<p class="empty">No {escape(unit)} yet.</p>'
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
        return f'<p class="empty">No {escape(key)} yet.</p>'
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


def write_report(mem: Memory, path: Path | None = None) -> tuple[Path, dict]:
    """Write the page (atomically; left alone if the bytes are the same) and return its path and the numbers.
    Default: memory/.cache/report.html, derived and git-ignored (in memory/ it would be committed)."""
    data = collect(mem)
    target = Path(path) if path else mem.layout.cache_dir / C.REPORT_FILE
    atomic_write_many([(target, render(data).encode("utf-8"))])  # left alone when its bytes are already these
    return target, data
