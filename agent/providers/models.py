"""What an OpenAI-compatible endpoint serves: its ``/models`` list, and the model to use when the
configuration names none.

Why: an endpoint set up with only ``OPENAI_BASE_URL`` used to be sent ``"model": "default"``, which
real servers refuse. One served model is used as is; several are a choice the user must make (the
message lists them); an endpoint without a list (or unreachable) gets ``default`` and its own error.
``probe`` is the one HTTP call (doctor and setup use it too); the rest is pure.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from hermes_core.config import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from hermes_core.provider_settings import ProviderSettings

FALLBACK_MODEL = "default"
PROBE_TIMEOUT = 10.0
RETRY_AFTER = 60.0  # seconds before an endpoint that listed nothing is asked again
_cache: dict[tuple[str, str], tuple["Probe", float]] = {}
_cache_lock = threading.Lock()


class ModelChoiceNeeded(ConfigError):
    """The endpoint serves several models and none is configured; the message lists them."""


@dataclass
class Probe:
    """The answer of ``GET {base_url}/models``."""

    url: str  # what was asked (without secrets)
    ids: list[str] = field(default_factory=list)
    status: Optional[int] = None  # HTTP status; None when nothing answered
    error: Optional[str] = None  # why there is no list (unreachable, not JSON, rejected key)
    windows: dict[str, int] = field(default_factory=dict)  # context windows the list states

    @property
    def reachable(self) -> bool:
        return self.status is not None


def shown_url(url: str) -> str:
    """A URL as it may appear in messages: no password, no query (either may carry a key)."""
    from hermes_state.common import redact_url

    return redact_url(url)


def parse_ids(body: bytes) -> Optional[list[str]]:
    """Model ids of an OpenAI ``{"data": [{"id": ...}]}`` list (Ollama's ``models`` too); None if
    the body is not such a list."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    items = data.get("data", data.get("models")) if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    ids = [str(i.get("id") or i.get("name") or "") if isinstance(i, dict) else str(i)
           for i in items]
    return [i for i in ids if i]


WINDOW_FIELDS = ("context_length", "context_window", "max_model_len", "max_context_length",
                 "max_input_tokens")


def parse_windows(body: bytes) -> dict[str, int]:
    """The context window each listed model states (OpenRouter ``context_length``, vLLM
    ``max_model_len``, LM Studio ``max_context_length``, Anthropic ``max_input_tokens``...)."""
    try:
        data = json.loads(body)
    except ValueError:
        return {}
    items = data.get("data", data.get("models")) if isinstance(data, dict) else None
    out: dict[str, int] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not (item.get("id") or item.get("name")):
            continue
        top = item.get("top_provider") if isinstance(item.get("top_provider"), dict) else {}
        for value in [item.get(f) for f in WINDOW_FIELDS] + [top.get("context_length")]:
            if isinstance(value, int) and value > 0:
                out[str(item.get("id") or item.get("name"))] = value
                break
    return out


def probe(base_url: str, api_key: Optional[str], timeout: float = PROBE_TIMEOUT) -> Probe:
    """GET {base_url}/models (OpenAI's list), never raising."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return fetch_list(base_url.rstrip("/") + "/models", headers, timeout)


def fetch_list(url: str, headers: dict[str, str], timeout: float = PROBE_TIMEOUT) -> Probe:
    """GET a model list at ``url`` with these headers, never raising (providers with a list of
    their own shape their request and call this)."""
    import urllib.error
    import urllib.request

    out = Probe(shown_url(url))
    req = urllib.request.Request(url, headers={"Accept": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the user's URL
            out.status, body = resp.status, resp.read(2_000_000)
    except urllib.error.HTTPError as exc:
        out.status, out.error = exc.code, f"HTTP {exc.code}"
        return out
    except (urllib.error.URLError, OSError, ValueError) as exc:
        out.error = str(getattr(exc, "reason", exc))
        return out
    ids = parse_ids(body)
    if ids is None:
        out.error = "the answer is not a model list"
    else:
        out.ids, out.windows = ids, parse_windows(body)
    return out


def probe_provider(provider: Optional[str], base_url: str, api_key: Optional[str],
                   timeout: float = PROBE_TIMEOUT) -> Probe:
    """The model list of ``provider``'s endpoint: its own ``list_models`` when its plugin has
    one (Anthropic's), else OpenAI's ``/models``."""
    from hermes_core.provider_table import table

    info = table().get(provider or "")
    lister = info.list_models if info is not None else None
    found = lister(base_url, api_key, timeout) if lister else probe(base_url, api_key, timeout)
    if found.windows:
        from agent.providers.windows import remember

        remember(base_url, found.windows)
    return found


def choose(ids: list[str], url: str) -> str:
    """The model to send when none is configured: the only one served, else ``default`` when the
    list is empty. Several raise ModelChoiceNeeded naming them and how to pick."""
    if len(ids) == 1:
        return ids[0]
    if not ids:
        return FALLBACK_MODEL
    shown = ", ".join(ids[:10]) + (f", … ({len(ids)} in all)" if len(ids) > 10 else "")
    raise ModelChoiceNeeded(
        f"no model is configured and {url} serves {len(ids)}: {shown}; pick one with -m NAME, "
        "HERMES_MODEL or `hermes config set model.default NAME` (or run `hermes setup`)")


def auto_model(base_url: str, api_key: Optional[str], provider: Optional[str] = None) -> str:
    """``choose`` over the endpoint's list, asked once per process and endpoint (an endpoint that
    listed nothing, e.g. it was down, is asked again after a minute)."""
    key = (base_url.rstrip("/"), api_key or "")
    with _cache_lock:
        found, at = _cache.get(key, (None, 0.0))
    if found is None or (not found.ids and time.monotonic() - at > RETRY_AFTER):
        found = probe_provider(provider, base_url, api_key)
        with _cache_lock:
            _cache[key] = (found, time.monotonic())
    return choose(found.ids, shown_url(base_url))


def settle(ps: "ProviderSettings") -> "ProviderSettings":
    """``ps`` with its model filled in from the endpoint's list when no model was configured."""
    if ps.model or ps.provider == "local" or not ps.base_url:
        return ps
    return ps.model_copy(update={"model": auto_model(ps.base_url, ps.api_key, ps.provider)})
