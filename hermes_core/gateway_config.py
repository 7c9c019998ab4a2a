"""The ``gateway:`` section of config.yaml as typed models, checked when the file is read.

Why here, in the foundation: every reader (the gateway, cron's deliveries, the memory store, the
tool policy, ``hermes config set``) sees one validated object instead of a raw mapping, and a bad
value stops every command at load with the same one line as any other config error, never the
gateway after its warm-up. ``None`` means "the built-in default" where the default lives in the
code that uses the value (the API server's host, port and body limit); environment variables
still beat these (``gateway.settings`` resolves flags > environment > config.yaml > defaults).

Chat platforms share ``PlatformConfig`` (enabled, allow-list, home channel); a platform with keys
of its own gets a subclass and one field on ``GatewayConfig`` (``telegram``). A plugin platform
without one reads its ``gateway.<name>`` keys as extras of a plain ``PlatformConfig``
(``GatewayConfig.platform(name)``).
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

_TRUE = ("1", "true", "yes", "on")


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


def listify(value: Any) -> list[str]:
    """A config list given as a YAML list or a comma-separated string; ids may be numbers."""
    if value is None:
        return []
    if isinstance(value, (list, tuple, set)):
        return [str(v).strip() for v in value if str(v).strip()]
    if isinstance(value, (str, int)):
        return [v.strip() for v in str(value).split(",") if v.strip()]
    raise ValueError("must be a list (or a comma-separated string)")


def _whole_or_auto(value: Any) -> Optional[int]:
    """``turn_limit``-style settings: a whole number >= 1, or ``auto``/unset (None)."""
    if value in (None, "", "auto"):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if isinstance(value, bool) or number < 1 or (isinstance(value, float) and value != number):
        raise ValueError(f"must be a whole number >= 1 or 'auto', not {value!r}")
    return number


class PlatformConfig(_Section):
    """``gateway.<platform>``: what every chat platform's section may hold."""

    enabled: bool = True
    allowed_users: list[str] = Field(default_factory=list)  # beside <PLATFORM>_ALLOWED_USERS
    home_channel: Optional[str] = None  # where cron's ``deliver: <platform>`` goes
    election_interval: float = Field(default=5.0, gt=0)  # s between a standby worker's tries

    @field_validator("allowed_users", mode="before")
    @classmethod
    def _users(cls, v: Any) -> list[str]:
        return listify(v)

    @field_validator("home_channel", mode="before")
    @classmethod
    def _channel(cls, v: Any) -> Optional[str]:
        return None if v is None or str(v).strip() == "" else str(v).strip()


class TelegramConfig(PlatformConfig):
    token: Optional[str] = None  # TELEGRAM_BOT_TOKEN wins
    bot_token: Optional[str] = None  # Hermes' other name for it
    base_url: Optional[str] = None  # TELEGRAM_BASE_URL wins (tests point it at a fake)
    poll_timeout: float = Field(default=10.0, gt=0)


class ApiServerConfig(_Section):
    """``gateway.api_server``; API_SERVER_ENABLED/HOST/PORT/KEY beat these."""

    enabled: bool = False
    host: Optional[str] = None  # None: 127.0.0.1
    port: Optional[int] = Field(default=None, ge=1, le=65535)  # None: 8642 (`--port 0`: any)
    key: Optional[str] = None
    api_key: Optional[str] = None  # Hermes' other name for ``key``
    cors_origins: list[str] = Field(default_factory=list)
    allowed_hosts: list[str] = Field(default_factory=list)
    max_body_bytes: Optional[int] = Field(default=None, gt=0)  # None: 1 MiB
    idle_timeout: Optional[float] = Field(default=None, gt=0)  # s; None: 15
    max_connections: Optional[int] = Field(default=None, gt=0)  # None: 10,000 (and the fd limit)

    @field_validator("cors_origins", "allowed_hosts", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> list[str]:
        return listify(v)


class GatewayConfig(_Section):
    api_server: ApiServerConfig = Field(default_factory=ApiServerConfig)
    telegram: TelegramConfig = Field(default_factory=TelegramConfig)
    # the chat users' agents (agent.tool_policy): None = every default toolset but the terminal
    toolsets: Optional[list[str]] = None
    working_dir: Optional[str] = None  # MESSAGING_CWD wins; None: HERMES_HOME/workspace
    allowed_users: list[str] = Field(default_factory=list)  # every platform (GATEWAY_ALLOWED_USERS)
    busy_policy: Literal["queue", "interrupt"] = "queue"
    workers: int = Field(default=1, ge=1)
    turn_limit: Optional[int] = None  # None ("auto"): derived from memory and open files
    max_concurrent_turns: Optional[int] = None  # turn threads; None: as many as the limit
    turn_lease_wait: float = Field(default=300.0, ge=0)
    max_cached_agents: int = Field(default=1000, ge=1)
    drain_timeout: float = Field(default=60.0, ge=0)
    warmup: bool = True
    shared_memory: bool = False  # chat users share the owner's memory files
    dashboard: bool = False  # mount the web dashboard on the API server

    @field_validator("toolsets", mode="before")
    @classmethod
    def _toolsets(cls, v: Any) -> Optional[list[str]]:
        if v is None:
            return None
        if isinstance(v, str):
            v = v.split(",")
        if not isinstance(v, (list, tuple)) or not all(isinstance(t, str) for t in v):
            raise ValueError("must be a list of toolset names, e.g. [file, todo, memory]")
        return [t.strip() for t in v if t.strip()]

    @field_validator("working_dir", mode="before")
    @classmethod
    def _dir(cls, v: Any) -> Any:
        if v is not None and not isinstance(v, str):
            raise ValueError("must be a directory path")
        return v

    @field_validator("allowed_users", mode="before")
    @classmethod
    def _users(cls, v: Any) -> list[str]:
        return listify(v)

    @field_validator("turn_limit", "max_concurrent_turns", mode="before")
    @classmethod
    def _auto(cls, v: Any) -> Optional[int]:
        return _whole_or_auto(v)

    @field_validator("dashboard", mode="before")
    @classmethod
    def _switch(cls, v: Any) -> Any:
        """``dashboard: true`` or ``dashboard: {enabled: true}``."""
        return v.get("enabled", True) if isinstance(v, dict) else v

    def platform(self, name: str) -> PlatformConfig:
        """The settings of chat platform ``name``: its own section's model, else the keys under
        ``gateway.<name>`` as a plain ``PlatformConfig`` (a plugin's own keys are extras)."""
        own = getattr(self, name, None) if name in type(self).model_fields else None
        if isinstance(own, PlatformConfig):
            return own
        raw = (self.model_extra or {}).get(name)
        return PlatformConfig.model_validate(raw if isinstance(raw, dict) else {})

    def written(self, name: str) -> bool:
        """Is ``gateway.<name>`` a section of config.yaml (a mapping there, not a default)?"""
        if name in type(self).model_fields:
            return name in self.model_fields_set and isinstance(getattr(self, name), BaseModel)
        return isinstance((self.model_extra or {}).get(name), dict)

    def switch(self, name: str) -> bool:
        """Is ``gateway.<name>`` on (a plugin's API routes with ``setting=name``)? Pure."""
        value = getattr(self, name, None) if name in type(self).model_fields else (
            (self.model_extra or {}).get(name))
        if isinstance(value, dict):
            value = value.get("enabled", True)
        return value is True or str(value).strip().lower() in _TRUE

    def secrets(self) -> list[str]:
        """Secret values written in this section (kept out of the gateway's log)."""
        api, tg = self.api_server, self.telegram
        return [s for s in (api.key, api.api_key, tg.token, tg.bot_token) if s]
