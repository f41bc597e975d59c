"""Domain errors. Each carries an actionable message and maps once to an exit code."""

from __future__ import annotations


class MemtoolError(Exception):
    """Base class: the message is shown to the user as-is."""

    exit_code = 1


class BadInput(MemtoolError):
    """The user gave something we cannot use (empty, binary, too large, bad option value)."""

    exit_code = 2


class NotAMemoryRoot(MemtoolError):
    exit_code = 3


class StoreCorrupt(MemtoolError):
    """A file in the store cannot be parsed; the message names the path and line."""

    exit_code = 4


class OldLayout(MemtoolError):
    """The store is laid out as an older memtool laid it out (flat embeddings/ and transcripts/, JSON
    vectors): `memory migrate` moves it; nothing is read or written until then."""

    exit_code = 13


class ConfigError(MemtoolError):
    exit_code = 5


class MissingExtra(ConfigError):
    """A feature needs an optional extra that is not installed; the message names `memtool[extra]`."""

    exit_code = 12


class HookConfigError(ConfigError):
    """An agent's config file cannot be parsed or has an unexpected shape; names file and line."""


class ProviderError(MemtoolError):
    """A compressor or embedder failed (network, quota, bad answer)."""

    exit_code = 6


class MissingCredentials(ProviderError):
    exit_code = 7


class DimensionMismatch(MemtoolError):
    exit_code = 8


class NotFound(MemtoolError):
    exit_code = 9


class StorageError(MemtoolError):
    """The disk refused a write (read-only, full). Nothing stored was changed."""

    exit_code = 10


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


class WouldOverwrite(MemtoolError):
    """A write would replace a file a person wrote (or one that exists, without --force)."""

    exit_code = 11
