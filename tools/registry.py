"""Tool registry: the one place the agent loop learns which tools exist and runs them.

Kept cheap to import (the agent imports it at start-up): schemas are plain dicts. Tools come from
plugins (``hermes_core.plugin_loader``): the built-in ones are plugins declared in pyproject.toml
like any installed package's, loaded on the first `get_tool_definitions()` / `dispatch()` when no
agent loaded them before.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable

from hermes_core.plugin_api import REGISTRY as PLUGINS
from tools.arguments import validate_args
from tools.context import ToolContext, ToolError

__all__ = ["ToolContext", "ToolError", "ToolSpec", "dispatch", "get_tool_definitions",
           "check_toolset_requirements", "register", "UnknownToolsetError"]

logger = logging.getLogger(__name__)

# The toolsets a default agent offers, in the order /tools and the prompt breakdown list them.
# A toolset exists once a tool names it or register_toolset() declares it (MCP: ``mcp-<server>``).
DEFAULT_TOOLSETS = ("terminal", "file", "todo", "memory", "session_search", "skills", "cronjob",
                    "delegation")
ALL_TOOLSETS = ("all", "*")  # accepted in enabled lists: every toolset
NO_TOOLSETS = "none"  # accepted in enabled lists: no tools at all (`hermes -t none`)
_RANK = {name: i for i, name in enumerate(DEFAULT_TOOLSETS)}


class UnknownToolsetError(ValueError):
    """A toolset name nobody registered: the message lists the valid ones."""


@dataclass
class ToolSpec:
    """A tool: its OpenAI-style JSON schema plus the function that runs it."""

    name: str
    description: str
    parameters: dict
    handler: Callable[[dict, ToolContext], str]
    toolset: str
    check: Callable[[], str | None] | None = None
    # changes state (files, memory, skills, jobs), runs commands or acts outside Hermes (see
    # ctx.mutations); a callable decides per call from the arguments (reads must not ask)
    mutating: bool | Callable[[dict], bool] = False


_registry: dict[str, ToolSpec] = {}
_definitions: dict[str, dict] = {}  # name -> prebuilt OpenAI definition
_declared_toolsets: dict[str, str] = {}  # toolset -> one-line description (may have no tools yet)
_lock = threading.RLock()
_generation = 0  # bumped on every change, so an agent can tell its tool list is stale
_settle_hooks: list[Callable[..., Any]] = []


def register(spec: ToolSpec) -> None:
    """Add (or replace) a tool. Later registrations of the same name win."""
    if not spec.name or not callable(spec.handler):
        raise ValueError("a tool needs a name and a callable handler")
    params = spec.parameters or {"type": "object", "properties": {}}
    with _lock:
        if spec.name in _registry:
            logger.debug("tool %r re-registered", spec.name)
        _registry[spec.name] = spec
        _bump()
        _definitions[spec.name] = {
            "type": "function",
            "function": {"name": spec.name, "description": spec.description, "parameters": params},
        }


def unregister(name: str) -> bool:
    """Remove a tool (plugins unloading, tests); True when it existed."""
    with _lock:
        _definitions.pop(name, None)
        _bump()
        return _registry.pop(name, None) is not None


def deferred(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported on its first call. Why: a plugin registers its tools' schemas
    with every new agent, and importing their implementation (with what that imports: asyncio
    for the browser) cost each agent milliseconds it never spends when the tools are not run."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _bump() -> None:
    global _generation
    _generation += 1


def generation() -> int:
    """Changes whenever a tool is registered or removed."""
    return _generation


def add_settle_hook(hook: Callable[..., Any]) -> None:
    """A tool source that registers late (MCP servers connecting in the background) lets agents
    wait for it: `hook(notify, cancel)` returns once its tools are in or it gave up, bounded by
    its own timeout, calling `notify(line)` first when the wait will be noticeable."""
    with _lock:
        if hook not in _settle_hooks:
            _settle_hooks.append(hook)


def remove_settle_hook(hook: Callable[..., Any]) -> None:
    with _lock:
        if hook in _settle_hooks:
            _settle_hooks.remove(hook)


def settle(notify: Callable[[str], None] | None = None,
           cancel: threading.Event | None = None) -> None:
    """Let late tool sources finish registering (see add_settle_hook); a failing hook is skipped."""
    with _lock:
        hooks = list(_settle_hooks)
    for hook in hooks:
        try:
            hook(notify, cancel)
        except Exception:  # a broken source must not stop the turn
            logger.exception("tool settle hook failed")


def _ensure_builtins() -> None:
    """Load the plugins when nobody did yet (a caller without an agent: tests, ``hermes
    config show --prompt``), then take in what they registered since the last look."""
    from hermes_core.plugin_loader import LOADER

    if not LOADER.loaded():
        _load_plugins_with_config(LOADER)
    if PLUGINS.generation != _plugins_seen:
        _take_plugin_tools()


def _load_plugins_with_config(loader: Any) -> None:
    from hermes_core.config import ConfigError, hermes_home, load_config

    try:
        cfg = load_config()
        enabled, disabled = cfg.plugins.enabled, cfg.plugins.disabled
    except ConfigError:  # the agent reports a junk config; tools still load (built-ins only)
        enabled, disabled = [], []
    infos = loader.load(hermes_home(), enabled=enabled, disabled=disabled)
    if not any(i.source == "builtin" for i in infos):
        logger.warning("no built-in tools found: this project is not installed (run `make` or "
                       "`pip install -e .`)")


_plugins_seen = -1
_opt_in_toolsets: set[str] = set()  # toolsets offered only when asked for by name


def _take_plugin_tools() -> None:
    """Tools and toolsets from ``hermes_core.plugin_api`` registrations (see plugin_loader)."""
    global _plugins_seen
    with _lock:
        if PLUGINS.generation == _plugins_seen:
            return
        _plugins_seen = PLUGINS.generation
        for reg in PLUGINS.of("toolset"):
            _declared_toolsets[reg.name] = str(reg.value or "")
            if reg.options.get("default") is False:
                _opt_in_toolsets.add(reg.name)
        for reg in PLUGINS.of("tool"):
            spec = (reg.value if reg.options.get("native")
                    else _spec_from_plugin(reg.name, reg.value))
            if _registry.get(spec.name) is not spec:
                register(spec)


def _spec_from_plugin(name: str, v: dict) -> ToolSpec:
    check_fn, needs = v.get("check_fn"), list(v.get("requires_env") or [])

    def check() -> str | None:
        import os

        missing = [e for e in needs if not os.environ.get(e)]
        if missing:
            return f"needs {', '.join(missing)} in the environment or HERMES_HOME/.env"
        if check_fn is not None and not check_fn():
            return "its plugin says it is unavailable here"
        return None

    return ToolSpec(name=name, description=v["description"], parameters=v["parameters"],
                    handler=v["handler"], toolset=v["toolset"], mutating=v.get("mutating", False),
                    check=check if (check_fn or needs) else None)


def _unavailable_reason(spec: ToolSpec, seen: dict[Any, str | None] | None = None) -> str | None:
    """Why ``spec`` cannot run (None: it can). ``seen`` holds the answers of one pass over the
    registry by check function: the tools of one toolset mostly share one check (ten browser
    tools, each reading config.yaml), and a new agent made the whole pass twice."""
    if spec.check is None:
        return None
    if seen is not None and spec.check in seen:
        return seen[spec.check]
    try:
        reason = spec.check()
    except Exception as exc:  # a crashing check means "not usable", not a crash of the agent
        reason = f"availability check failed: {exc}"
    if seen is not None:
        seen[spec.check] = reason
    return reason


def register_toolset(name: str, description: str = "") -> None:
    """Declare a toolset before (or without) its tools, e.g. an MCP server not yet connected, so
    naming it in ``enabled_toolsets`` is valid."""
    if not name:
        raise ValueError("a toolset needs a name")
    with _lock:
        _declared_toolsets[name] = description or _declared_toolsets.get(name, "")


def unregister_toolset(name: str) -> None:
    """Forget a declared toolset (its tools are unregistered one by one with ``unregister``)."""
    with _lock:
        _declared_toolsets.pop(name, None)


def toolset_names() -> list[str]:
    """Every known toolset: the defaults present first (DEFAULT_TOOLSETS order), then the rest."""
    _ensure_builtins()
    with _lock:
        known = {s.toolset for s in _registry.values()} | set(_declared_toolsets)
    return [t for t in DEFAULT_TOOLSETS if t in known] + sorted(known - set(DEFAULT_TOOLSETS))


def opt_in_toolsets() -> set[str]:
    """Toolsets offered only when asked for by name (``register_toolset(..., default=False)``)."""
    _ensure_builtins()
    with _lock:
        return set(_opt_in_toolsets)


def toolset_tools() -> dict[str, list[str]]:
    """toolset -> the names of its registered tools (in registration order), for ``/tools``."""
    _ensure_builtins()
    with _lock:
        specs = list(_registry.values())
    out: dict[str, list[str]] = {name: [] for name in toolset_names()}
    for spec in specs:
        out.setdefault(spec.toolset, []).append(spec.name)
    return out


def check_toolset_names(names: list[str] | tuple[str, ...] | set[str] | None) -> None:
    """Raise UnknownToolsetError when a name is not a known toolset (nor 'all'/'*')."""
    if not names:
        return
    valid = toolset_names()
    unknown = [n for n in names if n not in valid and n not in ALL_TOOLSETS and n != NO_TOOLSETS]
    if unknown:
        raise UnknownToolsetError(
            f"unknown toolset{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"valid toolsets: {', '.join(valid)} (or 'all', 'none')")


def _selected(toolset: str, enabled: set[str] | None, disabled: set[str]) -> bool:
    if toolset in disabled:
        return False
    if enabled is None:
        return toolset not in _opt_in_toolsets
    return bool(enabled & set(ALL_TOOLSETS)) or toolset in enabled


def get_tool_definitions(
    enabled_toolsets: list[str] | None = None, disabled_toolsets: list[str] | None = None,
    checked: dict[Any, str | None] | None = None,
) -> list[dict]:
    """OpenAI-format definitions of the available tools in the selected toolsets.

    An unknown toolset name raises UnknownToolsetError (a typo must not silently drop or keep
    tools). The definition dicts are built once at registration and shared: treat them as read-only.
    ``checked``: availability answers to share with ``check_toolset_requirements`` in one pass.
    """
    _ensure_builtins()
    check_toolset_names(enabled_toolsets)
    check_toolset_names(disabled_toolsets)
    enabled = set(enabled_toolsets) if enabled_toolsets is not None else None
    disabled = set(disabled_toolsets or ())
    with _lock:
        specs = list(_registry.values())
    # default toolsets first, in their order, whichever tool module happened to be imported first
    specs.sort(key=lambda s: _RANK.get(s.toolset, len(_RANK)))
    seen = checked if checked is not None else {}
    return [
        _definitions[s.name]
        for s in specs
        if _selected(s.toolset, enabled, disabled) and _unavailable_reason(s, seen) is None
    ]


def get_tool_names(
    enabled_toolsets: list[str] | None = None, disabled_toolsets: list[str] | None = None
) -> list[str]:
    """Names of the tools get_tool_definitions() would offer."""
    definitions = get_tool_definitions(enabled_toolsets, disabled_toolsets)
    return [d["function"]["name"] for d in definitions]


def mutates(name: str, args: dict) -> bool:
    """Whether this call of tool ``name`` changes state (so it needs consent under "ask")."""
    _ensure_builtins()
    spec = _registry.get(name)
    if spec is None:
        return False
    return bool(spec.mutating(args) if callable(spec.mutating) else spec.mutating)


def get_toolset(name: str) -> str | None:
    """The toolset a tool belongs to, or None for an unknown tool."""
    _ensure_builtins()
    spec = _registry.get(name)
    return spec.toolset if spec else None


def check_toolset_requirements(checked: dict[Any, str | None] | None = None) -> dict[str, str]:
    """toolset -> why it is unavailable; a toolset is listed only when none of its tools work.
    ``checked``: see ``get_tool_definitions``."""
    _ensure_builtins()
    with _lock:
        specs = list(_registry.values())
    reasons: dict[str, list[str]] = {}
    ok: set[str] = set()
    seen = checked if checked is not None else {}
    for spec in specs:
        reason = _unavailable_reason(spec, seen)
        if reason is None:
            ok.add(spec.toolset)
        else:
            reasons.setdefault(spec.toolset, []).append(f"{spec.name}: {reason}")
    return {ts: "; ".join(r) for ts, r in reasons.items() if ts not in ok}


def dispatch(name: str, args: dict | None, ctx: ToolContext) -> str:
    """Run tool `name`; every failure comes out as a ToolError the model can read and fix."""
    _ensure_builtins()
    spec = _registry.get(name)
    if spec is None:
        available = ", ".join(sorted(_registry)) or "none"
        raise ToolError(f"unknown tool {name!r}; available: {available}")
    if args is None:
        args = {}
    if isinstance(args, str):  # the loop normally parses JSON, but be forgiving
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            raise ToolError(f"{name}: arguments are not valid JSON ({exc})") from None
    if not isinstance(args, dict):
        raise ToolError(f"{name}: arguments must be a JSON object, got {type(args).__name__}")
    reason = _unavailable_reason(spec)
    if reason is not None:
        raise ToolError(f"tool {name!r} is unavailable: {reason}")
    args = validate_args(name, spec.parameters or {}, args)
    if ctx.mutations != "allow" and not ctx.yolo and mutates(name, args):
        from tools.approval import approve_mutation

        approve_mutation(name, args, ctx)  # raises ToolError unless the user consents
    try:
        result = spec.handler(args, ctx)
    except ToolError:
        raise
    except Exception as exc:
        raise ToolError(f"{name} failed: {type(exc).__name__}: {exc}") from exc
    if isinstance(result, str):
        return result
    if isinstance(result, (dict, list)):
        return json.dumps(result, ensure_ascii=False)
    return "" if result is None else str(result)
