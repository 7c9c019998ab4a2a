"""How many tokens a model's context window holds: the endpoint's own word first, else the
model family's known size.

Endpoints that state windows in their model list (OpenRouter, vLLM, LM Studio, Anthropic) are
remembered whenever a list is read (``hermes model``, ``/model``, a run that had to pick a model):
in the process and in ``HERMES_HOME/cache/model_windows.json``, so a later agent starts with the
right window without asking the endpoint again (an agent never calls the network to be built).
"""
from __future__ import annotations

import json
import logging
from typing import Optional

from hermes_core.config import hermes_home

log = logging.getLogger("hermes.providers")

KNOWN_CONTEXT_LENGTHS = (  # (substring of the model name, window); first match wins
    ("gpt-4.1", 1_047_576), ("gpt-4o", 128_000), ("gpt-5", 400_000), ("o3", 200_000),
    ("o4", 200_000), ("claude", 200_000), ("gemini", 1_048_576), ("llama-3", 131_072),
    ("qwen", 32_768), ("mistral", 32_768), ("deepseek", 128_000), ("smollm2", 8_192),
)
DEFAULT_CONTEXT_LENGTH = 128_000
CACHE_NAME = "model_windows.json"


def family_window(model: str) -> int:
    """The known window of the model's family (by name), else the default."""
    low = (model or "").lower()
    for key, size in KNOWN_CONTEXT_LENGTHS:
        if key in low:
            return size
    return DEFAULT_CONTEXT_LENGTH


def _key(base_url: Optional[str]) -> str:
    return (base_url or "").rstrip("/")


def _read() -> dict:
    path = hermes_home() / "cache" / CACHE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember(base_url: Optional[str], windows: dict[str, int]) -> None:
    """Keep what an endpoint's list said (a failure to write is only logged)."""
    from hermes_core.files import atomic_write
    from hermes_core.home import ensure_private_dir

    data = _read()
    entry = {**(data.get(_key(base_url)) or {}), **windows}
    if data.get(_key(base_url)) == entry:
        return
    data[_key(base_url)] = entry
    try:
        folder = ensure_private_dir(hermes_home() / "cache")
        atomic_write(folder / CACHE_NAME, json.dumps(data, indent=1, sort_keys=True))
    except OSError as exc:
        log.info("could not keep the model windows: %s", exc)


def stated_window(base_url: Optional[str], model: str) -> Optional[int]:
    """The window the endpoint stated for this model, when one was ever read."""
    value = (_read().get(_key(base_url)) or {}).get(model)
    return value if isinstance(value, int) and value > 0 else None


def window_for(model: str, base_url: Optional[str] = None) -> int:
    """The endpoint's stated window, else the family's."""
    return stated_window(base_url, model) or family_window(model)
