"""How the gateway makes its agents: provider settings resolved once, the gateway's own toolsets
and confinement (agent.tool_policy) for every chat, one shared store; and closing the ones it lets
go (a client made for summaries holds connections)."""
from __future__ import annotations

import logging
from typing import Any, Callable, Optional

log = logging.getLogger("gateway.runner")

AgentFactory = Callable[..., Any]  # (session_id=, platform=, model=) -> AIAgent-like


def close_agent(agent: Any) -> None:
    close = getattr(agent, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:
            log.debug("closing an agent: %s", exc)


def interrupt_agent(agent: Any, message: Optional[str]) -> None:
    """Stop an agent's turn; a failing interrupt is logged, never raised into the caller."""
    try:
        agent.interrupt(message)
    except Exception as exc:
        log.warning("interrupt failed: %s", exc)


def default_agent_factory(config: Any = None, session_db: Any = None) -> AgentFactory:
    """Agents for real: provider settings resolved once from config/env, one shared SessionDB (a
    throwaway turn passes its own ``store``).

    Least privilege (agent.tool_policy): the gateway's own toolsets (no terminal by default) and
    file tools confined to its working directory, whoever is on the other side of the chat.
    """
    from hermes_core.config import load_config
    from hermes_core.provider_settings import resolve_provider
    from agent.tool_policy import (gateway_toolsets, gateway_working_dir, platform_toolsets,
                                   toolsets_for)

    cfg = config if config is not None else load_config()
    from agent.providers.models import settle

    settings = settle(resolve_provider(cfg))  # no model configured: the endpoint's, asked once
    from agent.tool_selection import check_config

    check_config(cfg)  # an unknown toolset stops the gateway at start-up, not at the first message
    gw = cfg.gateway
    gateway_toolsets(gw)  # a bad gateway.toolsets stops the gateway at start-up too
    for line in platform_toolsets(cfg)[1]:  # named once at start-up; the other platforms serve
        log.warning("%s", line)
    workdir = str(gateway_working_dir(gw))

    def make(session_id: Optional[str], platform: str, model: Optional[str] = None,
             store: Any = None) -> Any:
        from agent.factory import AgentSpec, ProviderChoice, build_agent

        # per agent: MCP toolsets appear as servers start; platform_toolsets picks per platform
        enabled, disabled = toolsets_for(cfg, platform)
        return build_agent(AgentSpec(
            config=cfg, platform=platform, provider=ProviderChoice.of(settings, model),
            session_id=session_id, session_db=store if store is not None else session_db,
            enabled_toolsets=enabled, disabled_toolsets=disabled, cwd=workdir, confine_to=workdir))

    make.workdir = workdir  # type: ignore[attr-defined]  # where chat uploads are saved
    make.default_model = settings.model  # type: ignore[attr-defined]
    make.config = cfg  # type: ignore[attr-defined]
    return make
