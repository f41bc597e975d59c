"""A headless Chromium driven over the Chrome DevTools protocol on a pipe (--remote-debugging-pipe:
JSON messages ending in NUL on file descriptors 3 and 4), with the standard library alone. Every host
name but 127.0.0.1 resolves to nothing, so the browser reaches no network."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

FLAGS = [
    "--headless=new",
    "--remote-debugging-pipe",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-gpu",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--no-pings",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
    "--window-size=1400,1000",
]


def chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


class Browser:
    def __init__(self, exe: str, profile: Path):
        to_chrome, self._out = os.pipe()  # Chromium reads commands on fd 3
        self._in, from_chrome = os.pipe()  # and writes answers on fd 4
        high = [os.dup2(fd, 100 + i) for i, fd in enumerate((to_chrome, from_chrome))]

        def pipes() -> None:  # in the child: the two ends at fds 3 and 4
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        flags = FLAGS + (["--no-sandbox"] if os.geteuid() == 0 else [])  # Chromium's sandbox refuses to run as root
        self.proc = subprocess.Popen(
            [exe, *flags, f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=pipes,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in (to_chrome, from_chrome, *high):
            os.close(fd)
        self._next = 0
        self._answers: dict[int, dict] = {}
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime"):
            self.send(f"{domain}.enable", session=True)

    def _read(self) -> None:
        buf = b""
        while chunk := os.read(self._in, 1 << 16):
            buf += chunk
            *messages, buf = buf.split(b"\0")
            for raw in messages:
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cond:
                        self._answers[msg["id"]] = msg
                        self._cond.notify_all()

    def send(self, method: str, params: dict | None = None, session: bool = False, timeout: float = 30) -> dict:
        with self._cond:
            self._next += 1
            ask = self._next
        msg = {"id": ask, "method": method, "params": params or {}, **({"sessionId": self.session} if session else {})}
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while ask not in self._answers:
                left = deadline - time.monotonic()
                assert left > 0, f"no answer to {method}"
                self._cond.wait(left)
            got = self._answers.pop(ask)
        assert "error" not in got, got
        return got["result"]

    def eval(self, expression: str):
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=True)
        assert "exceptionDetails" not in res, res["exceptionDetails"]
        return res["result"].get("value")

    def wait(self, expression: str, timeout: float = 20):
        deadline = time.monotonic() + timeout
        while not (value := self.eval(expression)):
            assert time.monotonic() < deadline, f"still false after {timeout} s: {expression}"
            time.sleep(0.05)
        return value

    def goto(self, url: str) -> None:
        self.send("Page.navigate", {"url": url}, session=True)

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the first element `selector` finds (scrolled into view)."""
        box = self.wait(
            f"(() => {{ const n = document.querySelector({json.dumps(selector)}); if (!n) return null; n.scrollIntoView({{block: 'center'}});"
            " const r = n.getBoundingClientRect(); return r.width ? [r.x + r.width / 2, r.y + r.height / 2] : null; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1}, session=True)

    def type(self, selector: str, text: str) -> None:
        """Focus the field, select what it holds and type `text` over it."""
        self.eval(f"(() => {{ const n = document.querySelector({json.dumps(selector)}); n.focus(); n.select(); }})()")
        self.send("Input.insertText", {"text": text}, session=True)

    def screenshot(self, path: Path) -> None:
        import base64

        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]))

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (AssertionError, OSError):
            self.proc.kill()
        self.proc.wait(10)
        os.close(self._out)
