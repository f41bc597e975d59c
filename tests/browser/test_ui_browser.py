"""`memory ui` in a real headless Chromium (tests/browser/cdp.py): open the page with its token, see a
stored `<script>` shown as characters, search, open an entry, edit its summary and see the day file
change on disk, forget one and see it gone from search; a screenshot of the timeline is kept
(MEMTOOL_TEST_ARTIFACTS, default .artifacts/). Marked `browser`: `.ci/run` runs them as their own
step (`pytest -m browser`), the default suite does not."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memtool.store import Layout
from tests.browser.cdp import Browser, chromium
from tests.ui.conftest import serving

pytestmark = pytest.mark.browser
ARTIFACTS = Path(os.environ.get("MEMTOOL_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / ".artifacts"))


@pytest.fixture
def browser(tmp_path):
    exe = chromium()
    if exe is None:
        pytest.skip("no chromium (apt-get install -y chromium)")
    b = Browser(exe, tmp_path / "profile")
    yield b
    b.close()


def texts(b: Browser, selector: str) -> list[str]:
    return b.eval(f"[...document.querySelectorAll({json.dumps(selector)})].map((n) => n.textContent)")


def test_the_viewer_in_a_browser(seeded, browser):
    b = browser
    with serving(seeded) as ui:
        b.goto(ui.url)
        b.wait("document.querySelectorAll('#timeline .item').length === 4")
        assert b.eval("location.href") == f"http://127.0.0.1:{ui.port}/"  # the token left the address bar
        first_paint = b.eval("performance.getEntriesByName('memtool-timeline')[0].startTime")
        b.screenshot(ARTIFACTS / "ui-timeline.png")
        print(f"timeline painted {first_paint:.0f} ms after navigation (4 items)")

        # the stored script and markup are characters on the page, never elements
        b.eval("window.alerts = []; window.alert = (m) => window.alerts.push(m)")
        untrusted = next(t for t in texts(b, "#timeline .item .summary") if "<script>" in t)
        assert untrusted.startswith("<script>document.title='pwned'</script><img src=x onerror=alert(1)>")
        assert b.eval("document.querySelectorAll('main script, main img, main b').length") == 0
        b.click("#timeline .item:nth-child(3)")  # the untrusted one: newest first, after the log and billing
        b.wait("document.getElementById('transcript').textContent.includes('<script>')")
        assert b.eval("document.querySelectorAll('#detail script, #detail img, #detail b').length") == 0
        assert b.eval("document.title") == "memtool" and b.eval("window.alerts.length") == 0
        assert b.eval("document.querySelector('#entry .untrusted').textContent") == "untrusted input"
        assert "null" not in b.eval("document.getElementById('entry').innerText")
        b.screenshot(ARTIFACTS / "ui-entry.png")

        # search, the matched words marked, then open the hit
        b.click("button[data-view=search]")
        b.type("#q", "zeppelin dashboard")
        b.click("#s-go")
        b.wait("document.querySelectorAll('#hits .item').length > 0")
        assert "zeppelin" in [m.lower() for m in texts(b, "#hits .item:first-child mark")]
        eid = b.eval("document.querySelector('#hits .item').dataset.id")
        b.click("#hits .item")
        b.wait(f"document.getElementById('e-id')?.textContent === {json.dumps(eid)}")

        # edit the summary: the day file on disk changes
        b.type("#e-summary", "Export streams rows with COPY; Alice checks the dashboard.")
        b.click("#e-save")
        b.wait("document.getElementById('e-status')?.textContent.startsWith('saved summary')")
        day = json.loads(Layout(seeded.layout.root).day_file("2026-03-02").read_text())
        assert [e["summary"] for e in day["entries"] if e["id"] == eid] == ["Export streams rows with COPY; Alice checks the dashboard."]

        # forget it: gone from search
        b.eval("window.confirm = () => true")
        b.click("#e-forget")
        b.wait(f"document.getElementById('e-status')?.textContent === {json.dumps('forgot ' + eid)}")
        b.click("#s-go")
        b.wait("/^\\d+ hits/.test(document.getElementById('search-note').textContent)")
        assert eid not in b.eval("[...document.querySelectorAll('#hits .item')].map((n) => n.dataset.id)")
        assert all(e["id"] != eid for e in json.loads(Layout(seeded.layout.root).day_file("2026-03-02").read_text())["entries"])

        # the pictures are drawn
        b.click("button[data-view=pictures]")
        b.wait("document.querySelectorAll('#p-weeks rect.bar').length === 2")
        assert b.eval("[...document.querySelectorAll('#p-weeks rect.bar')].map((r) => r.dataset.label)") == ["2026-W10", "2026-W11"]
        assert b.eval("[...document.querySelectorAll('#p-topics polyline')].map((r) => r.dataset.label)") == ["general"]
        b.screenshot(ARTIFACTS / "ui-pictures.png")


def test_a_page_without_the_token_shows_nothing_of_the_memory(seeded, browser):
    with serving(seeded) as ui:
        browser.goto(f"http://127.0.0.1:{ui.port}/")
        browser.wait("document.readyState === 'complete'")
        body = browser.eval("document.body.innerText")
        assert "not signed in" in body and "export" not in body
        browser.goto(f"http://localhost:{ui.port}/?token=wrong")
        browser.wait("document.readyState === 'complete' && location.host.startsWith('localhost')")
        assert "token is not this run's" in browser.eval("document.body.innerText")


def test_a_file_changed_on_disk_shows_on_the_open_page(seeded, browser):
    import threading

    from memtool.app import open_memory
    from memtool.ui.server import Hub, watch
    from tests.conftest import FakeEmbedder

    hub, stop = Hub(), threading.Event()
    with serving(seeded, hub) as ui:
        browser.goto(ui.url)
        browser.wait("document.querySelectorAll('#timeline .item').length === 4")
        watch(seeded, hub, stop, lambda: open_memory(seeded.layout.root, embedder=FakeEmbedder()), lambda message: None)
        try:
            browser.wait("document.querySelectorAll('#timeline .item').length === 4 && document.getElementById('note').hidden")  # the first sync
            (seeded.layout.memory_dir / "2026-03-11.md").write_text("# 2026-03-11\n- 09:00 a note written in an editor\n")
            browser.wait("document.querySelector('#timeline .item .summary').textContent === 'Daily log 2026-03-11'", timeout=30)
        finally:
            stop.set()


def test_personal_and_private_hits_and_entries_carry_a_from_badge(with_personal, browser):
    b, mine = browser, with_personal.entry
    (with_personal.personal / "memory" / "2026-03-05.md").write_text("# 2026-03-05\n- 09:30 tried the otterglen alias\n")
    with serving(with_personal.mem) as ui:
        b.goto(ui.url)
        b.wait("document.querySelectorAll('#timeline .item').length === 6")  # the project's four, the personal entry and log
        listed = b.eval("[...document.querySelectorAll('#timeline .item')].map((n) => [n.dataset.id, n.querySelector('.badge.from')?.textContent ?? null])")
        assert [mine, "personal"] in listed and ["2026-03-05.personal", "personal"] in listed, listed
        assert sum(label is None for _, label in listed) == 4, listed  # the project's own items carry no badge
        b.click('#timeline .item[data-id="2026-03-05.personal"]')
        b.wait("document.getElementById('transcript').textContent.includes('otterglen alias')")
        assert b.eval("document.querySelector('#entry .badge.from').textContent") == "from personal memory"
        b.click("button[data-view=search]")
        b.type("#q", "capybaraflint dotfiles zeppelin")
        b.click("#s-go")
        b.wait("document.querySelectorAll('#hits .item').length > 1")
        badges = b.eval("[...document.querySelectorAll('#hits .item')].map((n) => [n.dataset.id, n.querySelector('.badge.from')?.textContent ?? null])")
        assert [mine, "personal"] in badges and any(label is None for _, label in badges), badges  # the project's hits have none
        b.click(f"#hits .item[data-id={json.dumps(mine)}]")
        b.wait(f"document.getElementById('e-id')?.textContent === {json.dumps(mine)}")
        assert b.eval("document.querySelector('#entry .badge.from').textContent") == "from personal memory"
        assert "memory/index/2026-03-05.json" in b.eval("document.getElementById('entry').innerText")
