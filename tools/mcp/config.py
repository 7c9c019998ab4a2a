"""`mcp_servers` in config.yaml -> validated server settings (pure: no I/O, no SDK import).

Each entry is checked on its own: a bad one becomes one line naming the server and the field,
and the others still load (SPEC §14). `${VAR}` in any string is taken from the environment
handed in; a variable that is not set is an error for that server, not an empty string (an
empty token would only come back later as a confusing 401).
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Optional

from hermes_core.redact import MIN_SECRET_LEN
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULT_TIMEOUT = 120.0
DEFAULT_CONNECT_TIMEOUT = 30.0
# What a stdio server inherits from Hermes besides its own `env`: enough to find programs,
# its home and the locale, never the secrets the parent holds (API keys, bot tokens).
SAFE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
            "TERM", "TMPDIR", "TZ", "SYSTEMROOT")

_SECRET_KEY = re.compile(r"(auth|cookie|key|token|secret|passw|credential)", re.I)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
Transport = Literal["stdio", "http", "sse"]
_TRANSPORTS = {"stdio": "stdio", "http": "http", "streamable_http": "http",
               "streamable-http": "http", "streamablehttp": "http", "sse": "sse"}


class MCPConfigError(ValueError):
    """One server entry cannot be used; the message names the server and the field."""


@dataclass(frozen=True)
class ServerConfig:
    """One usable MCP server entry."""

    name: str
    transport: Transport
    command: Optional[str] = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: Optional[str] = None
    url: Optional[str] = None
    headers: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    timeout: float = DEFAULT_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    expanded: tuple[str, ...] = ()  # the values `${VAR}`s were replaced by (never shown)

    def secrets(self) -> list[str]:
        """Values that must never be shown: secret-looking headers and environment variables (and
        the token inside `Bearer <token>`), and whatever a `${VAR}` expanded to (a token in an
        argument or a URL), longest first."""
        found: set[str] = {v for v in self.expanded if len(v) >= MIN_SECRET_LEN}
        for key, value in (*self.headers.items(), *self.env.items()):
            if _SECRET_KEY.search(key):
                found.update(w for w in (value, *value.split()) if len(w) >= MIN_SECRET_LEN)
        return sorted(found, key=len, reverse=True)


class _Tools(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)


class _Entry(BaseModel):
    """The YAML shape; unknown keys are accepted (Hermes Agent entries may carry more)."""

    model_config = ConfigDict(extra="allow")
    command: Optional[str] = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Optional[str] = None
    url: Optional[str] = None
    headers: dict[str, str] = Field(default_factory=dict)
    transport: Optional[str] = None
    enabled: bool = True
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)
    connect_timeout: float = Field(default=DEFAULT_CONNECT_TIMEOUT, gt=0)
    tools: _Tools = Field(default_factory=_Tools)

    @field_validator("args", mode="before")
    @classmethod
    def _args_as_strings(cls, v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return [str(a) if isinstance(a, (int, float)) and not isinstance(a, bool) else a
                    for a in v]
        return v

    @field_validator("env", "headers", mode="before")
    @classmethod
    def _values_as_strings(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: str(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else x
                    for k, x in v.items()}
        return v


def substitute(value: Any, environ: Mapping[str, str], where: str = "",
               used: Optional[set[str]] = None) -> Any:
    """`${VAR}` -> its value in every string of `value` (nested lists and mappings too); the
    values put in are added to ``used``."""
    if isinstance(value, str):
        def repl(m: re.Match) -> str:
            name = m.group(1)
            if name not in environ:
                raise MCPConfigError(f"`{where}` uses ${{{name}}}, which is not set "
                                     "(export it or put it in HERMES_HOME/.env)")
            if used is not None:
                used.add(environ[name])
            return environ[name]

        return _VAR.sub(repl, value)
    if isinstance(value, list):
        return [substitute(v, environ, f"{where}[{i}]", used) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: substitute(v, environ, f"{where}.{k}" if where else str(k), used)
                for k, v in value.items()}
    return value


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "entry"
    return f"`{loc}` {err['msg'][0].lower()}{err['msg'][1:]}"


def parse_server(name: str, raw: Any, environ: Mapping[str, str]) -> ServerConfig:
    """One entry -> ServerConfig; MCPConfigError names the field that is wrong."""
    if not isinstance(raw, dict):
        raise MCPConfigError(f"mcp_servers.{name}: must be a mapping (command: … or url: …), "
                             f"not {type(raw).__name__}")
    used: set[str] = set()
    try:
        entry = _Entry.model_validate(substitute(raw, environ, used=used))
    except MCPConfigError as exc:
        raise MCPConfigError(f"mcp_servers.{name}: {exc}") from None
    except ValidationError as exc:
        raise MCPConfigError(f"mcp_servers.{name}: {_first_error(exc)}") from None
    if entry.command and entry.url:
        raise MCPConfigError(f"mcp_servers.{name}: has both `command` and `url`; keep one")
    if not entry.command and not entry.url:
        raise MCPConfigError(f"mcp_servers.{name}: needs `command` (a program to run) or `url`")
    wanted = (entry.transport or ("stdio" if entry.command else "http")).strip().lower()
    transport = _TRANSPORTS.get(wanted)
    if transport is None:
        raise MCPConfigError(f"mcp_servers.{name}: `transport` {entry.transport!r} is not one of "
                             "stdio, http (streamable HTTP), sse")
    if (transport == "stdio") != bool(entry.command):
        need = "`command`" if transport == "stdio" else "`url`"
        raise MCPConfigError(f"mcp_servers.{name}: transport {transport} needs {need}")
    if entry.url and not re.match(r"https?://", entry.url):
        raise MCPConfigError(f"mcp_servers.{name}: `url` must start with http:// or https://")
    return ServerConfig(
        name=name, transport=transport, command=entry.command, args=tuple(entry.args),
        env=dict(entry.env), cwd=entry.cwd, url=entry.url, headers=dict(entry.headers),
        enabled=entry.enabled,
        timeout=entry.timeout, connect_timeout=entry.connect_timeout,
        include=tuple(entry.tools.include), exclude=tuple(entry.tools.exclude),
        expanded=tuple(sorted(used)))


def parse_servers(raw: Any, environ: Mapping[str, str]) -> tuple[list[ServerConfig], list[str]]:
    """(usable servers, one error line per bad entry)."""
    if raw is None:
        return [], []
    if not isinstance(raw, dict):
        return [], ["mcp_servers: must be a mapping of server name -> settings, "
                    f"not {type(raw).__name__}"]
    servers: list[ServerConfig] = []
    errors: list[str] = []
    for name, entry in raw.items():
        name = str(name)
        if not name.strip():
            errors.append("mcp_servers: a server has an empty name")
            continue
        try:
            servers.append(parse_server(name, entry, environ))
        except MCPConfigError as exc:
            errors.append(str(exc))
    return servers, errors


def display_url(url: str) -> str:
    """A URL as shown to users and logs: no credentials, no query string (tokens live there)."""
    url = re.sub(r"//[^/@]*@", "//", url)
    return url.split("?", 1)[0] + ("?…" if "?" in url else "")


def child_env(server: ServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of a stdio server: the safe base set plus its own `env`."""
    env = {k: environ[k] for k in SAFE_ENV if k in environ and not environ[k].startswith("()")}
    env.update(server.env)
    return env


def tool_selected(tool: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """`tools.include`/`exclude` (names or globs): include narrows first, exclude then removes."""
    if include and not any(fnmatch.fnmatchcase(tool, pat) for pat in include):
        return False
    return not any(fnmatch.fnmatchcase(tool, pat) for pat in exclude)
