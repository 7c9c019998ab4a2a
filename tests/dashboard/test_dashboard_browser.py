"""Issue 26 part 2: the dashboard in Debian's Chromium, driven by Playwright, against a real
``hermes dashboard`` subprocess whose agents talk to the loopback fake provider.

Log in (a wrong token refused), chat (the streamed answer and a tool line), approve a command,
create a cron job, revert a skill; every page is screenshotted at 1280x800 and 390 wide (kept
under the pytest tmp dir, paths printed).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.dashboard.conftest import SKILL_V1, request
from tests.fake_provider import text, tool_calls

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAGES = ("chat", "sessions", "cron", "skills", "memory", "config", "status")
MAX_FIRST_LOAD = 300 * 1024

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM) or shutil.which("chromium") is None,
                                reason="needs Debian's chromium (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One Chromium for the module; Playwright starts it on a fresh temporary --user-data-dir
    of its own (it refuses the flag from the caller)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dashboard-screenshots")


@pytest.fixture
def page(browser: Any, dashboard: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    context.close()


def _login(page: Any, dashboard: Any, token: str) -> None:
    page.goto(dashboard.url)
    page.fill("#token", token)
    page.click("#login-form button")


def test_a_wrong_token_is_refused_and_the_first_load_is_small(page, dashboard, screens):
    sizes: list[int] = []
    page.on("response", lambda r: sizes.append(len(r.body())) if r.ok else None)
    _login(page, dashboard, "not-the-token")
    page.wait_for_selector("#login-error:has-text('Wrong token')")
    assert page.is_hidden("#app")
    page.screenshot(path=str(screens / "login-refused.png"))
    assert 0 < sum(sizes) <= MAX_FIRST_LOAD  # the page, its script and style: all local
    status, _ = request(dashboard, "GET", "/api/dashboard/status", token="not-the-token")
    assert status == 401


def test_chat_streams_shows_a_tool_line_and_asks_to_approve(page, dashboard, module_provider):
    note = dashboard.home / "workspace" / "note.txt"
    note.write_text("the answer is 42\n")
    junk = dashboard.home / "workspace" / "junk"
    junk.mkdir()
    module_provider.queue(
        tool_calls([("read_file", {"path": str(note)}, "call_read")]),
        text("The note says the answer is 42.", chunks=5),
        tool_calls([("terminal", {"command": "rm -r junk"}, "call_rm")]),
        text("Removed the junk folder."))
    _login(page, dashboard, dashboard.token)
    page.wait_for_selector("#nav a.on[href='#chat']")
    page.fill("#chat-input", "what does note.txt say?")
    page.click("form.row button[type=submit]")
    page.wait_for_selector(".msg.assistant.done:has-text('The note says the answer is 42.')")
    line = page.inner_text(".tool-line")
    assert "⚙ read_file" in line and "✓" in line
    page.fill("#chat-input", "delete the junk folder")
    page.click("form.row button[type=submit]")
    card = page.wait_for_selector(".approval")
    assert "rm -r junk" in card.inner_text() and "recursive delete" in card.inner_text()
    assert junk.exists()
    page.click(".approval button:has-text('Allow once')")
    page.wait_for_selector(".msg.assistant.done:has-text('Removed the junk folder.')")
    assert not junk.exists()
    lines = page.inner_text("#transcript")
    assert "⚙ terminal: rm -r junk ✓" in lines and "approval: once (answered)" in lines


def test_create_a_cron_job(page, dashboard):
    _login(page, dashboard, dashboard.token)
    page.wait_for_selector("#nav a.on[href='#chat']")
    page.click("#nav a[href='#cron']")
    page.fill("#cron-schedule", "every 1h")
    page.fill("#cron-prompt", "check the disk usage")
    page.fill("#cron-name", "disk-check")
    page.click("text=Create")
    page.wait_for_selector("text=Created disk-check.")
    page.wait_for_selector("td:has-text('disk-check')")
    status, jobs = request(dashboard, "GET", "/api/jobs")
    assert status == 200 and [j["name"] for j in jobs["data"]] == ["disk-check"]
    assert jobs["data"][0]["prompt"] == "check the disk usage"
    page.fill("#cron-schedule", "30m")  # ambiguous: refused with the reason, nothing created
    page.fill("#cron-prompt", "x")
    page.fill("#cron-name", "")
    page.click("text=Create")
    page.wait_for_selector("#main .error")
    assert len(request(dashboard, "GET", "/api/jobs")[1]["data"]) == 1


def test_revert_a_skill(page, dashboard):
    _login(page, dashboard, dashboard.token)
    page.wait_for_selector("#nav a.on[href='#chat']")
    page.click("#nav a[href='#skills']")
    page.click(".list a:has-text('greeter')")
    page.wait_for_selector("#skill-text:has-text('Shout HELLO.')")
    page.click("#revert-latest")
    page.wait_for_selector("text=Reverted greeter to version")
    page.wait_for_selector("#skill-text:has-text('Say hello politely.')")
    on_disk = (dashboard.home / "skills" / "greeter" / "SKILL.md").read_text()
    assert on_disk.strip() == SKILL_V1.strip()


def test_screenshots_of_every_page(browser, dashboard, screens, capsys):
    taken = []
    for width, height in ((1280, 800), (390, 844)):
        context = browser.new_context(viewport={"width": width, "height": height})
        pg = context.new_page()
        pg.set_default_timeout(30_000)
        _login(pg, dashboard, dashboard.token)
        pg.wait_for_selector("#nav a.on[href='#chat']")
        for name in PAGES:
            pg.click(f"#nav a[href='#{name}']")
            pg.wait_for_selector(f"#nav a.on[href='#{name}']")
            pg.wait_for_selector("#main h2")
            pg.wait_for_load_state("networkidle")
            assert pg.evaluate("document.documentElement.scrollWidth") <= width + 1, name
            path = screens / f"{name}-{width}.png"
            pg.screenshot(path=str(path), full_page=True)
            taken.append(path)
        context.close()
    assert all(p.stat().st_size > 0 for p in taken)
    with capsys.disabled():
        print("\ndashboard screenshots:\n  " + "\n  ".join(str(p) for p in taken))
