"""Reading a platform's settings: the environment (Hermes' variable names) beats
``gateway.<platform>`` in config.yaml, which beats the default. Shared by every platform plugin's
factory and direct sender, and by ``hermes gateway setup``."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Optional


def as_mapping(section: Any) -> dict[str, Any]:
    """A platform's settings as a plain mapping: the gateway hands factories its typed
    section (``hermes_core.gateway_config.PlatformConfig``, a plugin's own keys as extras);
    tests and ``hermes gateway setup`` hand a dict."""
    if section is None:
        return {}
    if isinstance(section, Mapping):
        return dict(section)
    dump = getattr(section, "model_dump", None)
    return dict(dump()) if callable(dump) else {}


def gateway_section(cfg: Any, platform: str) -> dict[str, Any]:
    """``gateway.<platform>`` of a config (a mapping; {} when absent)."""
    gw = getattr(cfg, "gateway", None) if cfg is not None else None
    if gw is not None and hasattr(gw, "platform"):
        return as_mapping(gw.platform(platform))
    value = gw.get(platform) if isinstance(gw, Mapping) else None
    return dict(value) if isinstance(value, Mapping) else {}


def pick(section: Mapping[str, Any], env: Mapping[str, str], var: str, *keys: str,
         default: Any = None) -> Any:
    """``env[var]`` > the first of ``section[key]`` set > ``default``."""
    section = as_mapping(section)
    if var and env.get(var):
        return env[var]
    for key in keys:
        if section.get(key) not in (None, ""):
            return section[key]
    return default


def as_bool(value: Any, default: bool = False) -> bool:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def state_file(platform: str, account: str) -> Path:
    """Where a platform keeps what it must remember across restarts (a sync token, the last UID
    seen): ``HERMES_HOME/platforms/<platform>/<account>.json``, private."""
    from hermes_core.config import hermes_home
    from hermes_core.home import ensure_private_dir

    safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in account) or "default"
    return ensure_private_dir(hermes_home() / "platforms" / platform) / f"{safe}.json"


def read_state(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_state(path: Path, data: dict[str, Any]) -> None:
    from hermes_core.files import atomic_write

    atomic_write(path, json.dumps(data))  # 0600


def env_or(env: Optional[Mapping[str, str]]) -> Mapping[str, str]:
    return os.environ if env is None else env
