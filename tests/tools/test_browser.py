"""The browser tools on the real Chromium (Debian's, driven by Playwright) against the loopback
web server: a login form filled and submitted with @e refs, back, console, images, the SSRF guard
on redirects, bounded snapshots, the idle close, a screenshot for the vision model and attaching
to a running Chrome over CDP. One browser serves the module (its session key); the idle and CDP
tests start one more each, briefly."""
from __future__ import annotations

import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from hermes_core.config import parse_config
from tests.fake_provider import text
from tests.web_server import WebServer
from tools.browser.host import HOST
from tools.browser.session import SESSIONS, find_chromium
from tools.registry import ToolContext, ToolError, dispatch, get_tool_names

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed "
                                "(apt-get install chromium)")
KEY = "browser-tests"


@pytest.fixture(scope="module")
def web():
    server, other = WebServer().start(), WebServer().start()
    yield server, other
    HOST.run(SESSIONS.close_all, 30)
    server.stop()
    other.stop()


def ctx_for(web, key: str = KEY, **browser) -> ToolContext:
    server, _ = web
    cfg = parse_config({"web": {"allow_hosts": [f"127.0.0.1:{server.port}"]}, "browser": browser})
    return ToolContext(cwd=Path(tempfile.gettempdir()), config=cfg, session_id=key)


def ref_of(snapshot: str, pattern: str) -> str:
    m = re.search(pattern + r" (@(?:f\d+)?e\d+)", snapshot)
    assert m, (pattern, snapshot)
    return m.group(1)


def test_form_click_back_console_images(web):
    server, _ = web
    ctx = ctx_for(web)
    page = dispatch("browser_navigate", {"url": server.url("/login")}, ctx)
    assert page.startswith(f"url: {server.url('/login')}\ntitle: Sign in")
    assert 'heading "Members area"' in page
    user = ref_of(page, r'textbox "Username"')
    assert dispatch("browser_type", {"ref": user, "text": "bob"}, ctx) == \
        f"typed 3 characters into {user}"
    after = dispatch("browser_click", {"ref": ref_of(page, r'button "Sign in"')}, ctx)
    assert after.startswith(f"url: {server.url('/welcome')}") and "Welcome, bob!" in after
    assert server.hits["/welcome"] == 1
    assert "title: Sign in" in dispatch("browser_back", {}, ctx)
    again = dispatch("browser_snapshot", {}, ctx)
    link = ref_of(again, r'link "Read the tide story"')
    story = dispatch("browser_click", {"ref": link}, ctx)
    assert "Kelmsford has measured its tides" in story
    dispatch("browser_back", {}, ctx)
    assert "[log] login page ready" in dispatch("browser_console", {"clear": True}, ctx)
    images = dispatch("browser_get_images", {}, ctx)
    assert server.url("/image.png") in images and "guild logo" in images


def test_refs_that_are_gone_or_wrong_say_so(web):
    server, _ = web
    ctx = ctx_for(web, action_timeout=2)
    dispatch("browser_navigate", {"url": server.url("/login")}, ctx)
    with pytest.raises(ToolError, match="take a new browser_snapshot"):
        dispatch("browser_click", {"ref": "@e999"}, ctx)
    with pytest.raises(ToolError, match="is not an element ref"):
        dispatch("browser_click", {"ref": "the blue button"}, ctx)


def test_guard_refuses_redirects_to_loopback(web):
    server, other = web
    ctx = ctx_for(web)
    for target in (other.url("/secret"), other.url("/secret", host="localhost")):
        with pytest.raises(ToolError) as err:
            dispatch("browser_navigate", {"url": server.url(f"/redirect?to={target}")}, ctx)
        assert "refused" in str(err.value) and "loopback address" in str(err.value)
        assert "web.allow_private: true" in str(err.value)
    with pytest.raises(ToolError, match="refused: 127.0.0.1 is a loopback address"):
        dispatch("browser_navigate", {"url": other.url("/secret")}, ctx)
    with pytest.raises(ToolError, match="only http and https"):
        dispatch("browser_navigate", {"url": "file:///etc/passwd"}, ctx)
    assert other.hits["/secret"] == 0


def test_snapshot_is_bounded(web):
    server, _ = web
    ctx = ctx_for(web, snapshot_tokens=200)
    page = dispatch("browser_navigate", {"url": server.url("/article/tides")}, ctx)
    assert "more lines of the page left out (browser.snapshot_tokens)" in page
    assert len(page) < 200 * 4 + 400


def test_screenshot_goes_to_the_vision_model(web, fake_provider):
    server, _ = web
    ctx = ctx_for(web)
    ctx.config.auxiliary.vision.base_url = fake_provider.base_url
    ctx.config.auxiliary.vision.api_key = "test-key"
    ctx.config.auxiliary.vision.model = "eyes-1"
    fake_provider.queue(text("A sign-in form with two fields."))
    dispatch("browser_navigate", {"url": server.url("/login")}, ctx)
    answer = dispatch("browser_vision", {"question": "What is on the page?"}, ctx)
    assert answer == "A sign-in form with two fields."
    body = fake_provider.requests[-1]
    assert body["model"] == "eyes-1"
    parts = body["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": "What is on the page?"}
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")


def test_idle_browser_is_closed(web):
    server, _ = web
    ctx = ctx_for(web, key="idle-test", idle_timeout=0.5)
    dispatch("browser_navigate", {"url": server.url("/login")}, ctx)
    profile = Path(SESSIONS.live["idle-test"].profile)
    assert profile.is_dir()
    deadline = time.monotonic() + 30
    while ("idle-test" in SESSIONS.live or profile.exists()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "idle-test" not in SESSIONS.live and not profile.exists()
    assert KEY in SESSIONS.live  # the module's browser has its own (default) idle timeout
    started = SESSIONS.started  # a later call starts a fresh browser, on a blank page
    assert dispatch("browser_snapshot", {}, ctx).startswith("url: about:blank")
    assert SESSIONS.started == started + 1
    HOST.run(lambda: SESSIONS.close("idle-test"), 30)


def test_attach_to_a_running_chrome_over_cdp(web, tmp_path):
    server, _ = web
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chrome = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                               f"--remote-debugging-port={port}", f"--user-data-dir={tmp_path}",
                               "about:blank"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        ctx = ctx_for(web, key="cdp-test", cdp_url=f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 30
        while True:
            try:
                page = dispatch("browser_navigate", {"url": server.url("/login")}, ctx)
                break
            except ToolError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert 'heading "Members area"' in page
        HOST.run(lambda: SESSIONS.close("cdp-test"), 30)
        assert chrome.poll() is None  # closing our session left the user's browser running
    finally:
        chrome.terminate()
        chrome.wait(10)


def test_browser_toolset_is_opt_in():
    assert not any(n.startswith("browser_") for n in get_tool_names())
    assert "browser_click" in get_tool_names(["browser"])
