"""The chat platforms a gateway runs: one adapter per ``platform`` registration that is
configured here (``ctx.register_platform(name, factory, ...)``, docs/CONTRACTS.md).

Why a registry rather than a list of platforms: the gateway never names one. A platform plugin
(Telegram is one, built in) offers ``factory(settings, env) -> adapter | None``: ``settings`` is
its ``gateway.<name>`` section (``hermes_core.gateway_config.GatewayConfig.platform``), ``env``
the process environment; None means "not configured here" (no token), and the platform is
skipped. Connecting is not the factory's job: ``gateway.platform_start`` starts each adapter on
its own and retries one that cannot connect.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Mapping, Optional

from pydantic import ValidationError

from hermes_core.config import (ConfigError, HermesConfig, config_error, config_path,
                                load_plugins)
from hermes_core.gateway_config import PlatformConfig
from hermes_core.plugin_api import REGISTRY

log = logging.getLogger("gateway.platforms")


def platform_names() -> list[str]:
    """Registered platforms in registration order (a later registration of a name wins)."""
    names: list[str] = []
    for reg in REGISTRY.of("platform"):
        if reg.name not in names:
            names.append(reg.name)
    return names


def platform_settings(cfg: HermesConfig, name: str) -> PlatformConfig:
    """``gateway.<name>``; a plugin platform's section is checked only now that the platform is
    known, so junk there is the same one-line ``ConfigError`` as anywhere in config.yaml."""
    try:
        return cfg.gateway.platform(name)
    except ValidationError as exc:
        raise config_error(exc, str(config_path()), f"gateway.{name}.") from None


def build_adapters(cfg: HermesConfig, skip: frozenset[str] = frozenset(),
                   env: Optional[Mapping[str, str]] = None) -> list[Any]:
    """An adapter for every platform plugin configured here, but those in ``skip`` and those
    with ``gateway.<name>.enabled: false``. A factory's ``ConfigError`` stops the start (one
    line); any other failure names the platform in the log and leaves it out."""
    load_plugins(cfg)
    env = os.environ if env is None else env
    adapters = []
    for name in platform_names():
        settings = platform_settings(cfg, name)
        if name in skip or not settings.enabled:
            continue
        reg = REGISTRY.get("platform", name)
        assert reg is not None
        try:
            adapter = reg.value(settings, env)
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken plugin costs its own platform only
            log.error("platform %s (plugin %s) could not be set up: %s", name, reg.plugin, exc)
            continue
        if adapter is not None:
            adapters.append(adapter)
    return adapters
