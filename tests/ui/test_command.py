"""`memory ui` as a command: a real process that prints its URL (--no-browser), serves it, and stops
with the terminal (Ctrl-C: SIGINT; the terminal closing: SIGHUP)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from urllib.parse import urlsplit

import pytest

from memtool.scaffold import init
from tests.ui.conftest import Client


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP])
def test_memory_ui_prints_its_url_serves_it_and_stops_with_the_terminal(root, env, sig):
    init(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "memtool", "--root", str(root), "ui", "--no-browser", "--no-watch"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines[0] == f"memory ui for {root}\n", lines
        url = urlsplit(lines[1].strip())
        assert url.hostname == "127.0.0.1" and url.query.startswith("token=")
        c = Client(url.port)
        deadline = time.monotonic() + 30
        while True:  # the URL is printed just before uvicorn takes the socket's connections
            try:
                status, headers, _ = c.get(f"/?{url.query}")
                break
            except ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert status == 303
        c.cookie = headers["set-cookie"].split(";")[0]
        assert json.loads(c.get("/api/timeline")[2])["total"] == 0
        proc.send_signal(sig)
        assert proc.wait(15) in (0, -sig, 128 + sig)
    finally:
        proc.kill()
        proc.wait()
    with pytest.raises(ConnectionError):
        c.get("/api/status")
