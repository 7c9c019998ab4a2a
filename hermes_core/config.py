"""HERMES_HOME paths and configuration: config.yaml + .env + environment -> one validated object.

Precedence (SPEC §1): CLI flags > environment > config.yaml > built-in defaults. Flags are applied
by the caller (``resolve_provider(..., base_url=flag)``); everything else is resolved here.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hermes_core.exec_config import CheckpointsConfig, CodeExecutionConfig, TerminalConfig
from hermes_core.gateway_config import GatewayConfig
from hermes_core.provider_config import AuxModel, FallbackConfig, FallbackEntry, listify
from hermes_core.web_config import BrowserConfig, VisionModel, WebConfig


class ConfigError(Exception):
    """config.yaml cannot be used; the message names the file and the fix."""


_HOME: tuple[Optional[str], Optional[str], Optional[Path]] = (None, None, None)


def hermes_home() -> Path:
    """Where everything lives; read at call time so tests can point HERMES_HOME elsewhere.
    The Path is reused while HERMES_HOME and HOME read the same (a new agent asks ~8 times)."""
    global _HOME
    raw, home = os.environ.get("HERMES_HOME"), os.environ.get("HOME")
    if _HOME[2] is not None and _HOME[0] == raw and _HOME[1] == home:
        return _HOME[2]
    path = Path(raw or Path.home() / ".hermes").expanduser()
    _HOME = (raw, home, path)
    return path


def config_path() -> Path:
    return hermes_home() / "config.yaml"


def env_path() -> Path:
    return hermes_home() / ".env"


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


class ModelConfig(_Section):
    default: Optional[str] = None
    provider: Optional[str] = None
    base_url: Optional[str] = None
    api_key: Optional[str] = None
    context_length: Optional[int] = Field(default=None, gt=0)
    path: Optional[str] = None  # GGUF file for provider "local"
    seed: Optional[int] = None  # sampling seed (the embedded model)
    temperature: Optional[float] = Field(default=None, ge=0)  # embedded model default: greedy
    timeout: Optional[float] = Field(default=None, gt=0)  # s without an answer (embedded: restart)
    tool_choice: Optional[Literal["auto", "required", "none"]] = None  # required: first reply calls
    api_keys: list[str] = Field(default_factory=list)  # a key pool (issue 25), after api_key

    @field_validator("api_keys", mode="before")
    @classmethod
    def _keys(cls, v: Any) -> Any:
        return listify(v)


class CompressionConfig(_Section):
    enabled: bool = True
    threshold: float = Field(default=0.50, gt=0, le=1)
    threshold_tokens: Optional[int] = Field(default=None, gt=0)
    target_ratio: float = Field(default=0.20, gt=0, le=1)
    protect_first_n: int = Field(default=3, ge=0)
    protect_last_n: int = Field(default=20, ge=1)
    max_attempts: int = 3
    summary_timeout: float = Field(default=60.0, gt=0)

    @field_validator("max_attempts")
    @classmethod
    def _clamp_attempts(cls, v: int) -> int:
        return max(1, min(10, int(v)))


class AuxiliaryConfig(_Section):
    summary: AuxModel = Field(default_factory=AuxModel)  # compression's summaries (issue 25)
    compression: AuxModel = Field(default_factory=AuxModel)  # the older name of summary
    review: AuxModel = Field(default_factory=AuxModel)  # the background skill review
    background_review: AuxModel = Field(default_factory=AuxModel)  # Hermes' name of review
    vision: VisionModel = Field(default_factory=VisionModel)  # vision_analyze (issue 23)


class AgentConfig(_Section):
    max_turns: int = Field(default=90, ge=1)
    save_trajectories: bool = False
    reasoning_effort: Optional[str] = None  # Hermes' key; Anthropic: the thinking budget


class MemoryConfig(_Section):
    memory_enabled: bool = True
    user_profile_enabled: bool = True
    memory_char_limit: int = Field(default=2200, ge=100)
    user_char_limit: int = Field(default=1375, ge=100)


class ContextFilesConfig(_Section):
    max_chars: int = Field(default=20_000, ge=1000)  # per file; head and tail kept past it


class ToolsetsConfig(_Section):
    """``toolsets: [terminal, file]`` (enabled list) or ``{enabled: [...], disabled: [...]}``."""

    enabled: Optional[list[str]] = None
    disabled: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, v: Any) -> Any:
        if v is None:
            return {}
        if isinstance(v, str):
            v = [t.strip() for t in v.split(",") if t.strip()]
        return {"enabled": v} if isinstance(v, list) else v


class CronConfig(_Section):
    tick_interval: float = Field(default=30.0, gt=0)  # seconds between the gateway's ticks
    run_timeout: float = Field(default=900.0, gt=0)  # a run past this is interrupted
    stale_after: float = Field(default=600.0, gt=0)  # no heartbeat this long: the run is unknown
    max_parallel: int = Field(default=4, ge=1)  # runs at once in one process


class DelegationConfig(_Section):
    """delegate_task (SPEC §13). model/base_url/api_key unset: children use the parent's
    provider."""

    max_concurrent_children: int = Field(default=3, ge=1)
    max_iterations: int = Field(default=50, ge=1)
    max_depth: int = Field(default=1, ge=0)  # 1: children cannot delegate; 0: no delegation at all
    child_timeout: float = Field(default=600.0, gt=0)  # seconds per child
    max_answer_chars: int = Field(default=4000, ge=500)  # per child, head and tail kept
    model: Optional[str] = None
    base_url: Optional[str] = None
    api_key: Optional[str] = None


class SkillsConfig(_Section):
    """SPEC §10: where skills come from, what the prompt lists, when the review runs."""

    # read-only roots, searched after HERMES_HOME/skills
    external_dirs: list[str] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)  # skill names left out everywhere
    index_budget: int = Field(default=1000, ge=0)  # tokens of the prompt's skill index
    creation_nudge_interval: int = Field(default=10, ge=1)  # tool calls since the last skill write
    auto_create: bool = True  # the background review may create and patch skills

    @field_validator("external_dirs", "disabled", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        if v is None:
            return []
        return [t.strip() for t in v.split(",") if t.strip()] if isinstance(v, str) else v


class PluginsConfig(_Section):
    """Hermes' keys: third-party plugins load only when ``enabled`` names them; ``disabled`` turns
    off any plugin, built-ins included."""

    enabled: list[str] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)

    @field_validator("enabled", "disabled", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        if v is None:
            return []
        return [t.strip() for t in v.split(",") if t.strip()] if isinstance(v, str) else v


class StoreConfig(_Section):
    """Where sessions live: ``url: postgresql://...`` for a shared store, else SQLite."""

    url: Optional[str] = None
    pool_size: int = Field(default=10, ge=1)  # PostgreSQL connections per process


