"""A real PostgreSQL server with pgvector for the tests of the shared search cache (memtool/search/pg.py):
pgserver's, started once per test session in its temp dir, listening on a Unix socket there only
(no TCP port). Its folder is made with tempfile, not under pytest's basetemp: the server runs as
another user when the tests run as root, and pytest (of any other test run on the machine) sets
/tmp/pytest-of-root back to 0700, which that user then cannot traverse. Each test gets a database of its own. With MEMTOOL_REQUIRE_PG=1 (set by .ci/run) a
server that cannot start fails the tests instead of skipping them."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile

import pytest

_databases = itertools.count()


@pytest.fixture(scope="session")
def pg_server():
    try:
        import pgserver
        import psycopg  # noqa: F401
    except ImportError as exc:
        if os.environ.get("MEMTOOL_REQUIRE_PG") == "1":
            pytest.fail(f"PostgreSQL tests required (MEMTOOL_REQUIRE_PG=1), but {exc}")
        pytest.skip(f"no PostgreSQL for the tests: {exc}")
    folder = tempfile.mkdtemp(prefix="memtool-pg-")
    try:
        server = pgserver.get_server(os.path.join(folder, "data"), cleanup_mode="stop")
    except Exception as exc:  # noqa: BLE001 (pgserver raises its own and subprocess errors: any failure to start is reported)
        shutil.rmtree(folder, ignore_errors=True)
        if os.environ.get("MEMTOOL_REQUIRE_PG") == "1":
            pytest.fail(f"PostgreSQL tests required (MEMTOOL_REQUIRE_PG=1), but the server did not start: {exc}")
        pytest.skip(f"no PostgreSQL for the tests: {exc}")
    import psycopg
    from pgserver._commands import pg_ctl

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:  # a throwaway server: no waiting for the disk
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
    yield server
    pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=server.pgdata, user=server.system_user)  # its data is deleted next: no shutdown checkpoint
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server) -> str:
    """The URL of an empty database of this test's own (no password: the server trusts its socket)."""
    import psycopg

    name = f"t{next(_databases)}"
    uri = pg_server.get_uri()  # postgresql://postgres:@/postgres?host=<socket folder>
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return uri.replace("postgres:@/postgres?", f"postgres@/{name}?")
