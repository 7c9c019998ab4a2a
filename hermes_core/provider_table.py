"""The model providers Hermes knows, in one table built from the ``provider`` registrations of the
plugins: name -> default endpoint, key variables, whether a key is required, the model used when
none is configured, and the factory that makes its client.

Why one table: the flags (`--provider`), `hermes setup`, `resolve_provider`, `hermes doctor`,
`hermes model`, `hermes auth` and the error messages all read it, so a provider cannot be accepted
by one and unknown to another. A new provider is one plugin calling
``ctx.register_provider(name, factory, summary=..., base_url=..., key_vars=(...), ...)``
(the built-ins are ``agent.providers.builtin`` and ``agent.providers.anthropic.plugin``).

The table itself is pure; reading it the first time loads the process's plugins when nobody did
yet (``hermes_core.config.ensure_plugins``), since the registrations are where it comes from.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from hermes_core.plugin_api import REGISTRY, Registration, Registry

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OPENAI_BASE_URL = "https://api.openai.com/v1"
LOCAL_MODEL = "SmolLM2-135M-Instruct"
OPENAI_URL_VARS = ("OPENAI_BASE_URL",)


@dataclass(frozen=True)
class ProviderInfo:
    name: str
    summary: str  # what it is, for --help, the set-up wizard and the unknown-name error
    base_url: Optional[str] = None  # its endpoint when none is configured
    key_vars: tuple[str, ...] = ()  # where its API key is read from; the first is the one named
    needs_key: bool = False  # a request without a key is refused before it is sent
    default_model: Optional[str] = None  # None: ask the endpoint's model list
    needs_base_url: bool = False  # no endpoint of its own: the user gives one
    url_vars: tuple[str, ...] = OPENAI_URL_VARS  # environment variables naming its endpoint
    api: str = "openai"  # "openai": OpenAI chat completions; "local"; else its factory's own
    aliases: tuple[str, ...] = ()  # other names for it
    detect_vars: tuple[str, ...] = ()  # set alone (no OpenAI/OpenRouter key), they mean it
    rank: int = 100  # order in listings (built-ins first)
    factory: Optional[Callable[..., Any]] = field(default=None, compare=False, repr=False)
    list_models: Optional[Callable[..., Any]] = field(default=None, compare=False, repr=False)
    plugin: str = ""

    @property
    def key_var(self) -> Optional[str]:
        return self.key_vars[0] if self.key_vars else None

    @property
    def pool_var(self) -> Optional[str]:
        """Where several keys are read from: ``OPENAI_API_KEYS=k1,k2`` for ``OPENAI_API_KEY``."""
        return f"{self.key_var}S" if self.key_var else None


# other spellings, Hermes Agent's included ("auto" means: work it out from what is configured)
ALIASES: dict[str, Optional[str]] = {
    "auto": None, "": None, "embedded": "local", "openai-compatible": "custom",
    "openai_compatible": "custom", "url": "custom", "ollama": "custom", "vllm": "custom",
    "llamacpp": "custom", "llama.cpp": "custom",
}
_FIELDS = ("summary", "base_url", "needs_key", "default_model", "needs_base_url", "api", "rank",
           "list_models")
_TUPLES = ("key_vars", "url_vars", "aliases", "detect_vars")


def info_from(reg: Registration) -> ProviderInfo:
    """One ``provider`` registration as a table row (unknown options are ignored)."""
    opts = reg.options
    kwargs: dict[str, Any] = {k: opts[k] for k in _FIELDS if k in opts}
    for k in _TUPLES:
        if k in opts:
            value = opts[k]
            kwargs[k] = (value,) if isinstance(value, str) else tuple(value or ())
    kwargs.setdefault("summary", f"provider plugin {reg.plugin}")
    return ProviderInfo(reg.name, factory=reg.value, plugin=reg.plugin, **kwargs)


def build_table(registrations: list[Registration]) -> dict[str, ProviderInfo]:
    """Rows by name (a later registration of a name wins), ordered by rank, then arrival."""
    rows: dict[str, tuple[int, ProviderInfo]] = {}
    for i, reg in enumerate(registrations):
        rows[reg.name.strip().lower()] = (i, info_from(reg))
    ordered = sorted(rows.values(), key=lambda item: (item[1].rank, item[0]))
    return {info.name: info for _, info in ordered}


_cache: tuple[int, dict[str, ProviderInfo]] = (-1, {})


def _ensure_loaded() -> None:
    from hermes_core.plugin_loader import LOADER

    if not LOADER.loaded():
        from hermes_core.config import ensure_plugins

        ensure_plugins()


def table(registry: Registry = REGISTRY) -> dict[str, ProviderInfo]:
    """Every provider of the process's plugins, built once per change of the registrations."""
    global _cache
    if registry is REGISTRY:
        _ensure_loaded()
    if registry is REGISTRY and _cache[0] == registry.generation:
        return _cache[1]
    built = build_table(registry.of("provider"))
    if registry is REGISTRY:
        _cache = (registry.generation, built)
    return built


