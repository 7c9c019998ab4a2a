"""The browser_* tools (toolset ``browser``, opt-in): navigate, snapshot, click, type, press,
scroll, back, console, get_images, vision. Each call runs in the browser loop (``host.py``) on
the session's own browser (``session.py``); page-changing actions answer with a fresh, bounded
accessibility snapshot (``snapshot.py``) so the model sees the result without another call.
"""
from __future__ import annotations

import time
from typing import Any, Awaitable, Callable, Optional

from tools.browser import snapshot
from tools.browser.host import HOST
from tools.browser.proxy import REFUSED_HEADER
from tools.browser.session import SESSIONS, BrowserSession, find_chromium, INSTALL_HINT
from tools.context import ToolContext, ToolError
from tools.web.ssrf import GuardPolicy, SSRFRefused, check_url

SETTLE_MS = 3000  # after an action: wait (at most this) for the network to go quiet
MAX_IMAGES = 50
Action = Callable[[BrowserSession], Awaitable[Any]]


def _configs(ctx: ToolContext) -> tuple[Any, Any]:
    cfg = ctx.config
    if cfg is None:
        from hermes_core.config import load_config

        cfg = load_config()
    return cfg.browser, cfg.web


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def run(ctx: ToolContext, tool: str, action: Action) -> Any:
    """Run ``action`` on the session's browser (started on first use); errors as ToolErrors."""
    bcfg, wcfg = _configs(ctx)
    key = ctx.session_id or ctx.task_id or "default"

    async def go() -> Any:
        session = await SESSIONS.get(key, bcfg, wcfg)
        async with session.lock:
            try:
                return await action(session)
            finally:
                session.last_used = time.monotonic()

    try:
        return HOST.run(go, timeout=bcfg.action_timeout * 3 + 30)
    except ToolError:
        raise
    except Exception as exc:
        raise ToolError(f"{tool}: {_first_line(exc)}") from None


async def _settle(page: Any) -> None:
    try:
        await page.wait_for_load_state("networkidle", timeout=SETTLE_MS)
    except Exception:  # a page that keeps polling is still usable
        pass


async def _snapshot(session: BrowserSession, max_tokens: int) -> str:
    page = session.page
    tree = await page.aria_snapshot(mode="ai")
    return snapshot.render(page.url, await page.title(), tree, max_tokens)


def _refusal(session: BrowserSession, seen: int) -> Optional[str]:
    new = session.proxy.refusals[seen:] if session.proxy else []
    return new[-1] if new else None


def _locator(session: BrowserSession, ref: str, tool: str) -> Any:
    selector = snapshot.ref_selector(str(ref or ""))
    if selector is None:
        raise ToolError(f"{tool}: {ref!r} is not an element ref; use one like @e5 from "
                        "browser_snapshot")
    return session.page.locator(selector)


async def _act(session: BrowserSession, tool: str, ref: str, act: Callable[[Any], Awaitable[Any]]
               ) -> None:
    locator = _locator(session, ref, tool)
    try:
        found = await locator.count()
    except Exception:  # a ref of an earlier document: Playwright cannot even parse it now
        found = 0
    if not found:
        raise ToolError(f"{tool}: element {ref} is not on the page (any more): take a new "
                        "browser_snapshot")
    try:
        await act(locator)
    except ToolError:
        raise
    except Exception as exc:
        text = _first_line(exc)
        if "aria-ref" in text or "resolved to 0 elements" in text or "Timeout" in text:
            raise ToolError(f"{tool}: element {ref} is not on the page (any more): take a new "
                            f"browser_snapshot ({text})") from None
        raise ToolError(f"{tool}: {text}") from None


def navigate(args: dict, ctx: ToolContext) -> str:
    url = str(args.get("url") or "").strip()
    bcfg, wcfg = _configs(ctx)
    try:
        check_url(url, GuardPolicy.from_config(wcfg))
    except SSRFRefused as exc:
        raise ToolError(f"browser_navigate: refused: {exc}") from None

    async def go(session: BrowserSession) -> str:
        seen = len(session.proxy.refusals) if session.proxy else 0
        try:
            resp = await session.page.goto(url, wait_until="domcontentloaded")
        except Exception as exc:
            refused = _refusal(session, seen)
            if refused:
                raise ToolError(f"browser_navigate: refused: {refused}") from None
            raise ToolError(f"browser_navigate: {url}: {_first_line(exc)}") from None
        if resp is not None and resp.headers.get(REFUSED_HEADER.lower()):
            refused = _refusal(session, seen) or "a private address"
            raise ToolError(f"browser_navigate: refused: {refused}")
        await _settle(session.page)
        status = f"status: {resp.status}\n" if resp is not None and resp.status >= 400 else ""
        return status + await _snapshot(session, bcfg.snapshot_tokens)

    return run(ctx, "browser_navigate", go)


