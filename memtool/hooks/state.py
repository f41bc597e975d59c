"""What the hooks remember between runs, per user, in the cache folder beside the hooks log (never in
a project): the agent sessions already handed to `memory compress` (with the transcript's size then),
and per agent session the ids prompt recall and the session-start context already sent.

Each file is JSON readable by its owner only (0600, in a 0700 folder), written whole through a
temp file and a rename under a lock; one that is unreadable counts as empty (it is a cache: at worst
an entry is recalled twice or a session compressed again, which compress's dedupe answers).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from memtool import constants as C
from memtool.errors import StorageError
from memtool.fsutil import locked


def hooks_dir() -> Path:
    from memtool.config import user_cache_dir

    return user_cache_dir() / "hooks"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_private(path: Path, data: dict[str, Any]) -> None:
    """Write `data` as JSON to `path`, readable by its owner only: a temp file made by mkstemp (0600 from
    the start) renamed over `path` (a link there is replaced, not followed)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise StorageError(f"{path.parent}: cannot write: {err.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False)
        os.replace(tmp, path)
    except OSError as err:
        raise StorageError(f"{path}: cannot write: {err.strerror}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)  # left only when the write or the rename failed


def _lock(name: str):
    folder = hooks_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return locked(folder / f"{name}.lock", timeout=10.0)


# --- sessions handed to compress ----------------------------------------------------------------


def _sessions_file() -> Path:
    return hooks_dir() / "sessions.json"


def compressed_sizes() -> dict[str, int]:
    """'<agent>:<session id>' -> the size of its transcript when compress last stored it."""
    sessions = _read(_sessions_file()).get("sessions")
    return {k: v for k, v in sessions.items() if isinstance(k, str) and isinstance(v, int)} if isinstance(sessions, dict) else {}


def note_compressed(agent: str, session_id: str, size: int) -> None:
    with _lock("sessions"):
        sessions = compressed_sizes()
        sessions[f"{agent}:{session_id}"] = size
        _write_private(_sessions_file(), {"sessions": sessions})


# --- sessions being compressed now ---------------------------------------------------------------


def _running_file(agent: str, session_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{agent}-{session_id}").strip("-.")[:150] or "session"
    return hooks_dir() / "running" / safe


@contextmanager
def compressing(agent: str, session_id: str | None) -> Iterator[None]:
    """Mark `agent`'s session as being compressed by this process while the block runs, so that a
    catch-up started meanwhile (another session's start) leaves it alone."""
    if not session_id:
        yield
        return
    path = _running_file(agent, session_id)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(str(os.getpid()), encoding="utf-8")
    except OSError:
        pass  # a cache: without the mark a catch-up may compress it too, which compress's dedupe answers
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def being_compressed(agent: str, session_id: str) -> bool:
    """Whether a live process marked the session as being compressed (a mark left by a dead one is not)."""
    try:
        pid = int(_running_file(agent, session_id).read_text(encoding="utf-8"))
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


# --- ids sent to an agent session ---------------------------------------------------------------


def _sent_file(agent: str, session_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{agent}-{session_id}").strip("-.")[:150] or "session"
    return hooks_dir() / "sent" / f"{safe}.json"


def sent_ids(agent: str, session_id: str | None) -> set[str]:
    if not session_id:
        return set()
    ids = _read(_sent_file(agent, session_id)).get("ids")
    return {i for i in ids if isinstance(i, str)} if isinstance(ids, list) else set()


def note_sent(agent: str, session_id: str | None, ids: list[str]) -> None:
    """Add `ids` to what this agent session was sent; drop the state of sessions idle for RECALL_SEEN_DAYS."""
    if not session_id or not ids:
        return
    path = _sent_file(agent, session_id)
    with _lock("sent"):
        known = sent_ids(agent, session_id)
        _write_private(path, {"ids": sorted(known | set(ids))})
        old = time.time() - C.RECALL_SEEN_DAYS * 86400
        for other in path.parent.glob("*.json"):
            try:
                if other.stat().st_mtime < old:
                    other.unlink()
            except OSError:
                continue
