"""The one place agents are built: ``build_agent(AgentSpec)``, for every surface and for children.

Why: the CLI, the gateway, cron, delegation and the skill review each spelt ``AIAgent(...)`` their
own way (provider settings, store, toolsets, confinement, the policy for changes, the owner set
afterwards), so a new setting had to be threaded through five call sites and one could silently
miss it. Each of them now fills in an ``AgentSpec`` (thin wrappers that know their surface:
``hermes_cli.agent_factory.build_agent``, ``gateway.runner.default_agent_factory``,
``cron.runner.make_agent``, ``agent.delegation.build_child``, ``agent.skill_review.run_review``)
and this module makes the agent. ``tests/test_agent_factory.py`` holds that no product module
calls ``AIAgent(...)`` but this one. The ``AIAgent`` constructor itself stays the
Hermes-compatible one for library users.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike
from typing import TYPE_CHECKING, Any, Optional, Union

from agent.callbacks import AgentHooks

if TYPE_CHECKING:  # pragma: no cover
    from hermes_core.config import HermesConfig
    from hermes_core.provider_settings import ProviderSettings
    from run_agent import AIAgent

PathArg = Union[str, "PathLike[str]"]


@dataclass(frozen=True)
class ProviderChoice:
    """Where the agent's requests go. A field left None is resolved by the agent from the
    environment and config.yaml (``hermes_core.provider_settings.resolve_provider``)."""

    provider: Optional[str] = None
    base_url: Optional[str] = None
    api_key: Optional[str] = None
    model: Optional[str] = None
    context_length: Optional[int] = None
    # the settings these fields came from (``of``): the agent takes them as they are, its key
    # pool included, instead of resolving the environment, config.yaml and auth.json again
    resolved: Optional[ProviderSettings] = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, settings: ProviderSettings, model: Optional[str] = None) -> ProviderChoice:
        """Settings resolved once (by a surface), optionally with another model."""
        model = model or settings.model
        resolved = settings if model == settings.model else settings.model_copy(
            update={"model": model})
        return cls(provider=settings.provider, base_url=settings.base_url,
                   api_key=settings.api_key, model=model,
                   context_length=settings.context_length, resolved=resolved)

    @classmethod
    def like(cls, agent: AIAgent) -> ProviderChoice:
        """The provider and model another agent uses (a child, the skill review)."""
        return cls(provider=agent.provider, base_url=agent.base_url, api_key=agent.api_key,
                   model=agent.model)


@dataclass
class AgentSpec:
    """Everything a surface decides about an agent; the defaults are a local CLI agent's."""

    config: HermesConfig
    platform: str = "cli"
    provider: ProviderChoice = field(default_factory=ProviderChoice)
    session_db: Any = None  # None: the configured store; False: store nothing
    session_id: Optional[str] = None  # None: a new session; else resumed from the store
    enabled_toolsets: Optional[list[str]] = None  # None: config's, else the defaults
    disabled_toolsets: Optional[list[str]] = None
    cwd: Optional[PathArg] = None  # None: terminal.cwd, else the process's
    confine_to: Optional[PathArg] = None  # file tools refuse paths outside it
    mutating_tools: Optional[str] = None  # "allow" | "ask" | "deny"; None: by provider
    yolo: bool = False
    owner: Optional[str] = None  # a chat user's "<platform>:<user id>"; None: the local owner
    origin: Optional[dict] = None  # the chat a turn comes from (cron's "deliver origin")
    hooks: AgentHooks = field(default_factory=AgentHooks)
    skip_memory: bool = False
    skip_context_files: bool = False
    max_iterations: Optional[int] = None  # None: AIAgent's default
    quiet_mode: bool = True


def build_agent(spec: AgentSpec) -> AIAgent:
    """A new agent as ``spec`` says; raises what ``AIAgent`` raises (ConfigError for a provider
    that cannot be used, UnknownToolsetError, ValueError for a bad mutating_tools)."""
    from run_agent import AIAgent

    p = spec.provider
    extra: dict[str, Any] = {}
    if spec.max_iterations is not None:
        extra["max_iterations"] = spec.max_iterations
    agent = AIAgent(
        base_url=p.base_url, api_key=p.api_key, model=p.model, provider=p.provider,
        context_length=p.context_length, provider_settings=p.resolved,
        config=spec.config, platform=spec.platform,
        session_db=spec.session_db, session_id=spec.session_id,
        enabled_toolsets=spec.enabled_toolsets, disabled_toolsets=spec.disabled_toolsets,
        cwd=None if spec.cwd is None else str(spec.cwd),
        confine_to=None if spec.confine_to is None else str(spec.confine_to),
        mutating_tools=spec.mutating_tools, yolo=spec.yolo, hooks=spec.hooks,
        skip_memory=spec.skip_memory, skip_context_files=spec.skip_context_files,
        quiet_mode=spec.quiet_mode, **extra)
    agent.owner = spec.owner
    agent.origin = spec.origin
    return agent
