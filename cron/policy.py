"""Who a job belongs to and what its runs may do (issue 20): pure decisions, no I/O but path math.

A job made by a chat user (``owner`` = ``"<platform>:<user id>"``) is seen and changed only by that
user (and by the owner: the CLI, an API key holder, ``owner`` None), and delivers only to the chat
it was made in. A job made by anyone the gateway limits (a chat user, an API client) records the
creator's ``RunPolicy``: the toolsets the creator had, the directory their file tools were confined
to, their consent rule for changes. Its runs get exactly that, so scheduling a job is never a way
around the gateway's limits. A job without a policy (made at the terminal) runs with the owner's
own settings.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

LOCAL_PLATFORMS = ("cli",)  # creators that are the owner at the terminal: no policy recorded


@dataclass(frozen=True)
class RunPolicy:
    """What a job's runs may do: ``toolsets`` (None: every one), ``confine_to`` (file tools and
    the working directory stay inside it), ``mutations`` (``allow``/``ask``/``deny``; None: the
    runtime's default for the provider). ``ask`` means no change at all: nobody watches a run."""

    toolsets: Optional[tuple[str, ...]] = None
    confine_to: Optional[str] = None
    mutations: Optional[str] = None

    def as_json(self) -> dict[str, Any]:
        return {"toolsets": list(self.toolsets) if self.toolsets is not None else None,
                "confine_to": self.confine_to, "mutations": self.mutations}

    @classmethod
    def from_json(cls, data: Any) -> Optional["RunPolicy"]:
        if not isinstance(data, dict):
            return None
        sets, rule = data.get("toolsets"), data.get("mutations")
        return cls(tuple(str(t) for t in sets) if isinstance(sets, list) else None,
                   str(data["confine_to"]) if data.get("confine_to") else None,
                   rule if rule in ("allow", "ask", "deny") else None)


def creator_policy(platform: str, toolsets: Optional[Iterable[str]], confine_to: Any,
                   mutations: Optional[str]) -> Optional[RunPolicy]:
    """The policy to record for a job made by an agent with these limits (a ``ToolContext``'s);
    None for the owner at the terminal, whose jobs run with the owner's own settings."""
    if platform in LOCAL_PLATFORMS and confine_to is None:
        return None
    return RunPolicy(tuple(toolsets) if toolsets is not None else None,
                     str(Path(confine_to).resolve()) if confine_to is not None else None, mutations)


def visible(job: dict[str, Any], owner: Optional[str]) -> bool:
    """May ``owner`` see and change ``job``? The owner (None) sees every job; a chat user theirs."""
    return owner is None or job.get("owner") == owner


def workdir_problem(workdir: Optional[str], policy: Optional[RunPolicy]) -> Optional[str]:
    """Why ``workdir`` (resolved) is not allowed under ``policy``, or None."""
    if workdir is None or policy is None or policy.confine_to is None:
        return None
    root = Path(policy.confine_to).resolve()
    full = Path(workdir).resolve()
    if full == root or root in full.parents:
        return None
    return (f"workdir {workdir!r} is outside the working directory {root} that this chat's tools "
            "are confined to; pick a folder inside it (or leave workdir out)")


def delivery_problem(targets: list[Any], origin: Optional[dict[str, Any]],
                     owner: Optional[str]) -> Optional[str]:
    """Why a chat user may not deliver to ``targets`` (``cron.delivery.Target``s), or None: a chat
    user's job goes to the chat it was made in (``origin``), or nowhere but its output file."""
    if owner is None:
        return None
    here = (str((origin or {}).get("platform")), str((origin or {}).get("chat_id")))
    for t in targets:
        if t.kind in ("local", "origin"):
            continue
        if t.kind == "chat" and (str(t.platform), str(t.chat_id)) == here:
            continue
        return (f"deliver {t.text!r}: a job made in a chat is delivered only to this chat "
                "(deliver origin) or kept in its output file (deliver local)")
    return None


def run_limits(policy: Optional[RunPolicy], workdir: Optional[str], known: Iterable[str],
               never: Iterable[str]) -> dict[str, Any]:
    """``AIAgent`` keywords for a run under ``policy``: its toolsets (those that exist now, minus
    ``never``), its confinement and working directory, its consent rule. Raises ValueError when
    the working directory has left the confinement since the job was made (a moved symlink)."""
    never = set(never)
    if policy is None:
        return {"disabled_toolsets": [t for t in known if t in never], "cwd": workdir}
    problem = workdir_problem(workdir, policy)
    if problem:
        raise ValueError(problem)
    enabled = None if policy.toolsets is None else [t for t in policy.toolsets
                                                    if t in set(known) and t not in never]
    return {"enabled_toolsets": enabled, "disabled_toolsets": [t for t in known if t in never],
            "confine_to": policy.confine_to, "cwd": workdir or policy.confine_to,
            "mutating_tools": policy.mutations}
