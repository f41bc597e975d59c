"""Fixtures of the real-clients suite: the fake model server, a sandbox (HOME + project with
`memory init` done), and the readable record of what reached the model, added to every failing
test's report (and kept as requests.jsonl in the test's tmp folder).

Skips only where the clients cannot run (node or npm missing, `npm ci` not run); with
MEMTOOL_REAL_CLIENTS=require (as .ci/run sets it) that is a failure instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.real_clients.clients import missing_clients
from tests.real_clients.fake_model import FakeModelServer

REQUIRE_ENV = "MEMTOOL_REAL_CLIENTS"


@pytest.fixture(scope="session")
def clients_available() -> None:
    """Used by every test that runs a client (test_real_clients.py); the fake server's own tests need none."""
    why = missing_clients()
    if why and os.environ.get(REQUIRE_ENV) == "require":
        pytest.fail(f"the real agent clients cannot run: {why} ({REQUIRE_ENV}=require)", pytrace=False)
    if why:
        pytest.skip(f"the real agent clients cannot run: {why}")


@pytest.fixture
def fake_model(tmp_path: Path, request: pytest.FixtureRequest):
    with FakeModelServer(tmp_path / "requests.jsonl") as server:
        request.node.fake_model_log = server.log
        yield server


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    log = getattr(item, "fake_model_log", None)
    if report.when == "call" and report.failed and log is not None:
        report.sections.append(("what reached the model", log.render()))
