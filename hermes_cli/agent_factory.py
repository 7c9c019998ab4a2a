"""Build an AIAgent from command-line flags and config: the CLI's spec for ``agent.factory``.

Flags beat the environment, which beats config.yaml (resolve_provider does the merge).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from hermes_core.config import HermesConfig
from hermes_core.provider_settings import ProviderSettings, resolve_provider

if TYPE_CHECKING:  # pragma: no cover
    from agent.callbacks import AgentHooks


class CommandError(Exception):
    """A user-level failure (bad session id, nothing to continue): one line, exit 1."""


class UsageError(CommandError):
    """The command line itself is wrong (a missing argument, an empty query): exit 2, as for
    argparse's own errors, so scripts tell "you called it wrong" from "it failed"."""


def provider_settings(args: Any, cfg: HermesConfig) -> ProviderSettings:
    return resolve_provider(cfg, base_url=getattr(args, "base_url", None),
                            api_key=getattr(args, "api_key", None),
                            model=getattr(args, "model", None),
                            provider=getattr(args, "provider", None))


def local_notice(ps: ProviderSettings) -> Optional[str]:
    """The one line shown when no endpoint is configured and the embedded model answers."""
    if ps.provider != "local":
        return None
    return (f"No model endpoint configured: using the embedded local model ({ps.model}). "
            "For a real one run `hermes setup` or set OPENAI_BASE_URL and OPENAI_API_KEY.")


def toolsets(args: Any) -> Optional[list[str]]:
    raw = getattr(args, "toolsets", None)
    if not raw:
        return None
    names = [t.strip() for t in raw.split(",") if t.strip()]
    return names or None


def open_db(cfg: Any = None) -> Any:
    """The configured session store: the CLI reads config.yaml (the store never does)."""
    from hermes_state import SessionDB

    if cfg is None:
        from hermes_core.config import load_config

        cfg = load_config()
    return SessionDB.from_config(cfg)


def resolve_session_arg(args: Any, db: Any) -> Optional[str]:
    """-r ID (id, prefix or title) or -c (the newest cli session) -> a session id, or None."""
    ref = getattr(args, "resume", None)
    if ref:
        sid = db.resolve_session(ref)
        if not sid:
            raise CommandError(f"no session matches {ref!r}; "
                               "`hermes sessions list` shows ids and titles")
        return sid
    if getattr(args, "continue_last", False):
        rows = db.list_sessions(limit=1, source="cli")
        if not rows:
            raise CommandError("no earlier cli session to continue; start one with `hermes`")
        return rows[0]["id"]
    return None


def mutation_policy(provider: str, yolo: bool, interactive: bool) -> str:
    """What tools that change things may do: the embedded model acts only with consent, asked in
    the REPL; a one-shot run has no one to ask, so it refuses them (--yolo allows)."""
    if yolo or provider != "local":
        return "allow"
    return "ask" if interactive else "deny"


def build_agent(args: Any, cfg: HermesConfig, *, session_db: Any = None,
                session_id: Optional[str] = None, yolo: Optional[bool] = None,
                hooks: Optional[AgentHooks] = None, interactive: bool = True,
                cwd: Optional[str] = None, platform: str = "cli") -> Any:
    """An AIAgent for the cli platform, persisting into `session_db` (the default store if None).

    `interactive`: a user can answer approval questions (the REPL), so mutations may be asked for;
    `cwd`/`platform`: another surface's (``hermes acp``: the editor's folder, platform ``acp``)."""
    from agent.callbacks import AgentHooks
    from agent.factory import AgentSpec, ProviderChoice
    from agent.factory import build_agent as build

    ps = provider_settings(args, cfg)
    yolo = bool(getattr(args, "yolo", False) if yolo is None else yolo)
    return build(AgentSpec(
        config=cfg, platform=platform, provider=ProviderChoice.of(ps), session_db=session_db,
        session_id=session_id, enabled_toolsets=toolsets(args), cwd=cwd, yolo=yolo,
        hooks=hooks or AgentHooks(), mutating_tools=mutation_policy(ps.provider, yolo, interactive),
        max_iterations=getattr(args, "max_turns", None) or cfg.agent.max_turns))
