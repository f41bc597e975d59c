"""Domain errors. Each carries an actionable message and maps once to an exit code, given where the
class is declared (`class X(Base, exit_code=N)`); a subclass that gives none keeps its base's."""

from __future__ import annotations


class MemtoolError(Exception):
    """Base class: the message is shown to the user as-is."""

    exit_code = 1

    def __init_subclass__(cls, exit_code: int | None = None) -> None:
        cls.exit_code = exit_code or cls.exit_code


class BadInput(MemtoolError, exit_code=2):
    """The user gave something we cannot use (empty, binary, too large, bad option value)."""


class NotAMemoryRoot(MemtoolError, exit_code=3): ...


class StoreCorrupt(MemtoolError, exit_code=4):
    """A file in the store cannot be parsed; the message names the path and line."""


class ConfigError(MemtoolError, exit_code=5): ...


class ProviderError(MemtoolError, exit_code=6):
    """A compressor or embedder failed (network, quota, bad answer)."""


class MissingCredentials(ProviderError, exit_code=7): ...


class DimensionMismatch(MemtoolError, exit_code=8): ...


class NotFound(MemtoolError, exit_code=9): ...


class StorageError(MemtoolError, exit_code=10):
    """The disk refused a write (read-only, full). Nothing stored was changed."""


class WouldOverwrite(MemtoolError, exit_code=11):
    """A write would replace a file a person wrote (or one that exists, without --force)."""


class MissingExtra(ConfigError, exit_code=12):
    """A feature needs an optional extra that is not installed; the message names `memtool[extra]`."""


class OldLayout(MemtoolError, exit_code=13):
    """The store is laid out as an older memtool laid it out (flat embeddings/ and transcripts/, JSON
    vectors): `memory migrate` moves it; nothing is read or written until then."""


class HookConfigError(ConfigError):
    """An agent's config file cannot be parsed or has an unexpected shape; names file and line."""


class UnsafePath(StorageError):
    """A path under a memory root that memtool will not open: a symbolic link (but a Layer 3 file's, see
    memtool/confine.py), a FIFO, device or socket, or a file over its size cap. Writers stop with nothing
    written; readers skip the file with a warning."""


class LockBusy(StorageError):
    """Another memtool process held a lock for longer than this one would wait."""


class RateLimited(ProviderError):
    """The provider refused for quota or rate limits (HTTP 429) even after retries."""


class ProviderTimeout(ProviderError):
    """The provider did not answer within the configured timeout, even after retries."""


class BadModelOutput(ProviderError):
    """The model answered, but not with the structured output we asked for."""
