"""What one ``hermes gateway run`` is asked to do: the launcher's options (``ServeOptions``) and
how they meet the environment and config.yaml: flags > environment > ``gateway:`` > defaults.

The launcher (``hermes_cli.gateway_cmd``) turns its flags into a ``ServeOptions``; nothing here
knows about argparse. Pure, except for reading ``os.environ`` and writing a generated API key.
"""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from hermes_core.config import ConfigError
from hermes_core.gateway_config import ApiServerConfig, GatewayConfig
from hermes_core.home import write_env_var

_TRUE = {"1", "true", "yes", "on"}
SECRET_ENV = ("TELEGRAM_BOT_TOKEN", "API_SERVER_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY")


@dataclass(frozen=True)
class ServeOptions:
    api_server: bool = False  # serve the API server whatever the config says
    host: Optional[str] = None
    port: Optional[int] = None  # 0: any free port
    skip_platforms: frozenset[str] = frozenset()  # platforms not to start (``--no-telegram``)
    busy_policy: Optional[str] = None
    drain_timeout: Optional[float] = None
    workers: Optional[int] = None
    worker: Optional[int] = None  # set for a worker process of a supervisor: its index
    verbose: bool = False
    # how a supervisor starts worker i: this command + ``--worker i [--port P]``
    worker_command: tuple[str, ...] = ()


def api_enabled(options: ServeOptions, api: ApiServerConfig,
                env: Optional[Mapping[str, str]] = None) -> bool:
    env = os.environ if env is None else env
    return bool(options.api_server or env.get("API_SERVER_ENABLED", "").lower() in _TRUE
                or api.enabled)


def configured_key(api: ApiServerConfig, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    env = os.environ if env is None else env
    return env.get("API_SERVER_KEY") or api.key or api.api_key or None


def ensure_api_key(api: ApiServerConfig) -> Optional[Path]:
    """The API server always needs a key: with none configured, generate a strong one into
    ``HERMES_HOME/.env`` (mode 600, other lines kept) and return that file; None when one was
    set."""
    if configured_key(api):
        return None
    return write_env_var("API_SERVER_KEY", secrets.token_urlsafe(32))


def api_address(options: ServeOptions, api: ApiServerConfig,
                env: Optional[Mapping[str, str]] = None) -> tuple[str, int]:
    """(host, port) of the API server: flags > environment > config > defaults."""
    from gateway.platforms.api_server import DEFAULT_HOST, DEFAULT_PORT

    env = os.environ if env is None else env
    host = options.host or env.get("API_SERVER_HOST") or api.host or DEFAULT_HOST
    if options.port is not None:
        return str(host), options.port
    raw = env.get("API_SERVER_PORT") or api.port or DEFAULT_PORT
    try:
        return str(host), int(raw)
    except ValueError:
        raise ConfigError(f"API_SERVER_PORT must be a port number, not {raw!r}") from None


def worker_count(options: ServeOptions, gw: GatewayConfig) -> int:
    """``--workers`` > ``gateway.workers`` > 1."""
    count = options.workers if options.workers is not None else gw.workers
    if count < 1:
        raise ConfigError(f"--workers / gateway.workers must be a whole number >= 1, not {count!r}")
    return count


def drain_timeout(options: ServeOptions, gw: GatewayConfig) -> float:
    """Seconds running turns get on SIGTERM: ``--drain-timeout`` > ``gateway.drain_timeout``."""
    return float(options.drain_timeout if options.drain_timeout is not None else gw.drain_timeout)


def secret_values(gw: GatewayConfig, model_key: Optional[str],
                  env: Optional[Mapping[str, str]] = None) -> list[str]:
    """The secrets the gateway's log must never show: the usual variables and those written in
    config.yaml (platform plugins add theirs once loaded: ``platform_secrets``)."""
    env = os.environ if env is None else env
    return [env.get(n, "") for n in SECRET_ENV] + gw.secrets() + ([model_key] if model_key else [])


def platform_secrets(env: Optional[Mapping[str, str]] = None) -> list[str]:
    """The variables each loaded platform plugin names (``register_platform(..., env=(...))``)."""
    from hermes_core.plugin_api import REGISTRY

    env = os.environ if env is None else env
    return [env.get(n, "") for reg in REGISTRY.of("platform") for n in reg.options.get("env", ())]
