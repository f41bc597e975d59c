"""File names, folder names and defaults: every magic value lives here."""

from __future__ import annotations

# --- layout -----------------------------------------------------------------
MEMORY_DIR = "memory"  # Layer 1 daily logs live directly in here
INDEX_DIR = "index"  # memory/index: Layer 2
INDEX_FILE = "index.json"  # memory/index/index.json: master index
EMBEDDINGS_DIR = "embeddings"  # memory/index/embeddings/<id>.json
TRANSCRIPTS_DIR = "transcripts"  # memory/transcripts/<id>.md
ARCHIVE_DIR = "archive"  # memory/archive/YYYY/
QUARANTINE_DIR = "quarantine"  # memory/quarantine/: what doctor could not repair
CACHE_DIR = ".cache"  # memory/.cache: derived, git-ignored, rebuildable
LOCK_FILE = ".lock"  # memory/.lock: cross-process write lock
CONFIG_FILE = "config.yaml"  # memory/config.yaml
GITIGNORE_FILE = ".gitignore"  # memory/.gitignore

MEMORY_MD = "MEMORY.md"
USER_MD = "USER.md"
AGENTS_MD = "AGENTS.md"
LAYER3_FILES = (MEMORY_MD, USER_MD, AGENTS_MD)

INDEX_VERSION = "2.0"
ENTRY_ID_PREFIX = "ctx"

# --- environment ------------------------------------------------------------
ENV_PREFIX = "MEMTOOL_"
ENV_ROOT = "MEMTOOL_ROOT"
GEMINI_KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

# --- defaults -----------------------------------------------------------------
DEFAULT_COMPRESSOR = "local"
DEFAULT_EMBEDDER = "wordllama"
DEFAULT_GEMINI_MODEL = "gemini-2.5-flash"
DEFAULT_GEMINI_EMBED_MODEL = "gemini-embedding-001"
DEFAULT_GEMINI_EMBED_DIM = 768
DEFAULT_GEMINI_WINDOW_CHARS = 300_000  # gemini compressor: longer transcripts are compressed in parts (~75k tokens each)
DEFAULT_BUDGET = 2000  # tokens for `memory context`
DEFAULT_TEMPLATE = "chat"
DEFAULT_LIMIT = 5  # hits for `memory search`
DEFAULT_LOG_RETENTION_DAYS = 90
DEFAULT_ENTRY_RETENTION_DAYS = 365
MAX_TRANSCRIPT_BYTES = 20 * 1024 * 1024  # larger transcripts are refused, limit named
SUMMARY_SENTENCES = 3  # sentences kept by the extractive compressor
MAX_KEYWORDS = 10
MAX_TOPICS = 4
CHUNK_TARGET_TOKENS = 160  # transcript / markdown chunk size for search
RRF_K = 60

IMPORTANCE_LEVELS = ("low", "medium", "high", "critical")
SOURCES = ("user_explicit", "ai_inferred", "system_auto")

# --- promote and the MCP server (`memory promote`, `memory serve`) -----------------------
PROMOTE_MAX_CHARS = 300  # longest insight text `memory promote` writes into MEMORY.md
PROMOTE_DECISIONS_SECTION = "Key decisions"  # default section for entries with decisions
PROMOTE_CONTEXT_SECTION = "Important context"  # default section otherwise
MCP_SERVER_NAME = "memtool"
MCP_MAX_TOKENS = 4000  # default cap on the size of one MCP tool answer (offline token estimate)
MCP_MAX_TOKENS_CEILING = 32000  # largest max_tokens a tool call may ask for
MCP_MIN_TOKENS = 500  # smallest max_tokens a tool call may ask for
MCP_SEARCH_MAX_LIMIT = 50  # most hits one memory_search call may ask for

# --- sync and watch -------------------------------------------------------------
SYNC_MANIFEST_FILE = "sync.json"  # memory/.cache/sync.json: per-file stat + content hash seen by the last sync
SYNC_EMBED_BATCH = 256  # entries embedded (and their files written) per batch; the resume granularity
SYNC_RACY_NS = 2_000_000_000  # files modified this close to the last sync are re-hashed (coarse mtimes)
WATCH_DEBOUNCE_S = 0.3  # quiet period after the last change before a sync
WATCH_MAX_LATENCY_S = 2.0  # a sync starts at most this long after the first change of a burst
# editor and tool droppings the watcher ignores (fnmatch patterns on the file name)
WATCH_IGNORE = (".*", "*~", "*.swp", "*.swx", "*.swo", "4913", ".goutputstream-*", "*.tmp", "#*#")
WATCH_OWN_WRITES_KEPT = 50_000  # paths of the watcher's own recent writes remembered, to ignore their events
FSYNC_THREADS = 16  # batch writes fsync in parallel: journal commits are shared (~3x faster than one by one)
FSYNC_CHUNK = 256  # files held open at once while their fsyncs run
