"""The ``browser`` toolset (opt-in: ``-t browser`` or ``toolsets: [..., browser]``): its schemas
cost more of every request than a default agent can spare (bench/prompt_budget.py)."""
from __future__ import annotations

from typing import Any

from tools.browser import tools as bt
from tools.registry import ToolSpec

_REF = {"type": "string", "description": "Element ref from the snapshot, e.g. @e5."}
_NONE: dict = {"type": "object", "properties": {}}


def _obj(required: tuple[str, ...] = (), **props: dict) -> dict:
    return {"type": "object", "properties": props, "required": list(required)}


TOOLS = (
    ("browser_navigate", "Open a URL in the browser; returns the page's accessibility snapshot "
     "with @e refs.", _obj(("url",), url={"type": "string"}), bt.navigate, True),
    ("browser_snapshot", "The current page as an accessibility tree with @e refs.", _NONE,
     bt.take_snapshot, False),
    ("browser_click", "Click an element by ref; returns the new snapshot.",
     _obj(("ref",), ref=_REF), bt.click, True),
    ("browser_type", "Fill a text field by ref; submit=true presses Enter after.",
     _obj(("ref", "text"), ref=_REF, text={"type": "string"}, submit={"type": "boolean"}),
     bt.type_text, True),
    ("browser_press", "Press a key (Enter, Tab, Escape, ArrowDown...) on the page.",
     _obj(("key",), key={"type": "string"}), bt.press, True),
    ("browser_scroll", "Scroll the page.",
     _obj(direction={"type": "string", "enum": ["down", "up"]}), bt.scroll, False),
    ("browser_back", "Go back to the previous page.", _NONE, bt.back, False),
    ("browser_console", "The page's console messages and errors.",
     _obj(clear={"type": "boolean"}), bt.console, False),
    ("browser_get_images", "List the page's images (src, alt, size).", _NONE, bt.get_images,
     False),
    ("browser_vision", "Ask the vision model about a screenshot of the page.",
     _obj(question={"type": "string"}), bt.vision, False),
)


def register(ctx: Any) -> None:
    ctx.register_toolset("browser", "drive a real Chromium: navigate, click, type", default=False)
    for name, description, schema, handler, acts in TOOLS:
        ctx.register_tool(ToolSpec(name, description, schema, handler, "browser",
                                   check=bt.check, mutating=acts))