def take_snapshot(args: dict, ctx: ToolContext) -> str:
    bcfg, _ = _configs(ctx)
    return run(ctx, "browser_snapshot", lambda s: _snapshot(s, bcfg.snapshot_tokens))


def click(args: dict, ctx: ToolContext) -> str:
    bcfg, _ = _configs(ctx)
    ref = str(args.get("ref") or "")

    async def go(session: BrowserSession) -> str:
        await _act(session, "browser_click", ref, lambda loc: loc.click())
        await _settle(session.page)
        return await _snapshot(session, bcfg.snapshot_tokens)

    return run(ctx, "browser_click", go)


def type_text(args: dict, ctx: ToolContext) -> str:
    bcfg, _ = _configs(ctx)
    ref, text, submit = str(args.get("ref") or ""), str(args.get("text") or ""), args.get("submit")

    async def go(session: BrowserSession) -> str:
        await _act(session, "browser_type", ref, lambda loc: loc.fill(text))
        if not submit:
            return f"typed {len(text)} characters into {ref}"
        await _act(session, "browser_type", ref, lambda loc: loc.press("Enter"))
        await _settle(session.page)
        return await _snapshot(session, bcfg.snapshot_tokens)

    return run(ctx, "browser_type", go)


def press(args: dict, ctx: ToolContext) -> str:
    bcfg, _ = _configs(ctx)
    key = str(args.get("key") or "").strip()
    if not key:
        raise ToolError("browser_press: 'key' is empty (e.g. Enter, Tab, Escape, ArrowDown)")

    async def go(session: BrowserSession) -> str:
        try:
            await session.page.keyboard.press(key)
        except Exception as exc:
            raise ToolError(f"browser_press: {_first_line(exc)}") from None
        await _settle(session.page)
        return await _snapshot(session, bcfg.snapshot_tokens)

    return run(ctx, "browser_press", go)


def scroll(args: dict, ctx: ToolContext) -> str:
    down = str(args.get("direction") or "down").lower() != "up"

    async def go(session: BrowserSession) -> str:
        page = session.page
        await page.mouse.wheel(0, 800 if down else -800)
        await page.wait_for_timeout(150)
        y, height = await page.evaluate("[window.scrollY, document.body.scrollHeight]")
        return f"scrolled {'down' if down else 'up'}; now at {y} of {height} px"

    return run(ctx, "browser_scroll", go)


def back(args: dict, ctx: ToolContext) -> str:
    bcfg, _ = _configs(ctx)

    async def go(session: BrowserSession) -> str:
        if await session.page.go_back(wait_until="domcontentloaded") is None:
            raise ToolError("browser_back: there is no earlier page in this tab")
        await _settle(session.page)
        return await _snapshot(session, bcfg.snapshot_tokens)

    return run(ctx, "browser_back", go)


def console(args: dict, ctx: ToolContext) -> str:
    async def go(session: BrowserSession) -> str:
        lines = list(session.console)
        if args.get("clear"):
            session.console.clear()
        return "\n".join(lines) if lines else "(no console messages)"

    return run(ctx, "browser_console", go)


_IMAGES_JS = """els => els.map(i => ({src: i.currentSrc || i.src, alt: i.alt || '',
  width: i.naturalWidth, height: i.naturalHeight})).filter(i => i.src)"""


def get_images(args: dict, ctx: ToolContext) -> str:
    import json

    async def go(session: BrowserSession) -> str:
        images = await session.page.eval_on_selector_all("img", _IMAGES_JS)
        return json.dumps({"images": images[:MAX_IMAGES], "total": len(images)})

    return run(ctx, "browser_get_images", go)


def vision(args: dict, ctx: ToolContext) -> str:
    from tools.vision import analyze_image_bytes

    question = str(args.get("question") or "Describe what the page shows.")
    shot = run(ctx, "browser_vision", lambda s: s.page.screenshot(type="png"))
    return analyze_image_bytes(ctx, shot, "image/png", question, "browser_vision")


def check() -> Optional[str]:
    """Why the browser tools cannot run here (None: they can)."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright)"
    from hermes_core.config import shared_config

    bcfg = shared_config().browser
    if bcfg.cdp_url or find_chromium(bcfg.executable_path):
        return None
    return f"no Chromium found: {INSTALL_HINT}"
