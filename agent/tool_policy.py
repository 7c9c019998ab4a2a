"""What a chat or API user's agent may touch: its toolsets and the one directory its file tools
reach.

Whoever can message the bot drives these agents, so they get less than the owner at the terminal:
no shell (nor execute_code) unless `gateway.toolsets` names it (separate from the CLI's
`toolsets`), and file tools confined to `gateway.working_dir` (env `MESSAGING_CWD`, Hermes' name;
default `HERMES_HOME/workspace`, created 0700).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Optional

from hermes_core.config import ConfigError, hermes_home
from hermes_core.gateway_config import GatewayConfig

DISABLED_BY_DEFAULT = ("terminal", "code_execution")  # both run arbitrary code on this host


def gateway_toolsets(gw: GatewayConfig) -> tuple[list[str], list[str]]:
    """(enabled_toolsets, disabled_toolsets) for a gateway agent, from `gateway.toolsets`.

    Unset: every toolset that exists now except the terminal and the opt-in ones (the browser:
    a chat user does not drive a browser on the owner's machine unless `gateway.toolsets` says
    so); the owner's MCP servers are included (call it per agent, they register when they
    start). The CLI's `toolsets:` never applies here: chat users do not inherit the owner's
    choices at the terminal.
    """
    from tools.registry import (UnknownToolsetError, check_toolset_names, opt_in_toolsets,
                                toolset_names)

    names = gw.toolsets  # its type was checked when config.yaml was read
    if names is None:
        off = set(DISABLED_BY_DEFAULT) | opt_in_toolsets()
        return [t for t in toolset_names() if t not in off], []
    try:  # MCP toolsets exist once their servers start: the registry checks those names then
        check_toolset_names([n for n in names if not n.startswith("mcp-")])
    except UnknownToolsetError as exc:
        raise ConfigError(f"config.yaml `gateway.toolsets`: {exc}") from None
    return list(names), []


def read_platform_toolsets(raw: Any, valid: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """config ``platform_toolsets:`` (platform -> toolset names) read entry by entry (pure):
    (the lists to apply, one warning line per problem). An unknown name is dropped, so a typo
    narrows that platform's tools rather than widening them or stopping the gateway; Hermes
    Agent's preset names (``hermes-telegram``, ``hermes-cli``...) mean the platform's defaults,
    so they leave no entry. ``mcp-*`` names exist once their servers start and are kept."""
    where = "config.yaml `platform_toolsets`"
    if raw in (None, {}):
        return {}, []
    if not isinstance(raw, dict):
        return {}, [f"{where} must map platform names to toolset lists "
                    "(e.g. telegram: [web, file]); it is ignored"]
    out: dict[str, list[str]] = {}
    problems: list[str] = []
    for platform, names in raw.items():
        if isinstance(names, str):
            names = names.split(",")
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            problems.append(f"{where}.{platform} must be a list of toolset names; the gateway's "
                            f"default toolsets serve {platform}")
            continue
        names = [n.strip() for n in names if n.strip()]
        if names and all(n.startswith("hermes-") for n in names):
            continue
        bad = [n for n in names if n not in valid and not n.startswith(("mcp-", "hermes-"))]
        if bad:
            problems.append(f"{where}.{platform}: unknown toolset {', '.join(map(repr, bad))} "
                            f"left out; valid toolsets: {', '.join(valid)}")
        out[str(platform)] = [n for n in names if n not in bad and not n.startswith("hermes-")]
    return out, problems


def platform_toolsets(cfg: Any) -> tuple[dict[str, list[str]], list[str]]:
    """``read_platform_toolsets`` against the toolsets registered now."""
    from tools.registry import toolset_names

    return read_platform_toolsets(getattr(cfg, "platform_toolsets", None), toolset_names())


def toolsets_for(cfg: Any, platform: str) -> tuple[list[str], list[str]]:
    """(enabled, disabled) for a gateway agent on ``platform``: its ``platform_toolsets`` entry,
    else ``gateway.toolsets`` / the gateway's defaults (``gateway_toolsets``)."""
    lists, _ = platform_toolsets(cfg)
    if platform in lists:
        return list(lists[platform]), []
    return gateway_toolsets(cfg.gateway)


def gateway_working_dir(gw: GatewayConfig, env: Optional[Mapping[str, str]] = None) -> Path:
    """The gateway agents' working directory (created if missing); env beats config.yaml."""
    env = os.environ if env is None else env
    raw = env.get("MESSAGING_CWD") or gw.working_dir
    if raw:
        path = Path(raw).expanduser()
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"gateway working directory {path} cannot be created "
                              f"({exc.strerror}); set gateway.working_dir or MESSAGING_CWD to a "
                              "usable directory") from None
        if not path.is_dir():
            raise ConfigError(f"gateway working directory {path} is not a directory; "
                              "set gateway.working_dir or MESSAGING_CWD to a directory")
        return path.resolve()
    path = hermes_home() / "workspace"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)  # chat users' files: the owner's eyes only
    return path.resolve()


def run_policy(cfg: Any, platform: Optional[str] = None) -> Any:
    """What a job made through the gateway (a chat's ``/cron``, the jobs API) may do when it runs:
    the same toolsets and working directory as the gateway's agents on ``platform`` (its
    ``platform_toolsets`` entry, else the gateway's; ``cron.policy.RunPolicy``; the consent rule
    is the runtime's default for the provider, as for those agents)."""
    from cron.policy import RunPolicy

    enabled = toolsets_for(cfg, platform)[0] if platform else gateway_toolsets(cfg.gateway)[0]
    return RunPolicy(tuple(enabled), str(gateway_working_dir(cfg.gateway)), None)
