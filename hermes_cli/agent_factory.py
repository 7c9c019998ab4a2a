"""Build an AIAgent from command-line flags and config: the one place the CLI meets the facade.

Flags beat the environment, which beats config.yaml (resolve_provider does the merge). Keyword
arguments the installed AIAgent does not accept are dropped rather than crashing, so the CLI
keeps working while the facade grows.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional

from hermes_core.config import HermesConfig, ProviderSettings, resolve_provider


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
            raise CommandError(f"no session matches {ref!r}; `hermes sessions list` shows ids and titles")
        return sid
    if getattr(args, "continue_last", False):
        rows = db.list_sessions(limit=1, source="cli")
        if not rows:
            raise CommandError("no earlier cli session to continue; start one with `hermes`")
        return rows[0]["id"]
    return None


def _accepted(cls: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keywords `cls` takes: its named parameters, plus the Hermes Agent ones AIAgent accepts
    through **kwargs (anything else would be a TypeError there)."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return kwargs
    names = {n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_KEYWORD}
    if len(names) < len(params):
        from agent.agent_kwargs import ACCEPTED

        names |= ACCEPTED
    return {k: v for k, v in kwargs.items() if k in names}


def mutation_policy(provider: str, yolo: bool, interactive: bool) -> str:
    """What tools that change things may do: the embedded model acts only with consent, asked in
    the REPL; a one-shot run has no one to ask, so it refuses them (--yolo allows)."""
    if yolo or provider != "local":
        return "allow"
    return "ask" if interactive else "deny"


def build_agent(args: Any, cfg: HermesConfig, *, session_db: Any = None,
                session_id: Optional[str] = None, yolo: Optional[bool] = None,
                tool_progress_callback: Optional[Callable[[dict], None]] = None,
                status_callback: Optional[Callable[[str, str], None]] = None,
                approval_callback: Optional[Callable[[str, str], str]] = None,
                interactive: bool = True, cwd: Optional[str] = None,
                platform: str = "cli") -> Any:
    """An AIAgent for the cli platform, persisting into `session_db` (the default store if None).

    `interactive`: a user can answer approval questions (the REPL), so mutations may be asked for;
    `cwd`/`platform`: another surface's (``hermes acp``: the editor's folder, platform ``acp``)."""
    from run_agent import AIAgent

    ps = provider_settings(args, cfg)
    yolo = bool(getattr(args, "yolo", False) if yolo is None else yolo)
    kwargs: dict[str, Any] = dict(
        # the key only when given as a flag: else the agent gathers the provider's whole pool
        base_url=ps.base_url, api_key=getattr(args, "api_key", None), model=ps.model,
        provider=ps.provider,
        max_iterations=getattr(args, "max_turns", None) or cfg.agent.max_turns,
        quiet_mode=True, session_db=session_db, session_id=session_id,
        enabled_toolsets=toolsets(args), config=cfg, platform=platform, cwd=cwd,
        context_length=ps.context_length,
        yolo=yolo, tool_progress_callback=tool_progress_callback, status_callback=status_callback,
        approval_callback=approval_callback,
        mutating_tools=mutation_policy(ps.provider, yolo, interactive),
    )
    return AIAgent(**_accepted(AIAgent, kwargs))
