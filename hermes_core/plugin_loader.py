"""Finding and loading plugins: one path for built-ins and everyone else.

Sources, in load order (a later registration of the same name wins):
1. entry points of group ``hermes_agent.plugins`` (Hermes Agent's group). This project's own
   built-in tools, platforms and providers are declared there too, in pyproject.toml, exactly as a
   pip-installed plugin package declares its own: the built-ins prove the path every plugin takes.
2. folders ``HERMES_HOME/plugins/<name>/`` holding ``plugin.yaml`` and ``__init__.py`` with
   ``register(ctx)`` (Hermes Agent's folder shape).

Why entry points and not pluggy: they are the packaging standard every installer understands, and
Hermes plugins already use them; the hook side is a 60-line ``HookBus`` with Hermes' hook names,
which pluggy's hookspec/hookimpl decorators would not match.

Enabling follows Hermes: built-ins are on unless ``plugins.disabled`` names them; a third-party
plugin (pip or folder) loads only when ``plugins.enabled`` names it (``hermes plugins enable``).
A plugin whose import or ``register`` fails is recorded with its error (``hermes doctor`` and
``hermes plugins list`` name it), its registrations are dropped, and the others still load.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from hermes_core.hooks import HOOKS, HookBus
from hermes_core.plugin_api import REGISTRY, PluginContext, Registry

log = logging.getLogger("hermes.plugins")

ENTRY_POINT_GROUP = "hermes_agent.plugins"
OWN_DISTRIBUTION = "hermes-runtime"
_FOLDER_PACKAGE = "hermes_user_plugins"


@dataclass
class PluginInfo:
    name: str
    source: str  # "builtin", "pip" or "folder"
    where: str  # module path or folder
    version: str = ""
    description: str = ""
    enabled: bool = False
    loaded: bool = False
    error: Optional[str] = None


@dataclass
class _Found:
    info: PluginInfo
    register: Callable[[], Callable[[Any], Any]]  # imports the plugin, returns its register()


def _entry_points() -> list[_Found]:
    import importlib.metadata as md

    found = []
    names: dict[int, str] = {}  # a distribution's name parses its METADATA: once, not per plugin
    for ep in md.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        if id(dist) not in names:
            names[id(dist)] = (getattr(dist, "name", "") or "").lower().replace("_", "-")
        dist_name = names[id(dist)]
        builtin = dist_name == OWN_DISTRIBUTION
        version = "" if builtin else str(getattr(dist, "version", "") or "")
        info = PluginInfo(ep.name, "builtin" if builtin else "pip", ep.value, version)
        found.append(_Found(info, lambda ep=ep: _entry_register(ep)))
    return found


def _entry_register(ep: Any) -> Callable[[Any], Any]:
    obj = ep.load()  # "module" (its register) or "module:function"
    fn = obj if callable(obj) else getattr(obj, "register", None)
    if fn is None or not callable(fn):
        raise TypeError(f"{ep.value} has no register(ctx) function")
    return fn


def _manifest(folder: Path) -> dict:
    import yaml

    path = folder / "plugin.yaml"
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a YAML mapping")
    return data


def _folders(root: Path) -> list[_Found]:
    found = []
    if not root.is_dir():
        return found
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not (folder / "__init__.py").is_file() and not (folder / "plugin.yaml").is_file():
            continue
        info = PluginInfo(folder.name, "folder", str(folder))
        try:
            meta = _manifest(folder)
            info.name = str(meta.get("name") or folder.name)
            info.version = str(meta.get("version") or "")
            info.description = str(meta.get("description") or "")
        except Exception as exc:
            info.error = f"plugin.yaml: {exc}"
        found.append(_Found(info, lambda folder=folder: _folder_register(folder)))
    return found


def _folder_register(folder: Path) -> Callable[[Any], Any]:
    init = folder / "__init__.py"
    if not init.is_file():
        raise FileNotFoundError(f"{folder} has plugin.yaml but no __init__.py with register(ctx)")
    safe = re.sub(r"\W", "_", folder.name)
    if _FOLDER_PACKAGE not in sys.modules:
        pkg = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(_FOLDER_PACKAGE, None))
        pkg.__path__ = []  # type: ignore[attr-defined]
        sys.modules[_FOLDER_PACKAGE] = pkg
    name = f"{_FOLDER_PACKAGE}.{safe}"
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {init}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    fn = getattr(module, "register", None)
    if not callable(fn):
        raise TypeError(f"{init} defines no register(ctx) function")
    return fn


class PluginLoader:
    """Discovers and loads the process's plugins once; ``statuses()`` tells what happened."""

    def __init__(self, registry: Registry = REGISTRY, hooks: HookBus = HOOKS,
                 entry_points: bool = True) -> None:
        """``entry_points=False``: folders only (tests of folder plugins in their own loader)."""
        self.registry, self.hooks, self._use_entry_points = registry, hooks, entry_points
        self._lock = threading.RLock()
        self._loaded = False
        self._infos: list[PluginInfo] = []

    def discover(self, home: Path) -> list[_Found]:
        return (_entry_points() if self._use_entry_points else []) + _folders(home / "plugins")

    def load(self, home: Path, enabled: Optional[Iterable[str]] = None,
             disabled: Iterable[str] = ()) -> list[PluginInfo]:
        """Load every enabled plugin once per process (later calls return the first result)."""
        with self._lock:
            if self._loaded:
                return list(self._infos)
            self._loaded = True
            on, off = set(enabled or ()), set(disabled or ())
            for found in self.discover(home):
                info = found.info
                wanted = info.source == "builtin" or info.name in on
                info.enabled = info.name not in off and wanted
                if info.enabled and info.error is None:
                    self._load_one(found)
                self._infos.append(info)
            return list(self._infos)

    def _load_one(self, found: _Found) -> None:
        info = found.info
        try:
            register = found.register()
            register(PluginContext(info.name, self.registry, self.hooks))
            info.loaded = True
        except Exception as exc:  # a broken plugin is named and skipped, never fatal
            info.error = f"{type(exc).__name__}: {exc}"
            self.registry.drop_plugin(info.name)
            self.hooks.remove_owner(info.name)
            log.warning("plugin %s (%s) failed to load: %s", info.name, info.where, info.error)

    def statuses(self) -> list[PluginInfo]:
        with self._lock:
            return list(self._infos)

    def loaded(self) -> bool:
        return self._loaded


LOADER = PluginLoader()
