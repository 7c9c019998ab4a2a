"""What a plugin can register: the ``ctx`` handed to every plugin's ``register(ctx)``.

Built-in tools, platforms and providers register through this same object as a pip-installed
package or a ``HERMES_HOME/plugins/<name>/`` folder does (``plugin_loader`` finds them all). The
calls keep Hermes Agent's names and shapes (``ctx.register_tool(name=, toolset=, schema=,
handler=, ...)``, ``ctx.register_hook(name, fn)``), so its plugins load unchanged.

Registrations are plain records kept here, by kind; each consumer reads its kind when it needs it
(the tool registry its tools, the gateway its platforms, provider resolution its providers). So
this module imports nothing of the project, and loading plugins never drags in a surface.
"""
from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from hermes_core.hooks import HOOKS, HookBus

KINDS = ("tool", "toolset", "platform", "provider", "search_backend", "memory_provider",
         "command", "cli_command", "api_routes")


@dataclass(frozen=True)
class Registration:
    """One thing a plugin offered: ``kind`` (see KINDS), its ``name``, and what it registered
    (a factory, a tool spec, a handler...)."""
    kind: str
    name: str
    value: Any
    plugin: str
    options: dict = field(default_factory=dict)


class Registry:
    """Every registration of the process, by kind; the loader fills it, consumers read it."""

    def __init__(self) -> None:
        self._items: list[Registration] = []
        self._lock = threading.Lock()
        self.generation = 0

    def add(self, reg: Registration) -> None:
        if reg.kind not in KINDS:
            raise ValueError(f"unknown registration kind {reg.kind!r}")
        with self._lock:
            self._items.append(reg)
            self.generation += 1

    def of(self, kind: str) -> list[Registration]:
        with self._lock:
            return [r for r in self._items if r.kind == kind]

    def get(self, kind: str, name: str) -> Optional[Registration]:
        """The last registration of ``name`` in ``kind``: a later plugin overrides an earlier."""
        found = [r for r in self.of(kind) if r.name == name]
        return found[-1] if found else None

    def drop_plugin(self, plugin: str) -> None:
        with self._lock:
            self._items = [r for r in self._items if r.plugin != plugin]
            self.generation += 1


REGISTRY = Registry()


def _plugin_handler(fn: Callable[..., Any]) -> Callable[[dict, Any], str]:
    """A Hermes-shaped handler ``fn(params, **kwargs)`` as our ``handler(args, ctx)``; a non-str
    answer is sent to the model as JSON."""
    def run(args: dict, ctx: Any) -> str:
        out = fn(args, task_id=getattr(ctx, "task_id", None),
                 session_id=getattr(ctx, "session_id", None), ctx=ctx)
        return out if isinstance(out, str) else json.dumps(out, default=str)
    return run


class PluginContext:
    """The ``ctx`` of ``register(ctx)``: one per plugin, so every registration names its plugin."""

    def __init__(self, name: str, registry: Registry = REGISTRY, hooks: HookBus = HOOKS) -> None:
        self.name = name
        self.logger = logging.getLogger(f"hermes.plugins.{name}")
        self._registry, self._hooks = registry, hooks

    def _add(self, kind: str, name: str, value: Any, **options: Any) -> None:
        if not name:
            raise ValueError(f"a {kind.replace('_', ' ')} needs a name")
        self._registry.add(Registration(kind, name, value, self.name, options))

    # -- tools

    def register_tool(self, spec: Any = None, *, name: str = "", toolset: str = "",
                      schema: Optional[dict] = None, handler: Optional[Callable[..., Any]] = None,
                      description: str = "", check_fn: Optional[Callable[[], Any]] = None,
                      requires_env: Optional[list[str]] = None, mutating: bool = False,
                      **extra: Any) -> None:
        """A tool, either as a ready spec object (built-ins) or Hermes' keywords: ``schema`` is
        ``{"name", "description", "parameters"}``, ``handler(params, **kwargs) -> str``,
        ``check_fn() -> bool`` (False: unavailable), ``requires_env`` variables it needs."""
        if spec is not None:
            self._add("tool", getattr(spec, "name", ""), spec, native=True)
            return
        if handler is None or not callable(handler):
            raise ValueError(f"tool {name!r} needs a callable handler")
        schema = dict(schema or {})
        self._add("tool", name or schema.get("name", ""), {
            "toolset": toolset or self.name,
            "description": description or schema.get("description", ""),
            "parameters": schema.get("parameters") or {"type": "object", "properties": {}},
            "handler": _plugin_handler(handler), "check_fn": check_fn,
            "requires_env": list(requires_env or []), "mutating": bool(mutating), **extra,
        }, native=False)

    def register_toolset(self, name: str, description: str = "", default: bool = True) -> None:
        """Declare a toolset (``default=False``: opt-in, not offered unless asked for)."""
        self._add("toolset", name, description, default=default)

    # -- hooks and commands

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        self._hooks.add(hook_name, callback, owner=self.name)

    def register_command(self, name: str, handler: Callable[..., Any],
                         description: str = "") -> None:
        """A ``/name`` slash command for the REPL and chats: ``handler(args: str, **kw) -> str``."""
        self._add("command", name.lstrip("/"), handler, description=description)

    def register_cli_command(self, name: str, setup: Callable[[Any], None],
                             handler: Callable[[Any], int], help: str = "") -> None:  # noqa: A002
        """A ``hermes NAME`` subcommand: ``setup(parser)`` adds its arguments, ``handler(args)``."""
        self._add("cli_command", name, handler, setup=setup, help=help)

    # -- extension points of other layers (factories, read by their consumers)

    def register_platform(self, name: str, factory: Callable[..., Any], **options: Any) -> None:
        """A chat platform adapter for the gateway: ``factory(settings, env) -> adapter``."""
        self._add("platform", name, factory, **options)

    def register_provider(self, name: str, factory: Callable[..., Any], **options: Any) -> None:
        """A model provider: ``factory(settings) -> client`` (options: base_url, key_env, ...)."""
        self._add("provider", name, factory, **options)

    def register_search_backend(self, name: str, factory: Callable[..., Any],
                                **options: Any) -> None:
        """A web search backend for ``web_search``: ``factory(config, env) -> backend``."""
        self._add("search_backend", name, factory, **options)

    def register_api_routes(self, name: str, registrar: Callable[[Any], None],
                            setting: str = "") -> None:
        """Routes for the gateway's API server: ``registrar(server)`` as for
        ``APIServer.add_routes``; with ``setting``, only when ``gateway.<setting>`` is true."""
        self._add("api_routes", name, registrar, setting=setting)

    def register_memory_provider(self, name: str, factory: Callable[..., Any],
                                 **options: Any) -> None:
        self._add("memory_provider", name, factory, **options)
