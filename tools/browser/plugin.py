"""The ``browser`` toolset (opt-in: ``-t browser`` or ``toolsets: [..., browser]``): its schemas
cost more of every request than a default agent can spare (bench/prompt_budget.py)."""
from __future__ import annotations

from typing import Any

from tools.registry import ToolSpec, deferred

_IMPL = "tools.browser.tools"  # imported when a browser tool first runs or is checked
_check = deferred(_IMPL, "check")  # one function for all ten: asked once a registry pass

_REF = {"type": "string", "description": "Element ref from the snapshot, e.g. @e5."}
_NONE: dict = {"type": "object", "properties": {}}


def _obj(required: tuple[str, ...] = (), **props: dict) -> dict:
    return {"type": "object", "properties": props, "required": list(required)}


# (name, description, parameters, the handler's name in _IMPL, mutating)
TOOLS = (
    ("browser_navigate", "Open a URL in the browser; returns the page's accessibility snapshot "
     "with @e refs.", _obj(("url",), url={"type": "string"}), "navigate", True),
    ("browser_snapshot", "The current page as an accessibility tree with @e refs.", _NONE,
     "take_snapshot", False),
    ("browser_click", "Click an element by ref; returns the new snapshot.",
     _obj(("ref",), ref=_REF), "click", True),
    ("browser_type", "Fill a text field by ref; submit=true presses Enter after.",
     _obj(("ref", "text"), ref=_REF, text={"type": "string"}, submit={"type": "boolean"}),
     "type_text", True),
    ("browser_press", "Press a key (Enter, Tab, Escape, ArrowDown...) on the page.",
     _obj(("key",), key={"type": "string"}), "press", True),
    ("browser_scroll", "Scroll the page.",
     _obj(direction={"type": "string", "enum": ["down", "up"]}), "scroll", False),
    ("browser_back", "Go back to the previous page.", _NONE, "back", False),
    ("browser_console", "The page's console messages and errors.",
     _obj(clear={"type": "boolean"}), "console", False),
    ("browser_get_images", "List the page's images (src, alt, size).", _NONE, "get_images", False),
    ("browser_vision", "Ask the vision model about a screenshot of the page.",
     _obj(question={"type": "string"}), "vision", False),
)


def register(ctx: Any) -> None:
    ctx.register_toolset("browser", "drive a real Chromium: navigate, click, type", default=False)
    for name, description, schema, handler, acts in TOOLS:
        ctx.register_tool(ToolSpec(name, description, schema, deferred(_IMPL, handler),
                                   "browser", check=_check, mutating=acts))
