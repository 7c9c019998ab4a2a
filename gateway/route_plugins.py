"""Routes that plugins add to the gateway's API server (``ctx.register_api_routes``), e.g. the
web dashboard: the gateway mounts what is registered, never importing the package behind it.

A registration with a ``setting`` is mounted only when ``gateway.<setting>`` is true in
config.yaml (``gateway.dashboard: true``), so installing a surface never exposes it by itself.
"""
from __future__ import annotations

from typing import Any, Callable

from hermes_core.gateway_config import GatewayConfig


def enabled(setting: str, gw: GatewayConfig) -> bool:
    """Is a registration with this ``setting`` wanted by ``gateway:`` (pure)."""
    return not setting or gw.switch(setting)


def plugin_registrars(cfg: Any) -> list[tuple[str, Callable[[Any], None]]]:
    """(name, registrar) of every wanted ``api_routes`` registration, plugins loaded first."""
    from hermes_core.config import load_plugins
    from hermes_core.plugin_api import REGISTRY

    load_plugins(cfg)
    return [(reg.name, reg.value) for reg in REGISTRY.of("api_routes")
            if enabled(str(reg.options.get("setting") or ""), cfg.gateway)]
