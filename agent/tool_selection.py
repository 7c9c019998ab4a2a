"""Which tools an agent offers (SPEC §8, §9; issue 8 item 6). Pure apart from the registry
lookups.

Toolsets come from the caller (``hermes -t``, ``enabled_toolsets``) or else config ``toolsets:``;
memory is off with ``skip_memory`` and on the ``cron``/``subagent`` platforms. When the fixed prompt
(system prompt + schemas) would take more than a quarter of the model's window, the agent offers a
compact core instead: the tools a turn most needs, with one-line descriptions, and the system prompt
names the toolsets left out so the user can turn them on.
"""
from __future__ import annotations

import copy
from typing import Any, Optional

from hermes_core.config import ConfigError
from tools.memory.store import enabled_targets
from hermes_core.tokens import estimate_text_tokens, schema_tokens
from tools.registry import UnknownToolsetError, check_toolset_names

NO_MEMORY_PLATFORMS = ("cron", "subagent")
# in this order of need; session_search is in because a small window compacts often, and it is how
# the agent gets back what a summary dropped
CORE_TOOLS = ("terminal", "read_file", "write_file", "patch", "search_files", "memory",
              "session_search")
WINDOW_SHARE = 4  # the fixed prompt never takes more than 1/WINDOW_SHARE of the window


def memory_enabled(config: Any = None, *, skip_memory: bool = False, platform: str = "cli") -> bool:
    """Memory in the prompt and the tool in the set: not with skip_memory, on cron or subagents, or
    when config turns both stores off."""
    return not (skip_memory or platform in NO_MEMORY_PLATFORMS or not enabled_targets(config))


def check_config(config: Any) -> None:
    """Raise ConfigError when config ``toolsets:`` names a toolset that does not exist."""
    section = getattr(config, "toolsets", None)
    if section is None:
        return
    try:
        check_toolset_names(list(section.enabled or ()) + list(section.disabled or ()))
    except UnknownToolsetError as exc:
        raise ConfigError(f"config.yaml `toolsets`: {exc}; fix it with `hermes config set toolsets "
                          f"<list>` or remove the key") from None


def select_toolsets(enabled: Optional[list[str]], disabled: Optional[list[str]],
                    config: Any = None, *,
                    skip_memory: bool = False,
                    platform: str = "cli") -> tuple[Optional[list[str]], list[str]]:
    """(enabled or None for every toolset, disabled) for one agent: arguments beat config.

    Unknown names in config raise ConfigError (a start-up error); unknown names in the arguments
    are left to the registry, which raises UnknownToolsetError listing the valid ones.
    """
    check_config(config)
    section = getattr(config, "toolsets", None)
    if enabled is None and section is not None:
        enabled = section.enabled
    if disabled is None:
        disabled = list(getattr(section, "disabled", None) or ())
    disabled = list(disabled)
    if (not memory_enabled(config, skip_memory=skip_memory, platform=platform)
            and "memory" not in disabled):
        disabled.append("memory")
    return (list(enabled) if enabled is not None else None), disabled


def one_line(text: str, limit: int = 120) -> str:
    """The first sentence of a description, at most ``limit`` characters."""
    text = " ".join((text or "").split())
    for stop in (". ", "; "):
        if stop in text:
            text = text.split(stop, 1)[0] + "."
            break
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _strip_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_descriptions(v) for k, v in schema.items()
                if not (k == "description" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_strip_descriptions(v) for v in schema]
    return schema


def compact_definition(definition: dict) -> dict:
    """A tool definition with a one-line description and no parameter descriptions."""
    out = copy.deepcopy(definition)
    fn = out.get("function", {})
    fn["description"] = one_line(fn.get("description", ""))
    if "parameters" in fn:
        fn["parameters"] = _strip_descriptions(fn["parameters"])
    return out


def tool_name(definition: dict) -> str:
    return str((definition.get("function") or {}).get("name", ""))


def omitted_note(toolsets: list[str], window: int) -> str:
    """The one line of the system prompt naming what the compact core left out."""
    return (f"To fit this model's {window:,}-token context window these toolsets are off: "
            f"{', '.join(toolsets)}. If the user needs one, they can turn it on with "
            f"`hermes -t <toolsets>` or use a model with a larger window.")


def fit_tools(tools: list[dict], fixed_tokens: int, window: Optional[int], *, toolset_of: Any,
              explicit: bool = False) -> tuple[list[dict], list[str]]:
    """(tools to offer, toolsets left out) so that ``fixed_tokens`` + schemas <= window / 4.

    ``fixed_tokens`` is the system prompt without the note; ``toolset_of(name)`` maps a tool to its
    toolset. With ``explicit`` (the user chose the toolsets) every chosen tool stays as long as it
    fits, only shortened; otherwise only the core tools stay.
    """
    if not window or not tools or fixed_tokens + schema_tokens(tools) <= window // WINDOW_SHARE:
        return tools, []
    budget = window // WINDOW_SHARE
    keep = [t for t in tools if explicit or tool_name(t) in CORE_TOOLS]
    if not explicit:
        keep.sort(key=lambda t: CORE_TOOLS.index(tool_name(t)))
    keep = [compact_definition(t) for t in keep]

    def left_out() -> list[str]:
        kept = {tool_name(t) for t in keep}
        partly_on = {toolset_of(name) for name in kept}  # terminal stays on without process
        names: list[str] = []
        for t in tools:
            ts = toolset_of(tool_name(t)) or tool_name(t)
            if tool_name(t) not in kept and ts not in names and ts not in partly_on:
                names.append(ts)
        return names

    while keep:
        note = omitted_note(left_out(), window) if len(keep) < len(tools) else ""
        if fixed_tokens + estimate_text_tokens(note) + schema_tokens(keep) <= budget:
            break
        keep.pop()
    return keep, left_out()