def store_url(cfg: Optional["HermesConfig"] = None) -> Optional[str]:
    """The configured store: ``HERMES_DATABASE_URL`` (wins), else ``store.url``; None = SQLite."""
    env = os.environ.get("HERMES_DATABASE_URL", "").strip()
    if env:
        return env
    url = cfg.store.url if cfg is not None else None
    return url.strip() or None if url else None


class HermesConfig(_Section):
    model: ModelConfig = Field(default_factory=ModelConfig)
    compression: CompressionConfig = Field(default_factory=CompressionConfig)
    auxiliary: AuxiliaryConfig = Field(default_factory=AuxiliaryConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    terminal: TerminalConfig = Field(default_factory=TerminalConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)  # hermes_core.gateway_config
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    context_files: ContextFilesConfig = Field(default_factory=ContextFilesConfig)
    toolsets: ToolsetsConfig = Field(default_factory=ToolsetsConfig)
    delegation: DelegationConfig = Field(default_factory=DelegationConfig)
    timezone: Optional[str] = None  # IANA name for schedules; None: the system's
    cron: CronConfig = Field(default_factory=CronConfig)
    # checked entry by entry by agent.mcp.config, so one bad server cannot fail the whole file
    mcp_servers: Any = None
    # platform -> toolset names for the gateway's agents there (agent.tool_policy); read entry by
    # entry, so one platform's bad list never stops the others
    platform_toolsets: Any = None


    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    plugins: PluginsConfig = Field(default_factory=PluginsConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    code_execution: CodeExecutionConfig = Field(default_factory=CodeExecutionConfig)
    checkpoints: CheckpointsConfig = Field(default_factory=CheckpointsConfig)
    web: WebConfig = Field(default_factory=WebConfig)  # web_search, web_extract (issue 23)
    browser: BrowserConfig = Field(default_factory=BrowserConfig)  # browser_* tools (issue 23)
    fallback_providers: list[FallbackEntry] = Field(default_factory=list)  # (issue 25)
    fallback_model: Optional[FallbackEntry] = None  # Hermes' older single entry (one fallback)
    fallback: FallbackConfig = Field(default_factory=FallbackConfig)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: Optional[str]) -> Optional[str]:
        if v is None or not str(v).strip():
            return None
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(str(v).strip())
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{v!r} is not a time zone; use an IANA name such as Europe/Paris, "
                             "America/New_York or UTC") from None
        return str(v).strip()


