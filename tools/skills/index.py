"""The skills part of the system prompt: names and one-line descriptions grouped by category,
within a fixed token budget (``skills.index_budget``, default 1,000). Past the budget, names only;
past that too, as many names as fit and a count of the rest for ``skills_list``.

``render`` is pure and deterministic (sorted input, no clock): the session's prompt is built once
and must stay byte-identical for provider prompt caches.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from tools.skills import format as fmt
from hermes_core.tokens import estimate_text_tokens

DEFAULT_BUDGET = 1000
UNCATEGORISED = "other"
HEAD = "## Skills\nSaved procedures. Before a task one covers, load it with skill_view(name)."
NAMES_ONLY_NOTE = " skills_list shows their descriptions."
DESC_CHARS = 100

Entry = tuple[Optional[str], str, str]  # (category, name, description)


def _groups(entries: list[Entry]) -> list[tuple[str, list[tuple[str, str]]]]:
    groups: dict[str, list[tuple[str, str]]] = {}
    for category, name, desc in entries:
        groups.setdefault(category or UNCATEGORISED, []).append((name, desc))
    order = sorted(groups, key=lambda c: (c == UNCATEGORISED, c))
    return [(c, sorted(groups[c])) for c in order]


def render(entries: list[Entry], budget: int = DEFAULT_BUDGET) -> str:
    """The index text, or "" when there are no skills or the budget is 0."""
    if not entries or budget <= 0:
        return ""
    groups = _groups(entries)
    lines = [HEAD]
    for category, items in groups:
        lines.append(f"{category}:")
        lines += [f"- {n}: {fmt.one_line(d, DESC_CHARS)}" if d else f"- {n}" for n, d in items]
    full = "\n".join(lines)
    if estimate_text_tokens(full) <= budget:
        return full
    return _names_only(groups, budget)


def _names_only(groups: list[tuple[str, list[tuple[str, str]]]], budget: int) -> str:
    head = HEAD + NAMES_ONLY_NOTE
    lines = [f"{c}: " + ", ".join(n for n, _ in items) for c, items in groups]
    text = "\n".join([head, *lines])
    if estimate_text_tokens(text) <= budget:
        return text
    total = sum(len(items) for _, items in groups)
    # keep a reserve for the closing line, then add names one by one while they fit
    reserve = estimate_text_tokens(f"(and {total} more: skills_list(category) lists them)") + 1
    used = estimate_text_tokens(head) + reserve
    if used > budget:
        return ""  # a budget smaller than the heading: no index rather than one over budget
    out, shown = [head], 0
    for category, items in groups:
        line = f"{category}: "
        cost = estimate_text_tokens(line)
        taken = []
        for name, _ in items:
            step = estimate_text_tokens(name + ", ")
            if used + cost + step > budget:
                break
            taken.append(name)
            cost += step
        if not taken:
            break
        out.append(line + ", ".join(taken))
        used += cost
        shown += len(taken)
        if len(taken) < len(items):
            break
    out.append(f"(and {total - shown} more: skills_list(category) lists them)")
    return "\n".join(out)


# loader.stamp (+ budget) -> the rendered index: a gateway's every new session builds a prompt,
# and an unchanged skills tree needs only the walk's stats, not the manifest and catalog again.
_INDEX: dict[tuple, str] = {}
_INDEX_MAX = 64


def prompt_part(home: Path, config: Any = None) -> str:
    """The index of the skills this agent can use (the starter skills installed on first use)."""
    from tools.skills import bundled, loader

    budget = getattr(getattr(config, "skills", None), "index_budget", DEFAULT_BUDGET)
    stamp = loader.stamp(home, config)  # taken before the read: a later edit changes it
    key = None if stamp is None else (stamp, budget)
    hit = _INDEX.get(key) if key is not None else None
    if hit is not None:
        return hit
    installed = bundled.ensure_installed(home)
    catalog = loader.load(home, config)
    text = render([(s.category, s.name, s.description) for s in catalog.skills], budget)
    if key is not None and not installed:
        if len(_INDEX) >= _INDEX_MAX:
            _INDEX.clear()
        _INDEX[key] = text
    return text
