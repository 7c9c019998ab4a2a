"""One browser per agent session: started on first use, closed after ``browser.idle_timeout``
seconds without a call (and at exit).

A launched browser is Debian's Chromium driven by Playwright (its own browser download is not
needed) with a fresh profile directory, removed when it closes. ``browser.cdp_url`` attaches to a
Chrome that is already running instead: each session gets a context of its own there and closing
it leaves that browser alone. Unless ``web.allow_private``, every request goes through the guard
proxy (``proxy.py``).
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Optional

from tools.browser.host import HOST
from tools.browser.proxy import GuardProxy
from tools.web.ssrf import GuardPolicy

log = logging.getLogger(__name__)
CHROMIUM_FLAGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-dev-shm-usage")
GUARDED_FLAGS = ("--force-webrtc-ip-handling-policy=disable_non_proxied_udp",)
CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
CONSOLE_KEEP = 200
CONSOLE_TYPES = ("log", "info", "warning", "error", "assert", "trace")  # not verbose/debug
INSTALL_HINT = ("install Chromium (apt-get install chromium), or set browser.executable_path or "
                "browser.cdp_url")


def find_chromium(configured: Optional[str] = None) -> Optional[str]:
    """The Chromium binary to launch: the configured one, else Debian's, else one on PATH."""
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for name in CANDIDATES:
        path = name if os.path.isabs(name) else shutil.which(name)
        if path and os.access(path, os.X_OK):
            return path
    return None


@dataclass
class BrowserSession:
    key: str
    context: Any
    page: Any
    browser: Any = None  # the attached browser (cdp_url), else None
    profile: Optional[str] = None
    proxy: Optional[GuardProxy] = None
    console: deque = field(default_factory=lambda: deque(maxlen=CONSOLE_KEEP))
    last_used: float = field(default_factory=time.monotonic)
    idle_timeout: float = 300.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def watch(self, page: Any) -> None:
        page.on("console", self._on_console)
        page.on("pageerror", lambda e: self.console.append(f"[pageerror] {e}"))

    def _on_console(self, msg: Any) -> None:
        if msg.type in CONSOLE_TYPES:
            self.console.append(f"[{msg.type}] {msg.text}")


class Sessions:
    """The process's browser sessions by key; every method runs in the browser loop."""

    def __init__(self) -> None:
        self.live: dict[str, BrowserSession] = {}
        self._starting: dict[str, asyncio.Lock] = {}
        self._reaper: Optional[asyncio.Task] = None
        self._reap_every = 30.0
        self.started = 0  # browsers started in this process (tests, bench)
        HOST.on_stop.append(self.close_all)

    async def get(self, key: str, browser_cfg: Any, web_cfg: Any) -> BrowserSession:
        lock = self._starting.setdefault(key, asyncio.Lock())
        async with lock:
            session = self.live.get(key)
            if session is None:
                session = await self._start(key, browser_cfg, web_cfg)
                self.live[key] = session
                self.started += 1
            session.idle_timeout = float(browser_cfg.idle_timeout)
            self._ensure_reaper()
            session.last_used = time.monotonic()
            return session

    async def _start(self, key: str, bcfg: Any, wcfg: Any) -> BrowserSession:
        pw = await HOST.playwright()
        policy = GuardPolicy.from_config(wcfg)
        proxy = None if policy.allow_private else GuardProxy(policy)
        proxy_opt = {"server": await proxy.start()} if proxy else None
        if bcfg.cdp_url:
            browser = await pw.chromium.connect_over_cdp(bcfg.cdp_url)
            context = await browser.new_context(proxy=proxy_opt)
            session = BrowserSession(key, context, await context.new_page(), browser, proxy=proxy)
        else:
            exe = find_chromium(bcfg.executable_path)
            if exe is None:
                raise RuntimeError(f"no Chromium found: {INSTALL_HINT}")
            profile = tempfile.mkdtemp(prefix="hermes-browser-")
            args = [*CHROMIUM_FLAGS, *(GUARDED_FLAGS if proxy else ()), *bcfg.extra_args]
            try:
                context = await pw.chromium.launch_persistent_context(
                    profile, executable_path=exe, headless=bcfg.headless, args=args,
                    proxy=proxy_opt, viewport={"width": 1280, "height": 900})
            except Exception:
                shutil.rmtree(profile, ignore_errors=True)
                raise
            page = context.pages[0] if context.pages else await context.new_page()
            session = BrowserSession(key, context, page, profile=profile, proxy=proxy)
        context.set_default_timeout(bcfg.action_timeout * 1000)
        session.watch(session.page)
        context.on("page", lambda p: self._adopt(session, p))
        return session

    def _adopt(self, session: BrowserSession, page: Any) -> None:
        """A popup or new tab becomes the page the tools act on."""
        session.watch(page)
        session.page = page

    async def close(self, key: str) -> bool:
        session = self.live.pop(key, None)
        if session is None:
            return False
        for step in (session.context.close, session.browser.close if session.browser else None,
                     session.proxy.stop if session.proxy else None):
            if step is None:
                continue
            try:
                await step()
            except Exception as exc:  # a crashed browser still gets the rest cleaned up
                log.debug("closing browser session %s: %s", key, exc)
        if session.profile:
            shutil.rmtree(session.profile, ignore_errors=True)
        return True

    async def close_all(self) -> None:
        for key in list(self.live):
            await self.close(key)

    def _interval(self) -> float:
        shortest = min((s.idle_timeout for s in self.live.values()), default=300.0)
        return max(0.2, min(30.0, shortest / 4))

    def _ensure_reaper(self) -> None:
        """One reaper task; restarted when a session needs a shorter look-out than it has."""
        interval = self._interval()
        if self._reaper is not None and not self._reaper.done():
            if interval >= self._reap_every:
                return
            self._reaper.cancel()
        self._reap_every = interval
        self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        while self.live:
            self._reap_every = self._interval()
            await asyncio.sleep(self._reap_every)
            now = time.monotonic()
            for key, session in list(self.live.items()):
                if not session.lock.locked() and now - session.last_used > session.idle_timeout:
                    log.info("closing the idle browser of session %s", key)
                    await asyncio.shield(self.close(key))  # a restarted reaper never cuts it


SESSIONS = Sessions()