def ensure_plugins() -> list:
    """Load the plugins with config.yaml's lists, or the built-ins alone when it is junk (the
    command reports that itself); for readers of registrations outside an agent."""
    try:
        cfg = load_config()
    except ConfigError:
        cfg = HermesConfig()
    return load_plugins(cfg)


def load_plugins(cfg: HermesConfig) -> list:
    """Load the process's plugins once (built-ins, pip packages, HERMES_HOME/plugins folders) with
    this config's enabled/disabled lists; later calls return what the first one did."""
    from hermes_core.plugin_loader import LOADER

    return LOADER.load(hermes_home(), enabled=cfg.plugins.enabled, disabled=cfg.plugins.disabled)


def load_env_file(path: Optional[Path] = None) -> None:
    """Load HERMES_HOME/.env into os.environ without overriding variables already set."""
    p = path or env_path()
    if not p.is_file():
        return
    from dotenv import dotenv_values

    for key, value in dotenv_values(p).items():
        if value is not None and key not in os.environ:
            os.environ[key] = value


def read_raw_config(path: Optional[Path] = None) -> dict[str, Any]:
    """The YAML mapping as written (empty when there is no file)."""
    p = path or config_path()
    if not p.is_file():
        return {}
    import yaml

    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError(f"{p} is not valid YAML{where}; "
                          "fix it or move it aside and run `hermes setup`") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {p}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p} is not UTF-8 text; "
                          "save it as UTF-8 or move it aside and run `hermes setup`") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p} must be a YAML mapping (key: value), not {type(data).__name__}; "
                          "fix it or run `hermes setup`")
    return data


def config_error(exc: ValidationError, source: str, prefix: str = "") -> ConfigError:
    """A model's validation error as the one line every config error is (``prefix``: where the
    model sits in config.yaml, e.g. ``gateway.discord.`` for a plugin platform's section)."""
    first = exc.errors()[0]
    loc = prefix + ".".join(str(p) for p in first["loc"])
    msg = first["msg"].removeprefix("Value error, ").split(" or instance of ")[0]  # a class name
    msg = msg[:1].lower() + msg[1:]
    return ConfigError(f"{source}: `{loc}` {msg}; fix it with `hermes config set {loc} <value>`")


def parse_config(data: dict[str, Any], source: str = "config.yaml") -> HermesConfig:
    try:
        cfg = HermesConfig.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, source) from None
    return cfg


def load_config(path: Optional[Path] = None) -> HermesConfig:
    """Validated config; raises ConfigError with one clear line when the file is junk."""
    p = path or config_path()
    return parse_config(read_raw_config(p), str(p))


_SHARED: dict[str, tuple[Optional[tuple[int, int, int]], HermesConfig]] = {}


def shared_config() -> HermesConfig:
    """``load_config()``, one object shared while config.yaml's (mtime, size, inode) stay the
    same: tool availability checks read it for every new agent (a gateway makes one per
    session), ~0.2 ms of YAML and validation each. Read-only. Edits are seen at the next call:
    the file is stat'ed every time, and one read too soon after a change is read every time
    (``hermes_core.files.settled``)."""
    from hermes_core.files import settled

    p = config_path()
    try:
        st = os.stat(p)
        stamp: Optional[tuple[int, int, int]] = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None  # no file (or none readable): load_config says which
    hit = _SHARED.get(str(p))
    if hit is not None and hit[0] == stamp:
        return hit[1]
    before = time.time_ns()
    cfg = load_config(p)  # read after the stat: a later edit changes the stamp, never hides
    if stamp is None or settled(stamp[0], before):
        if len(_SHARED) > 16:
            _SHARED.clear()
        _SHARED[str(p)] = (stamp, cfg)
    return cfg