def plugin_client(settings: Any) -> Any:
    """A new client of a plugin provider (``settings.api`` is not ``openai``): its registered
    factory's, answering ``chat.completions.create`` with OpenAI shapes."""
    info = table().get(settings.provider)
    if info is None or info.factory is None:
        raise RuntimeError(f"provider {settings.provider!r} is not registered by any plugin; "
                           "`hermes plugins list` shows what loaded")
    return info.factory(settings)


class _Table(Mapping):
    """``PROVIDERS``: a read-only view of ``table()`` (the registrations decide what is in it)."""

    def __getitem__(self, name: str) -> ProviderInfo:
        return table()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(table())

    def __len__(self) -> int:
        return len(table())


PROVIDERS: Mapping[str, ProviderInfo] = _Table()


class UnknownProvider(ValueError):
    """A provider name that is not in the table; the message lists the known ones."""

    def __init__(self, name: str, hint: str = "", source: str = "") -> None:
        where = f" (from {source})" if source else ""
        super().__init__(f"unknown provider {name!r}{where}{hint}; "
                         f"known providers: {choices_text()}")
        self.name, self.hint = name, hint


def known_names() -> str:
    return ", ".join(PROVIDERS)


def choices_text() -> str:
    """`local (the embedded local model …), custom (…), …` for errors and help."""
    return ", ".join(f"{p.name} ({p.summary})" for p in PROVIDERS.values())


def aliases() -> dict[str, Optional[str]]:
    """The fixed spellings plus every registration's own ``aliases``."""
    out = dict(ALIASES)
    for info in PROVIDERS.values():
        out.update({a.lower(): info.name for a in info.aliases})
    return out


def lookup(name: Optional[str]) -> Optional[ProviderInfo]:
    """The provider a name means; None for "auto"/unset (detect it). Raises UnknownProvider."""
    key = (name or "").strip().lower()
    rows, spellings = table(), aliases()
    if key in rows:
        return rows[key]
    if key in spellings:
        target = spellings[key]
        return rows.get(target) if target else None
    close = difflib.get_close_matches(key, list(rows) + [a for a in spellings if a], n=1)
    raise UnknownProvider(str(name), f"; did you mean {close[0]}?" if close else "")


def detect(base_url: Optional[str], explicit_key: Optional[str],
           env: Mapping[str, str]) -> ProviderInfo:
    """The provider when none is named: a base URL means custom; else an OpenRouter key alone means
    OpenRouter, any other OpenAI-style key OpenAI; a provider's own ``detect_vars`` (e.g.
    ANTHROPIC_API_KEY) alone mean it; nothing at all, the embedded model."""
    rows = table()
    if base_url:
        return rows["custom"]
    if env.get("OPENROUTER_API_KEY") and not env.get("OPENAI_API_KEY") and not explicit_key:
        return rows["openrouter"]
    if explicit_key or env.get("OPENAI_API_KEY") or env.get("OPENROUTER_API_KEY"):
        return rows["openai"]
    for info in rows.values():
        if any(env.get(v) for v in info.detect_vars):
            return info
    return rows["local"]


def key_from_env(info: ProviderInfo, env: Mapping[str, str]) -> Optional[str]:
    return next((env[v] for v in info.key_vars if env.get(v)), None)


def url_from_env(info: ProviderInfo, env: Mapping[str, str]) -> Optional[str]:
    return next((env[v] for v in info.url_vars if env.get(v)), None)


def missing_key_message(info: ProviderInfo) -> str:
    return (f"provider {info.name} needs an API key and none is set: set {info.key_var} (in "
            "the environment, or `hermes config set model.api_key KEY`, which keeps it in .env, "
            f"or `hermes auth add {info.name}`) or run `hermes setup`")


def missing_url_message(info: ProviderInfo) -> str:
    var = info.url_vars[0] if info.url_vars else "OPENAI_BASE_URL"
    return (f"provider {info.name} needs a base URL: set {var}, `hermes config set "
            "model.base_url URL` or --base-url (e.g. http://localhost:8000/v1), or run "
            "`hermes setup`")
